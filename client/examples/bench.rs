//! Benchmark: rehearse three models on the in-process bank, then send the same transactions,
//! pre-signed, to a fresh bank of the same kind in a bare loop, and compare wall times; each
//! in legacy and in version 1 transactions (BENCH_FORMATS="legacy v1", the default), with the
//! fees each paid.
//!
//! cargo run --release -p curta-client --example bench [-- NAME...]   (stories260K, gqa, stories15M)

mod support;

use curta_client::{rehearse, BankTransport, Options, Transport, TxVersion};
use solana_keypair::Keypair;
use solana_message::VersionedMessage;
use solana_signer::Signer;
use solana_transaction::versioned::VersionedTransaction;
use std::sync::Mutex;
use std::time::{Duration, Instant};
use support::{is_write, model, Fault, Faulty};

/// The bare loop: the same transactions (the messages that landed, in landing order) sent to
/// a fresh bank under one clock, with no reads, planning, confirming or retrying. Each stretch
/// of Writes streams through `window` concurrent `process_transaction` calls (writes commute,
/// so the window never drains between groups); creates and seals go one at a time, in order.
/// A blockhash lives about a second in this bank, so transactions cannot all be signed before
/// the clock starts: each is signed as it is sent with a blockhash at most 100 ms old (an
/// ed25519 signature takes microseconds against milliseconds of bank work per write).
async fn baseline(messages: &[VersionedMessage], authority: &Keypair, window: usize) -> f64 {
    use futures::StreamExt;
    let bank =
        BankTransport::start(&[(authority.pubkey(), curta_client::rehearse::REHEARSAL_FUNDS)])
            .await;
    let client = bank.banks_client();
    let program = curta_interface::id();
    // A background task keeps a blockhash at most 100 ms old; signing reads it without waiting.
    let latest = std::sync::Arc::new(Mutex::new(client.get_latest_blockhash().await.unwrap()));
    let refresher = {
        let (client, latest) = (client.clone(), latest.clone());
        tokio::spawn(async move {
            loop {
                tokio::time::sleep(Duration::from_millis(100)).await;
                let hash = client.get_latest_blockhash().await.unwrap();
                *latest.lock().unwrap() = hash;
            }
        })
    };
    // The banks client's default deadline, 10 s, is exceeded when other builds share the
    // machine; the client's transport allows 120 s, and so does the bare loop.
    let process = |client: solana_program_test::BanksClient, tx: VersionedTransaction| async move {
        let mut context = tarpc::context::current();
        context.deadline = std::time::SystemTime::now() + Duration::from_secs(120);
        client
            .process_transaction_with_commitment_and_context(
                context,
                tx,
                solana_commitment_config::CommitmentLevel::Processed,
            )
            .await
            .map(|r| r.expect("baseline transaction executed"))
    };
    let signed = |m: &VersionedMessage| {
        let mut m = m.clone();
        m.set_recent_blockhash(*latest.lock().unwrap());
        VersionedTransaction::try_new(m, &[authority]).expect("the authority signs")
    };
    let started = Instant::now();
    let mut i = 0;
    while i < messages.len() {
        let stretch = messages[i..]
            .iter()
            .take_while(|m| is_write(&program, m))
            .count();
        if stretch == 0 {
            let tx = signed(&messages[i]);
            process(client.clone(), tx)
                .await
                .expect("baseline transaction")
                .expect("baseline transaction succeeds");
            i += 1;
            continue;
        }
        let results: Vec<_> = futures::stream::iter(&messages[i..i + stretch])
            .map(|m| process(client.clone(), signed(m)))
            .buffer_unordered(window)
            .collect()
            .await;
        for r in results {
            r.expect("baseline transaction")
                .expect("baseline transaction succeeds");
        }
        i += stretch;
    }
    let seconds = started.elapsed().as_secs_f64();
    refresher.abort();
    seconds
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    if std::env::var_os("RUST_LOG").is_none() {
        std::env::set_var("RUST_LOG", "error");
    }
    let names: Vec<String> = std::env::args().skip(1).collect();
    let names = if names.is_empty() {
        vec!["stories260K".into(), "gqa".into(), "stories15M".into()]
    } else {
        names
    };
    let formats: Vec<TxVersion> = std::env::var("BENCH_FORMATS")
        .unwrap_or_else(|_| "legacy v1".into())
        .split_whitespace()
        .map(|f| f.parse().unwrap_or_else(|e| panic!("BENCH_FORMATS: {e}")))
        .collect();
    println!(
        "{:<12} {:<6} {:>10} {:>4} {:>6} {:>6} {:>6} {:>6} {:>11} {:>4} {:>9} {:>8} {:>9} {:>6}  ratios min..max",
        "model",
        "format",
        "bytes",
        "sec",
        "tx",
        "write",
        "min B",
        "max B",
        "fees",
        "runs",
        "client s",
        "tx/s",
        "bare s",
        "ratio"
    );
    for (name, tx_version) in names
        .iter()
        .flat_map(|n| formats.iter().map(move |f| (n.clone(), *f)))
    {
        let artifact = model(&name);
        let options = Options {
            tx_version,
            ..Options::default()
        };
        // Machines here are noisy: the median of several runs, at least three (seven for the
        // small models), and the spread of the per-run ratios.
        let runs: usize = std::env::var("BENCH_RUNS")
            .ok()
            .and_then(|r| r.parse().ok())
            .unwrap_or(if artifact.len() < 5_000_000 { 7 } else { 3 })
            .max(3);
        let (mut client_s, mut bare_s, mut last) = (Vec::new(), Vec::new(), None);
        for _ in 0..runs {
            let authority = Keypair::new();
            let bank = BankTransport::start(&[(
                authority.pubkey(),
                curta_client::rehearse::REHEARSAL_FUNDS,
            )])
            .await;
            let recording = Faulty::new(&bank, Fault::None, 0);
            // The whole library call: decoding and hashing the artifact included.
            let started = Instant::now();
            let report = curta_client::publish(&recording, &authority, &artifact, true, &options)
                .await
                .unwrap();
            let seconds = started.elapsed().as_secs_f64();
            assert_eq!(report.state, "Sealed");
            let messages = recording.landed_messages();
            assert_eq!(messages.len() as u64, report.transactions());
            bare_s.push(baseline(&messages, &authority, bank.profile().window).await);
            client_s.push(seconds);
            last = Some(report);
        }
        let report = last.expect("at least one run");
        let mut ratios: Vec<f64> = client_s.iter().zip(&bare_s).map(|(c, b)| c / b).collect();
        ratios.sort_by(f64::total_cmp);
        let spread = format!(
            "{:.2}..{:.2} ({})",
            ratios[0],
            ratios[ratios.len() - 1],
            ratios
                .iter()
                .map(|r| format!("{r:.2}"))
                .collect::<Vec<_>>()
                .join(" ")
        );
        let (client, bare) = (median(&mut client_s), median(&mut bare_s));
        let t = &report.counts;
        println!(
            "{:<12} {:<6} {:>10} {:>4} {:>6} {:>6} {:>6} {:>6} {:>11} {:>4} {:>9.3} {:>8.0} {:>9.3} {:>6.2}  {}",
            name,
            report.format.to_string(),
            report.artifact_bytes,
            report.sections,
            report.transactions(),
            t.write,
            t.write_bytes_min.unwrap_or(0),
            t.write_bytes_max,
            t.fees,
            runs,
            client,
            report.transactions() as f64 / client,
            bare,
            client / bare,
            spread
        );
    }
    let _ = rehearse; // the CLI's `client rehearse` is this same publish on a fresh bank
}

fn median(values: &mut [f64]) -> f64 {
    values.sort_by(f64::total_cmp);
    values[values.len() / 2]
}
