//! Helpers for the client tests and benchmarks: a transport that misbehaves in controlled
//! ways (or not at all) around another and records what it forwarded and what landed, and
//! the expected rent computed from the spec's numbers.

use curta_client::{Error, Ledger, Profile, Simulation, Transport, TxStatus};
use curta_core::convert::synth::Rng;
use solana_account::Account;
use solana_hash::Hash;
use solana_message::VersionedMessage;
use solana_pubkey::Pubkey;
use solana_signature::Signature;
use solana_transaction::versioned::VersionedTransaction;
use std::collections::HashSet;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// Rent-exempt minimum from toolchain.md's numbers: (128 + len) x 6,960 lamports.
pub fn rent(data_len: usize) -> u64 {
    (128 + data_len as u64) * 6_960
}

/// Rent of a model and its weight accounts (808-byte model, 2,048-byte weight headers).
pub fn model_rent(section_lengths: &[usize]) -> u64 {
    rent(808) + section_lengths.iter().map(|l| rent(2_048 + l)).sum::<u64>()
}

/// Fee per signature on the bank (one signer per transaction, no priority fee).
pub const FEE: u64 = 5_000;

/// Whether a message (legacy or version 1) is a Curta Write (instruction tag 2) of
/// `program`, with or without compute-budget instructions before it.
pub fn is_write(program: &Pubkey, message: &VersionedMessage) -> bool {
    curta_tag(program, message) == Some(2)
}

/// The instruction tag of a message's Curta instruction of `program` (its last), if it ends
/// with one: 2 Write, 3 Seal, 4 Reopen, 5 Close.
pub fn curta_tag(program: &Pubkey, message: &VersionedMessage) -> Option<u8> {
    message.instructions().last().and_then(|ix| {
        (message.static_account_keys()[ix.program_id_index as usize] == *program)
            .then(|| ix.data.first().copied())
            .flatten()
    })
}

/// What a wrapper does on top of the bank.
pub enum Fault {
    /// Forward everything.
    None,
    /// Silently drop each transaction with probability `percent` / 100.
    Drop { percent: u64 },
    /// Silently drop the first `count` Write transactions sent (they go out together, in one
    /// window), then forward everything: each of those is signed under a blockhash that
    /// expires before it lands.
    DropFirstWrites { count: u64 },
    /// Hand out `blockhash` (too old to execute, still in the bank's queue) for the first
    /// `fetches` blockhash requests, then the latest: everything signed with it must be
    /// signed again.
    ExpiredBlockhash {
        blockhash: Hash,
        last_valid: u64,
        fetches: u64,
    },
    /// Keep the first transaction whose Curta instruction has tag `tag` (not forwarded: a
    /// connection that failed after the bytes went out) and fail that send call, as if the
    /// connection broke: the operation stops with a transport error. [`Faulty::held`]
    /// returns it, for a later [`Fault::LateBefore`].
    HoldFirst { tag: u8 },
    /// Forward everything, but first hand `late` to the bank right before the transaction
    /// with Curta tag `tag` that comes after `skip` others of that tag, and wait until it has
    /// executed or its blockhash has expired (then it never will): a transaction signed by
    /// an earlier run, delivered late. [`Faulty::late_landed`] says which.
    LateBefore {
        late: Box<VersionedTransaction>,
        last_valid: u64,
        tag: u8,
        skip: u64,
    },
    /// Deliver each batch of sent transactions last first, each one executed before the next
    /// is handed over: the worst order a leader may pick, deterministically.
    Reverse,
}

/// A transport around another that injects a fault (or none), and records every transaction
/// it forwarded and the order in which they were seen landed, so that a test can count what
/// landed without trusting the client's report (and a benchmark can send the same again).
pub struct Faulty<'a, T: Transport> {
    pub inner: &'a T,
    fault: Fault,
    rng: Mutex<Rng>,
    forwarded: Mutex<Vec<VersionedTransaction>>,
    /// Signatures the inner transport reported landed successfully, first sighting first.
    landed: Mutex<(Vec<Signature>, HashSet<Signature>)>,
    dropped: Mutex<u64>,
    /// Blockhash requests answered so far.
    fetched: Mutex<u64>,
    /// Error every call after this many sends (simulates a crash), if set.
    pub fail_after_sends: Mutex<Option<u64>>,
    /// The program id the client is told to use, when it is not the bank's.
    pub program_id: Option<Pubkey>,
    /// [`Fault::HoldFirst`]'s transaction.
    held: Mutex<Option<VersionedTransaction>>,
    /// [`Fault::LateBefore`]: transactions of its tag seen so far, and whether the late
    /// transaction landed (`None` until it was handed over).
    late: Mutex<(u64, Option<bool>)>,
}

impl<'a, T: Transport> Faulty<'a, T> {
    pub fn new(inner: &'a T, fault: Fault, seed: u64) -> Self {
        Faulty {
            inner,
            fault,
            rng: Mutex::new(Rng::new(seed)),
            forwarded: Mutex::new(Vec::new()),
            landed: Mutex::default(),
            dropped: Mutex::new(0),
            fetched: Mutex::new(0),
            fail_after_sends: Mutex::new(None),
            program_id: None,
            held: Mutex::new(None),
            late: Mutex::new((0, None)),
        }
    }

    /// Forwards everything, but tells the client the program lives at `program_id`.
    pub fn with_program_id(inner: &'a T, program_id: Pubkey) -> Self {
        Faulty {
            program_id: Some(program_id),
            ..Faulty::new(inner, Fault::None, 0)
        }
    }

    /// The signatures of every transaction forwarded.
    pub fn forwarded(&self) -> Vec<Signature> {
        let forwarded = self.forwarded.lock().unwrap();
        forwarded.iter().map(|tx| tx.signatures[0]).collect()
    }

    /// Every transaction forwarded, in sending order.
    pub fn forwarded_transactions(&self) -> Vec<VersionedTransaction> {
        self.forwarded.lock().unwrap().clone()
    }

    /// The messages of the forwarded transactions that landed successfully, in the order the
    /// statuses showed them landed.
    pub fn landed_messages(&self) -> Vec<VersionedMessage> {
        let forwarded = self.forwarded.lock().unwrap();
        let by_signature: std::collections::HashMap<Signature, &VersionedMessage> = forwarded
            .iter()
            .map(|tx| (tx.signatures[0], &tx.message))
            .collect();
        let landed = self.landed.lock().unwrap();
        landed
            .0
            .iter()
            .filter_map(|s| by_signature.get(s).map(|m| (*m).clone()))
            .collect()
    }

    /// The transaction [`Fault::HoldFirst`] kept, if it saw one.
    pub fn held(&self) -> Option<VersionedTransaction> {
        self.held.lock().unwrap().clone()
    }

    /// [`Fault::LateBefore`]: whether the late transaction landed when it was handed over
    /// (`None`: it never was, no transaction of its tag came after `skip`).
    pub fn late_landed(&self) -> Option<bool> {
        self.late.lock().unwrap().1
    }

    /// Hands `late` to the inner transport and waits until it executed or can no longer.
    async fn deliver_late(
        &self,
        late: &VersionedTransaction,
        last_valid: u64,
    ) -> Result<bool, Error> {
        self.forwarded.lock().unwrap().push(late.clone());
        self.inner.send(std::slice::from_ref(late)).await?;
        loop {
            if let TxStatus::Landed(_) = self.inner.statuses(&late.signatures[..1]).await?[0] {
                return Ok(true);
            }
            let blockhash = *late.message.recent_blockhash();
            if self.inner.blockhash_expired(&blockhash, last_valid).await? {
                // Expired: what was taken before has executed (the bank's fence), so a status
                // now is final.
                let status = self.inner.statuses(&late.signatures[..1]).await?.remove(0);
                return Ok(matches!(status, TxStatus::Landed(_)));
            }
            self.inner.wait_for_progress().await;
        }
    }

    pub fn dropped(&self) -> u64 {
        *self.dropped.lock().unwrap()
    }

    fn crashed(&self) -> Result<(), Error> {
        match *self.fail_after_sends.lock().unwrap() {
            Some(0) => Err(Error::Transport("connection lost (injected)".into())),
            _ => Ok(()),
        }
    }
}

impl<T: Transport> Transport for Faulty<'_, T> {
    fn describe(&self) -> String {
        format!("faulty {}", self.inner.describe())
    }
    fn profile(&self) -> Profile {
        self.inner.profile()
    }
    fn program_id(&self) -> Pubkey {
        self.program_id.unwrap_or_else(|| self.inner.program_id())
    }
    async fn get_accounts(&self, a: &[Pubkey]) -> Result<Vec<Option<Account>>, Error> {
        self.crashed()?;
        self.inner.get_accounts(a).await
    }
    async fn balance(&self, a: &Pubkey) -> Result<u64, Error> {
        self.crashed()?;
        self.inner.balance(a).await
    }
    async fn rent_minimum(&self, len: usize) -> Result<u64, Error> {
        self.inner.rent_minimum(len).await
    }
    async fn fee_for_message(&self, m: &VersionedMessage) -> Result<u64, Error> {
        self.inner.fee_for_message(m).await
    }
    async fn latest_blockhash(&self) -> Result<(Hash, u64), Error> {
        self.crashed()?;
        let fresh = self.inner.latest_blockhash().await?;
        match self.fault {
            Fault::ExpiredBlockhash {
                blockhash,
                last_valid,
                fetches,
            } => {
                let mut fetched = self.fetched.lock().unwrap();
                *fetched += 1;
                Ok(if *fetched <= fetches {
                    (blockhash, last_valid)
                } else {
                    fresh
                })
            }
            _ => Ok(fresh),
        }
    }
    async fn blockhash_expired(&self, h: &Hash, lvbh: u64) -> Result<bool, Error> {
        self.crashed()?;
        self.inner.blockhash_expired(h, lvbh).await
    }
    async fn send(&self, txs: &[VersionedTransaction]) -> Result<(), Error> {
        self.crashed()?;
        let mut keep = Vec::with_capacity(txs.len());
        for tx in txs {
            let drop = match self.fault {
                Fault::Drop { percent } => self.rng.lock().unwrap().below(100) < percent,
                Fault::DropFirstWrites { count } => {
                    *self.dropped.lock().unwrap() < count
                        && is_write(&self.program_id(), &tx.message)
                }
                _ => false,
            };
            if drop {
                *self.dropped.lock().unwrap() += 1;
            } else {
                keep.push(tx.clone());
            }
        }
        let program = self.program_id();
        if let Fault::HoldFirst { tag } = self.fault {
            // The lock is released before the send below awaits.
            let took = {
                let mut held = self.held.lock().unwrap();
                let first = keep
                    .iter()
                    .position(|tx| held.is_none() && curta_tag(&program, &tx.message) == Some(tag));
                first.map(|i| *held = Some(keep.remove(i))).is_some()
            };
            if took {
                self.forwarded.lock().unwrap().extend(keep.iter().cloned());
                self.inner.send(&keep).await?;
                return Err(Error::Transport(
                    "connection lost while sending (injected)".into(),
                ));
            }
        }
        if let Fault::LateBefore {
            late,
            last_valid,
            tag,
            skip,
        } = &self.fault
        {
            let due = {
                let mut state = self.late.lock().unwrap();
                let mut due = false;
                for tx in &keep {
                    if curta_tag(&program, &tx.message) == Some(*tag) {
                        due |= state.0 >= *skip && state.1.is_none();
                        state.0 += 1;
                    }
                }
                due
            };
            if due {
                // Every transaction of this batch goes after the late one (a barrier goes
                // alone, so a batch holding one holds nothing else).
                let landed = self.deliver_late(late, *last_valid).await?;
                self.late.lock().unwrap().1 = Some(landed);
            }
        }
        self.forwarded.lock().unwrap().extend(keep.iter().cloned());
        if let Some(n) = self.fail_after_sends.lock().unwrap().as_mut() {
            *n = n.saturating_sub(1);
        }
        if matches!(self.fault, Fault::Reverse) {
            for tx in keep.iter().rev() {
                self.inner.send(std::slice::from_ref(tx)).await?;
                // A transaction that never executes (its blockhash expired) is left to the
                // client's own expiry handling after a bounded wait.
                let deadline = Instant::now() + Duration::from_secs(10);
                while !matches!(
                    self.inner.statuses(&tx.signatures[..1]).await?[0],
                    TxStatus::Landed(_)
                ) && Instant::now() < deadline
                {
                    self.inner.wait_for_progress().await;
                }
            }
            return Ok(());
        }
        self.inner.send(&keep).await
    }
    async fn statuses(&self, s: &[Signature]) -> Result<Vec<TxStatus>, Error> {
        self.crashed()?;
        let statuses = self.inner.statuses(s).await?;
        let mut landed = self.landed.lock().unwrap();
        let (order, seen) = &mut *landed;
        for (signature, status) in s.iter().zip(&statuses) {
            if *status == TxStatus::Landed(Ok(())) && seen.insert(*signature) {
                order.push(*signature);
            }
        }
        Ok(statuses)
    }
    async fn finalized(&self, s: &[Signature]) -> Result<Vec<bool>, Error> {
        self.crashed()?;
        self.inner.finalized(s).await
    }
    fn ledger(&self) -> &Ledger {
        self.inner.ledger()
    }
    async fn simulate(&self, tx: &VersionedTransaction) -> Result<Simulation, Error> {
        self.inner.simulate(tx).await
    }
    async fn pass_slot(&self, slot: u64) -> Result<(), Error> {
        self.inner.pass_slot(slot).await
    }
    async fn wait_for_progress(&self) {
        self.inner.wait_for_progress().await
    }
}

/// How many of `signatures` landed on the bank (successfully or not): each paid one fee.
/// Waits first until every transaction handed to the bank has executed.
pub async fn landed(bank: &curta_client::BankTransport, signatures: &[Signature]) -> u64 {
    bank.settle().await;
    let unique: Vec<Signature> = signatures
        .iter()
        .copied()
        .collect::<HashSet<_>>()
        .into_iter()
        .collect();
    let mut count = 0;
    for batch in unique.chunks(256) {
        let statuses = bank.statuses(batch).await.expect("statuses");
        count += statuses
            .iter()
            .filter(|s| matches!(s, TxStatus::Landed(_)))
            .count() as u64;
    }
    count
}
