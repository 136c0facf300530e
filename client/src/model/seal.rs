//! `seal`: drive sealing from wherever it stands to Sealed, one chunk per transaction. With
//! the artifact, first find and rewrite the bytes that differ (reopening if needed).

use super::accounts;
use super::items::{self, write_capacity_in};
use super::plan::{check_funds, check_model, refuse_mismatch, rent_table, Plan};
use super::report::{Counts, Report, State};
use crate::artifact::LocalArtifact;
use crate::send::transport::Transport;
use crate::send::{Engine, Progress};
use crate::{Error, Options};
use curta_interface::state::ModelState;
use solana_keypair::Keypair;
use solana_pubkey::Pubkey;
use solana_signer::Signer;
use std::time::Instant;

/// Seals the model at `model_address`, `payer` signing and paying. With `artifact`, the
/// on-chain bytes are first made equal to it (`payer` must then be the model's authority).
pub async fn seal<T: Transport>(
    t: &T,
    payer: &Keypair,
    model_address: &Pubkey,
    artifact: Option<&[u8]>,
    options: &Options,
) -> Result<Report, Error> {
    let started = Instant::now();
    let artifact = artifact.map(LocalArtifact::decode).transpose()?;
    accounts::require_program(t).await?;
    let model = accounts::existing_model(t, model_address).await?;
    if let Some(artifact) = &artifact {
        check_model(model_address, &model, artifact)?;
    }
    let lengths = model.sections().to_vec();
    let chain = accounts::read(t, model_address, &model.authority, &lengths).await?;
    items::require_complete(&chain)?;
    let held_before = chain.rent_held();
    let balance_before = t.balance(&payer.pubkey()).await?;
    let choice = crate::send::format::choose_noted(t, options.tx_version).await?;
    let mut engine = Engine::new(
        t,
        payer,
        options.compute_unit_price,
        options.max_in_flight,
        Progress::new(options.progress),
    )
    .with_format(choice.format);

    if model.state != ModelState::Sealed {
        if artifact.is_none() {
            // Without the artifact there is nothing to repair a mismatch with.
            refuse_mismatch(model_address, &model)?;
        }
        let rents = rent_table(t, &lengths).await?;
        let rent = |len: usize| rents[&len];
        let plan = Plan::new(
            &chain,
            &model.authority,
            artifact.as_ref(),
            true,
            &rent,
            &|ixs| engine.transaction_len(ixs),
            write_capacity_in(engine.format(), engine.priced()),
        );
        // Rewriting, reopening and starting a seal pass (chunk 0) need the authority; once a
        // pass has started, anyone may crank it.
        if (plan.starts_pass(&chain) || !plan.writes.is_empty())
            && payer.pubkey() != model.authority
        {
            return Err(Error::NotAuthority {
                model: *model_address,
                signer: payer.pubkey(),
                authority: model.authority,
            });
        }
        let fees = plan.fees(&mut engine).await?;
        let reserve = t.rent_minimum(0).await?;
        check_funds(&payer.pubkey(), balance_before, 0, fees, reserve)?;
        plan.send(&mut engine, model_address, artifact.as_ref(), &rent)
            .await?;
    }
    engine.progress.finish();
    let chain = accounts::read(t, model_address, &model.authority, &lengths).await?;
    Ok(Report {
        command: "seal",
        cluster: t.describe(),
        model: *model_address,
        weights_hash: model.weights_hash,
        state: State(chain.model.as_ref().map(|m| m.state)),
        sections: lengths.len(),
        artifact_bytes: lengths.iter().map(|&l| l as u64).sum(),
        counts: Counts::of(&engine.tally),
        rent: chain.rent_held().saturating_sub(held_before),
        rent_held: chain.rent_held(),
        balance_before,
        balance_after: t.balance(&payer.pubkey()).await?,
        seconds: started.elapsed().as_secs_f64(),
        next: None,
        format: choice.format,
        format_note: choice.note,
    })
}
