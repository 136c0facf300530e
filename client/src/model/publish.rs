//! `publish`: create what is missing, write what differs, optionally seal. Every round plans
//! from the chain, so running it again after any interruption finishes the job.

use super::accounts;
use super::items::write_capacity_in;
use super::plan::{check_funds, check_model, rent_table, Plan};
use super::report::{Counts, Report, State};
use crate::artifact::LocalArtifact;
use crate::send::transport::Transport;
use crate::send::{Engine, Progress};
use crate::{Error, Options};
use curta_interface::state::ModelState;
use solana_keypair::Keypair;
use solana_signer::Signer;
use std::time::Instant;

/// Publishes the artifact `file` under `authority` (which signs and pays), and seals it if
/// `seal`.
pub async fn publish<T: Transport>(
    t: &T,
    authority: &Keypair,
    file: &[u8],
    seal: bool,
    options: &Options,
) -> Result<Report, Error> {
    publish_artifact(t, authority, &LocalArtifact::decode(file)?, seal, options).await
}

/// [`publish`] of an artifact already decoded.
pub async fn publish_artifact<T: Transport>(
    t: &T,
    authority: &Keypair,
    artifact: &LocalArtifact<'_>,
    seal: bool,
    options: &Options,
) -> Result<Report, Error> {
    let started = Instant::now();
    let model_address = artifact.model_address(&t.program_id(), &authority.pubkey());
    accounts::require_program(t).await?;
    let choice = crate::send::format::choose_noted(t, options.tx_version).await?;
    let mut engine = Engine::new(
        t,
        authority,
        options.compute_unit_price,
        options.max_in_flight,
        Progress::new(options.progress),
    )
    .with_format(choice.format);
    let balance_before = t.balance(&authority.pubkey()).await?;
    let chain = accounts::read(t, &model_address, &authority.pubkey(), &artifact.lengths).await?;
    if let Some(model) = &chain.model {
        check_model(&model_address, model, artifact)?;
    }
    let held_before = chain.rent_held();
    let rents = rent_table(t, &artifact.lengths).await?;
    let rent = |len: usize| rents[&len];

    let plan = Plan::new(
        &chain,
        &authority.pubkey(),
        Some(artifact),
        seal,
        &rent,
        &|ixs| engine.transaction_len(ixs),
        write_capacity_in(engine.format(), engine.priced()),
    );
    if chain.model.as_ref().map(|m| m.state) != Some(ModelState::Sealed) {
        let fees = plan.fees(&mut engine).await?;
        let reserve = t.rent_minimum(0).await?;
        check_funds(
            &authority.pubkey(),
            balance_before,
            plan.rent,
            fees,
            reserve,
        )?;
        plan.send(&mut engine, &model_address, Some(artifact), &rent)
            .await?;
    }
    engine.progress.finish();
    let chain = accounts::read(t, &model_address, &authority.pubkey(), &artifact.lengths).await?;
    let state = chain.model.as_ref().map(|m| m.state);
    let next = match state {
        Some(ModelState::Sealed) => None,
        Some(ModelState::Mismatch) => {
            Some(format!("client seal {model_address} --artifact <ARTIFACT>"))
        }
        _ => Some(format!("client seal {model_address}")),
    };
    Ok(Report {
        command: "publish",
        cluster: t.describe(),
        model: model_address,
        weights_hash: artifact.weights_hash,
        state: State(state),
        sections: artifact.lengths.len(),
        artifact_bytes: artifact.len(),
        counts: Counts::of(&engine.tally),
        rent: chain.rent_held().saturating_sub(held_before),
        rent_held: chain.rent_held(),
        balance_before,
        balance_after: t.balance(&authority.pubkey()).await?,
        seconds: started.elapsed().as_secs_f64(),
        next,
        format: choice.format,
        format_note: choice.note,
    })
}
