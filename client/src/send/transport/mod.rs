//! Transports: the few chain operations the engine needs, over an RPC endpoint
//! ([`RpcTransport`]) or an in-process bank running the real program ([`BankTransport`]).
//! The engine is written once against [`Transport`]; the two implementations are thin.

mod bank;
pub mod program_so;
mod rpc;

pub use bank::{next_slot_sysvars, BankTransport};
pub use program_so::{program_hash, ProgramSo};
pub use rpc::{wire_bytes, RpcTransport};

use crate::Error;
use solana_account::Account;
use solana_hash::Hash;
use solana_message::VersionedMessage;
use solana_pubkey::Pubkey;
use solana_signature::Signature;
use solana_transaction::versioned::VersionedTransaction;
use solana_transaction_error::TransactionError;
use std::sync::Mutex;
use std::time::Duration;

/// What a signature's status is at the transport's commitment.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum TxStatus {
    /// Not seen (yet, or ever: dropped).
    Unknown,
    /// Seen, but not yet at the required commitment: it must not be re-signed.
    Pending,
    /// Executed at the required commitment, successfully or not (fees are charged either way).
    Landed(Result<(), TransactionError>),
}

/// A transaction simulation: the result and the compute units it consumed.
#[derive(Clone, Debug)]
pub struct Simulation {
    pub result: Result<(), TransactionError>,
    pub units: u64,
    pub logs: Vec<String>,
}

/// Pacing that suits a transport. The engine's logic is the same everywhere; only these
/// numbers differ (an RPC node wants fewer requests per second than an in-process bank).
#[derive(Clone, Debug)]
pub struct Profile {
    /// Most transactions in flight at once.
    pub window: usize,
    /// Most seal transactions in flight at once (the seals of one section are order-free).
    pub seal_window: usize,
    /// Pause between two status polls when nothing resolved.
    pub poll: Duration,
    /// Fetch a new blockhash when the current one is older than this.
    pub blockhash_refresh: Duration,
}

/// A transaction an engine handed to a cluster: its signature and the blockhash it was
/// signed under, with the last block height at which that blockhash is valid.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Sent {
    pub signature: Signature,
    pub blockhash: Hash,
    pub last_valid: u64,
}

/// Every transaction sent through a transport that may still land (or, landed, still be
/// rolled back and land again): recorded by the engine before it sends, removed by
/// `Engine::settle` once final or past its blockhash's last valid height. The transport
/// only holds it, so that it outlives each operation's engine (and an operation stopped by
/// an error or dropped mid-run): every later operation over the same transport sees it.
#[derive(Debug, Default)]
pub struct Ledger(Mutex<Vec<Sent>>);

impl Ledger {
    pub fn record(&self, sent: Sent) {
        self.0.lock().unwrap().push(sent);
    }

    /// What may still land, oldest first.
    pub fn pending(&self) -> Vec<Sent> {
        self.0.lock().unwrap().clone()
    }

    /// Forgets the transactions that can no longer land or change.
    pub fn settled(&self, signatures: &std::collections::HashSet<Signature>) {
        self.0
            .lock()
            .unwrap()
            .retain(|s| !signatures.contains(&s.signature));
    }
}

/// The chain operations the engine uses. Everything is read at the transport's commitment.
#[allow(async_fn_in_trait)]
pub trait Transport {
    /// Where the transactions go, for reports ("in-process bank", or the RPC URL).
    fn describe(&self) -> String;
    fn profile(&self) -> Profile;
    /// The Curta program this transport's cluster runs (where the user deployed it): every
    /// address, instruction and ownership check of an operation uses it.
    fn program_id(&self) -> Pubkey;
    /// Accounts in the order asked; `None` for an address without an account.
    async fn get_accounts(&self, addresses: &[Pubkey]) -> Result<Vec<Option<Account>>, Error>;
    async fn balance(&self, address: &Pubkey) -> Result<u64, Error>;
    async fn rent_minimum(&self, data_len: usize) -> Result<u64, Error>;
    /// The fee of a message, legacy or version 1, under its blockhash.
    async fn fee_for_message(&self, message: &VersionedMessage) -> Result<u64, Error>;
    /// The latest blockhash and the last block height at which it is valid.
    async fn latest_blockhash(&self) -> Result<(Hash, u64), Error>;
    /// True only when a transaction with this blockhash can no longer be executed.
    async fn blockhash_expired(
        &self,
        blockhash: &Hash,
        last_valid_block_height: u64,
    ) -> Result<bool, Error>;
    /// Hand transactions over without waiting for them to execute.
    async fn send(&self, transactions: &[VersionedTransaction]) -> Result<(), Error>;
    async fn statuses(&self, signatures: &[Signature]) -> Result<Vec<TxStatus>, Error>;
    /// Whether each signature is final: executed in a block the cluster can no longer roll
    /// back (finalized over RPC, whatever the transport's commitment; executed, on a bank
    /// without forks).
    async fn finalized(&self, signatures: &[Signature]) -> Result<Vec<bool>, Error>;
    /// The transactions sent through this transport that may still land.
    fn ledger(&self) -> &Ledger;
    async fn simulate(&self, transaction: &VersionedTransaction) -> Result<Simulation, Error>;
    /// Returns once the cluster works on a slot after `slot` (a transaction sent then lands
    /// after it): polls the processed slot over RPC; moves the bank to the next slot.
    async fn pass_slot(&self, slot: u64) -> Result<(), Error>;
    /// Waits, when nothing sent has resolved yet, before the statuses are read again: at most
    /// the profile's poll interval, less where the transport knows a transaction finished.
    async fn wait_for_progress(&self) {
        tokio::time::sleep(self.profile().poll).await
    }
    /// The cluster's slot at the transport's commitment: the Clock sysvar's.
    async fn slot(&self) -> Result<u64, Error> {
        let clock = solana_sdk::sysvar::clock::ID;
        let account = self.get_accounts(&[clock]).await?.remove(0);
        let data = account.map(|a| a.data).unwrap_or_default();
        // The Clock's first field is its slot (u64 little-endian).
        match data.first_chunk::<8>() {
            Some(slot) => Ok(u64::from_le_bytes(*slot)),
            None => Err(Error::Transport(format!(
                "the Clock sysvar {clock} holds {} bytes, not a clock",
                data.len()
            ))),
        }
    }
    /// The program's accounts whose data holds each `(offset, bytes)` of `filters`
    /// (getProgramAccounts with memcmp filters over RPC; on the bank, among the accounts its
    /// own transactions wrote). A transport that cannot list them says so.
    async fn program_accounts(
        &self,
        filters: &[(usize, Vec<u8>)],
    ) -> Result<Vec<(Pubkey, Account)>, Error> {
        let _ = filters;
        Err(Error::Transport(format!(
            "{} cannot list the program's accounts",
            self.describe()
        )))
    }
}

/// Whether `data` holds every `(offset, bytes)` of `filters` (a memcmp filter's test).
pub fn matches_filters(data: &[u8], filters: &[(usize, Vec<u8>)]) -> bool {
    filters
        .iter()
        .all(|(at, bytes)| data.get(*at..at + bytes.len()) == Some(bytes.as_slice()))
}
