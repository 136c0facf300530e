//! The one engine: signs, sends many transactions in flight, confirms them, re-signs those
//! whose blockhash expired, and counts what landed and what it cost. It knows nothing of
//! publishing; the operations (publish, seal, close) hand it items planned from on-chain
//! state, and plan again from on-chain state after each run, so nothing depends on a journal.

use crate::progress::Progress;
use crate::transport::{Profile, Sent, Transport, TxStatus};
use crate::txformat::{Format, V1_LOADED_DATA_LIMIT};
use crate::Error;
use solana_compute_budget_interface::ComputeBudgetInstruction;
use solana_hash::Hash;
use solana_instruction::Instruction;
use solana_keypair::Keypair;
use solana_message::{v1, Message, VersionedMessage};
use solana_pubkey::Pubkey;
use solana_signature::Signature;
use solana_signer::Signer;
use solana_transaction::versioned::VersionedTransaction;
use solana_transaction::Transaction;
use solana_transaction_error::TransactionError;
use std::collections::{HashMap, HashSet, VecDeque};
use std::time::{Duration, Instant};

/// The largest serialized transaction (the packet size).
pub const PACKET_LEN: usize = 1232;
/// An item not accepted after this many signings stops the run.
const MAX_ATTEMPTS: u32 = 30;
/// How long to wait for the cluster's next blockhash before giving up.
const NEW_BLOCKHASH_WAIT: std::time::Duration = std::time::Duration::from_secs(60);
/// How long [`Engine::settle`] waits for earlier transactions to become final or expire (a
/// cluster's blockhash lives about 150 blocks, 60 to 90 s; finalization takes about 13 s).
const SETTLE_WAIT: std::time::Duration = std::time::Duration::from_secs(300);
/// The least pause between two looks of [`Engine::settle`].
const SETTLE_POLL: std::time::Duration = std::time::Duration::from_millis(20);
/// The most compute units a transaction may request (and what it gets without a limit).
pub const MAX_COMPUTE_UNITS: u32 = 1_400_000;

/// The compute-unit limit a kind's transactions carry (with a price) when its representative
/// cannot be simulated yet, e.g. Writes and Seals before their accounts exist. From the units
/// measured in the VM on the SBF binary (docs/program.md, `scripts/bench-cu`; the test
/// `compute_units` checks that each limit covers its measure), with a margin of at least 1.2x:
/// a Write of 1,019 bytes 343 -> 2,000; a Seal, at most 42,802 (chunk 0 of the largest
/// header; 99,129 when these were set) -> 120,000; CreateModel up to 9,627 + 18 creates and
/// InitWeightAccounts of 3,049 -> 100,000; Close of 18 sections 24,593, Reopen 7,042 ->
/// 50,000.
pub fn fixed_limit(kind: Kind) -> u32 {
    match kind {
        Kind::Create => 100_000,
        Kind::Write => 2_000,
        Kind::Seal => 120_000,
        Kind::Reopen | Kind::Close => 50_000,
        // A run's start (create_account_with_seed and StartRun) asks for the most a
        // transaction may (a text prompt is tokenized on chain); a step's units depend on its
        // stage and position, and the program bounds each step under 1,200,000: every step
        // asks for the same limit, tight enough to pack the run account's share of a block.
        Kind::StartRun => MAX_COMPUTE_UNITS,
        Kind::Step => crate::onchain::pipeline::STEP_UNITS,
        Kind::CloseRun => 50_000,
    }
}

/// The least limit of a Seal after the first: a full 65,536-byte chunk, measured 33,293 in the
/// VM (scripts/bench-cu), with a margin of 1.2x (whichever chunk was simulated, any later one
/// may be full).
pub const SEAL_CHUNK_LIMIT: u32 = 41_000;

/// The limit for `units` measured by simulation: 1.2 x units + 1,000, seals at least
/// `SEAL_CHUNK_LIMIT`.
pub fn measured_limit(kind: Kind, units: u64) -> u32 {
    let floor = if kind == Kind::Seal {
        SEAL_CHUNK_LIMIT as u64
    } else {
        1_000
    };
    (units + units / 5 + 1_000)
        .max(floor)
        .min(MAX_COMPUTE_UNITS as u64) as u32
}

/// What decides a transaction's compute-unit limit: its kind and, for creates (which carry
/// different numbers and kinds of instructions), the program, tag and account count of
/// each instruction. Writes, seals and others have one limit per kind.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
struct Shape(Kind, Vec<(Pubkey, u8, usize)>);

fn shape(kind: Kind, instructions: &[Instruction]) -> Shape {
    match kind {
        Kind::Create => Shape(
            kind,
            instructions
                .iter()
                .map(|ix| {
                    (
                        ix.program_id,
                        ix.data.first().copied().unwrap_or(0),
                        ix.accounts.len(),
                    )
                })
                .collect(),
        ),
        _ => Shape(kind, Vec::new()),
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Kind {
    /// CreateModel and/or weight account creation + InitWeightAccount.
    Create,
    Write,
    Seal,
    Reopen,
    Close,
    /// A run account created and StartRun, in one transaction.
    StartRun,
    /// One Step of a run.
    Step,
    /// CloseRun.
    CloseRun,
}

impl Kind {
    /// The word errors and reports use for this kind's transactions.
    pub fn name(self) -> &'static str {
        match self {
            Kind::Create => "create",
            Kind::Write => "write",
            Kind::Seal => "seal",
            Kind::Reopen => "reopen",
            Kind::Close => "close",
            Kind::StartRun => "start run",
            Kind::Step => "step",
            Kind::CloseRun => "close run",
        }
    }
}

/// How far what was sent before a barrier must have come before the barrier goes out.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Settle {
    /// Final or expired: nothing sent earlier can land again, even after a fork.
    Final,
    /// Landed (at the transport's commitment) or expired.
    Landed,
}

/// Whether an item may only be sent once nothing sent earlier can still land: a Reopen (a
/// late Write or Reopen would change the pass it opens), a Close (a late transaction would
/// land on the model created again at the address) and a start seal, chunk 0 (a late Write
/// or Reopen would change what the pass hashes or restart it).
pub fn is_barrier(item: &Item) -> bool {
    barrier(item).is_some()
}

/// What a barrier waits for. A start seal waits only for what was sent before to land: it
/// freezes every section, so a Write that landed before it and lands again after a fork is
/// refused (SectionFrozen) and can at worst leave the pass at Mismatch, which the seal
/// reports and `seal` with the artifact repairs, never a sealed model with other bytes; and
/// a Reopen is itself a barrier that waits for finality. Waiting for finality there cost about
/// 13 s (32 slots) on the local validator.
pub fn barrier(item: &Item) -> Option<Settle> {
    match item.kind {
        Kind::Reopen | Kind::Close => Some(Settle::Final),
        Kind::Seal if item.subject == Subject::Chunk(0) => Some(Settle::Landed),
        Kind::Seal => None,
        // A step advances its run from wherever it stands, and a late one after the run
        // ended is refused (RunEnded, or no run account) instead of changing another run.
        Kind::Create | Kind::Write | Kind::StartRun | Kind::Step | Kind::CloseRun => None,
    }
}

/// What one item is about, where the engine reports or counts it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Subject {
    /// The whole model (creates, Reopen, Close).
    Model,
    /// A Write of `bytes` payload bytes into `section`.
    Write { section: usize, bytes: usize },
    /// The seal of chunk `chunk` of the chain.
    Chunk(u32),
}

/// One transaction's instructions (without compute-budget instructions), and what it is for.
#[derive(Clone, Debug)]
pub struct Item {
    pub kind: Kind,
    pub instructions: Vec<Instruction>,
    pub subject: Subject,
}

impl Item {
    /// An item about the whole model.
    pub fn model(kind: Kind, instructions: Vec<Instruction>) -> Item {
        Item {
            kind,
            instructions,
            subject: Subject::Model,
        }
    }

    /// Payload bytes of a Write (0 for the others).
    pub fn bytes(&self) -> usize {
        match self.subject {
            Subject::Write { bytes, .. } => bytes,
            _ => 0,
        }
    }
}

/// What the engine sent and what landed, over all its runs.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Tally {
    pub create: u64,
    pub write: u64,
    pub seal: u64,
    pub other: u64,
    /// Landed with an error (the fee is charged all the same).
    pub failed: u64,
    pub fees: u64,
    pub write_bytes_min: Option<usize>,
    pub write_bytes_max: usize,
    pub bytes_written: u64,
    /// Signings that never landed (dropped, or their blockhash expired) and were re-signed.
    pub resigned: u64,
}

impl Tally {
    pub fn landed(&self) -> u64 {
        self.create + self.write + self.seal + self.other + self.failed
    }
}

/// Where an engine's wall time went, for profiling (printed to stderr when the engine is
/// dropped if `CURTA_TIMELINE` is set): each field is the time spent in that step of the send
/// loop, summed over its runs.
#[derive(Clone, Debug, Default)]
pub struct Timeline {
    /// Pricing shapes before a run (fee and compute-unit simulations).
    pub pricing: Duration,
    /// Fetching blockhashes.
    pub blockhash: Duration,
    /// Signing transactions.
    pub signing: Duration,
    /// Handing transactions to the transport.
    pub sending: Duration,
    /// Asking whether blockhashes expired (the bank's fences included).
    pub expiry: Duration,
    /// Reading signature statuses.
    pub statuses: Duration,
    /// Waiting for progress when nothing resolved.
    pub waiting: Duration,
    /// Waiting before barriers (`Engine::settle`).
    pub settling: Duration,
    /// Reading the chain and planning between rounds (the operations add it).
    pub planning: Duration,
    /// Time inside `Engine::run`, all of the above but planning.
    pub running: Duration,
    /// Passes of the send loop, and runs.
    pub loops: u64,
    pub runs: u64,
}

impl std::fmt::Display for Timeline {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let ms = |d: Duration| d.as_secs_f64() * 1e3;
        write!(
            f,
            "engine timeline (ms): runs {} loops {} running {:.1} = pricing {:.1} blockhash {:.1} signing {:.1} sending {:.1} expiry {:.1} statuses {:.1} waiting {:.1} settling {:.1}; planning (outside runs) {:.1}",
            self.runs,
            self.loops,
            ms(self.running),
            ms(self.pricing),
            ms(self.blockhash),
            ms(self.signing),
            ms(self.sending),
            ms(self.expiry),
            ms(self.statuses),
            ms(self.waiting),
            ms(self.settling),
            ms(self.planning),
        )
    }
}

/// A transaction that landed with an error.
#[derive(Clone, Debug)]
pub struct Failure {
    pub item: Item,
    pub error: TransactionError,
}

impl Failure {
    /// `Error::Transaction` named `what`, saying which section and account it was about.
    pub fn into_error(self, what: &'static str) -> Error {
        Error::Transaction {
            what,
            about: about(&self.item),
            error: self.error,
        }
    }
}

/// Which section, chunk and account an item is about, where it knows it.
pub fn about(item: &Item) -> Option<String> {
    let account = |i: usize| {
        item.instructions
            .first()
            .and_then(|ix| ix.accounts.get(i))
            .map(|a| a.pubkey)
    };
    match item.subject {
        // Write: [weight, authority]; Seal: [model, weight, ...].
        Subject::Write { section, .. } => {
            account(0).map(|w| format!("section {section} (weight account {w})"))
        }
        Subject::Chunk(chunk) => account(1).map(|w| format!("chunk {chunk} (weight account {w})")),
        Subject::Model => None,
    }
}

struct InFlight {
    item: Item,
    signature: Signature,
    blockhash: Hash,
    last_valid: u64,
    attempts: u32,
}

pub struct Engine<'a, T: Transport> {
    transport: &'a T,
    payer: &'a Keypair,
    pub profile: Profile,
    price: Option<u64>,
    /// The format every transaction goes in (legacy unless [`Engine::with_format`]).
    format: Format,
    /// Compute-unit limits by shape (with a price, or in v1), measured or fixed; set once per
    /// run.
    limits: HashMap<Shape, u32>,
    /// By kind and the compute-unit limit its transactions carry (it changes when measured).
    fees: HashMap<(Kind, Option<u32>), u64>,
    blockhash: Option<(Hash, u64, Instant)>,
    /// Every signature this engine sent: a transaction is never sent twice.
    sent: HashSet<Signature>,
    pub tally: Tally,
    pub progress: Progress,
    pub timeline: Timeline,
}

impl<T: Transport> Drop for Engine<'_, T> {
    fn drop(&mut self) {
        if std::env::var_os("CURTA_TIMELINE").is_some() && self.timeline.runs > 0 {
            eprintln!("{}", self.timeline);
        }
    }
}

impl<'a, T: Transport> Engine<'a, T> {
    pub fn new(
        transport: &'a T,
        payer: &'a Keypair,
        price: Option<u64>,
        window: Option<usize>,
        progress: Progress,
    ) -> Self {
        let mut profile = transport.profile();
        if let Some(window) = window {
            profile.window = window.max(1);
            profile.seal_window = profile.seal_window.min(profile.window);
        }
        Engine {
            transport,
            payer,
            profile,
            price,
            format: Format::Legacy,
            limits: HashMap::new(),
            fees: HashMap::new(),
            blockhash: None,
            sent: HashSet::new(),
            tally: Tally::default(),
            progress,
            timeline: Timeline::default(),
        }
    }

    /// The engine with its transactions in `format` (version 1 carries its compute-unit and
    /// loaded-data limits in the message: every shape's limit is then measured, with or
    /// without a price).
    pub fn with_format(mut self, format: Format) -> Self {
        self.format = format;
        self
    }

    pub fn format(&self) -> Format {
        self.format
    }

    pub fn transport(&self) -> &'a T {
        self.transport
    }

    pub fn payer(&self) -> &Keypair {
        self.payer
    }

    /// The instructions actually sent for an item: with a compute-unit price, a tight limit
    /// and the price first; without one, nothing extra but a run's start and steps, which
    /// ask for the most compute units a transaction may use (a step does up to about
    /// 1,200,000, over the default of 200,000 per instruction).
    fn instructions(&self, item: &Item) -> Vec<Instruction> {
        let mut instructions = Vec::with_capacity(item.instructions.len() + 2);
        if self.price.is_none() && matches!(item.kind, Kind::StartRun | Kind::Step) {
            instructions.push(ComputeBudgetInstruction::set_compute_unit_limit(
                fixed_limit(item.kind),
            ));
        }
        if let Some(price) = self.price {
            let limit = self
                .limit(item.kind, &item.instructions)
                .unwrap_or(MAX_COMPUTE_UNITS);
            instructions.push(ComputeBudgetInstruction::set_compute_unit_limit(limit));
            instructions.push(ComputeBudgetInstruction::set_compute_unit_price(price));
        }
        instructions.extend(item.instructions.iter().cloned());
        instructions
    }

    /// Most bytes one Write carries with this engine's format and compute-budget settings.
    pub fn write_capacity(&self) -> usize {
        write_capacity_in(self.format, self.price.is_some())
    }

    /// Serialized size of the transaction an item becomes (signatures included).
    pub fn transaction_len(&self, instructions: &[Instruction]) -> usize {
        transaction_len_in(
            self.format,
            &self.payer.pubkey(),
            self.price.is_some(),
            instructions,
        )
    }

    /// The message an item becomes under `blockhash`: legacy with the compute-budget
    /// instructions [`Engine::instructions`] adds, or version 1 with its limits (measured, or
    /// the most a transaction may use before they are) and the priority fee a legacy
    /// transaction of that limit and price would pay, in lamports.
    fn message(&self, item: &Item, blockhash: Hash) -> VersionedMessage {
        match self.format {
            Format::Legacy => VersionedMessage::Legacy(Message::new_with_blockhash(
                &self.instructions(item),
                Some(&self.payer.pubkey()),
                &blockhash,
            )),
            Format::V1 => {
                let limit = self
                    .limit(item.kind, &item.instructions)
                    .unwrap_or(MAX_COMPUTE_UNITS);
                v1_message(
                    &self.payer.pubkey(),
                    &item.instructions,
                    blockhash,
                    limit,
                    self.price.map(|price| priority_fee(price, limit)),
                )
            }
        }
    }

    /// The compute-unit limit an item of this kind and these instructions carries, once
    /// measured (or fixed); `None` in legacy without a price.
    pub fn limit(&self, kind: Kind, instructions: &[Instruction]) -> Option<u32> {
        self.limits.get(&shape(kind, instructions)).copied()
    }

    /// The fee of one transaction of this kind and shape (one signer; with a price, the
    /// limit it will really carry: its representative `example` is measured first if its
    /// shape has no limit yet). Call it on a representative of each kind before a cost check
    /// so that the check and the transactions sent use the same limits.
    pub async fn fee(&mut self, kind: Kind, example: &[Instruction]) -> Result<u64, Error> {
        let item = Item::model(kind, example.to_vec());
        self.measure(&item).await?;
        let key = (kind, self.limit(kind, example));
        if let Some(fee) = self.fees.get(&key) {
            return Ok(*fee);
        }
        let (blockhash, _) = self.fresh_blockhash().await?;
        let fee = self
            .transport
            .fee_for_message(&self.message(&item, blockhash))
            .await?;
        self.fees.insert(key, fee);
        Ok(fee)
    }

    /// The fee [`Engine::fee`] found for an item's kind and limit (every item [`Engine::run`]
    /// sends is priced before its send loop starts).
    fn priced_fee(&self, item: &Item) -> u64 {
        self.fees[&(item.kind, self.limit(item.kind, &item.instructions))]
    }

    async fn fresh_blockhash(&mut self) -> Result<(Hash, u64), Error> {
        match self.blockhash {
            Some((hash, last_valid, at)) if at.elapsed() < self.profile.blockhash_refresh => {
                Ok((hash, last_valid))
            }
            _ => {
                let (hash, last_valid) = self.transport.latest_blockhash().await?;
                self.blockhash = Some((hash, last_valid, Instant::now()));
                Ok((hash, last_valid))
            }
        }
    }

    /// With a compute-unit price, or in v1 (whose messages always carry a limit): simulate
    /// the first item of a shape to measure its compute units, and set that shape's limit to
    /// the measure plus a margin (`measured_limit`). A
    /// simulation the chain refuses (its accounts do not exist yet, or already do) sets the
    /// kind's fixed bound instead (`fixed_limit`): the run goes on and re-plans as usual.
    async fn measure(&mut self, item: &Item) -> Result<(), Error> {
        let key = shape(item.kind, &item.instructions);
        if (self.price.is_none() && self.format == Format::Legacy) || self.limits.contains_key(&key)
        {
            return Ok(());
        }
        if matches!(item.kind, Kind::Step | Kind::StartRun) {
            // One step's units say nothing of the next one's (another stage, a longer
            // attention): every step carries the fixed limit. A start's units depend on its
            // prompt's form (the ids priced first, then the text the program tokenizes).
            self.limits.insert(key, fixed_limit(item.kind));
            return Ok(());
        }
        let (blockhash, _) = self.fresh_blockhash().await?;
        let tx = match self.format {
            Format::Legacy => {
                let mut instructions = vec![ComputeBudgetInstruction::set_compute_unit_limit(
                    MAX_COMPUTE_UNITS,
                )];
                instructions.extend(item.instructions.iter().cloned());
                VersionedTransaction::from(Transaction::new_signed_with_payer(
                    &instructions,
                    Some(&self.payer.pubkey()),
                    &[self.payer],
                    blockhash,
                ))
            }
            Format::V1 => signed(
                v1_message(
                    &self.payer.pubkey(),
                    &item.instructions,
                    blockhash,
                    MAX_COMPUTE_UNITS,
                    None,
                ),
                self.payer,
            ),
        };
        let simulation = self.transport.simulate(&tx).await?;
        let limit = match simulation.result {
            Ok(()) => measured_limit(item.kind, simulation.units),
            Err(_) => fixed_limit(item.kind),
        };
        self.limits.insert(key, limit);
        Ok(())
    }

    /// Simulates an item as it would be sent (its compute-budget instructions included): the
    /// result and the units it would consume at the transport's current state.
    pub async fn simulate(&mut self, item: &Item) -> Result<crate::Simulation, Error> {
        self.measure(item).await?;
        let (blockhash, _) = self.fresh_blockhash().await?;
        let tx = self.sign(item, blockhash);
        self.transport.simulate(&tx).await
    }

    fn sign(&self, item: &Item, blockhash: Hash) -> VersionedTransaction {
        signed(self.message(item, blockhash), self.payer)
    }

    /// A blockhash other than `used`, waiting for the cluster to produce one (a slot, or a
    /// few milliseconds on the bank); it becomes the engine's current blockhash.
    async fn later_blockhash(&mut self, used: &Hash) -> Result<(Hash, u64), Error> {
        let started = Instant::now();
        loop {
            let (hash, last_valid) = self.transport.latest_blockhash().await?;
            if hash != *used {
                self.blockhash = Some((hash, last_valid, Instant::now()));
                return Ok((hash, last_valid));
            }
            if started.elapsed() > NEW_BLOCKHASH_WAIT {
                return Err(Error::Stalled(format!(
                    "{} returned the same blockhash {used} for {} s",
                    self.transport.describe(),
                    NEW_BLOCKHASH_WAIT.as_secs()
                )));
            }
            tokio::time::sleep(self.profile.poll).await;
        }
    }

    /// Waits until nothing sent through this transport can still land: every transaction in
    /// its ledger is final, or its blockhash has expired (past its last valid block height:
    /// it can never land, and one that landed on a fork the cluster drops cannot land
    /// again). The ledger holds what every engine over the transport sent, including
    /// operations that stopped on an error or were dropped mid-run.
    pub async fn settle(&mut self) -> Result<(), Error> {
        self.settle_to(Settle::Final).await
    }

    async fn settle_to(&mut self, to: Settle) -> Result<(), Error> {
        let started = Instant::now();
        loop {
            let pending = self.transport.ledger().pending();
            if pending.is_empty() {
                return Ok(());
            }
            let signatures: Vec<Signature> = pending.iter().map(|s| s.signature).collect();
            let finalized = self.transport.finalized(&signatures).await?;
            // Landed is not final: those stay in the ledger for a later barrier that needs
            // finality; only final or expired ones leave it.
            let landed: Vec<bool> = match to {
                Settle::Final => finalized.clone(),
                Settle::Landed => self
                    .transport
                    .statuses(&signatures)
                    .await?
                    .iter()
                    .map(|s| matches!(s, TxStatus::Landed(_)))
                    .collect(),
            };
            if finalized.len() != signatures.len() || landed.len() != signatures.len() {
                return Err(Error::Transport(format!(
                    "{} returned {} finality and {} status answers for {} signatures",
                    self.transport.describe(),
                    finalized.len(),
                    landed.len(),
                    signatures.len()
                )));
            }
            let mut settled = HashSet::new();
            let mut waited = 0;
            let mut expired: HashMap<Hash, bool> = HashMap::new();
            for ((sent, done), landed) in pending.iter().zip(finalized).zip(landed) {
                let done = done
                    || match expired.get(&sent.blockhash) {
                        Some(e) => *e,
                        None => {
                            let e = self
                                .transport
                                .blockhash_expired(&sent.blockhash, sent.last_valid)
                                .await?;
                            expired.insert(sent.blockhash, e);
                            e
                        }
                    };
                if done {
                    settled.insert(sent.signature);
                } else if !landed {
                    waited += 1;
                }
            }
            self.transport.ledger().settled(&settled);
            if waited == 0 {
                return Ok(());
            }
            if started.elapsed() > SETTLE_WAIT {
                return Err(Error::Stalled(format!(
                    "{} of the transactions sent earlier were neither {} nor expired after {} s on {}",
                    waited,
                    match to {
                        Settle::Final => "final",
                        Settle::Landed => "landed",
                    },
                    SETTLE_WAIT.as_secs(),
                    self.transport.describe()
                )));
            }
            // Not the engine's sub-millisecond bank poll: what is left here waits on the
            // cluster's finality or a blockhash's expiry.
            tokio::time::sleep(self.profile.poll.max(SETTLE_POLL)).await;
        }
    }

    /// Sends one transaction until it lands; an error it landed with becomes
    /// `Error::Transaction` named `what`.
    pub async fn run_one(&mut self, item: Item, what: &'static str) -> Result<(), Error> {
        let window = self.profile.window;
        match self
            .run(vec![item], window, false)
            .await?
            .into_iter()
            .next()
        {
            Some(failure) => Err(failure.into_error(what)),
            None => Ok(()),
        }
    }

    /// Sends every item, at most `window` in flight, until each has landed (successfully or
    /// not). Items whose blockhash expired unlanded are signed again with a fresh one. A
    /// barrier item ([`is_barrier`]) goes out alone, once nothing of this run is in flight and
    /// [`Engine::settle`] found nothing sent earlier that could still land. With
    /// `stop_on_failure`, the first failure stops sending the rest (seals must go in order).
    /// Returns the transactions that landed with an error.
    pub async fn run(
        &mut self,
        items: Vec<Item>,
        window: usize,
        stop_on_failure: bool,
    ) -> Result<Vec<Failure>, Error> {
        // Price every shape first (simulating it for its compute-unit limit where a price is
        // set): the send and status loop below only reads what this found (`priced_fee`).
        let run_started = Instant::now();
        self.timeline.runs += 1;
        let mut priced = HashSet::new();
        for item in &items {
            if priced.insert(shape(item.kind, &item.instructions)) {
                self.fee(item.kind, &item.instructions).await?;
            }
        }
        self.timeline.pricing += run_started.elapsed();
        let mut queue: VecDeque<(Item, u32)> = items.into_iter().map(|item| (item, 0)).collect();
        let mut in_flight: Vec<InFlight> = Vec::new();
        let mut failures = Vec::new();
        let mut expired: HashSet<Hash> = HashSet::new();
        let window = window.max(1);
        while !queue.is_empty() || !in_flight.is_empty() {
            self.timeline.loops += 1;
            if stop_on_failure && !failures.is_empty() {
                queue.clear();
            }
            let barrier = queue.front().and_then(|(item, _)| barrier(item));
            if let (Some(to), true) = (barrier, in_flight.is_empty()) {
                let t = Instant::now();
                self.settle_to(to).await?;
                self.timeline.settling += t.elapsed();
            }
            let barrier = barrier.is_some();
            if in_flight.len() < window && !queue.is_empty() && (!barrier || in_flight.is_empty()) {
                let t = Instant::now();
                let (blockhash, last_valid) = self.fresh_blockhash().await?;
                self.timeline.blockhash += t.elapsed();
                let mut batch = Vec::new();
                while in_flight.len() < window {
                    // A barrier goes alone: nothing after it joins its batch, nothing before.
                    if !batch.is_empty() && queue.front().is_some_and(|(item, _)| is_barrier(item))
                    {
                        break;
                    }
                    let Some((item, attempts)) = queue.pop_front() else {
                        break;
                    };
                    if attempts >= MAX_ATTEMPTS {
                        return Err(Error::Stalled(format!(
                            "a {} transaction was not accepted after {MAX_ATTEMPTS} signings; is {} reachable?",
                            item.kind.name(),
                            self.transport.describe()
                        )));
                    }
                    let (mut blockhash, mut last_valid) = (blockhash, last_valid);
                    let t = Instant::now();
                    let mut tx = self.sign(&item, blockhash);
                    self.timeline.signing += t.elapsed();
                    if self.sent.contains(&tx.signatures[0]) {
                        // This very transaction went out before (an item planned again, the
                        // same as one that landed with an error, under the same blockhash):
                        // the cluster would only answer with the old result. Sign it anew
                        // under a later blockhash.
                        (blockhash, last_valid) = self.later_blockhash(&blockhash).await?;
                        tx = self.sign(&item, blockhash);
                    }
                    self.sent.insert(tx.signatures[0]);
                    // In the transport's ledger before it goes: whatever happens to this run,
                    // a later barrier waits for it.
                    self.transport.ledger().record(Sent {
                        signature: tx.signatures[0],
                        blockhash,
                        last_valid,
                    });
                    let alone = is_barrier(&item);
                    in_flight.push(InFlight {
                        item,
                        signature: tx.signatures[0],
                        blockhash,
                        last_valid,
                        attempts: attempts + 1,
                    });
                    batch.push(tx);
                    if alone {
                        break;
                    }
                }
                let t = Instant::now();
                self.transport.send(&batch).await?;
                self.timeline.sending += t.elapsed();
            }

            // Expiry first, statuses second: a blockhash known expired before a status read
            // that finds nothing means the transaction can never land.
            let t = Instant::now();
            let current = Some(self.fresh_blockhash().await?.0);
            self.timeline.blockhash += t.elapsed();
            let t = Instant::now();
            let mut checked = HashSet::new();
            for f in &in_flight {
                if Some(f.blockhash) != current
                    && !expired.contains(&f.blockhash)
                    && checked.insert(f.blockhash)
                    && self
                        .transport
                        .blockhash_expired(&f.blockhash, f.last_valid)
                        .await?
                {
                    expired.insert(f.blockhash);
                }
            }
            self.timeline.expiry += t.elapsed();
            let t = Instant::now();
            let signatures: Vec<Signature> = in_flight.iter().map(|f| f.signature).collect();
            let statuses = self.transport.statuses(&signatures).await?;
            self.timeline.statuses += t.elapsed();
            if statuses.len() != signatures.len() {
                return Err(Error::Transport(format!(
                    "{} returned {} signature statuses for {} signatures",
                    self.transport.describe(),
                    statuses.len(),
                    signatures.len()
                )));
            }
            let mut still = Vec::with_capacity(in_flight.len());
            let mut resolved = 0usize;
            let mut retry = Vec::new();
            // Expired unlanded: it can never land, so no barrier need wait for it.
            let mut gone = HashSet::new();
            for (f, status) in in_flight.into_iter().zip(statuses) {
                match status {
                    TxStatus::Landed(result) => {
                        resolved += 1;
                        self.tally.fees += self.priced_fee(&f.item);
                        match result {
                            Ok(()) => self.count(&f.item),
                            Err(error) => {
                                self.tally.failed += 1;
                                failures.push(Failure {
                                    item: f.item,
                                    error,
                                });
                            }
                        }
                    }
                    TxStatus::Unknown if expired.contains(&f.blockhash) => {
                        resolved += 1;
                        self.tally.resigned += 1;
                        gone.insert(f.signature);
                        retry.push((f.item, f.attempts));
                    }
                    _ => still.push(f),
                }
            }
            if !gone.is_empty() {
                self.transport.ledger().settled(&gone);
            }
            for entry in retry.into_iter().rev() {
                queue.push_front(entry);
            }
            in_flight = still;
            if resolved == 0 && !in_flight.is_empty() {
                let t = Instant::now();
                self.transport.wait_for_progress().await;
                self.timeline.waiting += t.elapsed();
            }
        }
        self.timeline.running += run_started.elapsed();
        Ok(failures)
    }

    fn count(&mut self, item: &Item) {
        let tally = &mut self.tally;
        match item.kind {
            Kind::Create => tally.create += 1,
            Kind::Write => {
                let bytes = item.bytes();
                tally.write += 1;
                tally.bytes_written += bytes as u64;
                tally.write_bytes_min = Some(tally.write_bytes_min.map_or(bytes, |m| m.min(bytes)));
                tally.write_bytes_max = tally.write_bytes_max.max(bytes);
                if let Subject::Write { section, .. } = item.subject {
                    self.progress.wrote(section, bytes as u64);
                }
            }
            Kind::Seal => {
                tally.seal += 1;
                self.progress.sealed();
            }
            Kind::Reopen | Kind::Close | Kind::StartRun | Kind::Step | Kind::CloseRun => {
                tally.other += 1
            }
        }
    }
}

/// The fee the cluster charges for one transaction of exactly `instructions` paid by `payer`
/// (its signers are the message's: the payer and any instruction signer), under `blockhash`.
pub async fn message_fee<T: Transport>(
    t: &T,
    payer: &Pubkey,
    instructions: &[Instruction],
    blockhash: Hash,
) -> Result<u64, Error> {
    let message = Message::new_with_blockhash(instructions, Some(payer), &blockhash);
    t.fee_for_message(&VersionedMessage::Legacy(message)).await
}

/// A message signed by its one signer, the payer.
fn signed(message: VersionedMessage, payer: &Keypair) -> VersionedTransaction {
    VersionedTransaction::try_new(message, &[payer]).expect("the payer signs its own message")
}

/// What a legacy transaction of compute-unit limit `limit` at `price` micro-lamports per unit
/// pays beside its signatures (the runtime rounds up): the priority fee its v1 equivalent
/// names in lamports.
pub fn priority_fee(price: u64, limit: u32) -> u64 {
    (price as u128 * limit as u128)
        .div_ceil(1_000_000)
        .min(u64::MAX as u128) as u64
}

/// A version 1 message of `instructions` paid by `payer`: compute-unit limit `limit`, the
/// loaded-data limit [`V1_LOADED_DATA_LIMIT`], the default heap, and `priority_fee` lamports
/// when set.
pub fn v1_message(
    payer: &Pubkey,
    instructions: &[Instruction],
    blockhash: Hash,
    limit: u32,
    priority_fee: Option<u64>,
) -> VersionedMessage {
    let config = v1::TransactionConfig {
        priority_fee,
        compute_unit_limit: Some(limit),
        loaded_accounts_data_size_limit: Some(V1_LOADED_DATA_LIMIT),
        heap_size: None,
    };
    VersionedMessage::V1(
        v1::Message::try_compile_with_config(payer, instructions, blockhash, config)
            .expect("a message of at most 64 accounts compiles"),
    )
}

/// Serialized size of a transaction of `instructions` paid by `payer` in `format`
/// (signatures included): legacy with the two compute-budget instructions if `priced`; v1
/// with its limits, and its priority fee if `priced`.
pub fn transaction_len_in(
    format: Format,
    payer: &Pubkey,
    priced: bool,
    instructions: &[Instruction],
) -> usize {
    match format {
        Format::Legacy => transaction_len(payer, priced, instructions),
        Format::V1 => {
            let message = v1_message(
                payer,
                instructions,
                Hash::default(),
                MAX_COMPUTE_UNITS,
                priced.then_some(u64::MAX),
            );
            // V1: the message (its version byte first), then one signature per signer, no
            // length prefix.
            let signatures = message.header().num_required_signatures as usize;
            message.serialize().len() + 64 * signatures
        }
    }
}

/// Most payload bytes one Write carries in `format` with one signer (the authority paying),
/// with or without a price (legacy: the two compute-budget instructions; v1: its priority
/// fee). Only sizes matter: the three keys stand for any authority, weight account and
/// program id.
pub fn write_capacity_in(format: Format, priced: bool) -> usize {
    let authority = Pubkey::new_from_array([1; 32]);
    let weight = Pubkey::new_from_array([2; 32]);
    let program = Pubkey::new_from_array([3; 32]);
    let packet = format.packet_len();
    let mut bytes = packet;
    while bytes > 1 {
        let write = curta_interface::instruction::write(
            &program,
            &weight,
            &authority,
            u32::MAX,
            &vec![0xff; bytes],
        );
        if transaction_len_in(format, &authority, priced, &[write]) <= packet {
            break;
        }
        bytes -= 1;
    }
    bytes
}

/// Serialized size of a transaction of `instructions` paid by `payer` (signatures included),
/// with the two compute-budget instructions first if `compute_budget`.
pub fn transaction_len(
    payer: &Pubkey,
    compute_budget: bool,
    instructions: &[Instruction],
) -> usize {
    let mut all = Vec::new();
    if compute_budget {
        all.push(ComputeBudgetInstruction::set_compute_unit_limit(
            MAX_COMPUTE_UNITS,
        ));
        all.push(ComputeBudgetInstruction::set_compute_unit_price(u64::MAX));
    }
    all.extend(instructions.iter().cloned());
    let message = Message::new(&all, Some(payer));
    let signatures = message.header.num_required_signatures as usize;
    short_vec_len(signatures) + 64 * signatures + message.serialize().len()
}

/// Most payload bytes one legacy Write carries with one signer (the authority paying), with
/// or without the two compute-budget instructions.
pub fn write_capacity(compute_budget: bool) -> usize {
    write_capacity_in(Format::Legacy, compute_budget)
}

fn short_vec_len(n: usize) -> usize {
    match n {
        0..=0x7f => 1,
        0x80..=0x3fff => 2,
        _ => 3,
    }
}
