//! What publish and seal share: the checks of a model against the artifact, the plan of
//! everything still to send and its price, the funds check, and the rounds that create,
//! write and seal until the chain holds what was planned.
//!
//! Both operations read as one pipeline: read the chain, [`Plan::new`], [`Plan::fees`],
//! [`check_funds`], then [`Plan::send`] (reopen, [`write_rounds`], [`seal_rounds`]), which
//! re-read the chain after each round and plan again until nothing differs.

use super::accounts::{self, OnChain};
use super::items::{self, write_capacity_in, Creates, CREATE, WRITE};
use crate::artifact::{hex, LocalArtifact};
use crate::error::curta_error;
use crate::send::transport::Transport;
use crate::send::{Bar, Engine, Item, Units};
use crate::Error;
use curta_interface::error::CurtaError;
use curta_interface::state::{Model, ModelState, MODEL_LEN, WEIGHT_HEADER_LEN};
use solana_instruction::Instruction;
use solana_pubkey::Pubkey;
use solana_signer::Signer;
use std::collections::HashMap;

/// Rounds in a row that may end without progress before the engine gives up.
pub(crate) const STALL_ROUNDS: usize = 4;

/// The existing model must be the artifact's: same declared hash and section lengths.
pub(crate) fn check_model(
    address: &Pubkey,
    model: &Model,
    artifact: &LocalArtifact<'_>,
) -> Result<(), Error> {
    if model.weights_hash != artifact.weights_hash {
        return Err(Error::HashMismatch {
            model: *address,
            artifact: hex(&artifact.weights_hash),
            declared: hex(&model.weights_hash),
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

/// Refuses, with the numbers, a payer that cannot cover `rent` + `fees` and still hold
/// `reserve` (its own rent-exempt minimum, or 0 for a payer that gains lamports, as when
/// closing): the runtime refuses any transaction that leaves a fee payer with some lamports
/// but fewer than its rent-exempt minimum.
pub(crate) fn check_funds(
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
fn needs_reopen(chain: &OnChain, must_write: bool) -> bool {
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

/// Everything still to send to bring a model from its on-chain state to the artifact (and to
/// Sealed, when sealing): planned from the chain, priced before anything is sent.
pub struct Plan {
    pub creates: Creates,
    pub writes: Vec<Item>,
    pub reopen: Option<Item>,
    /// Seals still to send (from the cursor, or all of them after a Reopen); 0 when not
    /// sealing.
    pub seal_chunks: u32,
    /// The next seal, to price seals with.
    pub next_seal: Option<Item>,
    /// When the next seal is chunk 0 (which carries a fixed limit of its own), a later chunk's
    /// seal, to price the others with.
    pub later_seal: Option<Item>,
    /// Rent the accounts still to create need, less what their addresses already hold.
    pub rent: u64,
}

impl Plan {
    /// The plan for `chain` (the model at `chain.address` of `authority`) to hold `artifact`
    /// (if given) and, with `seal`, to reach Sealed. Without the artifact nothing is written,
    /// and the accounts still missing are planned from the model's declared hash and lengths
    /// (which `check_model` holds equal to the artifact's when both exist). `tx_len` sizes
    /// transactions.
    pub fn new(
        chain: &OnChain,
        authority: &Pubkey,
        artifact: Option<&LocalArtifact<'_>>,
        seal: bool,
        rent: &dyn Fn(usize) -> u64,
        tx_len: &dyn Fn(&[Instruction]) -> usize,
        write_capacity: usize,
    ) -> Plan {
        let state = chain.model.as_ref().map(|m| m.state);
        let open = state != Some(ModelState::Sealed);
        // The declared hash and section lengths: the artifact's, else the model's.
        let (weights_hash, lengths) = match (artifact, &chain.model) {
            (Some(artifact), _) => (Some(artifact.weights_hash), artifact.lengths.clone()),
            (None, Some(model)) => (Some(model.weights_hash), model.sections().to_vec()),
            (None, None) => (None, Vec::new()),
        };
        let creates = match weights_hash {
            Some(hash) if open => items::creates(chain, authority, hash, &lengths, rent, tx_len),
            _ => Creates::default(),
        };
        let writes = match artifact {
            Some(artifact) if open => {
                items::writes(chain, &artifact.sections, authority, write_capacity)
            }
            _ => Vec::new(),
        };
        let must_write = !writes.is_empty() || state == Some(ModelState::Mismatch);
        let reopen = needs_reopen(chain, must_write).then(|| items::reopen(chain, authority));
        let seal_chunks = match &chain.model {
            _ if !seal || !open => 0,
            Some(m) if reopen.is_none() => m.total_chunks - m.seal_cursor,
            _ => curta_core::total_chunks(&lengths),
        };
        let next_seal = (seal_chunks > 0).then(|| next_seal(chain, authority, reopen.is_some()));
        let later_seal = next_seal
            .as_ref()
            .filter(|item| matches!(item.units, Units::Fixed(_)) && seal_chunks > 1)
            .map(|_| later_seal(chain, reopen.is_some()));
        Plan {
            rent: items::missing_rent(chain, &lengths, rent),
            creates,
            writes,
            reopen,
            seal_chunks,
            next_seal,
            later_seal,
        }
    }

    /// Whether seal chunk 0 (a new pass) is planned: only the authority may send it.
    pub fn starts_pass(&self, chain: &OnChain) -> bool {
        self.reopen.is_some()
            || (self.seal_chunks > 0 && chain.model.as_ref().is_none_or(|m| m.seal_cursor == 0))
    }

    /// Each planned shape of transaction: a representative, and how many transactions of it
    /// are planned (the largest Write stands for every Write, the next seal for every seal).
    pub fn shapes(&self) -> Vec<(&Item, u64)> {
        let mut shapes: Vec<(&Item, u64)> = self.creates.items().map(|item| (item, 1)).collect();
        if let Some(item) = self.writes.iter().max_by_key(|w| w.bytes) {
            shapes.push((item, self.writes.len() as u64));
        }
        if let Some(item) = &self.reopen {
            shapes.push((item, 1));
        }
        match (&self.next_seal, &self.later_seal) {
            (Some(first), Some(later)) => {
                shapes.push((first, 1));
                shapes.push((later, self.seal_chunks as u64 - 1));
            }
            (Some(item), None) => shapes.push((item, self.seal_chunks as u64)),
            _ => {}
        }
        shapes
    }

    /// The fee of every planned transaction, as `engine` will send it. With a compute-unit
    /// price, each shape's representative is measured first, so the check and the
    /// transactions sent use the same compute-unit limits.
    pub async fn fees<T: Transport>(&self, engine: &mut Engine<'_, T>) -> Result<u64, Error> {
        let mut fees = 0;
        for (example, count) in self.shapes() {
            fees += count * engine.fee(example).await?;
        }
        Ok(fees)
    }

    /// Sends the plan: the Reopen, then create and write rounds until the chain holds the
    /// artifact, then seal rounds until Sealed (when sealing).
    pub async fn send<T: Transport>(
        self,
        engine: &mut Engine<'_, T>,
        model_address: &Pubkey,
        artifact: Option<&LocalArtifact<'_>>,
        rent: &dyn Fn(usize) -> u64,
    ) -> Result<(), Error> {
        if let Some(item) = self.reopen {
            engine.send_one(item, "reopen").await?;
        }
        if let Some(artifact) = artifact {
            write_rounds(engine, model_address, artifact, rent).await?;
        }
        if self.seal_chunks > 0 {
            seal_rounds(engine, model_address).await?;
        }
        Ok(())
    }
}

/// The next seal to send, to price seals with: the chunk at the cursor, or chunk 0 of a pass
/// still to start (which the chain refuses to simulate while the model is missing or must be
/// reopened first: the engine then uses the fixed seal limit).
fn next_seal(chain: &OnChain, authority: &Pubkey, reopen: bool) -> Item {
    match &chain.model {
        Some(model) if !reopen => {
            if let Some(item) = items::seals(&chain.program_id, &chain.address, model)
                .into_iter()
                .next()
            {
                return item;
            }
        }
        _ => {}
    }
    let weights = seal_weights(chain);
    let pass = chain.model.as_ref().map_or(0, |m| m.seal_pass + 1);
    // The model's creation id, or 0 while it does not exist: this item only shapes the fee and
    // compute estimate; the seals sent are planned from the model on chain (`items::seals`).
    let creation = chain.model.as_ref().map_or(0, |m| m.creation);
    let start = curta_interface::instruction::start_seal(
        &chain.program_id,
        &chain.address,
        &weights,
        authority,
        creation,
        pass,
    );
    items::seal_item(0, start)
}

/// A seal of a chunk after chunk 0 carrying every section, to price those seals with before
/// the pass starts (the chain refuses to simulate it then: the engine uses the seal's fallback
/// limit, for the check and the seals sent alike).
fn later_seal(chain: &OnChain, reopen: bool) -> Item {
    let weights = seal_weights(chain);
    let pass = match &chain.model {
        Some(m) if reopen => m.seal_pass + 1,
        Some(m) => m.seal_pass,
        None => 0,
    };
    let creation = chain.model.as_ref().map_or(0, |m| m.creation);
    let seal = curta_interface::instruction::seal_every_section(
        &chain.program_id,
        &chain.address,
        &weights,
        creation,
        pass,
        1,
    );
    items::seal_item(1, seal)
}

/// The weight accounts a priced seal carries: the model's, or the model's address alone while
/// it has none (the seal only shapes the fee and compute estimate).
fn seal_weights(chain: &OnChain) -> Vec<Pubkey> {
    match chain.weights.is_empty() {
        true => vec![chain.address],
        false => chain.weights.iter().map(|w| w.address).collect(),
    }
}

/// Creates what is missing and writes what differs, planning again from the chain after a
/// round that did not land cleanly, until nothing differs.
pub(crate) async fn write_rounds<T: Transport>(
    engine: &mut Engine<'_, T>,
    model_address: &Pubkey,
    artifact: &LocalArtifact<'_>,
    rent: &dyn Fn(usize) -> u64,
) -> Result<(), Error> {
    let authority = engine.payer().pubkey();
    let capacity = write_capacity_in(engine.format(), engine.priced());
    let window = engine.profile.window;
    let mut stalled = 0;
    let mut last = (CREATE, usize::MAX);
    let mut bars = false;
    loop {
        let planning = std::time::Instant::now();
        let chain = accounts::read(
            engine.transport(),
            model_address,
            &authority,
            &artifact.lengths,
        )
        .await?;
        let creates = items::creates(
            &chain,
            &authority,
            artifact.weights_hash,
            &artifact.lengths,
            rent,
            &|ixs| engine.transaction_len(ixs),
        );
        let writes = if creates.is_empty() {
            items::writes(&chain, &artifact.sections, &authority, capacity)
        } else {
            Vec::new()
        };
        let work = creates.len() + writes.len();
        engine.timeline.planning += planning.elapsed();
        if work == 0 {
            return Ok(());
        }
        if !bars && !writes.is_empty() {
            start_bars(engine, &writes);
            bars = true;
        }
        let kind = if creates.is_empty() { WRITE } else { CREATE };
        stalled = if last.0 == kind && work >= last.1 {
            stalled + 1
        } else {
            0
        };
        last = (kind, work);
        let failures = if creates.is_empty() {
            engine.send(writes, window, false).await?
        } else {
            // The model's transaction first and alone: every other create initializes a
            // weight account into the model, which the program refuses until it exists.
            let mut failures = match creates.model {
                Some(item) => engine.send(vec![item], window, false).await?,
                None => Vec::new(),
            };
            if failures.is_empty() {
                failures = engine.send(creates.weights, window, false).await?;
            }
            failures
        };
        match failures.into_iter().next() {
            // Every planned Write landed: the bytes they carried are on chain and the others
            // already were, so nothing differs and the chain need not be read again.
            None if kind == WRITE => return Ok(()),
            None => {}
            // A failed write means the chain refuses it (frozen, sealed...): stop. A create
            // that lost a race with an earlier publish's late transaction is planned again.
            Some(failure) if kind == WRITE || stalled >= STALL_ROUNDS => {
                return Err(failure.into_error(kind));
            }
            Some(_) => {}
        }
        if stalled >= STALL_ROUNDS {
            return Err(Error::Stalled(format!(
                "model {model_address}: {work} transactions still planned after {STALL_ROUNDS} rounds without progress"
            )));
        }
    }
}

/// A byte bar for each section the writes write, with the bytes each writes.
fn start_bars<T: Transport>(engine: &mut Engine<'_, T>, writes: &[Item]) {
    let mut per: HashMap<usize, u64> = HashMap::new();
    for w in writes {
        if let Some(Bar::Bytes(section)) = w.bar {
            *per.entry(section).or_default() += w.bytes as u64;
        }
    }
    let mut per: Vec<(usize, String, u64)> = per
        .into_iter()
        .map(|(section, bytes)| (section, format!("section {section}"), bytes))
        .collect();
    per.sort();
    engine.progress.start_bytes(&per);
}

fn mismatch(model_address: &Pubkey, model: &Model) -> Error {
    Error::Mismatch {
        model: *model_address,
        computed: hex(&model.running_hash),
        declared: hex(&model.weights_hash),
    }
}

/// An error for a model that sealed to a mismatch; nothing for any other state.
pub(crate) fn refuse_mismatch(model_address: &Pubkey, model: &Model) -> Result<(), Error> {
    match model.state {
        ModelState::Mismatch => Err(mismatch(model_address, model)),
        _ => Ok(()),
    }
}

/// Sends Seal transactions from the on-chain cursor until the model is Sealed: chunk 0 alone
/// (the start of a pass), then every later chunk in one round, each seal carrying every
/// section's weight account, in flight together and landing in any order; re-plans from the
/// cursor after each round (a seal dropped, or a pass that moved on).
pub(crate) async fn seal_rounds<T: Transport>(
    engine: &mut Engine<'_, T>,
    model_address: &Pubkey,
) -> Result<Model, Error> {
    let mut stalled = 0;
    let mut last_cursor = None;
    let mut bar = false;
    loop {
        let planning = std::time::Instant::now();
        let model = accounts::existing_model(engine.transport(), model_address).await?;
        if model.state == ModelState::Sealed {
            return Ok(model);
        }
        refuse_mismatch(model_address, &model)?;
        if !bar {
            let chunks = (model.total_chunks - model.seal_cursor) as u64;
            engine.progress.start_count("seal", "chunks", chunks);
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
        let items = items::seals(&engine.transport().program_id(), model_address, &model);
        engine.timeline.planning += planning.elapsed();
        let window = engine.profile.seal_window;
        for failure in engine.send(items, window, false).await? {
            match curta_error(&failure.error) {
                // Out of order after a dropped seal, or a pass that moved on: plan again.
                Some(CurtaError::UnexpectedChunk) | Some(CurtaError::StalePass) => {}
                _ => {
                    let state = accounts::read_model(engine.transport(), model_address)
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
