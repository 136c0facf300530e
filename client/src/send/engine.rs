//! The one engine: signs, sends many transactions in flight, confirms them, re-signs those
//! whose blockhash expired, and counts what landed and what it cost. It knows nothing of what
//! it sends: the caller hands it items ([`Item`]) with their compute-unit policy and barriers,
//! and plans again from on-chain state after each send, so nothing depends on a journal.

use super::format::{priority_fee, signed, transaction_len_in, v1_message, Format};
use super::item::{Bar, Failure, Item, Settle, Shape, Units, MAX_COMPUTE_UNITS};
use super::progress::Progress;
use super::tally::{Tally, Timeline};
use super::transport::{Profile, Sent, Simulation, Transport, TxStatus};
use crate::Error;
use solana_compute_budget_interface::ComputeBudgetInstruction;
use solana_hash::Hash;
use solana_instruction::Instruction;
use solana_keypair::Keypair;
use solana_message::{Message, VersionedMessage};
use solana_signature::Signature;
use solana_signer::Signer;
use solana_transaction::versioned::VersionedTransaction;
use solana_transaction::Transaction;
use std::collections::{HashMap, HashSet, VecDeque};
use std::time::{Duration, Instant};

/// An item not accepted after this many signings stops the send.
const MAX_ATTEMPTS: u32 = 30;
/// How long to wait for the cluster's next blockhash before giving up.
const NEW_BLOCKHASH_WAIT: Duration = Duration::from_secs(60);
/// How long [`Engine::settle`] waits for earlier transactions to become final or expire (a
/// cluster's blockhash lives about 150 blocks).
const SETTLE_WAIT: Duration = Duration::from_secs(300);
/// The least pause between two looks of [`Engine::settle`].
const SETTLE_POLL: Duration = Duration::from_millis(20);

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
    /// engine.
    limits: HashMap<Shape, u32>,
    /// By label and the compute-unit limit its transactions carry (it changes when measured).
    fees: HashMap<(&'static str, Option<u32>), u64>,
    blockhash: Option<(Hash, u64, Instant)>,
    /// Every signature this engine sent: a transaction is never sent twice.
    sent: HashSet<Signature>,
    pub tally: Tally,
    pub progress: Progress,
    pub timeline: Timeline,
}

impl<T: Transport> Drop for Engine<'_, T> {
    fn drop(&mut self) {
        if std::env::var_os("CURTA_TIMELINE").is_some() && self.timeline.sends > 0 {
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

    /// Whether transactions carry a compute-unit price.
    pub fn priced(&self) -> bool {
        self.price.is_some()
    }

    /// The instructions actually sent for an item: with a compute-unit price, a tight limit
    /// and the price first; without one, nothing extra but the limit of an item whose units
    /// are [`Units::Fixed`].
    fn instructions(&self, item: &Item) -> Vec<Instruction> {
        let mut instructions = Vec::with_capacity(item.instructions.len() + 2);
        if let (None, Units::Fixed(limit)) = (self.price, item.units) {
            instructions.push(ComputeBudgetInstruction::set_compute_unit_limit(limit));
        }
        if let Some(price) = self.price {
            let limit = self.limit(item).unwrap_or(MAX_COMPUTE_UNITS);
            instructions.push(ComputeBudgetInstruction::set_compute_unit_limit(limit));
            instructions.push(ComputeBudgetInstruction::set_compute_unit_price(price));
        }
        instructions.extend(item.instructions.iter().cloned());
        instructions
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
                let limit = self.limit(item).unwrap_or(MAX_COMPUTE_UNITS);
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

    /// The compute-unit limit an item of this shape carries, once measured (or fixed);
    /// `None` in legacy without a price.
    pub fn limit(&self, item: &Item) -> Option<u32> {
        match item.units {
            // An item's own: items of the same label may be measured instead.
            Units::Fixed(limit) => Some(limit),
            _ => self.limits.get(&item.shape()).copied(),
        }
    }

    /// The fee of one transaction of this item's shape (one signer; with a price, the limit
    /// it will really carry: `item` is measured first if its shape has no limit yet). Call it
    /// on a representative of each shape before a cost check so that the check and the
    /// transactions sent use the same limits.
    pub async fn fee(&mut self, item: &Item) -> Result<u64, Error> {
        self.measure(item).await?;
        let key = (item.label, self.limit(item));
        if let Some(fee) = self.fees.get(&key) {
            return Ok(*fee);
        }
        let (blockhash, _) = self.fresh_blockhash().await?;
        let fee = self
            .transport
            .fee_for_message(&self.message(item, blockhash))
            .await?;
        self.fees.insert(key, fee);
        Ok(fee)
    }

    /// The fee [`Engine::fee`] found for an item's label and limit (every item
    /// [`Engine::send`] sends is priced before its send loop starts).
    fn priced_fee(&self, item: &Item) -> u64 {
        self.fees[&(item.label, self.limit(item))]
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
    /// the measure plus a margin ([`Units::measured`]). A simulation the chain refuses (its
    /// accounts do not exist yet, or already do) sets the item's fallback instead: the caller
    /// goes on and plans again as usual. A [`Units::Fixed`] limit is never measured.
    async fn measure(&mut self, item: &Item) -> Result<(), Error> {
        let key = item.shape();
        if (self.price.is_none() && self.format == Format::Legacy) || self.limits.contains_key(&key)
        {
            return Ok(());
        }
        if let Units::Fixed(_) = item.units {
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
            Ok(()) => item.units.measured(simulation.units),
            Err(_) => item.units.fallback(),
        };
        self.limits.insert(key, limit);
        Ok(())
    }

    /// Simulates an item as it would be sent (its compute-budget instructions included): the
    /// result and the units it would consume at the transport's current state.
    pub async fn simulate(&mut self, item: &Item) -> Result<Simulation, Error> {
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
    pub async fn send_one(&mut self, item: Item, what: &'static str) -> Result<(), Error> {
        let window = self.profile.window;
        match self
            .send(vec![item], window, false)
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
    /// barrier item ([`Item::barrier`]) goes out alone, once nothing of this send is in flight
    /// and [`Engine::settle`] found what was sent earlier as far as the barrier asks. With
    /// `stop_on_failure`, the first failure stops sending the rest. Returns the transactions
    /// that landed with an error.
    pub async fn send(
        &mut self,
        items: Vec<Item>,
        window: usize,
        stop_on_failure: bool,
    ) -> Result<Vec<Failure>, Error> {
        let started = Instant::now();
        self.timeline.sends += 1;
        self.price_shapes(&items).await?;
        self.timeline.pricing += started.elapsed();
        let mut round = Round {
            queue: items.into_iter().map(|item| (item, 0)).collect(),
            in_flight: Vec::new(),
            failures: Vec::new(),
            expired: HashSet::new(),
        };
        let window = window.max(1);
        while !round.queue.is_empty() || !round.in_flight.is_empty() {
            self.timeline.loops += 1;
            if stop_on_failure && !round.failures.is_empty() {
                round.queue.clear();
            }
            let barrier = round.queue.front().and_then(|(item, _)| item.barrier);
            if let (Some(to), true) = (barrier, round.in_flight.is_empty()) {
                let t = Instant::now();
                self.settle_to(to).await?;
                self.timeline.settling += t.elapsed();
            }
            if round.in_flight.len() < window
                && !round.queue.is_empty()
                && (barrier.is_none() || round.in_flight.is_empty())
            {
                self.send_batch(&mut round, window).await?;
            }
            let resolved = self.resolve(&mut round).await?;
            if resolved == 0 && !round.in_flight.is_empty() {
                let t = Instant::now();
                self.transport.wait_for_progress().await;
                self.timeline.waiting += t.elapsed();
            }
        }
        self.timeline.total += started.elapsed();
        Ok(round.failures)
    }

    /// Prices every shape among `items` (simulating it for its compute-unit limit where one is
    /// carried): the send loop only reads what this found ([`Engine::priced_fee`]).
    async fn price_shapes(&mut self, items: &[Item]) -> Result<(), Error> {
        let mut priced = HashSet::new();
        for item in items {
            if priced.insert(item.shape()) {
                self.fee(item).await?;
            }
        }
        Ok(())
    }

    /// Signs and hands over the next items of the queue, up to `window` in flight, under one
    /// blockhash; a barrier goes alone.
    async fn send_batch(&mut self, round: &mut Round, window: usize) -> Result<(), Error> {
        let t = Instant::now();
        let (blockhash, last_valid) = self.fresh_blockhash().await?;
        self.timeline.blockhash += t.elapsed();
        let mut batch = Vec::new();
        while round.in_flight.len() < window {
            // A barrier goes alone: nothing after it joins its batch, nothing before.
            let next_is_barrier = round
                .queue
                .front()
                .is_some_and(|(item, _)| item.barrier.is_some());
            if !batch.is_empty() && next_is_barrier {
                break;
            }
            let Some((item, attempts)) = round.queue.pop_front() else {
                break;
            };
            if attempts >= MAX_ATTEMPTS {
                return Err(Error::Stalled(format!(
                    "a {} transaction was not accepted after {MAX_ATTEMPTS} signings; is {} reachable?",
                    item.label,
                    self.transport.describe()
                )));
            }
            let (mut blockhash, mut last_valid) = (blockhash, last_valid);
            let t = Instant::now();
            let mut tx = self.sign(&item, blockhash);
            self.timeline.signing += t.elapsed();
            if self.sent.contains(&tx.signatures[0]) {
                // This very transaction went out before (an item planned again, the same as
                // one that landed with an error, under the same blockhash): the cluster would
                // only answer with the old result. Sign it anew under a later blockhash.
                (blockhash, last_valid) = self.later_blockhash(&blockhash).await?;
                tx = self.sign(&item, blockhash);
            }
            self.sent.insert(tx.signatures[0]);
            // In the transport's ledger before it goes: whatever happens to this send, a later
            // barrier waits for it.
            self.transport.ledger().record(Sent {
                signature: tx.signatures[0],
                blockhash,
                last_valid,
            });
            let alone = item.barrier.is_some();
            round.in_flight.push(InFlight {
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
        Ok(())
    }

    /// Reads what became of the transactions in flight: those that landed are counted (their
    /// failures kept), those whose blockhash expired unlanded go back to the front of the
    /// queue. Returns how many resolved.
    async fn resolve(&mut self, round: &mut Round) -> Result<usize, Error> {
        // Expiry first, statuses second: a blockhash known expired before a status read that
        // finds nothing means the transaction can never land.
        let t = Instant::now();
        let current = Some(self.fresh_blockhash().await?.0);
        self.timeline.blockhash += t.elapsed();
        let t = Instant::now();
        let mut checked = HashSet::new();
        for f in &round.in_flight {
            if Some(f.blockhash) != current
                && !round.expired.contains(&f.blockhash)
                && checked.insert(f.blockhash)
                && self
                    .transport
                    .blockhash_expired(&f.blockhash, f.last_valid)
                    .await?
            {
                round.expired.insert(f.blockhash);
            }
        }
        self.timeline.expiry += t.elapsed();
        let t = Instant::now();
        let signatures: Vec<Signature> = round.in_flight.iter().map(|f| f.signature).collect();
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
        let mut still = Vec::with_capacity(round.in_flight.len());
        let mut resolved = 0usize;
        let mut retry = Vec::new();
        // Expired unlanded: it can never land, so no barrier need wait for it.
        let mut gone = HashSet::new();
        for (f, status) in std::mem::take(&mut round.in_flight)
            .into_iter()
            .zip(statuses)
        {
            match status {
                TxStatus::Landed(result) => {
                    resolved += 1;
                    self.tally.fees += self.priced_fee(&f.item);
                    match result {
                        Ok(()) => self.count(&f.item),
                        Err(error) => {
                            self.tally.failed += 1;
                            round.failures.push(Failure {
                                item: f.item,
                                error,
                            });
                        }
                    }
                }
                TxStatus::Unknown if round.expired.contains(&f.blockhash) => {
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
            round.queue.push_front(entry);
        }
        round.in_flight = still;
        Ok(resolved)
    }

    /// Counts an item that landed without an error, and moves its progress bar.
    fn count(&mut self, item: &Item) {
        self.tally.count(item);
        match item.bar {
            Some(Bar::Bytes(key)) => self.progress.add_bytes(key, item.bytes as u64),
            Some(Bar::Count) => self.progress.add_one(),
            None => {}
        }
    }
}

/// One [`Engine::send`]'s items: waiting (with the signings each had), in flight, landed with
/// an error; and the blockhashes known expired.
struct Round {
    queue: VecDeque<(Item, u32)>,
    in_flight: Vec<InFlight>,
    failures: Vec<Failure>,
    expired: HashSet<Hash>,
}
