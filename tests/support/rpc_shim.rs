//! A Solana JSON-RPC node inside the test process, so that `RpcTransport` (solana-client's
//! nonblocking `RpcClient` over HTTP) runs for real without a validator.
//!
//! HTTP/1.1 with keep-alive on 127.0.0.1 (a free port), JSON-RPC 2.0, the methods, parameters,
//! defaults, limits and error codes of an agave validator's RPC service for everything the
//! client calls, each answered from a solana-program-test bank running the Curta program
//! natively. Every response is the serde serialization of the type solana-client parses
//! (`Response`, `RpcBlockhash`, `UiAccount` encoded by the validator's own
//! `encode_ui_account`, `TransactionStatus`, `RpcSimulateTransactionResult`).
//!
//! sendTransaction decodes and sanitizes the transaction (without skipPreflight it also
//! verifies the signatures and simulates it, failing as a validator does) and queues it. One
//! task executes the queue in order on the bank, like a leader: it drops a transaction whose
//! signatures do not verify or that the bank refuses before execution (unknown blockhash,
//! already processed, fee unpaid); it executes the rest, which pay their fee whether or not
//! they fail. A transaction shows in getSignatureStatuses only once executed, and then
//! climbs one confirmation level per observation: "processed" the first time a status
//! request sees it, "confirmed" the second, "finalized" (rooted) from the third on. So every
//! client sees every level whatever its timing, and a client waiting for "finalized" must
//! hold through two reports that are not yet. Account reads see the executed state at every
//! commitment.
//!
//! The chain does not move: the bank's blockhash rotation is stopped when the node starts,
//! so the latest blockhash and the block height stay fixed and no blockhash expires.
//! (program-test registers a blockhash every 6.4 ms, each valid for about a second; an RPC
//! client refreshes its blockhash every 20 s, as a cluster's lives about 60 s.)
//! `RpcShim::start_movable` is the exception: its bank moves to the next slot when the test
//! says (`pass_slot`), for runs whose seed is drawn from a slot after their start, and its
//! blockhashes rotate and expire as program-test's do.
//!
//! This file is also compiled into client/tests/rpc_cli.rs, so it uses nothing of the
//! curta-tests crate.

use base64::prelude::{Engine as _, BASE64_STANDARD};
use futures::future::join_all;
use serde::de::DeserializeOwned;
use serde_json::{json, Value};
use solana_account::Account;
use solana_account_decoder::{encode_ui_account, UiAccountEncoding, MAX_BASE58_BYTES};
use solana_client::rpc_config::{
    RpcAccountInfoConfig, RpcContextConfig, RpcSendTransactionConfig, RpcSimulateTransactionConfig,
};
use solana_client::rpc_custom_error::{
    JSON_RPC_SERVER_ERROR_MIN_CONTEXT_SLOT_NOT_REACHED,
    JSON_RPC_SERVER_ERROR_SEND_TRANSACTION_PREFLIGHT_FAILURE,
    JSON_RPC_SERVER_ERROR_TRANSACTION_SIGNATURE_VERIFICATION_FAILURE,
};
use solana_client::rpc_request::{MAX_GET_SIGNATURE_STATUSES_QUERY_ITEMS, MAX_MULTIPLE_ACCOUNTS};
use solana_client::rpc_response::{
    Response, RpcApiVersion, RpcBlockhash, RpcResponseContext, RpcSimulateTransactionResult,
    RpcVersionInfo, UiAccount, UiReturnDataEncoding, UiTransactionReturnData,
};
use solana_commitment_config::CommitmentLevel;
use solana_hash::Hash;
use solana_keypair::Keypair;
use solana_message::{Message, VersionedMessage};
use solana_program_test::{BanksClient, BanksClientError, ProgramTest};
use solana_pubkey::Pubkey;
use solana_signature::Signature;
use solana_signer::Signer;
use solana_transaction::versioned::VersionedTransaction;
use solana_transaction::Transaction;
use solana_transaction_error::TransactionError;
use solana_transaction_status_client_types::{
    TransactionBinaryEncoding, TransactionConfirmationStatus, TransactionStatus,
    UiTransactionEncoding,
};
use std::collections::{BTreeMap, HashMap};
use std::str::FromStr;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::mpsc;

/// A validator's limit on a request body (agave's MAX_REQUEST_BODY_SIZE).
const MAX_REQUEST_BODY: usize = 50 * 1024;
/// The largest serialized transaction (PACKET_DATA_SIZE), and its base-58 and base-64 lengths.
const PACKET_DATA_SIZE: usize = 1232;
const MAX_BASE58_SIZE: usize = 1683;
const MAX_BASE64_SIZE: usize = 1644;

/// Ways the node can be told to misbehave, to test the client's handling of a bad node.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Misbehave {
    /// Answer as a validator does.
    No,
    /// getMultipleAccounts returns account data as parsed JSON, whatever encoding was asked.
    AccountsAsJson,
    /// getSignatureStatuses leaves out the last status.
    ShortStatuses,
}

/// A transaction the node's leader executed on the bank (its fee was charged).
#[derive(Clone, Debug)]
pub struct Executed {
    pub transaction: VersionedTransaction,
    pub err: Option<TransactionError>,
}

/// The running node. It lives on the runtime that started it.
pub struct RpcShim {
    url: String,
    node: Arc<Node>,
    mint: Keypair,
    /// The bank's context, kept by [`RpcShim::start_movable`] to move it.
    context: Option<std::sync::Mutex<solana_program_test::ProgramTestContext>>,
}

struct Node {
    banks: BanksClient,
    /// A fee payer for blockhash probes (the genesis mint).
    mint: Pubkey,
    leader: mpsc::UnboundedSender<VersionedTransaction>,
    ledger: Mutex<Ledger>,
    misbehave: Mutex<Misbehave>,
}

#[derive(Default)]
struct Ledger {
    executed: Vec<Executed>,
    dropped: u64,
    calls: BTreeMap<String, u64>,
    reported: HashMap<Signature, Vec<&'static str>>,
}

impl RpcShim {
    /// Starts a bank with the Curta program, each `(address, lamports)` a system account at
    /// genesis, and the node in front of it.
    pub async fn start(funded: &[(Pubkey, u64)]) -> RpcShim {
        let accounts: Vec<(Pubkey, Account)> = funded
            .iter()
            .map(|(address, lamports)| {
                let account = Account::new(*lamports, 0, &solana_system_interface::program::ID);
                (*address, account)
            })
            .collect();
        RpcShim::start_with_accounts(&accounts).await
    }

    /// Starts the bank with these accounts at genesis, and the node in front of it.
    pub async fn start_with_accounts(accounts: &[(Pubkey, Account)]) -> RpcShim {
        RpcShim::start_bank(accounts, false).await
    }

    /// As [`RpcShim::start_with_accounts`], but a node whose bank [`RpcShim::pass_slot`] moves
    /// to its next slot, as a cluster moves on (a run's seed drawn from the chain needs a slot
    /// after its start). The bank's context is kept for that, and with it program-test's
    /// blockhash rotation: a blockhash lives about two seconds here, so a client must fetch it
    /// right before it sends (an RpcClient, which keeps one for 20 s, cannot use this node).
    pub async fn start_movable(accounts: &[(Pubkey, Account)]) -> RpcShim {
        RpcShim::start_bank(accounts, true).await
    }

    /// Moves a node of [`RpcShim::start_movable`] to its bank's next slot (the slot left behind
    /// is frozen and its hash enters SlotHashes); returns the new slot. Call it on a
    /// current-thread runtime, with no transaction in flight: program-test's blockhash rotation
    /// is a task of the runtime, and a blockhash (or a transaction) stored into the bank while
    /// the warp freezes it panics the bank.
    pub async fn pass_slot(&self) -> u64 {
        let context = self
            .context
            .as_ref()
            .expect("pass_slot needs a node of RpcShim::start_movable");
        // The node reports the bank's root slot; the working bank is at it, or (before the
        // first move) possibly ahead: warp past whichever it is.
        let mut slot = self.node.banks.clone().get_root_slot().await.expect("bank") + 1;
        let mut context = context.lock().unwrap();
        loop {
            match context.warp_to_slot(slot) {
                Ok(()) => return slot,
                Err(solana_program_test::ProgramTestError::InvalidWarpSlot) if slot < u64::MAX => {
                    slot += 1
                }
                Err(e) => panic!("warping the bank to slot {slot}: {e:?}"),
            }
        }
    }

    async fn start_bank(accounts: &[(Pubkey, Account)], movable: bool) -> RpcShim {
        if std::env::var_os("RUST_LOG").is_none() {
            std::env::set_var("RUST_LOG", "error");
        }
        // The program's SBF binary (this file is also compiled into the client's tests, so it
        // loads the binary itself rather than through curta_tests::program_test).
        let so = curta_client::send::transport::ProgramSo::find().unwrap_or_else(|e| panic!("{e}"));
        let mut test = ProgramTest::default();
        // This node decodes, prices and executes legacy transactions only: a cluster without
        // version 1 transactions (`--tx-version auto` falls back to legacy on it).
        test.deactivate_feature(curta_client::send::format::FEATURE_TX_V1);
        so.add_to(&mut test, curta_interface::id());
        for (address, account) in accounts {
            test.add_account(*address, account.clone());
        }
        let context = test.start_with_context().await;
        let banks = context.banks_client.clone();
        let mint = context.payer.insecure_clone();
        // Dropping the context stops its blockhash rotation (after the sleep in progress).
        let context = match movable {
            true => Some(std::sync::Mutex::new(context)),
            false => {
                drop(context);
                tokio::time::sleep(Duration::from_millis(20)).await;
                None
            }
        };

        let listener = TcpListener::bind("127.0.0.1:0")
            .await
            .expect("binding the RPC node to a free port on 127.0.0.1");
        let url = format!("http://{}", listener.local_addr().unwrap());
        let (leader, queue) = mpsc::unbounded_channel();
        let node = Arc::new(Node {
            banks,
            mint: mint.pubkey(),
            leader,
            ledger: Mutex::new(Ledger::default()),
            misbehave: Mutex::new(Misbehave::No),
        });
        tokio::spawn(lead(node.clone(), queue));
        tokio::spawn(serve(listener, node.clone()));
        RpcShim {
            url,
            node,
            mint,
            context,
        }
    }

    /// The node's URL: http://127.0.0.1:PORT
    pub fn url(&self) -> String {
        self.url.clone()
    }

    /// From now on, answer as `misbehave` says.
    pub fn misbehave(&self, misbehave: Misbehave) {
        *self.node.misbehave.lock().unwrap() = misbehave;
    }

    /// The bank itself, for reading around the RPC path.
    pub fn banks(&self) -> BanksClient {
        self.node.banks.clone()
    }

    /// The genesis mint (about 1,000,000 SOL).
    pub fn mint(&self) -> Keypair {
        self.mint.insecure_clone()
    }

    /// Every transaction executed so far, in execution order.
    pub fn executed(&self) -> Vec<Executed> {
        self.node.ledger.lock().unwrap().executed.clone()
    }

    /// Transactions accepted by sendTransaction that the leader dropped unexecuted.
    pub fn dropped(&self) -> u64 {
        self.node.ledger.lock().unwrap().dropped
    }

    /// The confirmation statuses getSignatureStatuses reported for `signature`, in order,
    /// repeats of "finalized" collapsed: ["processed", "confirmed", "finalized"] at most.
    pub fn reported(&self, signature: &Signature) -> Vec<&'static str> {
        let ledger = self.node.ledger.lock().unwrap();
        ledger.reported.get(signature).cloned().unwrap_or_default()
    }

    /// How many times each RPC method was called.
    pub fn calls(&self) -> BTreeMap<String, u64> {
        self.node.ledger.lock().unwrap().calls.clone()
    }

    /// The fees the bank charges for the messages of the executed transactions that `payer`
    /// paid for, asked of the bank directly (not through RPC).
    pub async fn fees_charged(&self, payer: &Pubkey) -> u64 {
        let mut total = 0;
        for executed in self.executed() {
            let VersionedMessage::Legacy(message) = executed.transaction.message else {
                panic!("the node executes legacy messages only");
            };
            if message.account_keys.first() == Some(payer) {
                total += self
                    .node
                    .banks
                    .get_fee_for_message(message)
                    .await
                    .expect("bank")
                    .expect("the blockhash is still in the bank's queue");
            }
        }
        total
    }
}

/// The leader: executes queued transactions one at a time, in the order received.
async fn lead(node: Arc<Node>, mut queue: mpsc::UnboundedReceiver<VersionedTransaction>) {
    while let Some(transaction) = queue.recv().await {
        // Signature verification comes before banking: a forged transaction is dropped.
        let verified = transaction.verify_with_results().iter().all(|ok| *ok);
        let executed = match verified {
            true => node
                .banks
                .process_transaction_with_metadata(transaction.clone())
                .await
                .ok()
                .filter(|result| result.metadata.is_some()),
            false => None,
        };
        let mut ledger = node.ledger.lock().unwrap();
        match executed {
            Some(result) => ledger.executed.push(Executed {
                transaction,
                err: result.result.err(),
            }),
            None => ledger.dropped += 1,
        }
    }
}

async fn serve(listener: TcpListener, node: Arc<Node>) {
    while let Ok((stream, _)) = listener.accept().await {
        tokio::spawn(connection(stream, node.clone()));
    }
}

enum Head {
    Partial,
    Complete {
        len: usize,
        body_len: usize,
        close: bool,
    },
    Refused(&'static str, String),
}

fn parse_head(buffer: &[u8]) -> Head {
    let mut headers = [httparse::EMPTY_HEADER; 64];
    let mut request = httparse::Request::new(&mut headers);
    let len = match request.parse(buffer) {
        Ok(httparse::Status::Complete(len)) => len,
        Ok(httparse::Status::Partial) => return Head::Partial,
        Err(e) => return Head::Refused("400 Bad Request", format!("bad request: {e}")),
    };
    if request.method != Some("POST") {
        return Head::Refused(
            "405 Method Not Allowed",
            "Used HTTP Method is not allowed. POST or OPTIONS is required".into(),
        );
    }
    let header = |name: &str| {
        request
            .headers
            .iter()
            .find(|h| h.name.eq_ignore_ascii_case(name))
            .map(|h| String::from_utf8_lossy(h.value).trim().to_string())
    };
    let body_len = match header("content-length").map(|v| v.parse::<usize>()) {
        Some(Ok(n)) if header("transfer-encoding").is_none() => n,
        _ => return Head::Refused("411 Length Required", "a Content-Length is required".into()),
    };
    if body_len > MAX_REQUEST_BODY {
        return Head::Refused(
            "413 Payload Too Large",
            format!("request body of {body_len} bytes; the limit is {MAX_REQUEST_BODY}"),
        );
    }
    let close = header("connection").is_some_and(|v| v.eq_ignore_ascii_case("close"));
    Head::Complete {
        len,
        body_len,
        close,
    }
}

async fn read_more(stream: &mut TcpStream, buffer: &mut Vec<u8>) -> std::io::Result<usize> {
    let mut chunk = [0u8; 16 * 1024];
    let n = stream.read(&mut chunk).await?;
    buffer.extend_from_slice(&chunk[..n]);
    Ok(n)
}

async fn respond(
    stream: &mut TcpStream,
    status: &str,
    content_type: &str,
    body: &[u8],
) -> std::io::Result<()> {
    let head = format!(
        "HTTP/1.1 {status}\r\ncontent-type: {content_type}\r\ncontent-length: {}\r\n\r\n",
        body.len()
    );
    stream.write_all(head.as_bytes()).await?;
    stream.write_all(body).await?;
    stream.flush().await
}

/// One connection: requests one after another (keep-alive), each a POST with a
/// Content-Length body, each answered 200 with the JSON-RPC response.
async fn connection(mut stream: TcpStream, node: Arc<Node>) -> std::io::Result<()> {
    let mut buffer = Vec::new();
    loop {
        let (head_len, body_len, close) = loop {
            match parse_head(&buffer) {
                Head::Complete {
                    len,
                    body_len,
                    close,
                } => break (len, body_len, close),
                Head::Refused(status, why) => {
                    return respond(&mut stream, status, "text/plain", why.as_bytes()).await;
                }
                Head::Partial => {
                    if read_more(&mut stream, &mut buffer).await? == 0 {
                        return Ok(());
                    }
                }
            }
        };
        while buffer.len() < head_len + body_len {
            if read_more(&mut stream, &mut buffer).await? == 0 {
                return Ok(());
            }
        }
        let body: Vec<u8> = buffer.drain(..head_len + body_len).skip(head_len).collect();
        let response = node.handle(&body).await;
        respond(
            &mut stream,
            "200 OK",
            "application/json",
            response.as_bytes(),
        )
        .await?;
        if close {
            return Ok(());
        }
    }
}

/// A JSON-RPC error object.
#[derive(Debug)]
struct RpcError {
    code: i64,
    message: String,
    data: Option<Value>,
}

impl RpcError {
    fn new(code: i64, message: impl Into<String>) -> RpcError {
        RpcError {
            code,
            message: message.into(),
            data: None,
        }
    }

    fn to_json(&self) -> Value {
        let mut error = json!({ "code": self.code, "message": self.message });
        if let Some(data) = &self.data {
            error["data"] = data.clone();
        }
        error
    }
}

fn invalid_params(message: impl Into<String>) -> RpcError {
    RpcError::new(-32602, message)
}

fn invalid_request(message: impl Into<String>) -> RpcError {
    RpcError::new(-32600, message)
}

impl From<BanksClientError> for RpcError {
    fn from(err: BanksClientError) -> RpcError {
        RpcError::new(-32603, format!("Internal error: bank: {err}"))
    }
}

/// Positional parameters.
struct Params(Vec<Value>);

impl Params {
    fn new(params: Value) -> Result<Params, RpcError> {
        match params {
            Value::Null => Ok(Params(Vec::new())),
            Value::Array(params) => Ok(Params(params)),
            _ => Err(invalid_params("Invalid params: expected an array")),
        }
    }

    fn required<T: DeserializeOwned>(&self, i: usize, what: &str) -> Result<T, RpcError> {
        match self.0.get(i) {
            None | Some(Value::Null) => Err(invalid_params(format!(
                "Invalid params: missing parameter {i} ({what})"
            ))),
            Some(value) => serde_json::from_value(value.clone())
                .map_err(|e| invalid_params(format!("Invalid params: {e}."))),
        }
    }

    fn optional<T: DeserializeOwned + Default>(&self, i: usize) -> Result<T, RpcError> {
        match self.0.get(i) {
            None | Some(Value::Null) => Ok(T::default()),
            Some(value) => serde_json::from_value(value.clone())
                .map_err(|e| invalid_params(format!("Invalid params: {e}."))),
        }
    }
}

fn parse_pubkey(s: &str) -> Result<Pubkey, RpcError> {
    Pubkey::from_str(s).map_err(|e| invalid_params(format!("Invalid param: {e:?}")))
}

fn to_json(value: impl serde::Serialize) -> Result<Value, RpcError> {
    serde_json::to_value(value).map_err(|e| RpcError::new(-32603, format!("Internal error: {e}")))
}

fn verify_signatures(transaction: &VersionedTransaction) -> Result<(), RpcError> {
    match transaction.verify_with_results().iter().all(|ok| *ok) {
        true => Ok(()),
        false => Err(RpcError::new(
            JSON_RPC_SERVER_ERROR_TRANSACTION_SIGNATURE_VERIFICATION_FAILURE,
            "Transaction signature verification failure",
        )),
    }
}

/// A wire transaction in `encoding`, checked as a validator checks it before anything else.
fn decode_transaction(
    encoded: &str,
    encoding: UiTransactionEncoding,
) -> Result<VersionedTransaction, RpcError> {
    let binary = encoding.into_binary_encoding().ok_or_else(|| {
        invalid_params(format!(
            "unsupported encoding: {encoding:?}. Supported encodings: base58, base64"
        ))
    })?;
    let too_large = |len: usize, max: usize, name: &str| {
        invalid_params(format!(
            "{name} encoded solana_transaction::versioned::VersionedTransaction too large: \
             {len} bytes (max: encoded/raw {max}/{PACKET_DATA_SIZE})"
        ))
    };
    let bytes = match binary {
        TransactionBinaryEncoding::Base58 => {
            if encoded.len() > MAX_BASE58_SIZE {
                return Err(too_large(encoded.len(), MAX_BASE58_SIZE, "base58"));
            }
            bs58::decode(encoded)
                .into_vec()
                .map_err(|e| invalid_params(format!("invalid base58 encoding: {e:?}")))?
        }
        TransactionBinaryEncoding::Base64 => {
            if encoded.len() > MAX_BASE64_SIZE {
                return Err(too_large(encoded.len(), MAX_BASE64_SIZE, "base64"));
            }
            BASE64_STANDARD
                .decode(encoded)
                .map_err(|e| invalid_params(format!("invalid base64 encoding: {e:?}")))?
        }
    };
    if bytes.len() > PACKET_DATA_SIZE {
        return Err(invalid_params(format!(
            "decoded solana_transaction::versioned::VersionedTransaction too large: {} bytes \
             (max: {PACKET_DATA_SIZE} bytes)",
            bytes.len()
        )));
    }
    let transaction: VersionedTransaction = bincode::deserialize(&bytes).map_err(|e| {
        invalid_params(format!(
            "failed to deserialize solana_transaction::versioned::VersionedTransaction: {e}"
        ))
    })?;
    transaction
        .sanitize()
        .map_err(|e| invalid_params(format!("invalid transaction: {e}")))?;
    if !matches!(transaction.message, VersionedMessage::Legacy(_)) {
        return Err(invalid_params(
            "this node executes legacy transactions only (the bank's interface takes no v0)",
        ));
    }
    Ok(transaction)
}

impl Node {
    async fn handle(&self, body: &[u8]) -> String {
        let response = match serde_json::from_slice::<Value>(body) {
            Err(_) => failure(Value::Null, RpcError::new(-32700, "Parse error")),
            Ok(Value::Array(requests)) if requests.is_empty() => {
                failure(Value::Null, invalid_request("Invalid request"))
            }
            Ok(Value::Array(requests)) => {
                Value::Array(join_all(requests.into_iter().map(|r| self.call(r))).await)
            }
            Ok(request) => self.call(request).await,
        };
        response.to_string()
    }

    async fn call(&self, request: Value) -> Value {
        let id = request.get("id").cloned().unwrap_or(Value::Null);
        let method = request.get("method").and_then(Value::as_str);
        let (Some(method), Some("2.0")) = (method, request.get("jsonrpc").and_then(Value::as_str))
        else {
            return failure(id, invalid_request("Invalid request"));
        };
        *self
            .ledger
            .lock()
            .unwrap()
            .calls
            .entry(method.to_string())
            .or_default() += 1;
        let params = request.get("params").cloned().unwrap_or(Value::Null);
        let result = match Params::new(params) {
            Ok(params) => self.dispatch(method, params).await,
            Err(e) => Err(e),
        };
        match result {
            Ok(result) => json!({ "jsonrpc": "2.0", "result": result, "id": id }),
            Err(error) => failure(id, error),
        }
    }

    async fn dispatch(&self, method: &str, p: Params) -> Result<Value, RpcError> {
        match method {
            "getHealth" => Ok(json!("ok")),
            "getVersion" => to_json(RpcVersionInfo {
                solana_core: RpcApiVersion::default().to_string(),
                feature_set: None,
            }),
            "getSlot" => {
                let config: RpcContextConfig = p.optional(0)?;
                Ok(json!(self.context(config.min_context_slot).await?.slot))
            }
            "getBlockHeight" => {
                let config: RpcContextConfig = p.optional(0)?;
                self.context(config.min_context_slot).await?;
                Ok(json!(self.banks.get_root_block_height().await?))
            }
            "getLatestBlockhash" => {
                let config: RpcContextConfig = p.optional(0)?;
                let context = self.context(config.min_context_slot).await?;
                let (blockhash, last_valid_block_height) = self.latest_blockhash().await?;
                response(
                    context,
                    RpcBlockhash {
                        blockhash: blockhash.to_string(),
                        last_valid_block_height,
                    },
                )
            }
            "isBlockhashValid" => {
                let blockhash: String = p.required(0, "blockhash")?;
                let blockhash = Hash::from_str(&blockhash)
                    .map_err(|e| invalid_params(format!("Invalid param: {e:?}")))?;
                let config: RpcContextConfig = p.optional(1)?;
                let context = self.context(config.min_context_slot).await?;
                response(context, self.blockhash_valid(&blockhash).await?)
            }
            "getBalance" => {
                let address = parse_pubkey(&p.required::<String>(0, "pubkey")?)?;
                let config: RpcContextConfig = p.optional(1)?;
                let context = self.context(config.min_context_slot).await?;
                response(context, self.banks.get_balance(address).await?)
            }
            "getMinimumBalanceForRentExemption" => {
                let data_len: usize = p.required(0, "data length")?;
                let config: RpcContextConfig = p.optional(1)?;
                self.context(config.min_context_slot).await?;
                Ok(json!(self
                    .banks
                    .get_rent()
                    .await?
                    .minimum_balance(data_len)))
            }
            "getAccountInfo" => {
                let address = parse_pubkey(&p.required::<String>(0, "pubkey")?)?;
                let config: RpcAccountInfoConfig = p.optional(1)?;
                let context = self.context(config.min_context_slot).await?;
                let encoding = config.encoding.unwrap_or(UiAccountEncoding::Binary);
                let account = self.account(&address, encoding, &config).await?;
                response(context, account)
            }
            "getMultipleAccounts" => {
                let addresses: Vec<String> = p.required(0, "pubkeys")?;
                if addresses.len() > MAX_MULTIPLE_ACCOUNTS {
                    return Err(invalid_params(format!(
                        "Too many inputs provided; max {MAX_MULTIPLE_ACCOUNTS}"
                    )));
                }
                let addresses = addresses
                    .iter()
                    .map(|a| parse_pubkey(a))
                    .collect::<Result<Vec<_>, _>>()?;
                let config: RpcAccountInfoConfig = p.optional(1)?;
                let context = self.context(config.min_context_slot).await?;
                let encoding = config.encoding.unwrap_or(UiAccountEncoding::Base64);
                let mut accounts = Vec::with_capacity(addresses.len());
                for address in &addresses {
                    accounts.push(self.account(address, encoding, &config).await?);
                }
                let mut answer = response(context, accounts)?;
                if *self.misbehave.lock().unwrap() == Misbehave::AccountsAsJson {
                    for account in answer["value"].as_array_mut().unwrap() {
                        if let Some(account) = account.as_object_mut() {
                            let space = account["space"].clone();
                            account.insert(
                                "data".into(),
                                json!({ "program": "curta", "parsed": {}, "space": space }),
                            );
                        }
                    }
                }
                Ok(answer)
            }
            "getFeeForMessage" => {
                let encoded: String = p.required(0, "message")?;
                let config: RpcContextConfig = p.optional(1)?;
                let context = self.context(config.min_context_slot).await?;
                let bytes = BASE64_STANDARD
                    .decode(&encoded)
                    .map_err(|e| invalid_params(format!("invalid base64 encoding: {e:?}")))?;
                let message: VersionedMessage = bincode::deserialize(&bytes).map_err(|e| {
                    invalid_params(format!(
                        "failed to deserialize solana_message::versions::VersionedMessage: {e}"
                    ))
                })?;
                message
                    .sanitize()
                    .map_err(|e| invalid_params(format!("invalid transaction: {e}")))?;
                let VersionedMessage::Legacy(message) = message else {
                    return Err(invalid_params(
                        "this node prices legacy messages only (the bank's interface takes no v0)",
                    ));
                };
                response(context, self.banks.get_fee_for_message(message).await?)
            }
            "getSignatureStatuses" => {
                let signatures: Vec<String> = p.required(0, "signatures")?;
                if signatures.len() > MAX_GET_SIGNATURE_STATUSES_QUERY_ITEMS {
                    return Err(invalid_params(format!(
                        "Too many inputs provided; max {MAX_GET_SIGNATURE_STATUSES_QUERY_ITEMS}"
                    )));
                }
                let signatures = signatures
                    .iter()
                    .map(|s| {
                        Signature::from_str(s)
                            .map_err(|e| invalid_params(format!("Invalid param: {e:?}")))
                    })
                    .collect::<Result<Vec<_>, _>>()?;
                let context = self.context(None).await?;
                let mut statuses = Vec::with_capacity(signatures.len());
                for signature in &signatures {
                    statuses.push(self.status(signature).await?);
                }
                if *self.misbehave.lock().unwrap() == Misbehave::ShortStatuses {
                    statuses.pop();
                }
                response(context, statuses)
            }
            "sendTransaction" => {
                let encoded: String = p.required(0, "transaction")?;
                let config: RpcSendTransactionConfig = p.optional(1)?;
                self.context(config.min_context_slot).await?;
                let encoding = config.encoding.unwrap_or(UiTransactionEncoding::Base58);
                let transaction = decode_transaction(&encoded, encoding)?;
                if !config.skip_preflight {
                    verify_signatures(&transaction)?;
                    let level = config.preflight_commitment.unwrap_or_default();
                    let simulation = self.simulate(transaction.clone(), level, None).await?;
                    if let Some(err) = &simulation.err {
                        let message = format!("Transaction simulation failed: {err}");
                        return Err(RpcError {
                            code: JSON_RPC_SERVER_ERROR_SEND_TRANSACTION_PREFLIGHT_FAILURE,
                            message,
                            data: Some(to_json(&simulation)?),
                        });
                    }
                }
                let signature = transaction.signatures[0];
                self.leader
                    .send(transaction)
                    .map_err(|_| RpcError::new(-32603, "Internal error: the leader stopped"))?;
                Ok(json!(signature.to_string()))
            }
            "simulateTransaction" => {
                let encoded: String = p.required(0, "transaction")?;
                let config: RpcSimulateTransactionConfig = p.optional(1)?;
                let context = self.context(config.min_context_slot).await?;
                let encoding = config.encoding.unwrap_or(UiTransactionEncoding::Base58);
                let mut transaction = decode_transaction(&encoded, encoding)?;
                if config.sig_verify && config.replace_recent_blockhash {
                    return Err(invalid_params(
                        "sigVerify may not be used with replaceRecentBlockhash",
                    ));
                }
                if config.sig_verify {
                    verify_signatures(&transaction)?;
                }
                if config.accounts.is_some() || config.inner_instructions {
                    return Err(invalid_params(
                        "this node does not return accounts or inner instructions from a simulation",
                    ));
                }
                let mut replacement = None;
                if config.replace_recent_blockhash {
                    let (blockhash, last_valid_block_height) = self.latest_blockhash().await?;
                    transaction.message.set_recent_blockhash(blockhash);
                    replacement = Some(RpcBlockhash {
                        blockhash: blockhash.to_string(),
                        last_valid_block_height,
                    });
                }
                let level = config.commitment.unwrap_or_default().commitment;
                let simulation = self.simulate(transaction, level, replacement).await?;
                response(context, simulation)
            }
            _ => Err(RpcError::new(-32601, "Method not found")),
        }
    }

    /// The response context: the bank's slot, once it has reached `min_context_slot`.
    async fn context(&self, min_context_slot: Option<u64>) -> Result<RpcResponseContext, RpcError> {
        let slot = self.banks.get_root_slot().await?;
        match min_context_slot {
            Some(min) if min > slot => Err(RpcError {
                code: JSON_RPC_SERVER_ERROR_MIN_CONTEXT_SLOT_NOT_REACHED,
                message: "Minimum context slot has not been reached".into(),
                data: Some(json!({ "contextSlot": slot })),
            }),
            _ => Ok(RpcResponseContext::new(slot)),
        }
    }

    async fn latest_blockhash(&self) -> Result<(Hash, u64), RpcError> {
        self.banks
            .get_latest_blockhash_with_commitment(CommitmentLevel::Processed)
            .await?
            .ok_or_else(|| RpcError::new(-32603, "Internal error: no latest blockhash"))
    }

    /// Whether the bank still executes transactions with this blockhash: a simulation of an
    /// empty transaction checks the blockhash's age and nothing else.
    async fn blockhash_valid(&self, blockhash: &Hash) -> Result<bool, RpcError> {
        let mut message = Message::new(&[], Some(&self.mint));
        message.recent_blockhash = *blockhash;
        let simulation = self
            .banks
            .simulate_transaction(Transaction::new_unsigned(message))
            .await?;
        Ok(!matches!(
            simulation.result,
            Some(Err(TransactionError::BlockhashNotFound))
        ))
    }

    /// An account as a validator encodes it, or None when there is none.
    async fn account(
        &self,
        address: &Pubkey,
        encoding: UiAccountEncoding,
        config: &RpcAccountInfoConfig,
    ) -> Result<Option<UiAccount>, RpcError> {
        let Some(account) = self.banks.get_account(*address).await? else {
            return Ok(None);
        };
        if matches!(
            encoding,
            UiAccountEncoding::Binary | UiAccountEncoding::Base58
        ) {
            let len = match config.data_slice {
                Some(slice) => slice
                    .length
                    .min(account.data.len().saturating_sub(slice.offset)),
                None => account.data.len(),
            };
            if len > MAX_BASE58_BYTES {
                return Err(invalid_request(format!(
                    "Encoded binary (base 58) data should be less than {MAX_BASE58_BYTES} bytes, \
                     please use Base64 encoding."
                )));
            }
        }
        Ok(Some(encode_ui_account(
            address,
            &account,
            encoding,
            None,
            config.data_slice,
        )))
    }

    /// A signature's status: none until executed; then processed, confirmed at the next
    /// observation, rooted from the one after.
    async fn status(&self, signature: &Signature) -> Result<Option<TransactionStatus>, RpcError> {
        let Some(status) = self.banks.get_transaction_status(*signature).await? else {
            return Ok(None);
        };
        let mut ledger = self.ledger.lock().unwrap();
        let reported = ledger.reported.entry(*signature).or_default();
        let (confirmations, confirmation_status, name) = match reported.len() {
            0 => (
                Some(0),
                TransactionConfirmationStatus::Processed,
                "processed",
            ),
            1 => (
                Some(1),
                TransactionConfirmationStatus::Confirmed,
                "confirmed",
            ),
            _ => (None, TransactionConfirmationStatus::Finalized, "finalized"),
        };
        if reported.last() != Some(&name) {
            reported.push(name);
        }
        Ok(Some(TransactionStatus {
            slot: status.slot,
            confirmations,
            status: status.err.clone().map_or(Ok(()), Err),
            err: status.err,
            confirmation_status: Some(confirmation_status),
        }))
    }

    async fn simulate(
        &self,
        transaction: VersionedTransaction,
        level: CommitmentLevel,
        replacement_blockhash: Option<RpcBlockhash>,
    ) -> Result<RpcSimulateTransactionResult, RpcError> {
        let fee = match &transaction.message {
            VersionedMessage::Legacy(message) => {
                self.banks.get_fee_for_message(message.clone()).await?
            }
            _ => None,
        };
        let simulation = self
            .banks
            .simulate_transaction_with_commitment(transaction, level)
            .await?;
        let details = simulation.simulation_details;
        Ok(RpcSimulateTransactionResult {
            err: simulation.result.and_then(Result::err).map(Into::into),
            logs: details.as_ref().map(|d| d.logs.clone()),
            accounts: None,
            units_consumed: details.as_ref().map(|d| d.units_consumed),
            loaded_accounts_data_size: details.as_ref().map(|d| d.loaded_accounts_data_size),
            return_data: details
                .as_ref()
                .and_then(|d| d.return_data.as_ref())
                .map(|r| UiTransactionReturnData {
                    program_id: r.program_id.to_string(),
                    data: (
                        BASE64_STANDARD.encode(&r.data),
                        UiReturnDataEncoding::Base64,
                    ),
                }),
            inner_instructions: None,
            replacement_blockhash,
            fee,
            pre_balances: None,
            post_balances: None,
            pre_token_balances: None,
            post_token_balances: None,
            loaded_addresses: None,
        })
    }
}

fn response(context: RpcResponseContext, value: impl serde::Serialize) -> Result<Value, RpcError> {
    to_json(Response { context, value })
}

fn failure(id: Value, error: RpcError) -> Value {
    json!({ "jsonrpc": "2.0", "error": error.to_json(), "id": id })
}
