//! Benchmark: rehearse three models on the in-process bank, then send the same transactions,
//! pre-signed, to a fresh bank of the same kind in a bare loop, and compare wall times.
//!
//! cargo run --release -p curta-client --example bench [-- NAME...]   (stories260K, gqa, stories15M)

use curta_client::{
    rehearse, BankTransport, Error, Options, Profile, Simulation, Transport, TxStatus,
};
use curta_core::convert::synth;
use curta_core::Config;
use solana_account::Account;
use solana_hash::Hash;
use solana_keypair::Keypair;
use solana_message::Message;
use solana_pubkey::Pubkey;
use solana_signature::Signature;
use solana_signer::Signer;
use solana_transaction::Transaction;
use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// Records the message of every transaction that landed successfully, in landing order.
struct Recording<'a> {
    inner: &'a BankTransport,
    sent: Mutex<HashMap<Signature, Message>>,
    landed: Mutex<Vec<Message>>,
}

impl Transport for Recording<'_> {
    fn describe(&self) -> String {
        self.inner.describe()
    }
    fn profile(&self) -> Profile {
        self.inner.profile()
    }
    fn program_id(&self) -> Pubkey {
        self.inner.program_id()
    }
    async fn get_accounts(&self, a: &[Pubkey]) -> Result<Vec<Option<Account>>, Error> {
        self.inner.get_accounts(a).await
    }
    async fn balance(&self, a: &Pubkey) -> Result<u64, Error> {
        self.inner.balance(a).await
    }
    async fn rent_minimum(&self, l: usize) -> Result<u64, Error> {
        self.inner.rent_minimum(l).await
    }
    async fn fee_for_message(&self, m: &Message) -> Result<u64, Error> {
        self.inner.fee_for_message(m).await
    }
    async fn latest_blockhash(&self) -> Result<(Hash, u64), Error> {
        self.inner.latest_blockhash().await
    }
    async fn blockhash_expired(&self, h: &Hash, l: u64) -> Result<bool, Error> {
        self.inner.blockhash_expired(h, l).await
    }
    async fn send(&self, txs: &[Transaction]) -> Result<(), Error> {
        {
            let mut sent = self.sent.lock().unwrap();
            for tx in txs {
                sent.insert(tx.signatures[0], tx.message.clone());
            }
        }
        self.inner.send(txs).await
    }
    async fn statuses(&self, s: &[Signature]) -> Result<Vec<TxStatus>, Error> {
        let statuses = self.inner.statuses(s).await?;
        let mut sent = self.sent.lock().unwrap();
        for (sig, status) in s.iter().zip(&statuses) {
            if status == &TxStatus::Landed(Ok(())) {
                if let Some(message) = sent.remove(sig) {
                    self.landed.lock().unwrap().push(message);
                }
            }
        }
        Ok(statuses)
    }
    async fn simulate(&self, tx: &Transaction) -> Result<Simulation, Error> {
        self.inner.simulate(tx).await
    }
}

fn model(name: &str) -> Vec<u8> {
    let (config, tied) = match name {
        "stories260K" => {
            return curta_core::convert::convert(
                curta_client::rehearse::STORIES260K,
                curta_client::rehearse::TOK512,
            )
            .unwrap()
        }
        "gqa" => (
            Config {
                dim: 192,
                hidden_dim: 512,
                layers: 3,
                heads: 6,
                kv_heads: 2,
                vocab_size: 2048,
                context_length: 256,
            },
            true,
        ),
        "stories15M" => (synth::STORIES15M, true),
        other => panic!("unknown model {other}"),
    };
    let checkpoint = synth::checkpoint(&config, tied, 42);
    let tokenizer = synth::tokenizer(config.vocab_size, 43);
    curta_core::convert::convert(&checkpoint, &tokenizer).unwrap()
}

/// The bare loop: the same transactions (the messages that landed, in landing order) sent to
/// a fresh bank under one clock, with no reads, planning, confirming or retrying. Each stretch
/// of Writes streams through `window` concurrent `process_transaction` calls (writes commute,
/// so the window never drains between groups); creates and seals go one at a time, in order.
/// A blockhash lives about a second in this bank, so transactions cannot all be signed before
/// the clock starts: each is signed as it is sent with a blockhash at most 100 ms old (an
/// ed25519 signature takes microseconds against milliseconds of bank work per write).
async fn baseline(messages: &[Message], authority: &Keypair, window: usize) -> f64 {
    use futures::StreamExt;
    let bank =
        BankTransport::start(&[(authority.pubkey(), curta_client::rehearse::REHEARSAL_FUNDS)])
            .await;
    let client = bank.banks_client();
    let program = curta_program::id();
    let is_write = |m: &Message| {
        m.instructions.len() == 1
            && m.account_keys[m.instructions[0].program_id_index as usize] == program
            && m.instructions[0].data.first() == Some(&2)
    };
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
    let signed = |m: &Message| {
        let hash = *latest.lock().unwrap();
        Transaction::new(&[authority], m.clone(), hash)
    };
    let started = Instant::now();
    let mut i = 0;
    while i < messages.len() {
        let stretch = messages[i..].iter().take_while(|m| is_write(m)).count();
        if stretch == 0 {
            let tx = signed(&messages[i]);
            client
                .process_transaction(tx)
                .await
                .expect("baseline transaction");
            i += 1;
            continue;
        }
        let results: Vec<_> = futures::stream::iter(&messages[i..i + stretch])
            .map(|m| {
                let client = client.clone();
                let tx = signed(m);
                async move { client.process_transaction(tx).await }
            })
            .buffer_unordered(window)
            .collect()
            .await;
        for r in results {
            r.expect("baseline transaction");
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
    println!(
        "{:<12} {:>10} {:>4} {:>6} {:>6} {:>6} {:>6} {:>4} {:>9} {:>8} {:>9} {:>6}",
        "model",
        "bytes",
        "sec",
        "tx",
        "write",
        "min B",
        "max B",
        "runs",
        "client s",
        "tx/s",
        "bare s",
        "ratio"
    );
    for name in names {
        let artifact = model(&name);
        // Machines here are noisy: the median of several runs (one for the large model).
        let runs: usize = std::env::var("BENCH_RUNS")
            .ok()
            .and_then(|r| r.parse().ok())
            .unwrap_or(if artifact.len() < 5_000_000 { 7 } else { 1 });
        let (mut client_s, mut bare_s, mut last) = (Vec::new(), Vec::new(), None);
        for _ in 0..runs {
            let authority = Keypair::new();
            let bank = BankTransport::start(&[(
                authority.pubkey(),
                curta_client::rehearse::REHEARSAL_FUNDS,
            )])
            .await;
            let recording = Recording {
                inner: &bank,
                sent: Mutex::new(HashMap::new()),
                landed: Mutex::new(Vec::new()),
            };
            let report =
                curta_client::publish(&recording, &authority, &artifact, true, &Options::default())
                    .await
                    .unwrap();
            assert_eq!(report.state, "Sealed");
            let messages = recording.landed.lock().unwrap().clone();
            assert_eq!(messages.len() as u64, report.transactions());
            bare_s.push(baseline(&messages, &authority, bank.profile().window).await);
            client_s.push(report.seconds);
            last = Some(report);
        }
        let report = last.expect("at least one run");
        let (client, bare) = (median(&mut client_s), median(&mut bare_s));
        let t = &report.tally;
        println!(
            "{:<12} {:>10} {:>4} {:>6} {:>6} {:>6} {:>6} {:>4} {:>9.3} {:>8.0} {:>9.3} {:>6.2}",
            name,
            report.artifact_bytes,
            report.sections,
            report.transactions(),
            t.write,
            t.write_bytes_min.unwrap_or(0),
            t.write_bytes_max,
            runs,
            client,
            report.transactions() as f64 / client,
            bare,
            client / bare
        );
    }
    let _ = rehearse; // the CLI's `client rehearse` is this same publish on a fresh bank
}

fn median(values: &mut [f64]) -> f64 {
    values.sort_by(f64::total_cmp);
    values[values.len() / 2]
}
