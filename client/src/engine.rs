//! The one engine: signs, sends many transactions in flight, confirms them, re-signs those
//! whose blockhash expired, and counts what landed and what it cost. It knows nothing of
//! publishing; the operations (publish, seal, close) hand it items planned from on-chain
//! state, and plan again from on-chain state after each run, so nothing depends on a journal.

use crate::progress::Progress;
use crate::transport::{Profile, Transport, TxStatus};
use crate::Error;
use solana_compute_budget_interface::ComputeBudgetInstruction;
use solana_hash::Hash;
use solana_instruction::Instruction;
use solana_keypair::Keypair;
use solana_message::Message;
use solana_signature::Signature;
use solana_signer::Signer;
use solana_transaction::Transaction;
use solana_transaction_error::TransactionError;
use std::collections::{HashMap, HashSet, VecDeque};
use std::time::Instant;

/// The largest serialized transaction (the packet size).
pub const PACKET_LEN: usize = 1232;
/// An item not accepted after this many signings stops the run.
const MAX_ATTEMPTS: u32 = 30;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Kind {
    /// CreateModel and/or weight account creation + InitWeightAccount.
    Create,
    Write,
    Seal,
    /// Reopen, Close.
    Other,
}

/// One transaction's instructions (without compute-budget instructions), and what it is for.
#[derive(Clone, Debug)]
pub struct Item {
    pub kind: Kind,
    pub instructions: Vec<Instruction>,
    /// Section a Write goes to (progress), or a seal's chunk index.
    pub section: usize,
    /// Payload bytes of a Write.
    pub bytes: usize,
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

/// A transaction that landed with an error.
#[derive(Clone, Debug)]
pub struct Failure {
    pub item: Item,
    pub error: TransactionError,
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
    limits: HashMap<Kind, u32>,
    fees: HashMap<Kind, u64>,
    blockhash: Option<(Hash, u64, Instant)>,
    pub tally: Tally,
    pub progress: Progress,
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
            limits: HashMap::new(),
            fees: HashMap::new(),
            blockhash: None,
            tally: Tally::default(),
            progress,
        }
    }

    pub fn transport(&self) -> &T {
        self.transport
    }

    pub fn payer(&self) -> &Keypair {
        self.payer
    }

    /// The instructions actually sent for an item: with a compute-unit price, a tight limit
    /// and the price first; without one, nothing extra.
    fn instructions(&self, item: &Item) -> Vec<Instruction> {
        let mut instructions = Vec::with_capacity(item.instructions.len() + 2);
        if let Some(price) = self.price {
            let limit = self.limits.get(&item.kind).copied().unwrap_or(1_400_000);
            instructions.push(ComputeBudgetInstruction::set_compute_unit_limit(limit));
            instructions.push(ComputeBudgetInstruction::set_compute_unit_price(price));
        }
        instructions.extend(item.instructions.iter().cloned());
        instructions
    }

    /// Serialized size of the transaction an item becomes (signatures included).
    pub fn transaction_len(&self, instructions: &[Instruction]) -> usize {
        let mut all = Vec::new();
        if self.price.is_some() {
            all.push(ComputeBudgetInstruction::set_compute_unit_limit(1_400_000));
            all.push(ComputeBudgetInstruction::set_compute_unit_price(u64::MAX));
        }
        all.extend(instructions.iter().cloned());
        let message = Message::new(&all, Some(&self.payer.pubkey()));
        let signatures = message.header.num_required_signatures as usize;
        short_vec_len(signatures) + 64 * signatures + message.serialize().len()
    }

    /// The fee of one transaction of this kind (all of a kind have the same signers and
    /// compute budget).
    pub async fn fee(&mut self, kind: Kind, example: &[Instruction]) -> Result<u64, Error> {
        if let Some(fee) = self.fees.get(&kind) {
            return Ok(*fee);
        }
        let item = Item {
            kind,
            instructions: example.to_vec(),
            section: 0,
            bytes: 0,
        };
        let (blockhash, _) = self.fresh_blockhash().await?;
        let message = Message::new_with_blockhash(
            &self.instructions(&item),
            Some(&self.payer.pubkey()),
            &blockhash,
        );
        let fee = self.transport.fee_for_message(&message).await?;
        self.fees.insert(kind, fee);
        Ok(fee)
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

    /// With a compute-unit price: simulate the first item of a kind to measure its compute
    /// units, and set that kind's limit to the measure plus a margin. A simulation that fails
    /// stops everything before anything of that kind is spent.
    async fn measure(&mut self, item: &Item) -> Result<(), Error> {
        if self.price.is_none() || self.limits.contains_key(&item.kind) {
            return Ok(());
        }
        let (blockhash, _) = self.fresh_blockhash().await?;
        let mut instructions = vec![ComputeBudgetInstruction::set_compute_unit_limit(1_400_000)];
        instructions.extend(item.instructions.iter().cloned());
        let tx = Transaction::new_signed_with_payer(
            &instructions,
            Some(&self.payer.pubkey()),
            &[self.payer],
            blockhash,
        );
        let simulation = self.transport.simulate(&tx).await?;
        if let Err(error) = simulation.result {
            return Err(Error::Transaction {
                what: kind_name(item.kind),
                error,
            });
        }
        // Hashing a full 65,536-byte chunk costs about 33,000 units whichever chunk is measured.
        let floor = if item.kind == Kind::Seal {
            50_000
        } else {
            1_000
        };
        let limit = (simulation.units + simulation.units / 5 + 1_000)
            .max(floor)
            .min(1_400_000);
        self.limits.insert(item.kind, limit as u32);
        Ok(())
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
            Some(failure) => Err(Error::Transaction {
                what,
                error: failure.error,
            }),
            None => Ok(()),
        }
    }

    /// Sends every item, at most `window` in flight, until each has landed (successfully or
    /// not). Items whose blockhash expired unlanded are signed again with a fresh one. With
    /// `stop_on_failure`, the first failure stops sending the rest (seals must go in order).
    /// Returns the transactions that landed with an error.
    pub async fn run(
        &mut self,
        items: Vec<Item>,
        window: usize,
        stop_on_failure: bool,
    ) -> Result<Vec<Failure>, Error> {
        let mut queue: VecDeque<(Item, u32)> = items.into_iter().map(|item| (item, 0)).collect();
        let mut in_flight: Vec<InFlight> = Vec::new();
        let mut failures = Vec::new();
        let mut expired: HashSet<Hash> = HashSet::new();
        let window = window.max(1);
        while !queue.is_empty() || !in_flight.is_empty() {
            if stop_on_failure && !failures.is_empty() {
                queue.clear();
            }
            if in_flight.len() < window && !queue.is_empty() {
                let (blockhash, last_valid) = self.fresh_blockhash().await?;
                let mut batch = Vec::new();
                while in_flight.len() < window {
                    let Some((item, attempts)) = queue.pop_front() else {
                        break;
                    };
                    if attempts >= MAX_ATTEMPTS {
                        return Err(Error::Stalled(format!(
                            "a {} transaction was not accepted after {MAX_ATTEMPTS} signings; is {} reachable?",
                            kind_name(item.kind),
                            self.transport.describe()
                        )));
                    }
                    self.measure(&item).await?;
                    let tx = Transaction::new_signed_with_payer(
                        &self.instructions(&item),
                        Some(&self.payer.pubkey()),
                        &[self.payer],
                        blockhash,
                    );
                    in_flight.push(InFlight {
                        item,
                        signature: tx.signatures[0],
                        blockhash,
                        last_valid,
                        attempts: attempts + 1,
                    });
                    batch.push(tx);
                }
                self.transport.send(&batch).await?;
            }

            // Expiry first, statuses second: a blockhash known expired before a status read
            // that finds nothing means the transaction can never land.
            let current = Some(self.fresh_blockhash().await?.0);
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
            let signatures: Vec<Signature> = in_flight.iter().map(|f| f.signature).collect();
            let statuses = self.transport.statuses(&signatures).await?;
            let mut still = Vec::with_capacity(in_flight.len());
            let mut resolved = 0usize;
            let mut retry = Vec::new();
            for (f, status) in in_flight.into_iter().zip(statuses) {
                match status {
                    TxStatus::Landed(result) => {
                        resolved += 1;
                        let fee = self.fee(f.item.kind, &f.item.instructions).await?;
                        self.tally.fees += fee;
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
                        retry.push((f.item, f.attempts));
                    }
                    _ => still.push(f),
                }
            }
            for entry in retry.into_iter().rev() {
                queue.push_front(entry);
            }
            in_flight = still;
            if resolved == 0 && !in_flight.is_empty() {
                tokio::time::sleep(self.profile.poll).await;
            }
        }
        Ok(failures)
    }

    fn count(&mut self, item: &Item) {
        let tally = &mut self.tally;
        match item.kind {
            Kind::Create => tally.create += 1,
            Kind::Write => {
                tally.write += 1;
                tally.bytes_written += item.bytes as u64;
                tally.write_bytes_min = Some(
                    tally
                        .write_bytes_min
                        .map_or(item.bytes, |m| m.min(item.bytes)),
                );
                tally.write_bytes_max = tally.write_bytes_max.max(item.bytes);
                self.progress.wrote(item.section, item.bytes as u64);
            }
            Kind::Seal => {
                tally.seal += 1;
                self.progress.sealed();
            }
            Kind::Other => tally.other += 1,
        }
    }
}

pub fn kind_name(kind: Kind) -> &'static str {
    match kind {
        Kind::Create => "create",
        Kind::Write => "write",
        Kind::Seal => "seal",
        Kind::Other => "reopen/close",
    }
}

fn short_vec_len(n: usize) -> usize {
    match n {
        0..=0x7f => 1,
        0x80..=0x3fff => 2,
        _ => 3,
    }
}
