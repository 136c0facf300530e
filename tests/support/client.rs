//! Helpers for the client tests: transports that misbehave in controlled ways around the
//! in-process bank, and the expected rent computed from the spec's numbers.

use curta_client::{Error, Profile, Simulation, Transport, TxStatus};
use solana_account::Account;
use solana_hash::Hash;
use solana_message::Message;
use solana_pubkey::Pubkey;
use solana_signature::Signature;
use solana_transaction::Transaction;
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
    /// Hand out blockhashes fetched up to `age` ago (many expire before they are used).
    StaleBlockhash { age: Duration },
    /// Deliver each batch of sent transactions last first, each one executed before the next
    /// is handed over: the worst order a leader may pick, deterministically.
    Reverse,
}

/// A transport around the bank that injects a fault, and records every signature it forwarded
/// so that a test can count what landed without trusting the client's report.
pub struct Faulty<'a, T: Transport> {
    pub inner: &'a T,
    fault: Fault,
    rng: Mutex<crate::Rng>,
    forwarded: Mutex<Vec<Signature>>,
    dropped: Mutex<u64>,
    stale: Mutex<Vec<(Hash, u64, Instant)>>,
    /// Error every call after this many sends (simulates a crash), if set.
    pub fail_after_sends: Mutex<Option<u64>>,
    /// The program id the client is told to use, when it is not the bank's.
    pub program_id: Option<Pubkey>,
}

impl<'a, T: Transport> Faulty<'a, T> {
    pub fn new(inner: &'a T, fault: Fault, seed: u64) -> Self {
        Faulty {
            inner,
            fault,
            rng: Mutex::new(crate::Rng::new(seed)),
            forwarded: Mutex::new(Vec::new()),
            dropped: Mutex::new(0),
            stale: Mutex::new(Vec::new()),
            fail_after_sends: Mutex::new(None),
            program_id: None,
        }
    }

    /// Forwards everything, but tells the client the program lives at `program_id`.
    pub fn with_program_id(inner: &'a T, program_id: Pubkey) -> Self {
        Faulty {
            program_id: Some(program_id),
            ..Faulty::new(inner, Fault::None, 0)
        }
    }

    pub fn forwarded(&self) -> Vec<Signature> {
        self.forwarded.lock().unwrap().clone()
    }

    pub fn dropped(&self) -> u64 {
        *self.dropped.lock().unwrap()
    }

    /// A Curta Write (instruction tag 2), with or without compute-budget instructions.
    fn is_write(&self, tx: &Transaction) -> bool {
        let message = &tx.message;
        message.instructions.last().is_some_and(|ix| {
            message.account_keys[ix.program_id_index as usize] == self.program_id()
                && ix.data.first() == Some(&2)
        })
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
    async fn fee_for_message(&self, m: &Message) -> Result<u64, Error> {
        self.inner.fee_for_message(m).await
    }
    async fn latest_blockhash(&self) -> Result<(Hash, u64), Error> {
        self.crashed()?;
        let fresh = self.inner.latest_blockhash().await?;
        match self.fault {
            Fault::StaleBlockhash { age } => {
                let mut stale = self.stale.lock().unwrap();
                stale.push((fresh.0, fresh.1, Instant::now()));
                stale.retain(|s| s.2.elapsed() <= age);
                // The oldest blockhash still within `age`: often one that expires in flight.
                Ok((stale[0].0, stale[0].1))
            }
            _ => Ok(fresh),
        }
    }
    async fn blockhash_expired(&self, h: &Hash, lvbh: u64) -> Result<bool, Error> {
        self.crashed()?;
        self.inner.blockhash_expired(h, lvbh).await
    }
    async fn send(&self, txs: &[Transaction]) -> Result<(), Error> {
        self.crashed()?;
        let mut keep = Vec::with_capacity(txs.len());
        for tx in txs {
            let drop = match self.fault {
                Fault::Drop { percent } => self.rng.lock().unwrap().below(100) < percent,
                Fault::DropFirstWrites { count } => {
                    *self.dropped.lock().unwrap() < count && self.is_write(tx)
                }
                _ => false,
            };
            if drop {
                *self.dropped.lock().unwrap() += 1;
            } else {
                keep.push(tx.clone());
            }
        }
        self.forwarded
            .lock()
            .unwrap()
            .extend(keep.iter().map(|tx| tx.signatures[0]));
        if let Some(n) = self.fail_after_sends.lock().unwrap().as_mut() {
            *n = n.saturating_sub(1);
        }
        if matches!(self.fault, Fault::Reverse) {
            for tx in keep.iter().rev() {
                self.inner.send(std::slice::from_ref(tx)).await?;
                // A transaction that never executes (its blockhash expired) is left to the
                // client's own expiry handling after a bounded wait.
                let deadline = Instant::now() + Duration::from_secs(10);
                while self.inner.statuses(&tx.signatures[..1]).await?[0] == TxStatus::Unknown
                    && Instant::now() < deadline
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
        self.inner.statuses(s).await
    }
    async fn simulate(&self, tx: &Transaction) -> Result<Simulation, Error> {
        self.inner.simulate(tx).await
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
