//! The in-process transport: a solana-program-test bank running the program's SBF binary in
//! its VM ([`ProgramSo`]).

use super::ProgramSo;
use super::{Ledger, Profile, Simulation, Transport, TxStatus};
use crate::Error;
use solana_account::{Account, AccountSharedData};
use solana_commitment_config::CommitmentLevel;
use solana_compute_budget_interface::ComputeBudgetInstruction;
use solana_hash::Hash;
use solana_keypair::Keypair;
use solana_message::{Message, VersionedMessage};
use solana_program_test::{BanksClient, ProgramTest, ProgramTestContext};
use solana_pubkey::Pubkey;
use solana_signature::Signature;
use solana_signer::Signer;
use solana_transaction::versioned::VersionedTransaction;
use solana_transaction::Transaction;
use solana_transaction_error::TransactionError;
use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// A fresh bank with the Curta program loaded.
///
/// Three quirks of program-test shape this transport. Its banks server accepts a transaction
/// sent without waiting only if the *root* bank knows its blockhash, while new blockhashes
/// (one every 6.4 ms, each valid for 150) are registered on the working bank only; so each
/// transaction is handed to the server's process-and-wait call in a task of its own, which
/// prices it against the working bank. That call panics on a blockhash too old to execute,
/// so such a transaction is dropped here instead (the bank would refuse it anyway), when it is
/// sent and again when it waited to go (`RECHECK_AFTER`). The
/// outcome that call returns is the bank's own status of the signature: it is kept, and
/// statuses are answered from it, so the bank is asked only about transactions still
/// executing or sent by another transport. Last, the server executes what it received as one
/// batch: the batch's age check comes first and its statuses are written when the whole batch
/// commits, which for hundreds of Writes into a 9.47 MB section is seconds later. A blockhash
/// may leave the bank's queue in between, so [`Transport::blockhash_expired`] says so only
/// after a fence ([`BankTransport::fence`]).
pub struct BankTransport {
    client: BanksClient,
    context: Mutex<ProgramTestContext>,
    /// The genesis mint: it pays for fences and the simulations that check a blockhash.
    mint: Keypair,
    /// Fences sent so far (each fence's compute-unit limit differs, so its signature does).
    fences: std::sync::atomic::AtomicU32,
    program_id: Pubkey,
    checked: Mutex<(Hash, Instant)>,
    /// Signalled whenever a sent transaction finishes executing (tokio's timer cannot sleep
    /// less than a millisecond, several times what a small transaction takes here).
    finished: std::sync::Arc<tokio::sync::Notify>,
    /// Transactions handed to the bank that have not finished executing.
    executing: std::sync::Arc<std::sync::atomic::AtomicUsize>,
    /// Their signatures: the bank has them and its process call has not returned, so their
    /// status is `Pending` (never re-signed) without asking the bank on every poll.
    in_bank: InBank,
    /// When each blockhash was first handed out as the latest: one younger than
    /// [`YOUNG_BLOCKHASH`] is not expired, and the bank need not be asked.
    issued: Mutex<HashMap<Hash, Instant>>,
    /// Held (shared) by every transaction executing in the bank, and exclusively while
    /// [`Transport::pass_slot`] moves the bank to its next slot: freezing a bank under an
    /// executing transaction is a runtime panic.
    slot_gate: SlotGate,
    /// The binary the bank runs ([`ProgramSo::describe`]).
    program: String,
    /// The outcome of every transaction this transport handed over that executed.
    outcomes: Outcomes,
    ledger: Ledger,
    /// What [`Transport::program_accounts`] looks at: every account a transaction sent
    /// through this transport may write (the bank has no getProgramAccounts), less those seen
    /// holding other nonzero bytes where a query's first filter looks (an account of another
    /// kind: a model, a weight account, a run).
    written: Mutex<Written>,
}

/// See [`BankTransport::written`].
#[derive(Default)]
struct Written {
    candidates: std::collections::BTreeSet<Pubkey>,
    /// By the first filter's offset and bytes: the addresses that hold something else.
    other: HashMap<(usize, Vec<u8>), std::collections::HashSet<Pubkey>>,
}

/// The Clock and SlotHashes sysvars of the bank's next slot, as programs read them: the clock
/// one slot on, and SlotHashes with the current slot's entry first (its hash: the bank's latest
/// blockhash). program-test's banks stay in their slot unless warped, and a warp freezes the
/// working bank while program-test's own task may still register a blockhash in it (a runtime
/// panic under load); setting the two sysvars moves the slot as far as any program can tell
/// (Clock, SlotHashes), and is what `pass_slot` and the program tests do.
pub async fn next_slot_sysvars(
    client: &BanksClient,
) -> Result<
    (
        solana_sdk::clock::Clock,
        solana_sdk::slot_hashes::SlotHashes,
    ),
    Error,
> {
    use solana_sdk::clock::Clock;
    use solana_sdk::slot_hashes::SlotHashes;
    let clock: Clock = client.get_sysvar().await.map_err(bank_error)?;
    let hashes: SlotHashes = client.get_sysvar().await.map_err(bank_error)?;
    let latest = client.get_latest_blockhash().await.map_err(bank_error)?;
    let mut entries: Vec<(u64, Hash)> = hashes.iter().copied().collect();
    if hashes.get(&clock.slot).is_none() {
        entries.insert(0, (clock.slot, latest));
    }
    entries.truncate(solana_sdk::slot_hashes::MAX_ENTRIES);
    let next = Clock {
        slot: clock.slot + 1,
        ..clock
    };
    Ok((next, SlotHashes::new(&entries)))
}

/// See [`BankTransport::slot_gate`].
pub type SlotGate = std::sync::Arc<tokio::sync::RwLock<()>>;

type Outcomes = std::sync::Arc<Mutex<HashMap<Signature, Result<(), TransactionError>>>>;
type InBank = std::sync::Arc<Mutex<std::collections::HashSet<Signature>>>;

/// How long the bank may take to answer a process call. The banks client's default, 10 s, is
/// exceeded on a machine loaded with many banks (`cargo test` runs dozens side by side, and
/// every Write into a 9.47 MB section copies it in and out of the VM): the server then logs
/// DeadlineExceeded and the answer is lost.
const PROCESS_DEADLINE: Duration = Duration::from_secs(120);

/// A blockhash the bank handed out as its latest less than this long ago is still usable: it
/// lives 150 of the bank's 6.4 ms rotations, about 960 ms. (Saying "not expired" is the safe
/// answer: it only delays signing again.)
const YOUNG_BLOCKHASH: Duration = Duration::from_millis(400);

/// A transaction that waited this long for the slot gate (a slot being passed under hundreds
/// of steps in flight) or for a loaded machine's runtime since its blockhash was checked is
/// checked again before it goes to the bank ([`still_queued`]).
const RECHECK_AFTER: Duration = Duration::from_millis(50);

/// Whether the bank still holds `blockhash` in its queue. The banks server panics on a
/// transaction whose blockhash has left it (an unwrap of its last valid block height), which
/// the load test of claims met: 100 disputes' steps queued behind a slot change on 2 cores. A
/// transaction whose blockhash is gone could not execute anyway: it is dropped, its status
/// stays unknown and the engine signs it again once the blockhash has expired.
async fn still_queued(client: &BanksClient, blockhash: &Hash) -> bool {
    let mut probe = Message::new(&[], Some(&Pubkey::new_unique()));
    probe.recent_blockhash = *blockhash;
    // The processed bank's queue: the bank the process call prices and checks against.
    let fee = client.get_fee_for_message_with_commitment(probe, CommitmentLevel::Processed);
    matches!(fee.await, Ok(Some(_)))
}

/// The least compute-unit limit a fence carries (the limit only makes each fence unique).
const FENCE_UNITS: u32 = 200_000;

/// The outcome of a transaction the process call saw executed (and charged): success, or an
/// error of its execution. `None` for a transaction the bank never executed (refused before
/// execution), or an answer not given within [`PROCESS_DEADLINE`].
fn executed(
    result: Result<Option<Result<(), TransactionError>>, solana_program_test::BanksClientError>,
) -> Option<Result<(), TransactionError>> {
    match result {
        Ok(Some(Ok(()))) => Some(Ok(())),
        Ok(Some(Err(
            error @ (TransactionError::InstructionError(..)
            | TransactionError::InsufficientFundsForRent { .. }),
        ))) => Some(Err(error)),
        _ => None,
    }
}

fn bank_error(err: impl std::fmt::Display) -> Error {
    Error::Transport(format!("in-process bank: {err}"))
}

impl BankTransport {
    /// Starts a bank with the program at its default id; each `(address, lamports)` becomes a
    /// system account at genesis. Panics when the SBF binary is not built (tests); commands
    /// use [`BankTransport::try_start_at`].
    pub async fn start(funded: &[(Pubkey, u64)]) -> BankTransport {
        BankTransport::start_at(funded, curta_interface::id()).await
    }

    /// [`BankTransport::start`] with the program loaded at `program_id`.
    pub async fn start_at(funded: &[(Pubkey, u64)], program_id: Pubkey) -> BankTransport {
        BankTransport::try_start_at(funded, program_id)
            .await
            .unwrap_or_else(|e| panic!("{e}"))
    }

    /// Starts a bank running the program's SBF binary ([`ProgramSo::find`]) at its default id.
    pub async fn try_start(funded: &[(Pubkey, u64)]) -> Result<BankTransport, Error> {
        BankTransport::try_start_at(funded, curta_interface::id()).await
    }

    /// Starts a bank running the program's SBF binary at `program_id`; each
    /// `(address, lamports)` becomes a system account at genesis.
    pub async fn try_start_at(
        funded: &[(Pubkey, u64)],
        program_id: Pubkey,
    ) -> Result<BankTransport, Error> {
        BankTransport::try_start_without(funded, program_id, &[]).await
    }

    /// [`BankTransport::start`] with the runtime features `inactive` deactivated (program-test
    /// activates every feature it knows): e.g. [`crate::send::format::FEATURE_TX_V1`] for a
    /// cluster that refuses version 1 transactions.
    pub async fn start_without(funded: &[(Pubkey, u64)], inactive: &[Pubkey]) -> BankTransport {
        BankTransport::try_start_without(funded, curta_interface::id(), inactive)
            .await
            .unwrap_or_else(|e| panic!("{e}"))
    }

    /// [`BankTransport::try_start_at`] with the runtime features `inactive` deactivated.
    pub async fn try_start_without(
        funded: &[(Pubkey, u64)],
        program_id: Pubkey,
        inactive: &[Pubkey],
    ) -> Result<BankTransport, Error> {
        let so = ProgramSo::find().map_err(Error::Transport)?;
        let mut test = ProgramTest::default();
        for feature in inactive {
            test.deactivate_feature(*feature);
        }
        so.add_to(&mut test, program_id);
        for (address, lamports) in funded {
            test.add_account(
                *address,
                Account::new(*lamports, 0, &solana_system_interface::program::ID),
            );
        }
        let context = test.start_with_context().await;
        let mint = context.payer.insecure_clone();
        let checked = Mutex::new((Hash::default(), Instant::now()));
        Ok(BankTransport {
            client: context.banks_client.clone(),
            context: Mutex::new(context),
            mint,
            fences: Default::default(),
            program_id,
            checked,
            finished: Default::default(),
            executing: Default::default(),
            in_bank: InBank::default(),
            slot_gate: SlotGate::default(),
            issued: Mutex::default(),
            program: so.describe(),
            outcomes: Outcomes::default(),
            ledger: Ledger::default(),
            written: Mutex::default(),
        })
    }

    /// The genesis mint of the bank: a keypair holding about 1,000,000 SOL.
    pub fn mint(&self) -> Keypair {
        self.mint.insecure_clone()
    }

    pub fn banks_client(&self) -> BanksClient {
        self.client.clone()
    }

    /// The gate a transaction sent to [`Self::banks_client`] directly holds (shared) while it
    /// executes, so that [`Transport::pass_slot`] never freezes the bank under it.
    pub fn slot_gate(&self) -> SlotGate {
        self.slot_gate.clone()
    }

    /// Waits until every transaction handed to the bank has finished executing (tests read
    /// the chain after an interrupted run this way).
    pub async fn settle(&self) {
        while self.executing.load(std::sync::atomic::Ordering::SeqCst) > 0 {
            let _ = tokio::time::timeout(Duration::from_millis(1), self.finished.notified()).await;
        }
    }

    /// Overwrites an account, bypassing the runtime (tests use it to corrupt state).
    pub fn set_account(&self, address: &Pubkey, account: Account) {
        self.context
            .lock()
            .unwrap()
            .set_account(address, &AccountSharedData::from(account));
    }
}

impl BankTransport {
    /// Whether the bank still executes transactions with this blockhash: a simulation of an
    /// empty transaction checks its age (with a margin of 24 of the 150 allowed) and nothing else.
    pub async fn blockhash_usable(&self, blockhash: &Hash) -> Result<bool, Error> {
        {
            let checked = self.checked.lock().unwrap();
            if checked.0 == *blockhash && checked.1.elapsed() < Duration::from_millis(100) {
                return Ok(true);
            }
        }
        let mut message = Message::new(&[], Some(&self.mint.pubkey()));
        message.recent_blockhash = *blockhash;
        let simulation = self
            .client
            .simulate_transaction(Transaction::new_unsigned(message))
            .await
            .map_err(bank_error)?;
        let ok = !matches!(
            simulation.result,
            Some(Err(TransactionError::BlockhashNotFound))
        );
        if ok {
            *self.checked.lock().unwrap() = (*blockhash, Instant::now());
        }
        Ok(ok)
    }

    /// Returns once a transaction handed to the banks server after the call began has
    /// landed. The server executes its batches one at a time, in the order it took them, so
    /// by then every batch it took before has committed and written its statuses. A fence
    /// whose blockhash ages out behind a long batch may be refused, so a new one follows
    /// whenever the last one's blockhash is no longer usable.
    pub async fn fence(&self) -> Result<(), Error> {
        let started = Instant::now();
        let (signature, mut blockhash) = self.send_fence().await?;
        let (mut sent, mut sent_at) = (vec![signature], Instant::now());
        loop {
            let statuses = self.statuses(&sent).await?;
            if statuses.iter().any(|s| matches!(s, TxStatus::Landed(_))) {
                return Ok(());
            }
            if started.elapsed() > PROCESS_DEADLINE {
                return Err(Error::Stalled(format!(
                    "the in-process bank executed none of {} fence transactions in {} s",
                    sent.len(),
                    PROCESS_DEADLINE.as_secs()
                )));
            }
            if sent_at.elapsed() > Duration::from_millis(100)
                && !self.blockhash_usable(&blockhash).await?
            {
                let (signature, latest) = self.send_fence().await?;
                sent.push(signature);
                (blockhash, sent_at) = (latest, Instant::now());
            }
            self.wait_for_progress().await;
        }
    }

    /// Sends one fence: an empty transaction paid by the mint under the latest blockhash
    /// (a compute-unit limit of its own makes its signature new). Returns its signature and
    /// blockhash.
    async fn send_fence(&self) -> Result<(Signature, Hash), Error> {
        let blockhash = self.latest_blockhash().await?.0;
        let n = self
            .fences
            .fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        let fence = VersionedTransaction::from(Transaction::new_signed_with_payer(
            &[ComputeBudgetInstruction::set_compute_unit_limit(
                FENCE_UNITS + n % FENCE_UNITS,
            )],
            Some(&self.mint.pubkey()),
            &[&self.mint],
            blockhash,
        ));
        self.send(std::slice::from_ref(&fence)).await?;
        Ok((fence.signatures[0], blockhash))
    }
}

impl Transport for BankTransport {
    fn describe(&self) -> String {
        format!("in-process bank, program {}", self.program)
    }

    fn program_id(&self) -> Pubkey {
        self.program_id
    }

    fn profile(&self) -> Profile {
        // The bank rotates its blockhash every 6.4 ms and accepts one for 150 rotations
        // (about a second). Each transaction travels in its own task, so their order is not
        // guaranteed: seals are order-free within a section, so they fill the window too.
        Profile {
            window: 48,
            seal_window: 48,
            poll: Duration::from_micros(500),
            blockhash_refresh: Duration::from_millis(100),
        }
    }

    async fn get_accounts(&self, addresses: &[Pubkey]) -> Result<Vec<Option<Account>>, Error> {
        let mut accounts = Vec::with_capacity(addresses.len());
        for address in addresses {
            accounts.push(
                self.client
                    .get_account(*address)
                    .await
                    .map_err(bank_error)?,
            );
        }
        Ok(accounts)
    }

    async fn balance(&self, address: &Pubkey) -> Result<u64, Error> {
        self.client.get_balance(*address).await.map_err(bank_error)
    }

    async fn rent_minimum(&self, data_len: usize) -> Result<u64, Error> {
        Ok(self
            .client
            .get_rent()
            .await
            .map_err(bank_error)?
            .minimum_balance(data_len))
    }

    async fn fee_for_message(&self, message: &VersionedMessage) -> Result<u64, Error> {
        let fee = |message: Message| async {
            self.client
                .get_fee_for_message(message)
                .await
                .map_err(bank_error)?
                .ok_or_else(|| bank_error("no fee for the message (blockhash unknown)"))
        };
        match message {
            VersionedMessage::Legacy(message) => fee(message.clone()).await,
            VersionedMessage::V0(_) => Err(bank_error("v0 messages are not priced here")),
            // The banks interface prices legacy messages only. A v1 message pays what
            // solana-fee charges every message, its signatures at the bank's lamports per
            // signature (an empty legacy message of the same payer and blockhash: one), plus
            // the priority fee it names in lamports (SIMD-0385).
            VersionedMessage::V1(v1) => {
                let payer = v1
                    .fee_payer()
                    .ok_or_else(|| bank_error("a v1 message without a fee payer"))?;
                let one = fee(Message::new_with_blockhash(
                    &[],
                    Some(payer),
                    &v1.lifetime_specifier,
                ))
                .await?;
                Ok(one * v1.header.num_required_signatures as u64
                    + v1.config.priority_fee.unwrap_or(0))
            }
        }
    }

    async fn latest_blockhash(&self) -> Result<(Hash, u64), Error> {
        let latest = self
            .client
            .get_latest_blockhash_with_commitment(CommitmentLevel::Processed)
            .await
            .map_err(bank_error)?
            .ok_or_else(|| bank_error("no latest blockhash"))?;
        let mut issued = self.issued.lock().unwrap();
        if issued.len() > 4_096 {
            issued.retain(|_, at| at.elapsed() < Duration::from_secs(10));
        }
        issued.entry(latest.0).or_insert_with(Instant::now);
        Ok(latest)
    }

    async fn blockhash_expired(&self, blockhash: &Hash, _last_valid: u64) -> Result<bool, Error> {
        // The bank's block height does not advance; a blockhash has left the bank's queue
        // (and can never pass an age check again) exactly when the bank can no longer price
        // it. A batch checked before may still be executing: the fence waits for it.
        let young = self
            .issued
            .lock()
            .unwrap()
            .get(blockhash)
            .is_some_and(|at| at.elapsed() < YOUNG_BLOCKHASH);
        if young {
            return Ok(false);
        }
        let mut message = Message::new(&[], Some(&Pubkey::new_unique()));
        message.recent_blockhash = *blockhash;
        let priced = self
            .client
            .get_fee_for_message(message)
            .await
            .map_err(bank_error)?
            .is_some();
        if priced {
            return Ok(false);
        }
        self.fence().await?;
        Ok(true)
    }

    async fn send(&self, transactions: &[VersionedTransaction]) -> Result<(), Error> {
        let mut usable: HashMap<Hash, bool> = HashMap::new();
        {
            let mut written = self.written.lock().unwrap();
            for transaction in transactions {
                let message = &transaction.message;
                for (i, key) in message.static_account_keys().iter().enumerate() {
                    if message.is_maybe_writable_with_reserved_addresses(
                        i,
                        None::<&std::collections::HashSet<Pubkey>>,
                    ) {
                        written.candidates.insert(*key);
                    }
                }
            }
        }
        for transaction in transactions {
            let blockhash = *transaction.message.recent_blockhash();
            let ok = match usable.get(&blockhash) {
                Some(ok) => *ok,
                None => {
                    let ok = self.blockhash_usable(&blockhash).await?;
                    usable.insert(blockhash, ok);
                    ok
                }
            };
            if ok {
                let client = self.client.clone();
                let transaction = transaction.clone();
                let finished = self.finished.clone();
                let executing = self.executing.clone();
                let outcomes = self.outcomes.clone();
                let in_bank = self.in_bank.clone();
                let gate = self.slot_gate.clone();
                executing.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                in_bank.lock().unwrap().insert(transaction.signatures[0]);
                // The engine reads the outcome from the statuses, answered from this call.
                let checked = Instant::now();
                tokio::spawn(async move {
                    let _executing = gate.read_owned().await;
                    let signature = transaction.signatures[0];
                    if checked.elapsed() < RECHECK_AFTER || still_queued(&client, &blockhash).await
                    {
                        let mut context = tarpc::context::current();
                        context.deadline = std::time::SystemTime::now() + PROCESS_DEADLINE;
                        let result = client
                            .process_transaction_with_commitment_and_context(
                                context,
                                transaction,
                                CommitmentLevel::Processed,
                            )
                            .await;
                        if let Some(outcome) = executed(result) {
                            outcomes.lock().unwrap().insert(signature, outcome);
                        }
                    }
                    // After the outcome: a status read finds one or the other.
                    in_bank.lock().unwrap().remove(&signature);
                    executing.fetch_sub(1, std::sync::atomic::Ordering::SeqCst);
                    finished.notify_waiters();
                    finished.notify_one();
                });
            }
        }
        Ok(())
    }

    async fn statuses(&self, signatures: &[Signature]) -> Result<Vec<TxStatus>, Error> {
        // What executed through this transport is known, and what it handed over whose process
        // call has not returned is Pending (its outcome comes with the call's answer; it can
        // still land, so it must not be signed again); the bank is asked about the rest (sent
        // by another transport, or refused before execution).
        let known: Vec<Option<TxStatus>> = {
            let in_bank = self.in_bank.lock().unwrap();
            let outcomes = self.outcomes.lock().unwrap();
            signatures
                .iter()
                .map(|s| match outcomes.get(s) {
                    Some(o) => Some(TxStatus::Landed(o.clone())),
                    None => in_bank.contains(s).then_some(TxStatus::Pending),
                })
                .collect()
        };
        let ask: Vec<Signature> = signatures
            .iter()
            .zip(&known)
            .filter_map(|(s, status)| status.is_none().then_some(*s))
            .collect();
        let mut answers = match ask.is_empty() {
            true => Vec::new(),
            false => self
                .client
                .get_transaction_statuses(ask)
                .await
                .map_err(bank_error)?,
        }
        .into_iter();
        Ok(known
            .into_iter()
            .map(|status| {
                status.unwrap_or_else(|| match answers.next().flatten() {
                    None => TxStatus::Unknown,
                    Some(status) => TxStatus::Landed(status.err.map_or(Ok(()), Err)),
                })
            })
            .collect())
    }

    async fn finalized(&self, signatures: &[Signature]) -> Result<Vec<bool>, Error> {
        // The bank has no forks: what executed stays executed.
        Ok(self
            .statuses(signatures)
            .await?
            .iter()
            .map(|s| matches!(s, TxStatus::Landed(_)))
            .collect())
    }

    fn ledger(&self) -> &Ledger {
        &self.ledger
    }

    async fn wait_for_progress(&self) {
        let _ = tokio::time::timeout(self.profile().poll, self.finished.notified()).await;
    }

    async fn pass_slot(&self, slot: u64) -> Result<(), Error> {
        // Nothing may execute while the sysvars change.
        let _alone = self.slot_gate.write().await;
        let (clock, hashes) = next_slot_sysvars(&self.client).await?;
        if clock.slot > slot + 1 {
            return Ok(());
        }
        let context = self.context.lock().unwrap();
        context.set_sysvar(&hashes);
        context.set_sysvar(&clock);
        Ok(())
    }

    async fn program_accounts(
        &self,
        filters: &[(usize, Vec<u8>)],
    ) -> Result<Vec<(Pubkey, Account)>, Error> {
        let first = filters.first().cloned().unwrap_or_default();
        let candidates: Vec<Pubkey> = {
            let written = self.written.lock().unwrap();
            let other = written.other.get(&first);
            written
                .candidates
                .iter()
                .filter(|k| other.is_none_or(|o| !o.contains(k)))
                .copied()
                .collect()
        };
        let mut found = Vec::new();
        let mut other = Vec::new();
        for (address, account) in candidates.iter().zip(self.get_accounts(&candidates).await?) {
            let Some(account) = account.filter(|a| a.lamports > 0) else {
                continue;
            };
            if account.owner == self.program_id && super::matches_filters(&account.data, filters) {
                found.push((*address, account));
                continue;
            }
            let (at, bytes) = &first;
            let held = account.data.get(*at..at + bytes.len());
            if held.is_some_and(|held| held != bytes.as_slice() && held.iter().any(|&b| b != 0)) {
                other.push(*address);
            }
        }
        let mut written = self.written.lock().unwrap();
        written.other.entry(first).or_default().extend(other);
        Ok(found)
    }

    async fn simulate(&self, transaction: &VersionedTransaction) -> Result<Simulation, Error> {
        let simulation = self
            .client
            .simulate_transaction(transaction.clone())
            .await
            .map_err(bank_error)?;
        let (units, logs) = simulation
            .simulation_details
            .map(|details| (details.units_consumed, details.logs))
            .unwrap_or_default();
        Ok(Simulation {
            result: simulation.result.unwrap_or(Ok(())),
            units,
            logs,
        })
    }
}
