//! A transport around another that forwards everything and counts what it costs: every
//! transaction sent through it, its fee payer and its fee (asked of the cluster once per shape
//! of message: the signatures and the priority fee, the only things a fee depends on), and
//! whether it landed (seen landed when the engines read the statuses, or asked at the end).
//! The load driver's lamport accounting rests on it: every lamport the claimers and watchers
//! hold less at the end is a fee it counted, a bond or a rent.
//!
//! It also trips the kill of a watcher during a dispute ([`Counting::arm`]): the moment a
//! watcher sends the n-th step of a dispute run, that watcher's kill signal is raised, so that
//! it stops with the run's first steps out and the rest left to its next start.

use curta_client::{Error, Ledger, Profile, Simulation, Transport, TxStatus};
use solana_account::Account;
use solana_hash::Hash;
use solana_message::VersionedMessage;
use solana_pubkey::Pubkey;
use solana_signature::Signature;
use solana_transaction::versioned::VersionedTransaction;
use std::collections::{BTreeMap, HashMap};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// One transaction sent.
#[derive(Clone, Debug)]
struct Sent {
    payer: Pubkey,
    fee: u64,
    /// The instruction tag of its Curta instruction (the last one of the program), if any.
    tag: Option<u8>,
    blockhash: Hash,
    /// Its place in the sending order.
    seq: u64,
    /// Some(ok) once seen landed.
    landed: Option<bool>,
}

#[derive(Default)]
struct Book {
    sent: HashMap<Signature, Sent>,
    /// The fee of each shape of message.
    fees: HashMap<FeeKey, u64>,
    /// The last valid block height of each blockhash handed out.
    last_valid: HashMap<Hash, u64>,
    /// Transactions sent that never landed.
    dropped: u64,
    /// Transactions sent so far.
    count: u64,
    /// Step transactions sent, by run.
    steps: HashMap<Pubkey, u64>,
    trip: Option<Trip>,
}

/// A kill armed: after this many steps of one run, the kill signal of the watcher paying for
/// them.
struct Trip {
    after: u64,
    watchers: Vec<(Pubkey, tokio::sync::watch::Sender<usize>)>,
    /// The watcher (index) and run it fired for, and the steps sent then.
    fired: Option<(usize, Pubkey, u64)>,
}

/// What a message's fee depends on: its format, its signatures, and its priority fee (the
/// compute-budget instructions of a legacy message, the config of a version 1 message).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
struct FeeKey {
    version: u8,
    signatures: u8,
    instructions: usize,
    budget: Vec<Vec<u8>>,
    priority_fee: Option<u64>,
}

fn fee_key(message: &VersionedMessage) -> FeeKey {
    let keys = message.static_account_keys();
    let budget = solana_compute_budget_interface::ID;
    let (version, priority_fee) = match message {
        VersionedMessage::Legacy(_) => (0, None),
        VersionedMessage::V0(_) => (1, None),
        VersionedMessage::V1(v1) => (2, v1.config.priority_fee),
    };
    FeeKey {
        version,
        signatures: message.header().num_required_signatures,
        instructions: message.instructions().len(),
        budget: message
            .instructions()
            .iter()
            .filter(|ix| keys.get(ix.program_id_index as usize) == Some(&budget))
            .map(|ix| ix.data.clone())
            .collect(),
        priority_fee,
    }
}

/// The tag of the last instruction of `program` in `message`.
pub fn curta_tag(program: &Pubkey, message: &VersionedMessage) -> Option<u8> {
    let keys = message.static_account_keys();
    message
        .instructions()
        .iter()
        .rev()
        .find(|ix| keys.get(ix.program_id_index as usize) == Some(program))
        .and_then(|ix| ix.data.first().copied())
}

/// The first account of the last instruction of `program` in `message` (a Step's run).
fn first_account(program: &Pubkey, message: &VersionedMessage) -> Option<Pubkey> {
    let keys = message.static_account_keys();
    let ix = message
        .instructions()
        .iter()
        .rev()
        .find(|ix| keys.get(ix.program_id_index as usize) == Some(program))?;
    keys.get(*ix.accounts.first()? as usize).copied()
}

/// Counts a step of `run` paid by `payer`, and fires the armed kill when it is the one.
fn count_step(book: &mut Book, run: Pubkey, payer: &Pubkey) {
    let steps = book.steps.entry(run).or_default();
    *steps += 1;
    let steps = *steps;
    let Some(trip) = book.trip.as_mut().filter(|t| t.fired.is_none()) else {
        return;
    };
    if steps < trip.after {
        return;
    }
    if let Some(w) = trip.watchers.iter().position(|(key, _)| key == payer) {
        trip.watchers[w].1.send_modify(|k| *k += 1);
        trip.fired = Some((w, run, steps));
    }
}

/// The name of a Curta instruction tag, for the figures.
pub fn tag_name(tag: Option<u8>) -> &'static str {
    match tag {
        None => "transfer",
        Some(0) => "create model",
        Some(1) => "init weight account",
        Some(2) => "write",
        Some(3) => "seal",
        Some(7) => "step",
        Some(9) => "open claim",
        Some(10) => "answer claim",
        Some(11) => "challenge",
        Some(12) => "resolve",
        Some(13) => "close claim",
        Some(_) => "other curta",
    }
}

/// What the counted transactions cost, by payer and by instruction.
#[derive(Clone, Debug, Default, serde::Serialize)]
pub struct Costs {
    /// Fees of the transactions that landed (successfully or not), by fee payer.
    pub fees: BTreeMap<String, u64>,
    /// Transactions that landed, by instruction: (landed successfully, landed with an error).
    pub transactions: BTreeMap<&'static str, (u64, u64)>,
    /// Transactions sent that never landed (their blockhash expired).
    pub dropped: u64,
}

impl Costs {
    pub fn fees_of(&self, payer: &Pubkey) -> u64 {
        self.fees.get(&payer.to_string()).copied().unwrap_or(0)
    }
}

pub struct Counting<'a, T: Transport> {
    pub inner: &'a T,
    book: Mutex<Book>,
}

impl<'a, T: Transport> Counting<'a, T> {
    pub fn new(inner: &'a T) -> Self {
        Counting {
            inner,
            book: Mutex::default(),
        }
    }

    /// Arms the kill: once any of `watchers` (key, kill signal) has sent `after` steps of a
    /// run, its kill signal is raised (once).
    pub fn arm(&self, after: u64, watchers: Vec<(Pubkey, tokio::sync::watch::Sender<usize>)>) {
        self.book.lock().unwrap().trip = Some(Trip {
            after,
            watchers,
            fired: None,
        });
    }

    /// The kill that fired: the watcher's index, the run and the steps it had sent.
    pub fn tripped(&self) -> Option<(usize, Pubkey, u64)> {
        let book = self.book.lock().unwrap();
        book.trip.as_ref().and_then(|t| t.fired)
    }

    /// How many transactions were sent so far (for [`Counting::settle`]).
    pub fn mark(&self) -> u64 {
        self.book.lock().unwrap().count
    }

    /// Waits until every transaction sent is known landed or can no longer land (its
    /// blockhash expired), at most `wait`; then what they cost. A transaction still pending
    /// after `wait` is an error.
    pub async fn costs(&self, wait: Duration) -> Result<Costs, Error> {
        self.settle(u64::MAX, wait).await?;
        Ok(self.tally())
    }

    /// Waits until every transaction of the first `until` sent is known landed or can no
    /// longer land, at most `wait`. Over RPC a status is kept for a minute or two: what an
    /// operation stopped midway left in flight is looked up soon after.
    pub async fn settle(&self, until: u64, wait: Duration) -> Result<(), Error> {
        let deadline = Instant::now() + wait;
        loop {
            let open: Vec<(Signature, Hash)> = {
                let book = self.book.lock().unwrap();
                book.sent
                    .iter()
                    .filter(|(_, s)| s.landed.is_none() && s.seq < until)
                    .map(|(signature, s)| (*signature, s.blockhash))
                    .collect()
            };
            let mut pending = 0;
            for batch in open.chunks(200) {
                let signatures: Vec<Signature> = batch.iter().map(|(s, _)| *s).collect();
                let statuses = self.statuses(&signatures).await?;
                for ((signature, blockhash), status) in batch.iter().zip(statuses) {
                    if matches!(status, TxStatus::Landed(_)) {
                        continue;
                    }
                    let last_valid = self.last_valid(blockhash);
                    if self.inner.blockhash_expired(blockhash, last_valid).await? {
                        // Expired: a status now is final (the bank's fence waited for what
                        // it had taken).
                        let status = self.statuses(&[*signature]).await?.remove(0);
                        if !matches!(status, TxStatus::Landed(_)) {
                            let mut book = self.book.lock().unwrap();
                            book.sent.remove(signature);
                            book.dropped += 1;
                        }
                    } else {
                        pending += 1;
                    }
                }
            }
            if pending == 0 {
                return Ok(());
            }
            if Instant::now() > deadline {
                return Err(Error::Stalled(format!(
                    "{pending} transactions still neither landed nor expired after {} s",
                    wait.as_secs()
                )));
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }

    fn last_valid(&self, blockhash: &Hash) -> u64 {
        let book = self.book.lock().unwrap();
        book.last_valid.get(blockhash).copied().unwrap_or(0)
    }

    fn tally(&self) -> Costs {
        let book = self.book.lock().unwrap();
        let mut costs = Costs {
            dropped: book.dropped,
            ..Costs::default()
        };
        for sent in book.sent.values() {
            let Some(ok) = sent.landed else { continue };
            *costs.fees.entry(sent.payer.to_string()).or_default() += sent.fee;
            let count = costs.transactions.entry(tag_name(sent.tag)).or_default();
            match ok {
                true => count.0 += 1,
                false => count.1 += 1,
            }
        }
        costs
    }

    /// The fee of `message`: the cluster's answer for its shape, asked once.
    async fn fee_of(&self, message: &VersionedMessage) -> Result<u64, Error> {
        let key = fee_key(message);
        if let Some(fee) = self.book.lock().unwrap().fees.get(&key) {
            return Ok(*fee);
        }
        let fee = self.inner.fee_for_message(message).await?;
        self.book.lock().unwrap().fees.insert(key, fee);
        Ok(fee)
    }
}

impl<T: Transport> Transport for Counting<'_, T> {
    fn describe(&self) -> String {
        self.inner.describe()
    }

    fn profile(&self) -> Profile {
        self.inner.profile()
    }

    fn program_id(&self) -> Pubkey {
        self.inner.program_id()
    }

    async fn get_accounts(&self, addresses: &[Pubkey]) -> Result<Vec<Option<Account>>, Error> {
        self.inner.get_accounts(addresses).await
    }

    async fn balance(&self, address: &Pubkey) -> Result<u64, Error> {
        self.inner.balance(address).await
    }

    async fn rent_minimum(&self, data_len: usize) -> Result<u64, Error> {
        self.inner.rent_minimum(data_len).await
    }

    async fn fee_for_message(&self, message: &VersionedMessage) -> Result<u64, Error> {
        self.inner.fee_for_message(message).await
    }

    async fn latest_blockhash(&self) -> Result<(Hash, u64), Error> {
        let (blockhash, last_valid) = self.inner.latest_blockhash().await?;
        let mut book = self.book.lock().unwrap();
        if book.last_valid.len() > 100_000 {
            book.last_valid.clear();
        }
        book.last_valid.insert(blockhash, last_valid);
        Ok((blockhash, last_valid))
    }

    async fn blockhash_expired(&self, blockhash: &Hash, last_valid: u64) -> Result<bool, Error> {
        self.inner.blockhash_expired(blockhash, last_valid).await
    }

    async fn send(&self, transactions: &[VersionedTransaction]) -> Result<(), Error> {
        let program = self.program_id();
        for tx in transactions {
            let fee = self.fee_of(&tx.message).await?;
            let sent = Sent {
                payer: tx.message.static_account_keys()[0],
                fee,
                tag: curta_tag(&program, &tx.message),
                blockhash: *tx.message.recent_blockhash(),
                seq: 0,
                landed: None,
            };
            // An engine never sends a signature twice; another may send the same bytes again
            // (a resumed operation): one fee either way.
            let mut book = self.book.lock().unwrap();
            let seq = book.count;
            if let std::collections::hash_map::Entry::Vacant(entry) =
                book.sent.entry(tx.signatures[0])
            {
                entry.insert(Sent {
                    seq,
                    ..sent.clone()
                });
                book.count += 1;
                if let (Some(7), Some(run)) = (sent.tag, first_account(&program, &tx.message)) {
                    count_step(&mut book, run, &sent.payer);
                }
            }
        }
        self.inner.send(transactions).await
    }

    async fn statuses(&self, signatures: &[Signature]) -> Result<Vec<TxStatus>, Error> {
        let statuses = self.inner.statuses(signatures).await?;
        let mut book = self.book.lock().unwrap();
        for (signature, status) in signatures.iter().zip(&statuses) {
            if let (TxStatus::Landed(result), Some(sent)) = (status, book.sent.get_mut(signature)) {
                sent.landed = Some(result.is_ok());
            }
        }
        Ok(statuses)
    }

    async fn finalized(&self, signatures: &[Signature]) -> Result<Vec<bool>, Error> {
        self.inner.finalized(signatures).await
    }

    fn ledger(&self) -> &Ledger {
        self.inner.ledger()
    }

    async fn simulate(&self, transaction: &VersionedTransaction) -> Result<Simulation, Error> {
        self.inner.simulate(transaction).await
    }

    async fn pass_slot(&self, slot: u64) -> Result<(), Error> {
        self.inner.pass_slot(slot).await
    }

    async fn wait_for_progress(&self) {
        self.inner.wait_for_progress().await
    }

    async fn slot(&self) -> Result<u64, Error> {
        self.inner.slot().await
    }

    async fn program_accounts(
        &self,
        filters: &[(usize, Vec<u8>)],
    ) -> Result<Vec<(Pubkey, Account)>, Error> {
        self.inner.program_accounts(filters).await
    }
}
