//! The RPC transport: solana-client's nonblocking `RpcClient`.

use super::{Ledger, Profile, Simulation, Transport, TxStatus};
use crate::Error;
use futures::future::join_all;
use solana_account::Account;
use solana_client::client_error::{ClientError, ClientErrorKind};
use solana_client::nonblocking::rpc_client::RpcClient;
use solana_client::nonblocking::tpu_client::TpuClient;
use solana_client::rpc_client::SerializableMessage;
use solana_client::rpc_config::{
    RpcAccountInfoConfig, RpcSendTransactionConfig, RpcSimulateTransactionConfig,
};
use solana_client::rpc_request::RpcError;
use solana_client::rpc_response::UiAccountEncoding;
use solana_client::tpu_client::TpuClientConfig;
use solana_commitment_config::CommitmentConfig;
use solana_hash::Hash;
use solana_message::VersionedMessage;
use solana_pubkey::Pubkey;
use solana_quic_client::{QuicConfig, QuicConnectionManager, QuicPool};
use solana_signature::Signature;
use solana_transaction::versioned::VersionedTransaction;
use solana_transaction_error::TransactionError;
use std::sync::Arc;
use std::time::Duration;

/// Most accounts per getMultipleAccounts request (weight accounts are up to 10 MiB each).
const ACCOUNTS_PER_REQUEST: usize = 4;
/// Most signatures per getSignatureStatuses request (the RPC limit).
const SIGNATURES_PER_REQUEST: usize = 256;
/// JSON-RPC "invalid params": for sendTransaction, the node found the transaction itself
/// malformed (undecodable, too large, not sanitizable). Sending it again cannot help.
const INVALID_PARAMS: i64 = -32602;

pub struct RpcTransport {
    client: Arc<RpcClient>,
    url: String,
    commitment: CommitmentConfig,
    program_id: Pubkey,
    /// Sends straight to the leaders' TPU over QUIC (what `solana program deploy` does)
    /// instead of through the node's `sendTransaction`, when set.
    tpu: Option<QuicTpuClient>,
    ledger: Ledger,
}

type QuicTpuClient = TpuClient<QuicPool, QuicConnectionManager, QuicConfig>;

fn rpc_error(err: impl std::fmt::Display) -> Error {
    Error::Transport(format!("RPC: {err}"))
}

/// A node's answer that does not fit the question: one value per address or signature asked.
fn check_len(method: &str, asked: usize, answered: usize) -> Result<(), Error> {
    match asked == answered {
        true => Ok(()),
        false => Err(rpc_error(format!(
            "{method} answered {answered} values for {asked} requested"
        ))),
    }
}

/// The node refused the transaction itself as malformed (not a transient failure).
fn refused_as_malformed(err: &ClientError) -> bool {
    matches!(
        err.kind(),
        ClientErrorKind::RpcError(RpcError::RpcResponseError { code, .. }) if *code == INVALID_PARAMS
    )
}

/// A message as a node's getFeeForMessage decodes it (its version byte first, for v1).
struct WireMessage(Vec<u8>);

impl SerializableMessage for WireMessage {
    fn serialize(&self) -> Vec<u8> {
        self.0.clone()
    }
}

/// A transaction's wire bytes: legacy and v0 as bincode has them (signatures first); version 1
/// as SIMD-0385 lays it out, the message (version byte first) then the signatures, without
/// a count (bincode's serde form of a v1 transaction is not its wire form).
pub fn wire_bytes(transaction: &VersionedTransaction) -> Vec<u8> {
    match &transaction.message {
        VersionedMessage::V1(_) => {
            let mut bytes = transaction.message.serialize();
            for signature in &transaction.signatures {
                bytes.extend_from_slice(signature.as_ref());
            }
            bytes
        }
        _ => bincode::serialize(transaction).expect("a transaction serializes"),
    }
}

impl RpcTransport {
    /// Each signature's status (getSignatureStatuses, in batches): None when the node knows
    /// none, else whether it reached `commitment` and the transaction's result.
    async fn signature_statuses(
        &self,
        signatures: &[Signature],
        commitment: CommitmentConfig,
    ) -> Result<Vec<Option<(bool, Result<(), TransactionError>)>>, Error> {
        let mut statuses = Vec::with_capacity(signatures.len());
        for batch in signatures.chunks(SIGNATURES_PER_REQUEST) {
            let response = self
                .client
                .get_signature_statuses(batch)
                .await
                .map_err(rpc_error)?;
            check_len("getSignatureStatuses", batch.len(), response.value.len())?;
            statuses.extend(response.value.into_iter().map(|status| {
                status.map(|s| {
                    (
                        s.satisfies_commitment(commitment),
                        s.err.map_or(Ok(()), Err),
                    )
                })
            }));
        }
        Ok(statuses)
    }

    /// A transport to the Curta program at its default id (`curta_interface::id()`).
    pub fn new(url: &str, commitment: CommitmentConfig) -> RpcTransport {
        RpcTransport::with_program_id(url, commitment, curta_interface::id())
    }

    /// A transport to the Curta program deployed at `program_id`.
    pub fn with_program_id(
        url: &str,
        commitment: CommitmentConfig,
        program_id: Pubkey,
    ) -> RpcTransport {
        RpcTransport {
            client: Arc::new(RpcClient::new_with_commitment(url.to_string(), commitment)),
            url: url.to_string(),
            commitment,
            program_id,
            tpu: None,
            ledger: Ledger::default(),
        }
    }

    /// Sends transactions to the current and upcoming leaders' TPU over QUIC, finding them
    /// through the RPC node and its WebSocket at `websocket_url`; everything else stays on RPC.
    pub async fn with_tpu(mut self, websocket_url: &str) -> Result<RpcTransport, Error> {
        let tpu = TpuClient::new(
            "curta-client",
            self.client.clone(),
            websocket_url,
            TpuClientConfig::default(),
        )
        .await
        .map_err(|e| Error::Transport(format!("TPU client via {websocket_url}: {e}")))?;
        self.tpu = Some(tpu);
        Ok(self)
    }
}

impl Transport for RpcTransport {
    fn describe(&self) -> String {
        self.url.clone()
    }

    fn program_id(&self) -> Pubkey {
        self.program_id
    }

    fn profile(&self) -> Profile {
        // Writes commute, and seals are order-free (the program hashes the chunk at its cursor
        // whichever seal lands, in any section when the seal carries every section): both fill
        // a wide window. The model account takes about 550 seals a block (24M units over a
        // seal's 41,000 requested and its overhead), so every seal of stories15M's 256 chunks
        // is in flight at once.
        Profile {
            window: 128,
            seal_window: 256,
            poll: Duration::from_millis(400),
            blockhash_refresh: Duration::from_secs(20),
        }
    }

    async fn get_accounts(&self, addresses: &[Pubkey]) -> Result<Vec<Option<Account>>, Error> {
        let mut accounts = Vec::with_capacity(addresses.len());
        // Asked as base64+zstd and decoded here: solana-client's own decoding panics on data
        // a node returns in another encoding.
        let config = RpcAccountInfoConfig {
            encoding: Some(UiAccountEncoding::Base64Zstd),
            commitment: Some(self.commitment),
            ..RpcAccountInfoConfig::default()
        };
        for batch in addresses.chunks(ACCOUNTS_PER_REQUEST) {
            let response = self
                .client
                .get_multiple_ui_accounts_with_config(batch, config.clone())
                .await
                .map_err(rpc_error)?;
            check_len("getMultipleAccounts", batch.len(), response.value.len())?;
            for (address, account) in batch.iter().zip(response.value) {
                let account = match account {
                    None => None,
                    Some(ui) => Some(ui.to_account().ok_or_else(|| {
                        rpc_error(format!(
                            "getMultipleAccounts: account {address}: data or owner not decodable \
                             (asked for base64+zstd, got {:?})",
                            ui.data
                        ))
                    })?),
                };
                accounts.push(account);
            }
        }
        Ok(accounts)
    }

    async fn balance(&self, address: &Pubkey) -> Result<u64, Error> {
        Ok(self
            .client
            .get_balance_with_commitment(address, self.commitment)
            .await
            .map_err(rpc_error)?
            .value)
    }

    async fn rent_minimum(&self, data_len: usize) -> Result<u64, Error> {
        self.client
            .get_minimum_balance_for_rent_exemption(data_len)
            .await
            .map_err(rpc_error)
    }

    async fn fee_for_message(&self, message: &VersionedMessage) -> Result<u64, Error> {
        self.client
            .get_fee_for_message(&WireMessage(message.serialize()))
            .await
            .map_err(rpc_error)
    }

    async fn latest_blockhash(&self) -> Result<(Hash, u64), Error> {
        self.client
            .get_latest_blockhash_with_commitment(self.commitment)
            .await
            .map_err(rpc_error)
    }

    async fn blockhash_expired(
        &self,
        _blockhash: &Hash,
        last_valid_block_height: u64,
    ) -> Result<bool, Error> {
        let height = self
            .client
            .get_block_height_with_commitment(self.commitment)
            .await
            .map_err(rpc_error)?;
        Ok(height > last_valid_block_height)
    }

    async fn send(&self, transactions: &[VersionedTransaction]) -> Result<(), Error> {
        if let Some(tpu) = &self.tpu {
            // A transaction the leaders did not take is simply not landed (re-signed after
            // its blockhash expires); only a batch that reached no leader is an error.
            let wire: Vec<Vec<u8>> = transactions.iter().map(wire_bytes).collect();
            return tpu
                .try_send_wire_transaction_batch(wire)
                .await
                .map_err(|e| Error::Transport(format!("TPU send via {}: {e}", self.url)));
        }
        let config = RpcSendTransactionConfig {
            skip_preflight: true,
            preflight_commitment: Some(self.commitment.commitment),
            ..RpcSendTransactionConfig::default()
        };
        let results = join_all(
            transactions
                .iter()
                .map(|tx| self.client.send_transaction_with_config(tx, config)),
        )
        .await;
        // A transaction the node refused is simply not landed: the engine re-signs it when its
        // blockhash expires. Only a node that refuses everything is an error, or one that
        // refuses a transaction as malformed (signing it again would not change that).
        for (tx, result) in transactions.iter().zip(&results) {
            if let Err(err) = result {
                if refused_as_malformed(err) {
                    return Err(rpc_error(format!(
                        "sendTransaction refused transaction {}: {err}",
                        tx.signatures[0]
                    )));
                }
            }
        }
        match results.iter().find_map(|r| r.as_ref().err()) {
            Some(err) if results.iter().all(|r| r.is_err()) => Err(rpc_error(err)),
            _ => Ok(()),
        }
    }

    async fn statuses(&self, signatures: &[Signature]) -> Result<Vec<TxStatus>, Error> {
        let statuses = self.signature_statuses(signatures, self.commitment).await?;
        Ok(statuses
            .into_iter()
            .map(|status| match status {
                None => TxStatus::Unknown,
                Some((true, result)) => TxStatus::Landed(result),
                Some((false, _)) => TxStatus::Pending,
            })
            .collect())
    }

    async fn finalized(&self, signatures: &[Signature]) -> Result<Vec<bool>, Error> {
        let statuses = self
            .signature_statuses(signatures, CommitmentConfig::finalized())
            .await?;
        Ok(statuses
            .into_iter()
            .map(|status| status.is_some_and(|(reached, _)| reached))
            .collect())
    }

    fn ledger(&self) -> &Ledger {
        &self.ledger
    }

    async fn pass_slot(&self, slot: u64) -> Result<(), Error> {
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
        loop {
            let now = self
                .client
                .get_slot_with_commitment(CommitmentConfig::processed())
                .await
                .map_err(rpc_error)?;
            if now > slot {
                return Ok(());
            }
            if std::time::Instant::now() > deadline {
                return Err(rpc_error(format!(
                    "the cluster stayed at slot {now} for a minute, waiting to pass slot {slot}"
                )));
            }
            tokio::time::sleep(std::time::Duration::from_millis(100)).await;
        }
    }

    async fn program_accounts(
        &self,
        filters: &[(usize, Vec<u8>)],
    ) -> Result<Vec<(Pubkey, Account)>, Error> {
        use solana_client::rpc_config::RpcProgramAccountsConfig;
        use solana_client::rpc_filter::{Memcmp, RpcFilterType};
        let config = RpcProgramAccountsConfig {
            filters: Some(
                filters
                    .iter()
                    .map(|(at, bytes)| {
                        RpcFilterType::Memcmp(Memcmp::new_raw_bytes(*at, bytes.clone()))
                    })
                    .collect(),
            ),
            account_config: RpcAccountInfoConfig {
                encoding: Some(UiAccountEncoding::Base64Zstd),
                commitment: Some(self.commitment),
                ..RpcAccountInfoConfig::default()
            },
            with_context: None,
            sort_results: None,
        };
        let found = self
            .client
            .get_program_ui_accounts_with_config(&self.program_id, config)
            .await
            .map_err(rpc_error)?;
        let mut accounts = Vec::with_capacity(found.len());
        for (address, ui) in found {
            let account = ui.to_account().ok_or_else(|| {
                rpc_error(format!(
                    "getProgramAccounts: account {address}: data or owner not decodable"
                ))
            })?;
            // A node that ignores a filter gives more than was asked.
            if super::matches_filters(&account.data, filters) {
                accounts.push((address, account));
            }
        }
        Ok(accounts)
    }

    async fn simulate(&self, transaction: &VersionedTransaction) -> Result<Simulation, Error> {
        let config = RpcSimulateTransactionConfig {
            sig_verify: false,
            replace_recent_blockhash: true,
            commitment: Some(self.commitment),
            ..RpcSimulateTransactionConfig::default()
        };
        let response = self
            .client
            .simulate_transaction_with_config(transaction, config)
            .await
            .map_err(rpc_error)?;
        let value = response.value;
        Ok(Simulation {
            result: value.err.map_or(Ok(()), |e| Err(e.into())),
            units: value.units_consumed.unwrap_or(0),
            logs: value.logs.unwrap_or_default(),
        })
    }
}
