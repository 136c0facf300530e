//! A JSON-RPC node for the TypeScript SDK's chain tests (sdk/test/chain-run.test.ts): the
//! project's in-process node (tests/support/rpc_shim.rs, the Curta program's SBF binary on a
//! solana-program-test bank) with stories260K published and sealed through it by the client
//! library, and a funded runner.
//!
//!   cargo run -p curta-tests --example sdk_node
//!
//! Prints one JSON line on stdout when ready: {"url", "programId", "model", "weightsHash",
//! "artifact" (the published file, removed at exit), "authority", "runner", "runnerKeypair" (the 64 bytes, as a Solana CLI keypair file holds them),
//! "stranger", "strangerKeypair"}, then serves until its stdin closes.

use curta_client::transport::RpcTransport;
use curta_tests::rpc_shim::RpcShim;
use solana_commitment_config::CommitmentConfig;
use solana_keypair::Keypair;
use solana_signer::Signer;
use std::io::Read;

const SOL: u64 = 1_000_000_000;

fn main() {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("a tokio runtime");
    runtime.block_on(async {
        let (authority, runner, stranger) = (Keypair::new(), Keypair::new(), Keypair::new());
        let shim = RpcShim::start(&[
            (authority.pubkey(), 100 * SOL),
            (runner.pubkey(), 100 * SOL),
            (stranger.pubkey(), 100 * SOL),
        ])
        .await;
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
        });
        println!("{line}");
        // Serve until the test closes stdin (or dies).
        tokio::task::spawn_blocking(|| {
            let mut sink = Vec::new();
            let _ = std::io::stdin().read_to_end(&mut sink);
        })
        .await
        .expect("reading stdin");
        drop(shim);
        drop(dir);
    });
}
