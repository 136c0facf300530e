//! Load test of claims (issue 40): 1,000 claims of stories260K (64 tokens; greedy, drawn and
//! chosen; text and id prompts) by 4 claimers, 10% of them answered wrongly in varied ways
//! (an id changed, the text changed, a wrong seed, a wrong prompt, one token short, a wrong
//! temperature), 2 watchers (`client watch --challenge`) racing to verify and challenge, one
//! killed during a dispute and started again; then every claim's window passes and every claim
//! is closed. Checks that every wrong claim is overturned, no honest one, and that every
//! lamport of the claimers and watchers is accounted for (before = after + the fees of every
//! transaction they paid for, each party's share its bonds won and lost), and prints the
//! figures: claims opened and answered a second, the watchers' off-chain verification rate,
//! the disputes and their steps, the lamports moved. Exits 1 when a check fails.
//!
//! The driver is `tests/support/claims_load/` (the integration test `client::claims_load` runs
//! it small), written once over `Transport`:
//!
//!     cargo run --release -p curta-client --example bench_claims -- [--bank]   # in-process bank
//!     cargo run --release -p curta-client --example bench_claims -- --url http://127.0.0.1:8899
//!
//! `--bank` (the default) runs the program's SBF binary in an in-process bank (what
//! `ProgramSo::find` finds: target/deploy/curta_program.so); `--url` drives a validator started
//! by `scripts/local-validator` (its faucet funds the load: `scripts/bench-validator claims`
//! does both). Options: `--claims N` (1000), `--claimers N` (4), `--wrong-percent P` (10),
//! `--watchers N` (2), `--tokens N` (64), `--window SLOTS` (150), `--batch N` (claims a claimer
//! has in flight, 25), `--poll-ms MS`, `--threads N`, `--account-cu-limit UNITS`, `--max-disputes N`, `--no-kill`,
//! `--model ADDRESS` (a sealed stories260K already there), `--program-id ID`, `--timeout S`,
//! `--verbose` (every watcher event), `--output json`.

#[path = "../../tests/support/claims_load/mod.rs"]
#[allow(dead_code)]
mod claims_load;

use claims_load::{budget, run, LoadOptions, ModelSource};
use clap::Parser;
use curta_client::{BankTransport, RpcTransport, Transport};
use solana_client::nonblocking::rpc_client::RpcClient;
use solana_commitment_config::CommitmentConfig;
use solana_keypair::Keypair;
use solana_pubkey::Pubkey;
use solana_signer::Signer;
use std::time::Duration;

const SOL: u64 = 1_000_000_000;

#[derive(Parser, Debug)]
#[command(about = "Load test of claims: claimers, wrong answers, racing watchers")]
struct Args {
    /// The in-process bank running the SBF binary (the default).
    #[arg(long, conflicts_with = "url")]
    bank: bool,
    /// A validator's JSON-RPC URL (its faucet funds the load).
    #[arg(long)]
    url: Option<String>,
    /// The program's id on the validator (default: the crate's, what scripts/local-validator
    /// deploys).
    #[arg(long)]
    program_id: Option<Pubkey>,
    #[arg(long, default_value_t = 1000)]
    claims: usize,
    #[arg(long, default_value_t = 4)]
    claimers: usize,
    #[arg(long, default_value_t = 10.0)]
    wrong_percent: f64,
    #[arg(long, default_value_t = 2)]
    watchers: usize,
    #[arg(long, default_value_t = 64)]
    tokens: u32,
    #[arg(long, default_value_t = curta_interface::claim::MIN_WINDOW)]
    window: u32,
    /// Claims a claimer has in flight at once.
    #[arg(long, default_value_t = 25)]
    batch: usize,
    /// The watchers' poll (default: the transport's).
    #[arg(long)]
    poll_ms: Option<u64>,
    #[arg(long, default_value_t = 1)]
    threads: usize,
    /// The per-account limit the watchers count their steps in flight from (default: the
    /// cluster's).
    #[arg(long)]
    account_cu_limit: Option<u64>,
    /// Disputes a watcher steps at once (default: `client watch`'s).
    #[arg(long)]
    max_disputes: Option<usize>,
    /// Do not kill a watcher during a dispute.
    #[arg(long)]
    no_kill: bool,
    /// A sealed stories260K on the cluster (default: publish and seal one).
    #[arg(long)]
    model: Option<Pubkey>,
    #[arg(long, default_value_t = 3600)]
    timeout: u64,
    #[arg(long)]
    verbose: bool,
    /// `json`: the report as one JSON object on stdout.
    #[arg(long)]
    output: Option<String>,
}

impl Args {
    fn options(&self) -> LoadOptions {
        LoadOptions {
            claims: self.claims,
            claimers: self.claimers,
            wrong_percent: self.wrong_percent,
            watchers: self.watchers,
            tokens: self.tokens,
            window: self.window,
            batch: self.batch,
            poll: self.poll_ms.map(Duration::from_millis),
            threads: self.threads,
            account_limit: self.account_cu_limit,
            max_disputes: self.max_disputes,
            kill: !self.no_kill,
            timeout: Duration::from_secs(self.timeout),
            verbose: self.verbose,
        }
    }

    fn source(&self, artifact: &[u8]) -> ModelSource {
        match self.model {
            Some(model) => ModelSource::Sealed(model),
            None => ModelSource::Publish(artifact.to_vec()),
        }
    }
}

/// stories260K and tok512 from the repository's models/ folder (the bytes the client embeds).
fn stories260k() -> Vec<u8> {
    curta_core::convert::convert(
        curta_client::rehearse::STORIES260K,
        curta_client::rehearse::TOK512,
    )
    .expect("converting stories260K")
}

/// `lamports` from the validator's faucet to `to`, 500 SOL an airdrop.
async fn airdrop(url: &str, to: &Pubkey, lamports: u64) {
    let rpc = RpcClient::new_with_commitment(url.to_string(), CommitmentConfig::confirmed());
    let mut left = lamports;
    while left > 0 {
        let amount = left.min(500 * SOL);
        let signature = rpc
            .request_airdrop(to, amount)
            .await
            .unwrap_or_else(|e| panic!("airdrop of {amount} lamports from {url}: {e}"));
        while !rpc.confirm_transaction(&signature).await.unwrap_or(false) {
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
        left -= amount;
    }
}

async fn load<T: Transport>(
    t: &T,
    funder: &Keypair,
    args: &Args,
    artifact: &[u8],
) -> claims_load::report::LoadReport {
    let log = |line: &str| eprintln!("{line}");
    run(t, funder, args.source(artifact), &args.options(), &log)
        .await
        .unwrap_or_else(|e| {
            eprintln!("bench_claims: {e}");
            std::process::exit(2)
        })
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let args = Args::parse();
    if std::env::var_os("RUST_LOG").is_none() {
        // The bank's own log of every instruction: silent, before its threads start.
        std::env::set_var("RUST_LOG", "error");
    }
    let artifact = stories260k();
    let funder = Keypair::new();
    let report = match &args.url {
        None => {
            let bank = BankTransport::try_start(&[(funder.pubkey(), 1_000_000 * SOL)])
                .await
                .unwrap_or_else(|e| panic!("{e}"));
            load(&bank, &funder, &args, &artifact).await
        }
        Some(url) => {
            let program = args.program_id.unwrap_or_else(curta_interface::id);
            let rpc = RpcTransport::with_program_id(url, CommitmentConfig::confirmed(), program);
            let needed = budget(&rpc, &artifact, &args.options())
                .await
                .unwrap_or_else(|e| panic!("{e}"));
            eprintln!(
                "funding the load: {:.1} SOL from {url}'s faucet",
                needed as f64 / SOL as f64
            );
            airdrop(url, &funder.pubkey(), needed).await;
            load(&rpc, &funder, &args, &artifact).await
        }
    };
    match args.output.as_deref() {
        Some("json") => println!("{}", serde_json::to_string_pretty(&report).unwrap()),
        _ => println!("{report}"),
    }
    if !report.failures.is_empty() {
        std::process::exit(1);
    }
}
