//! Benchmark on a real solana-test-validator (issue 26): beside the cluster limits in force
//! (block and per-account compute units, slot time), for stories260K and the stories15M shape,
//! a greedy run on chain from token 1 to position 64 with one step in flight at a time (the
//! client before steps were order-free) and with the client's window of steps in flight:
//! seconds, slots and compute units per token, read back from the validator's transaction
//! history; and for the 16.5 MB model the seconds `client seal` takes once every byte is
//! written, seals one at a time and in flight. `scripts/bench-validator runs` builds this and needs the validator binary
//! (`scripts/local-validator install`); it starts and resets the validator itself through
//! `scripts/local-validator` (port `CURTA_RPC_PORT`, ledger target/bench-ledger).
//!
//! cargo run --release -p curta-client --example bench_runs [-- TOKENS | seal]  (default 64;
//! `seal`: the seal's figures only)

mod support;

use curta_client::run::onchain::items::STEP_UNITS;
use curta_client::run::onchain::pipeline::{account_limit, step_window};
use curta_client::run::onchain::{close_run, run_on_chain, RunRef, RunRequest};
use curta_client::run::Prompt;
use curta_client::Options;
use curta_core::infer::Settings;
use futures::StreamExt;
use serde_json::{json, Value};
use solana_client::nonblocking::rpc_client::RpcClient;
use solana_client::rpc_client::GetConfirmedSignaturesForAddress2Config;
use solana_client::rpc_request::RpcRequest;
use solana_commitment_config::CommitmentConfig;
use solana_keypair::Keypair;
use solana_pubkey::Pubkey;
use solana_signature::Signature;
use solana_signer::Signer;
use std::str::FromStr;
use std::time::{Duration, Instant};
use support::model;
use support::node::Node;

/// Step's instruction tag (docs/program.md, "7 Step").
const STEP_TAG: u8 = 7;

/// Seconds per slot over the node's recent performance samples (after a few seconds of
/// running: the first sample is taken a minute in, so before then the slots counted over a
/// measured interval).
async fn slot_seconds(rpc: &RpcClient) -> f64 {
    let samples = rpc
        .get_recent_performance_samples(Some(10))
        .await
        .unwrap_or_default();
    let (slots, seconds) = samples.iter().fold((0u64, 0u64), |(n, s), sample| {
        (n + sample.num_slots, s + sample.sample_period_secs as u64)
    });
    if slots > 0 {
        return seconds as f64 / slots as f64;
    }
    let (first, started) = (rpc.get_slot().await.unwrap(), Instant::now());
    tokio::time::sleep(Duration::from_secs(4)).await;
    let last = rpc.get_slot().await.unwrap();
    started.elapsed().as_secs_f64() / (last - first).max(1) as f64
}

/// A landed transaction as the node recorded it: its slot, units, and whether it is a Step of
/// the program.
struct Landed {
    slot: u64,
    units: u64,
    is_step: bool,
}

/// Every transaction that names `address`, from the node's history (raw JSON-RPC answers).
async fn history(rpc: &RpcClient, program: &Pubkey, address: &Pubkey) -> Vec<Landed> {
    let mut signatures = Vec::new();
    let mut before = None;
    loop {
        let page = rpc
            .get_signatures_for_address_with_config(
                address,
                GetConfirmedSignaturesForAddress2Config {
                    before,
                    until: None,
                    limit: Some(1_000),
                    commitment: Some(CommitmentConfig::confirmed()),
                },
            )
            .await
            .unwrap();
        let Some(last) = page.last() else { break };
        before = Some(Signature::from_str(&last.signature).unwrap());
        signatures.extend(
            page.iter()
                .filter(|s| s.err.is_none())
                .map(|s| s.signature.clone()),
        );
    }
    futures::stream::iter(signatures)
        .map(|signature| async move {
            let answer: Value = rpc
                .send(
                    RpcRequest::GetTransaction,
                    json!([signature, {"encoding": "base64", "commitment": "confirmed",
                        "maxSupportedTransactionVersion": 1}]),
                )
                .await
                .unwrap();
            let wire = base64_decode(answer["transaction"][0].as_str().unwrap());
            // Legacy or version 1 (the client's default where the cluster has it).
            let tx: solana_transaction::versioned::VersionedTransaction =
                wincode::deserialize(&wire).unwrap();
            let keys = tx.message.static_account_keys();
            let is_step = tx.message.instructions().iter().any(|ix| {
                keys[ix.program_id_index as usize] == *program && ix.data.first() == Some(&STEP_TAG)
            });
            Landed {
                slot: answer["slot"].as_u64().unwrap(),
                units: answer["meta"]["computeUnitsConsumed"].as_u64().unwrap(),
                is_step,
            }
        })
        .buffer_unordered(16)
        .collect()
        .await
}

fn base64_decode(text: &str) -> Vec<u8> {
    use base64::Engine as _;
    base64::engine::general_purpose::STANDARD
        .decode(text)
        .unwrap()
}

/// One run's figures.
struct Figures {
    seconds: f64,
    slots: u64,
    steps: usize,
    units: u64,
    window: usize,
}

/// A greedy run of `tokens` from token 1 with `nonce`, kept until its history is read, then
/// closed (its rent back).
async fn measure_run(
    node: &Node,
    runner: &Keypair,
    model: &Pubkey,
    tokens: u32,
    nonce: u32,
    account_units: Option<u64>,
) -> Figures {
    let transport = node.transport();
    let settings = Settings {
        temperature: 0,
        top_p: curta_core::infer::ONE,
        seed: 0,
    };
    let mut request = RunRequest::new(Prompt::Tokens(vec![1]), Some(tokens), settings);
    request.nonce = nonce;
    request.keep = true;
    request.account_limit = account_units;
    let run = run_on_chain(&transport, runner, model, &request, |_, _| {})
        .await
        .unwrap();
    assert_eq!(run.tokens.len(), tokens as usize);
    let address = Pubkey::from_str(&run.run).unwrap();
    let landed = history(&node.rpc(), &node.program_id, &address).await;
    let steps: Vec<&Landed> = landed.iter().filter(|l| l.is_step).collect();
    let first = steps.iter().map(|l| l.slot).min().unwrap();
    let last = steps.iter().map(|l| l.slot).max().unwrap();
    close_run(&transport, runner, RunRef::Address(address), None)
        .await
        .unwrap();
    Figures {
        seconds: run.seconds,
        slots: last - first + 1,
        steps: steps.len(),
        units: steps.iter().map(|l| l.units).sum(),
        window: run.window,
    }
}

/// Seconds of `client seal` on a model whose every byte is written: the model published
/// without sealing, then sealed with `in_flight` seals at most (None: the client's window). The
/// command reads the model's accounts (16.5 MB) before and after its seals, so this is an upper
/// bound of the time from the last write to Sealed.
/// The slot of the newest transaction in `address`'s history (confirmed).
async fn newest_slot(rpc: &RpcClient, address: &Pubkey) -> u64 {
    let config = GetConfirmedSignaturesForAddress2Config {
        before: None,
        until: None,
        limit: Some(1),
        commitment: Some(CommitmentConfig::confirmed()),
    };
    rpc.get_signatures_for_address_with_config(address, config)
        .await
        .unwrap()[0]
        .slot
}

/// What [`measure_seal`] measured.
struct Sealing {
    /// The seal command's seconds.
    seconds: f64,
    seals: u64,
    /// Slots from the one of the last Write to the one of the Seal that made the model Sealed.
    slots: u64,
    /// Of those, the slots from the last Write to chunk 0 (the start of the pass).
    to_start: u64,
}

async fn measure_seal(node: &Node, artifact: &[u8], in_flight: Option<usize>) -> Sealing {
    let authority = &Keypair::new();
    node.fund(&authority.pubkey()).await;
    let transport = node.transport();
    let publish =
        curta_client::publish(&transport, authority, artifact, false, &Options::default())
            .await
            .unwrap();
    // The last Write: the newest transaction of any weight account before the seals start.
    let rpc = node.rpc();
    let mut last_write = 0;
    for section in 0..publish.sections {
        let weight = curta_interface::state::weight_address(
            &node.program_id,
            &authority.pubkey(),
            &publish.model,
            section as u8,
        );
        last_write = last_write.max(newest_slot(&rpc, &weight).await);
    }
    let options = Options {
        max_in_flight: in_flight,
        ..Options::default()
    };
    let started = Instant::now();
    let sealed = curta_client::seal(&transport, authority, &publish.model, None, &options)
        .await
        .unwrap();
    assert_eq!(sealed.state.to_string(), "Sealed");
    let seconds = started.elapsed().as_secs_f64();
    // The slot of chunk 0: the oldest of the model's transactions after the last write.
    let config = GetConfirmedSignaturesForAddress2Config {
        before: None,
        until: None,
        limit: Some(1000),
        commitment: Some(CommitmentConfig::confirmed()),
    };
    let seal_slots: Vec<u64> = rpc
        .get_signatures_for_address_with_config(&publish.model, config)
        .await
        .unwrap()
        .iter()
        .map(|s| s.slot)
        .filter(|&slot| slot > last_write)
        .collect();
    let start = seal_slots.iter().copied().min().unwrap_or(last_write);
    Sealing {
        seconds,
        seals: sealed.counts.seal,
        slots: newest_slot(&rpc, &publish.model).await - last_write,
        to_start: start - last_write,
    }
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    // `seal`: the seal's figures only.
    let seal_only = std::env::args().nth(1).as_deref() == Some("seal");
    let tokens: u32 = std::env::args()
        .nth(1)
        .filter(|_| !seal_only)
        .map_or(64, |t| t.parse().expect("TOKENS: a number"));
    let port: u16 = std::env::var("CURTA_RPC_PORT")
        .ok()
        .and_then(|p| p.parse().ok())
        .unwrap_or(8899);
    let node = Node {
        port,
        program_id: Keypair::new().pubkey(),
    };
    let runner = Keypair::new();
    node.reset(&runner.pubkey()).await;
    let transport = node.transport();
    let limit = account_limit(&transport, None).await.unwrap();
    // The per-account limit is 40% of the block's (SIMD-0306).
    let block = limit.units / 2 * 5;
    let slot = slot_seconds(&node.rpc()).await;
    println!(
        "cluster: block {block} units, per writable account {} ({}), slot {slot:.3} s; \
         a step requests {STEP_UNITS}, window {}",
        limit.units,
        limit.source,
        step_window(limit.units)
    );

    println!(
        "\n{:<12} {:<11} {:>6} {:>6} {:>6} {:>8} {:>8} {:>9} {:>12} {:>9} {:>9}",
        "model",
        "steps",
        "tokens",
        "window",
        "tx/tok",
        "s/tok",
        "slot/tok",
        "tok/slot",
        "units/tok",
        "floor",
        "use"
    );
    let stories15m = model("stories15M");
    let models: &[&str] = if seal_only {
        &[]
    } else {
        &["stories260K", "stories15M"]
    };
    // CURTA_BENCH_ONLY=MODEL[:MODE]: one model (and one of sequential, pipelined) alone.
    let only = std::env::var("CURTA_BENCH_ONLY").unwrap_or_default();
    let wanted = |name: &str, mode: &str| {
        only.is_empty() || only == name || only == format!("{name}:{mode}")
    };
    for &name in models
        .iter()
        .filter(|&&n| wanted(n, "pipelined") || wanted(n, "sequential"))
    {
        let artifact = if name == "stories15M" {
            stories15m.clone()
        } else {
            model(name)
        };
        let report =
            curta_client::publish(&transport, &runner, &artifact, true, &Options::default())
                .await
                .unwrap();
        // One step in flight (a limit under one step's units), then the client's window.
        let sequential = Some(STEP_UNITS as u64 / 4);
        // CURTA_BENCH_ACCOUNT_UNITS: the pipelined run's limit (the cluster's by default).
        let pipelined = std::env::var("CURTA_BENCH_ACCOUNT_UNITS")
            .ok()
            .map(|units| units.parse().expect("CURTA_BENCH_ACCOUNT_UNITS: a number"));
        for (nonce, (mode, units)) in [("sequential", sequential), ("pipelined", pipelined)]
            .into_iter()
            .enumerate()
        {
            // One step a slot: the stories15M shape's 64 tokens would take 20 minutes; its
            // first 8 take as many steps each (47 at position 1, 49 at 64: docs/measurements.md).
            if !wanted(name, mode) {
                continue;
            }
            let tokens = match (name, mode) {
                ("stories15M", "sequential") => tokens.min(8),
                _ => tokens,
            };
            let f = measure_run(&node, &runner, &report.model, tokens, nonce as u32, units).await;
            let per_token = |x: f64| x / tokens as f64;
            let token_units = per_token(f.units as f64);
            // The fewest slots a token can take: its units over the per-account limit.
            let floor = token_units / limit.units as f64;
            let slots = per_token(f.slots as f64);
            println!(
                "{:<12} {:<11} {:>6} {:>6} {:>6.1} {:>8.2} {:>8.2} {:>9.2} {:>12.0} {:>9.2} {:>8.0}%",
                name,
                mode,
                tokens,
                f.window,
                per_token(f.steps as f64),
                per_token(f.seconds),
                slots,
                1.0 / slots,
                token_units,
                floor,
                100.0 * floor / slots
            );
        }
        // A sealed model is immutable (it cannot be closed); the ledger is reset next time.
    }

    println!(
        "\n{:<12} {:<11} {:>6} {:>14} {:>26} {:>16}",
        "model", "seals", "chunks", "client seal s", "last write→Sealed slots, s", "→chunk 0 slots"
    );
    // CURTA_SEAL_IN_FLIGHT_ONLY: the client's window alone (the one-at-a-time row takes two
    // minutes).
    let modes: &[(&str, Option<usize>)] = match std::env::var_os("CURTA_SEAL_IN_FLIGHT_ONLY") {
        Some(_) => &[("in flight", None)],
        None => &[("one a time", Some(1)), ("in flight", None)],
    };
    for &(mode, in_flight) in modes {
        let m = measure_seal(&node, &stories15m, in_flight).await;
        println!(
            "{:<12} {:<11} {:>6} {:>14.1} {:>19} {:>6.1} {:>16}",
            "stories15M",
            mode,
            m.seals,
            m.seconds,
            m.slots,
            m.slots as f64 * slot,
            m.to_start
        );
    }
    node.script("stop");
}
