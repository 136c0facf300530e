//! A JSON-RPC node for the TypeScript SDK's chain tests (sdk/test/chain-run.test.ts,
//! sdk/test/chain-claims.test.ts, sdk/test/browser/run-watch.test.ts): the project's in-process
//! node (tests/support/rpc_shim.rs, the Curta program's SBF binary on a solana-program-test
//! bank) with stories260K published and sealed through it by the client library, and a funded
//! runner and stranger.
//!
//!   cargo run -p curta-tests --example sdk_node [-- --movable]
//!
//! Prints one JSON line on stdout when ready: {"url", "programId", "model", "weightsHash",
//! "artifact" (the published file, removed at exit), "authority", "runner", "runnerKeypair" (the
//! 64 bytes, as a Solana CLI keypair file holds them), "stranger", "strangerKeypair",
//! "movable"}, then serves until its stdin closes.
//!
//! The node's bank stays in its slot (as the shim's does), unless `--movable`: then the model is
//! published on a first node, its sealed accounts are copied into a second one started with
//! `RpcShim::start_movable`, and each line `pass-slot` on stdin moves that bank to its next slot
//! and prints {"slot": N} (a run whose seed is drawn from the chain steps after its start slot).

use curta_client::send::transport::RpcTransport;
use curta_tests::rpc_shim::RpcShim;
use solana_account::Account;
use solana_commitment_config::CommitmentConfig;
use solana_keypair::Keypair;
use solana_pubkey::Pubkey;
use solana_signer::Signer;
use std::io::BufRead;
use std::str::FromStr;

const SOL: u64 = 1_000_000_000;

fn main() {
    let movable = std::env::args().any(|a| a == "--movable");
    // One thread: program-test's blockhash rotation (a task on this runtime, kept alive by a
    // movable node) then never runs while `pass_slot` freezes the working bank (a blockhash
    // registered into a bank being frozen panics: solana-runtime's `!self.freeze_started()`).
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a tokio runtime");
    runtime.block_on(async {
        let (authority, runner, stranger) = (Keypair::new(), Keypair::new(), Keypair::new());
        let funded = [
            (authority.pubkey(), 100 * SOL),
            (runner.pubkey(), 100 * SOL),
            (stranger.pubkey(), 100 * SOL),
        ];
        let mut shim = RpcShim::start(&funded).await;
        let artifact = curta_tests::stories260k_artifact();
        let dir = tempfile::tempdir().expect("a temporary directory");
        let artifact_path = dir.path().join("stories260K.curta");
        std::fs::write(&artifact_path, &artifact).expect("writing the artifact");
        let transport = RpcTransport::new(&shim.url(), CommitmentConfig::confirmed());
        let report =
            curta_client::publish(&transport, &authority, &artifact, true, &Default::default())
                .await
                .unwrap_or_else(|e| panic!("publishing stories260K on the node: {e}"));
        let report = report.to_json();
        assert_eq!(report["state"], "Sealed", "{report}");
        let model = Pubkey::from_str(report["model"].as_str().unwrap()).unwrap();
        if movable {
            shim = movable_copy(&shim, &model, &funded).await;
        }
        let line = serde_json::json!({
            "url": shim.url(),
            "programId": curta_program::id().to_string(),
            "model": report["model"],
            "weightsHash": report["weights_hash"],
            "artifact": artifact_path.display().to_string(),
            "authority": authority.pubkey().to_string(),
            "runner": runner.pubkey().to_string(),
            "runnerKeypair": runner.to_bytes().to_vec(),
            "stranger": stranger.pubkey().to_string(),
            "strangerKeypair": stranger.to_bytes().to_vec(),
            "movable": movable,
        });
        println!("{line}");
        // Serve until the test closes stdin (or dies); move the bank when asked.
        let (lines, mut commands) = tokio::sync::mpsc::unbounded_channel();
        std::thread::spawn(move || {
            for line in std::io::stdin().lock().lines() {
                let Ok(line) = line else { break };
                if lines.send(line).is_err() {
                    break;
                }
            }
        });
        while let Some(command) = commands.recv().await {
            match command.trim() {
                "pass-slot" if movable => {
                    println!("{}", serde_json::json!({ "slot": shim.pass_slot().await }))
                }
                other => println!(
                    "{}",
                    serde_json::json!({ "error": format!("unknown command {other:?}") })
                ),
            }
        }
        drop(shim);
        drop(dir);
    });
}

/// A movable node holding the sealed model's accounts as the program left them on `shim`.
async fn movable_copy(shim: &RpcShim, model: &Pubkey, funded: &[(Pubkey, u64)]) -> RpcShim {
    let banks = shim.banks();
    let account = |address: Pubkey| {
        let banks = banks.clone();
        async move {
            banks
                .get_account(address)
                .await
                .expect("bank")
                .unwrap_or_else(|| panic!("no account {address}"))
        }
    };
    let model_account = account(*model).await;
    let decoded = curta_program::state::Model::unpack(&model_account.data).expect("a model");
    let mut accounts: Vec<(Pubkey, Account)> = vec![(*model, model_account)];
    for weight in decoded.weights() {
        accounts.push((*weight, account(*weight).await));
    }
    for (address, lamports) in funded {
        accounts.push((
            *address,
            Account::new(*lamports, 0, &solana_system_interface::program::ID),
        ));
    }
    RpcShim::start_movable(&accounts).await
}
