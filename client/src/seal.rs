//! `seal`: drive sealing from wherever it stands to Sealed, one chunk per transaction. With
//! the artifact, first find and rewrite the bytes that differ (reopening if needed).

use crate::artifact::{hex, LocalArtifact};
use crate::chain;
use crate::engine::Engine;
use crate::error::curta_error;
use crate::plan;
use crate::progress::Progress;
use crate::publish::{
    check_funds_keeping, check_model, needs_reopen, rent_table, run_reopen, seal_representative,
    state_name, write_rounds, STALL_ROUNDS,
};
use crate::report::Report;
use crate::transport::Transport;
use crate::{Error, Options};
use curta_program::error::CurtaError;
use curta_program::state::{Model, ModelState};
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
    chain::require_program(t).await?;
    let model = chain::existing_model(t, model_address).await?;
    if let Some(artifact) = &artifact {
        check_model(model_address, &model, artifact)?;
    }
    let lengths = model.sections().to_vec();
    let chain = chain::read(t, model_address, &model.authority, &lengths).await?;
    plan::require_complete(&chain)?;
    let held_before = chain.rent_held();
    let balance_before = t.balance(&payer.pubkey()).await?;
    let mut engine = Engine::new(
        t,
        payer,
        options.compute_unit_price,
        options.max_in_flight,
        Progress::new(options.progress),
    );

    if model.state != ModelState::Sealed {
        let (writes, reopen) = match &artifact {
            Some(artifact) => {
                let capacity = engine.write_capacity();
                let writes = plan::writes(&chain, &artifact.sections, &model.authority, capacity);
                let reopen = needs_reopen(
                    &chain,
                    !writes.is_empty() || model.state == ModelState::Mismatch,
                );
                (writes, reopen)
            }
            None if model.state == ModelState::Mismatch => {
                return Err(mismatch(model_address, &model))
            }
            None => (Vec::new(), false),
        };
        // Rewriting, reopening and starting a seal pass (chunk 0) need the authority; once a
        // pass has started, anyone may crank it.
        let starts_pass = reopen || model.seal_cursor == 0;
        if (starts_pass || !writes.is_empty()) && payer.pubkey() != model.authority {
            return Err(Error::NotAuthority {
                model: *model_address,
                signer: payer.pubkey(),
                authority: model.authority,
            });
        }
        let chunks = if reopen {
            model.total_chunks
        } else {
            model.total_chunks - model.seal_cursor
        };
        // With a price, `fee` measures each kind's representative first, so the check and
        // the transactions use the same compute-unit limits.
        let mut fees = 0;
        if let Some(item) = writes.iter().max_by_key(|w| w.bytes) {
            fees += writes.len() as u64
                * engine
                    .fee(crate::engine::Kind::Write, &item.instructions)
                    .await?;
        }
        if reopen {
            let item = plan::reopen(&chain, &model.authority);
            fees += engine
                .fee(crate::engine::Kind::Other, &item.instructions)
                .await?;
        }
        if chunks > 0 {
            let example = seal_representative(&chain, model_address, &model.authority, reopen);
            fees += chunks as u64 * engine.fee(crate::engine::Kind::Seal, &[example]).await?;
        }
        let reserve = t.rent_minimum(0).await?;
        check_funds_keeping(&payer.pubkey(), balance_before, 0, fees, reserve)?;
        if reopen {
            run_reopen(&mut engine, &chain).await?;
        }
        if let Some(artifact) = &artifact {
            let rents = rent_table(t, &lengths).await?;
            write_rounds(&mut engine, model_address, artifact, &|len| rents[&len]).await?;
        }
        seal_rounds(&mut engine, model_address).await?;
    }
    engine.progress.finish();
    let chain = chain::read(t, model_address, &model.authority, &lengths).await?;
    Ok(Report {
        command: "seal",
        cluster: t.describe(),
        model: *model_address,
        weights_hash: model.weights_hash,
        state: state_name(chain.model.as_ref().map(|m| m.state)),
        sections: lengths.len(),
        artifact_bytes: lengths.iter().map(|&l| l as u64).sum(),
        tally: engine.tally.clone(),
        rent: chain.rent_held().saturating_sub(held_before),
        rent_held: chain.rent_held(),
        balance_before,
        balance_after: t.balance(&payer.pubkey()).await?,
        seconds: started.elapsed().as_secs_f64(),
        next: None,
    })
}

fn mismatch(model_address: &Pubkey, model: &Model) -> Error {
    Error::Mismatch {
        model: *model_address,
        computed: hex(&model.running_hash),
        declared: hex(&model.weights_hash),
    }
}

/// Sends Seal transactions from the on-chain cursor until the model is Sealed; re-plans from
/// the cursor whenever a seal was dropped or refused as out of order.
pub(crate) async fn seal_rounds<T: Transport>(
    engine: &mut Engine<'_, T>,
    model_address: &Pubkey,
) -> Result<Model, Error> {
    let mut stalled = 0;
    let mut last_cursor = None;
    let mut bar = false;
    loop {
        let model = chain::existing_model(engine.transport(), model_address).await?;
        match model.state {
            ModelState::Sealed => return Ok(model),
            ModelState::Mismatch => return Err(mismatch(model_address, &model)),
            _ => {}
        }
        if !bar {
            engine
                .progress
                .start_seal((model.total_chunks - model.seal_cursor) as u64);
            bar = true;
        }
        stalled = if last_cursor == Some(model.seal_cursor) {
            stalled + 1
        } else {
            0
        };
        if stalled >= STALL_ROUNDS {
            return Err(Error::Stalled(format!(
                "model {model_address}: the seal cursor stayed at chunk {} for {STALL_ROUNDS} rounds",
                model.seal_cursor
            )));
        }
        last_cursor = Some(model.seal_cursor);
        let items = plan::seals(&engine.transport().program_id(), model_address, &model);
        let window = engine.profile.seal_window;
        for failure in engine.run(items, window, true).await? {
            match curta_error(&failure.error) {
                // Out of order after a dropped seal, or a pass that moved on: plan again.
                Some(CurtaError::UnexpectedChunk) | Some(CurtaError::StalePass) => {}
                _ => {
                    let state = chain::read_model(engine.transport(), model_address)
                        .await?
                        .map(|(m, _)| m);
                    return match state {
                        Some(m) if m.state == ModelState::Mismatch => {
                            Err(mismatch(model_address, &m))
                        }
                        Some(m) if m.state == ModelState::Sealed => Ok(m),
                        _ => Err(failure.into_error("seal")),
                    };
                }
            }
        }
    }
}
