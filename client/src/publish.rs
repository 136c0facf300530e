//! `publish`: create what is missing, write what differs, optionally seal. Every round plans
//! from the chain, so running it again after any interruption finishes the job.

use crate::artifact::LocalArtifact;
use crate::chain::{self, OnChain};
use crate::engine::{kind_name, Engine, Kind};
use crate::plan;
use crate::progress::Progress;
use crate::report::Report;
use crate::seal::seal_rounds;
use crate::transport::Transport;
use crate::{Error, Options};
use curta_program::state::{Model, ModelState, MODEL_LEN, WEIGHT_HEADER_LEN};
use solana_keypair::Keypair;
use solana_pubkey::Pubkey;
use solana_signer::Signer;
use std::collections::HashMap;
use std::time::Instant;

/// Rounds in a row that may end without progress before the engine gives up.
pub(crate) const STALL_ROUNDS: usize = 4;

/// Publishes an artifact under `authority` (which signs and pays), and seals it if `seal`.
pub async fn publish<T: Transport>(
    t: &T,
    authority: &Keypair,
    file: &[u8],
    seal: bool,
    options: &Options,
) -> Result<Report, Error> {
    let started = Instant::now();
    let artifact = LocalArtifact::decode(file)?;
    let model_address = artifact.model_address(&t.program_id(), &authority.pubkey());
    let mut engine = Engine::new(
        t,
        authority,
        options.compute_unit_price,
        options.max_in_flight,
        Progress::new(options.progress),
    );
    chain::require_program(t).await?;
    let balance_before = t.balance(&authority.pubkey()).await?;
    let chain = chain::read(t, &model_address, &authority.pubkey(), &artifact.lengths).await?;
    if let Some(model) = &chain.model {
        check_model(&model_address, model, &artifact)?;
    }
    let held_before = chain.rent_held();
    let rents = rent_table(t, &artifact.lengths).await?;
    let rent = |len: usize| rents[&len];

    let state = chain.model.as_ref().map(|m| m.state);
    if state != Some(ModelState::Sealed) {
        let capacity = engine.write_capacity();
        let creates = plan::creates(
            &chain,
            &authority.pubkey(),
            artifact.weights_hash,
            &artifact.lengths,
            &rent,
            &|ixs| engine.transaction_len(ixs),
        );
        let writes = plan::writes(&chain, &artifact.sections, &authority.pubkey(), capacity);
        let reopen = needs_reopen(&chain, !writes.is_empty());
        let remaining_chunks = match &chain.model {
            Some(m) if !reopen => m.total_chunks - m.seal_cursor,
            _ => total_chunks(&artifact.lengths),
        };
        // With a price, `fee` measures each kind's representative first, so the check and
        // the transactions use the same compute-unit limits.
        let mut fees = 0;
        for item in creates.items() {
            fees += engine.fee(Kind::Create, &item.instructions).await?;
        }
        if let Some(item) = writes.iter().max_by_key(|w| w.bytes) {
            fees += writes.len() as u64 * engine.fee(Kind::Write, &item.instructions).await?;
        }
        if reopen {
            let item = plan::reopen(&chain, &authority.pubkey());
            fees += engine.fee(Kind::Other, &item.instructions).await?;
        }
        if seal && remaining_chunks > 0 {
            let example = seal_representative(&chain, &model_address, &authority.pubkey(), reopen);
            fees += remaining_chunks as u64 * engine.fee(Kind::Seal, &[example]).await?;
        }
        let needed_rent = plan::missing_rent(&chain, &artifact.lengths, &rent);
        let reserve = t.rent_minimum(0).await?;
        check_funds_keeping(
            &authority.pubkey(),
            balance_before,
            needed_rent,
            fees,
            reserve,
        )?;

        if reopen {
            run_reopen(&mut engine, &chain).await?;
        }
        write_rounds(&mut engine, &model_address, &artifact, &rent).await?;
        if seal {
            seal_rounds(&mut engine, &model_address).await?;
        }
    }
    engine.progress.finish();
    let chain = chain::read(t, &model_address, &authority.pubkey(), &artifact.lengths).await?;
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
        state: state_name(state),
        sections: artifact.lengths.len(),
        artifact_bytes: artifact.len(),
        tally: engine.tally.clone(),
        rent: chain.rent_held().saturating_sub(held_before),
        rent_held: chain.rent_held(),
        balance_before,
        balance_after: t.balance(&authority.pubkey()).await?,
        seconds: started.elapsed().as_secs_f64(),
        next,
    })
}

pub fn state_name(state: Option<ModelState>) -> String {
    match state {
        None => "absent",
        Some(ModelState::Open) => "Open",
        Some(ModelState::Sealing) => "Sealing",
        Some(ModelState::Mismatch) => "Mismatch",
        Some(ModelState::Sealed) => "Sealed",
    }
    .to_string()
}

pub(crate) fn total_chunks(lengths: &[u32]) -> u32 {
    lengths
        .iter()
        .map(|&l| curta_core::chunk_count(l as u64) as u32)
        .sum()
}

/// The existing model must be the artifact's: same declared hash and section lengths.
pub(crate) fn check_model(
    address: &Pubkey,
    model: &Model,
    artifact: &LocalArtifact<'_>,
) -> Result<(), Error> {
    if model.weights_hash != artifact.weights_hash {
        return Err(Error::HashMismatch {
            model: *address,
            artifact: crate::artifact::hex(&artifact.weights_hash),
            declared: crate::artifact::hex(&model.weights_hash),
        });
    }
    if model.sections() != artifact.lengths.as_slice() {
        return Err(Error::SectionsMismatch {
            model: *address,
            artifact: artifact.lengths.clone(),
            declared: model.sections().to_vec(),
        });
    }
    Ok(())
}

/// The next seal to send, to measure seals with: the chunk at the cursor, or chunk 0 of a
/// pass still to start (which the chain refuses to simulate while the model is missing or
/// must be reopened first: the engine then uses the fixed seal limit).
pub(crate) fn seal_representative(
    chain: &OnChain,
    model_address: &Pubkey,
    authority: &Pubkey,
    reopen: bool,
) -> solana_instruction::Instruction {
    match &chain.model {
        Some(model) if !reopen => {
            if let Some(item) = plan::seals(&chain.program_id, model_address, model)
                .into_iter()
                .next()
            {
                return item.instructions[0].clone();
            }
        }
        _ => {}
    }
    let weight = chain.weights.first().map_or(*model_address, |w| w.address);
    let pass = chain.model.as_ref().map_or(0, |m| m.seal_pass + 1);
    curta_program::instruction::start_seal(
        &chain.program_id,
        model_address,
        &weight,
        authority,
        pass,
    )
}

/// Refuses, with the numbers, a payer that cannot cover `rent` + `fees` (a payer that gains
/// lamports, as when closing, needs no reserve).
pub(crate) fn check_funds(payer: &Pubkey, balance: u64, rent: u64, fees: u64) -> Result<(), Error> {
    check_funds_keeping(payer, balance, rent, fees, 0)
}

/// Refuses, with the numbers, a payer that cannot cover `rent` + `fees` and still hold
/// `reserve` (its own rent-exempt minimum) afterwards: the runtime refuses any transaction
/// that leaves a fee payer with some lamports but fewer than that.
pub(crate) fn check_funds_keeping(
    payer: &Pubkey,
    balance: u64,
    rent: u64,
    fees: u64,
    reserve: u64,
) -> Result<(), Error> {
    let needed = rent + fees + reserve;
    if balance < needed {
        return Err(Error::InsufficientFunds {
            payer: *payer,
            balance,
            needed,
            rent,
            fees,
            reserve,
        });
    }
    Ok(())
}

/// Frozen sections (Sealing) or a failed seal (Mismatch) must be reopened before writing.
pub(crate) fn needs_reopen(chain: &OnChain, must_write: bool) -> bool {
    matches!(
        chain.model.as_ref().map(|m| m.state),
        Some(ModelState::Sealing) | Some(ModelState::Mismatch)
    ) && must_write
}

/// Rent-exempt minimum of the model account and of each section's weight account.
pub(crate) async fn rent_table<T: Transport>(
    t: &T,
    lengths: &[u32],
) -> Result<HashMap<usize, u64>, Error> {
    let mut rents = HashMap::new();
    for len in
        std::iter::once(MODEL_LEN).chain(lengths.iter().map(|&l| WEIGHT_HEADER_LEN + l as usize))
    {
        if let std::collections::hash_map::Entry::Vacant(e) = rents.entry(len) {
            e.insert(t.rent_minimum(len).await?);
        }
    }
    Ok(rents)
}

pub(crate) async fn run_reopen<T: Transport>(
    engine: &mut Engine<'_, T>,
    chain: &OnChain,
) -> Result<(), Error> {
    let item = plan::reopen(chain, &engine.payer().pubkey());
    engine.run_one(item, "reopen").await
}

/// Creates what is missing and writes what differs, re-planning from the chain after every
/// round until nothing differs.
pub(crate) async fn write_rounds<T: Transport>(
    engine: &mut Engine<'_, T>,
    model_address: &Pubkey,
    artifact: &LocalArtifact<'_>,
    rent: &dyn Fn(usize) -> u64,
) -> Result<(), Error> {
    let authority = engine.payer().pubkey();
    let capacity = engine.write_capacity();
    let window = engine.profile.window;
    let mut stalled = 0;
    let mut last = (Kind::Other, usize::MAX);
    let mut bars = false;
    loop {
        let chain = chain::read(
            engine.transport(),
            model_address,
            &authority,
            &artifact.lengths,
        )
        .await?;
        let creates = plan::creates(
            &chain,
            &authority,
            artifact.weights_hash,
            &artifact.lengths,
            rent,
            &|ixs| engine.transaction_len(ixs),
        );
        let writes = if creates.is_empty() {
            plan::writes(&chain, &artifact.sections, &authority, capacity)
        } else {
            Vec::new()
        };
        let work = creates.len() + writes.len();
        if work == 0 {
            return Ok(());
        }
        if !bars && !writes.is_empty() {
            let mut per: HashMap<usize, u64> = HashMap::new();
            for w in &writes {
                *per.entry(w.section).or_default() += w.bytes as u64;
            }
            let mut per: Vec<(usize, u64)> = per.into_iter().collect();
            per.sort();
            engine.progress.start_writes(&per);
            bars = true;
        }
        let kind = if creates.is_empty() {
            Kind::Write
        } else {
            Kind::Create
        };
        stalled = if last.0 == kind && work >= last.1 {
            stalled + 1
        } else {
            0
        };
        last = (kind, work);
        let failures = if creates.is_empty() {
            engine.run(writes, window, false).await?
        } else {
            // The model's transaction first and alone: every other create initializes a
            // weight account into the model, which the program refuses until it exists.
            let mut failures = match creates.model {
                Some(item) => engine.run(vec![item], window, false).await?,
                None => Vec::new(),
            };
            if failures.is_empty() {
                failures = engine.run(creates.weights, window, false).await?;
            }
            failures
        };
        if let Some(failure) = failures.into_iter().next() {
            // A create that lost a race with an earlier run's late transaction is re-planned;
            // a failed write means the chain refuses it (frozen, sealed...): stop.
            if kind == Kind::Write || stalled >= STALL_ROUNDS {
                return Err(failure.into_error(kind_name(kind)));
            }
        }
        if stalled >= STALL_ROUNDS {
            return Err(Error::Stalled(format!(
                "model {model_address}: {work} transactions still planned after {STALL_ROUNDS} rounds without progress"
            )));
        }
    }
}
