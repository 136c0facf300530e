//! Benchmark on a real solana-test-validator: the client publishes and seals the 16.5 MB
//! stories15M-shaped artifact, sending over RPC `sendTransaction` and then over the TPU (QUIC),
//! in legacy transactions and in version 1 transactions (where the validator's feature set has
//! `enable_tx_v1`; otherwise that row says so); after each, the bare loop sends the same
//! transactions (the messages that landed, re-signed) to a fresh validator as fast as it takes
//! them. `scripts/bench-validator` builds this and
//! needs the validator binary (`scripts/local-validator install`); this program starts and
//! resets the validator itself through `scripts/local-validator` (port `CURTA_RPC_PORT`).
//!
//! cargo run --release -p curta-client --example bench_validator [-- MODEL [rpc|tpu]]
//! (default stories15M, both senders)

mod support;

use curta_client::{Options, RpcTransport, TxVersion};
use futures::StreamExt;
use solana_client::nonblocking::rpc_client::RpcClient;
use solana_client::nonblocking::tpu_client::TpuClient;
use solana_client::rpc_config::RpcSendTransactionConfig;
use solana_client::tpu_client::TpuClientConfig;
use solana_commitment_config::CommitmentConfig;
use solana_keypair::Keypair;
use solana_message::VersionedMessage;
use solana_pubkey::Pubkey;
use solana_signature::Signature;
use solana_signer::Signer;
use solana_transaction::versioned::VersionedTransaction;
use std::sync::Arc;
use std::time::{Duration, Instant};
use support::node::Node;
use support::{is_write, model, Fault, Faulty};

/// Transactions the bare loop keeps in flight to the node at once.
const BARE_WINDOW: usize = 128;

#[derive(Clone, Copy, PartialEq)]
enum Sender {
    Rpc,
    Tpu,
}

impl Sender {
    fn name(self) -> &'static str {
        match self {
            Sender::Rpc => "rpc",
            Sender::Tpu => "tpu",
        }
    }
}

/// Sends `txs` (over RPC with `BARE_WINDOW` requests in flight, or to the TPU in batches).
async fn blast(rpc: &RpcClient, tpu: Option<&Tpu>, txs: &[VersionedTransaction]) {
    match tpu {
        Some(tpu) => {
            for batch in txs.chunks(BARE_WINDOW) {
                let wire = batch
                    .iter()
                    .map(curta_client::send::transport::wire_bytes)
                    .collect();
                let _ = tpu.try_send_wire_transaction_batch(wire).await;
            }
        }
        None => {
            let config = RpcSendTransactionConfig {
                skip_preflight: true,
                ..RpcSendTransactionConfig::default()
            };
            futures::stream::iter(txs)
                .map(|tx| rpc.send_transaction_with_config(tx, config))
                .buffer_unordered(BARE_WINDOW)
                .for_each(|_| async {})
                .await;
        }
    }
}

type Tpu = TpuClient<
    solana_quic_client::QuicPool,
    solana_quic_client::QuicConnectionManager,
    solana_quic_client::QuicConfig,
>;

/// Waits until every signature is confirmed; returns those still unknown when none resolved
/// for two seconds (dropped by the node), for the caller to sign again.
async fn confirmed(rpc: &RpcClient, txs: &[VersionedTransaction]) -> Vec<usize> {
    let mut pending: Vec<usize> = (0..txs.len()).collect();
    let mut idle = Instant::now();
    while !pending.is_empty() {
        let mut still = Vec::new();
        for batch in pending.chunks(256) {
            let signatures: Vec<Signature> = batch.iter().map(|&i| txs[i].signatures[0]).collect();
            let statuses = rpc.get_signature_statuses(&signatures).await.unwrap().value;
            for (&i, status) in batch.iter().zip(statuses) {
                match status {
                    Some(s) if s.satisfies_commitment(CommitmentConfig::confirmed()) => {
                        assert!(s.err.is_none(), "bare loop transaction failed: {:?}", s.err)
                    }
                    _ => still.push(i),
                }
            }
        }
        if still.len() < pending.len() {
            idle = Instant::now();
        } else if idle.elapsed() > Duration::from_secs(2) {
            return still;
        }
        pending = still;
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    Vec::new()
}

/// The bare loop: the messages in landing order, re-signed with a fresh blockhash; each
/// stretch of Writes sent at once and then confirmed, creates and seals one at a time (each
/// confirmed before the next, as their order requires). Dropped ones are signed again.
async fn bare_loop(
    rpc: &RpcClient,
    tpu: Option<&Tpu>,
    program: &Pubkey,
    messages: &[VersionedMessage],
    payer: &Keypair,
) -> f64 {
    let started = Instant::now();
    let mut i = 0;
    while i < messages.len() {
        let stretch = messages[i..]
            .iter()
            .take_while(|m| is_write(program, m))
            .count()
            .max(1);
        let mut todo: Vec<VersionedMessage> = messages[i..i + stretch].to_vec();
        while !todo.is_empty() {
            let mut txs = Vec::with_capacity(todo.len());
            let mut blockhash = rpc.get_latest_blockhash().await.unwrap();
            for (n, m) in todo.iter().enumerate() {
                if n > 0 && n % 4_000 == 0 {
                    blockhash = rpc.get_latest_blockhash().await.unwrap();
                }
                let mut m = m.clone();
                m.set_recent_blockhash(blockhash);
                txs.push(VersionedTransaction::try_new(m, &[payer]).expect("the payer signs"));
            }
            blast(rpc, tpu, &txs).await;
            todo = confirmed(rpc, &txs)
                .await
                .into_iter()
                .map(|k| todo[k].clone())
                .collect();
        }
        i += stretch;
    }
    started.elapsed().as_secs_f64()
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let name = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "stories15M".into());
    let artifact = model(&name);
    let only = std::env::args().nth(2);
    let senders: Vec<Sender> = [Sender::Rpc, Sender::Tpu]
        .into_iter()
        .filter(|s| only.as_deref().is_none_or(|o| o == s.name()))
        .collect();
    let port: u16 = std::env::var("CURTA_RPC_PORT")
        .ok()
        .and_then(|p| p.parse().ok())
        .unwrap_or(8899);
    let node = Node {
        port,
        program_id: Keypair::new().pubkey(),
    };
    println!(
        "{:<6} {:<6} {:>10} {:>6} {:>6} {:>9} {:>9} {:>7} {:>12} {:>9} {:>7} {:>6}",
        "send",
        "format",
        "bytes",
        "tx",
        "seal",
        "client s",
        "bytes/s",
        "tx/s",
        "lamports",
        "bare s",
        "tx/s",
        "ratio"
    );
    for (sender, tx_version) in senders
        .into_iter()
        .flat_map(|s| [(s, TxVersion::Legacy), (s, TxVersion::V1)])
    {
        let authority = Keypair::new();
        node.reset(&authority.pubkey()).await;
        let mut transport = RpcTransport::with_program_id(
            &node.url(),
            CommitmentConfig::confirmed(),
            node.program_id,
        );
        if sender == Sender::Tpu {
            transport = transport.with_tpu(&node.websocket()).await.unwrap();
        }
        let recording = Faulty::new(&transport, Fault::None, 0);
        let options = Options {
            tx_version,
            ..Options::default()
        };
        let report =
            match curta_client::publish(&recording, &authority, &artifact, true, &options).await {
                Ok(report) => report,
                Err(e) if tx_version == TxVersion::V1 => {
                    println!("{:<6} v1     not run: {e}", sender.name());
                    continue;
                }
                Err(e) => panic!("publish: {e}"),
            };
        assert_eq!(report.state.to_string(), "Sealed");
        let messages = recording.landed_messages();
        assert_eq!(messages.len() as u64, report.transactions());
        drop(transport);

        let rpc = Arc::new(node.reset(&authority.pubkey()).await);
        let tpu = match sender {
            Sender::Tpu => Some(
                Tpu::new(
                    "curta-bench",
                    rpc.clone(),
                    &node.websocket(),
                    TpuClientConfig::default(),
                )
                .await
                .unwrap(),
            ),
            Sender::Rpc => None,
        };
        let bare = bare_loop(&rpc, tpu.as_ref(), &node.program_id, &messages, &authority).await;
        let seconds = report.seconds;
        println!(
            "{:<6} {:<6} {:>10} {:>6} {:>6} {:>9.1} {:>9.0} {:>7.0} {:>12} {:>9.1} {:>7.0} {:>6.2}",
            sender.name(),
            report.format.to_string(),
            report.artifact_bytes,
            report.transactions(),
            report.counts.seal,
            seconds,
            report.artifact_bytes as f64 / seconds,
            report.transactions() as f64 / seconds,
            report.balance_before - report.balance_after,
            bare,
            messages.len() as f64 / bare,
            seconds / bare
        );
    }
    node.script("stop");
}
