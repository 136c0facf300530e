//! The `client` binary over RPC: publish, seal, status, verify and close against the
//! in-process JSON-RPC node of tests/support/rpc_shim.rs (the real program on a bank), through
//! `--url http://127.0.0.1:PORT`, `--keypair` and `--commitment`. Expected values come from the
//! bank directly and from the sha2 crate.

// The node's whole interface is not used here.
#[allow(dead_code)]
#[path = "../../tests/support/rpc_shim.rs"]
mod rpc_shim;

// The independent expected values and the spec's rent numbers shared with the tests crate.
#[path = "../../tests/support/expected.rs"]
mod expected;
#[allow(dead_code)]
#[path = "../../tests/support/client.rs"]
mod support;

use rpc_shim::RpcShim;
use serde_json::Value;
use solana_keypair::Keypair;
use solana_pubkey::Pubkey;
use solana_signer::Signer;
use std::path::Path;
use std::process::Command;
use std::str::FromStr;

const SOL: u64 = 1_000_000_000;

/// Runs the binary (off the runtime, which keeps serving the node meanwhile).
async fn client(args: Vec<String>) -> (bool, String, String) {
    tokio::task::spawn_blocking(move || {
        let out = Command::new(env!("CARGO_BIN_EXE_client"))
            .args(&args)
            .env("RUST_LOG", "error")
            .output()
            .unwrap();
        (
            out.status.success(),
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    })
    .await
    .unwrap()
}

/// `client <command...> --url <node> --keypair <file> --commitment <level> --output json`,
/// which must succeed and print one JSON document.
async fn client_json(command: &[&str], url: &str, keypair: &Path, commitment: &str) -> Value {
    let mut args: Vec<String> = command.iter().map(|s| s.to_string()).collect();
    args.extend(
        [
            "--url",
            url,
            "--keypair",
            &keypair.display().to_string(),
            "--commitment",
            commitment,
            "--output",
            "json",
        ]
        .map(String::from),
    );
    let (ok, stdout, stderr) = client(args.clone()).await;
    assert!(ok, "client {args:?} failed: {stderr}");
    serde_json::from_str(&stdout).unwrap_or_else(|e| panic!("client {args:?}: {e}: {stdout}"))
}

fn weights_hash(artifact: &[u8]) -> String {
    expected::sha256_chain_hex(curta_core::decode(artifact).unwrap().sections())
}

fn model_rent(artifact: &[u8]) -> u64 {
    let decoded = curta_core::decode(artifact).unwrap();
    support::model_rent(&decoded.sections().map(<[u8]>::len).collect::<Vec<_>>())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cli_publish_seal_status_verify_close_over_rpc() {
    let authority = Keypair::new();
    let shim = RpcShim::start(&[(authority.pubkey(), 100 * SOL)]).await;
    let url = shim.url();
    let banks = shim.banks();
    let dir = tempfile::tempdir().unwrap();
    let keypair = dir.path().join("authority.json");
    std::fs::write(
        &keypair,
        serde_json::to_string(&authority.to_bytes().to_vec()).unwrap(),
    )
    .unwrap();
    let stories = curta_core::convert::convert(
        curta_client::rehearse::STORIES260K,
        curta_client::rehearse::TOK512,
    )
    .unwrap();
    let stories_path = dir.path().join("stories260K.curta");
    std::fs::write(&stories_path, &stories).unwrap();
    let stories_file = stories_path.display().to_string();
    let before = banks.get_balance(authority.pubkey()).await.unwrap();

    // This node has no version 1 transactions (its bank runs without enable_tx_v1): asked
    // for v1, the client refuses before sending anything.
    let flags = |extra: &[&str]| -> Vec<String> {
        let mut args: Vec<String> = ["--url", &url, "--keypair", &keypair.display().to_string()]
            .iter()
            .map(|s| s.to_string())
            .collect();
        args.extend(extra.iter().map(|s| s.to_string()));
        args
    };
    let (ok, stdout, stderr) = client(
        [
            vec!["publish".to_string(), stories_file.clone()],
            flags(&["--tx-version", "v1"]),
        ]
        .concat(),
    )
    .await;
    assert!(!ok);
    assert_eq!(stdout, "");
    assert_eq!(
        stderr,
        format!(
            "error: {url} does not accept version 1 transactions (its feature enable_tx_v1, \
             txv1aq4pp281K9um3tnPgkfX8UqtFT6wcVW3hNezGLL, is not active); nothing was sent: \
             use --tx-version legacy or auto\n"
        )
    );
    assert!(shim.executed().is_empty());
    assert_eq!(banks.get_balance(authority.pubkey()).await.unwrap(), before);

    // publish (auto: legacy here, said once on stderr), then seal, at "processed".
    let (ok, stdout, stderr) = client(
        [
            vec!["publish".to_string(), stories_file.clone()],
            flags(&["--commitment", "processed", "--output", "json"]),
        ]
        .concat(),
    )
    .await;
    assert!(ok, "{stderr}");
    let note = format!(
        "{url} does not accept version 1 transactions (feature \
         txv1aq4pp281K9um3tnPgkfX8UqtFT6wcVW3hNezGLL is not active): sending legacy transactions"
    );
    assert_eq!(stderr.matches("Note: ").count(), 1, "{stderr}");
    assert!(stderr.contains(&format!("Note: {note}\n")), "{stderr}");
    let published: Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(published["tx_version"], "legacy");
    assert_eq!(published["tx_version_note"], note.as_str());
    assert_eq!(published["write_bytes_per_tx"]["max"], 1019);
    assert_eq!(published["cluster"], url.as_str());
    assert_eq!(published["state"], "Open");
    assert_eq!(published["weights_hash"], weights_hash(&stories).as_str());
    let model = published["model"].as_str().unwrap().to_string();
    let sealed = client_json(&["seal", &model], &url, &keypair, "processed").await;
    assert_eq!(sealed["state"], "Sealed");

    // The bank's model account: Sealed, declared and running hash equal to the sha2 chain.
    let account = banks
        .get_account(Pubkey::from_str(&model).unwrap())
        .await
        .unwrap()
        .expect("model account on the bank");
    let hex = |b: &[u8]| b.iter().map(|b| format!("{b:02x}")).collect::<String>();
    assert_eq!(account.data[9], 4, "Sealed");
    assert_eq!(hex(&account.data[48..80]), weights_hash(&stories));
    assert_eq!(hex(&account.data[80..112]), weights_hash(&stories));

    // Exact lamports, from the bank: rent held plus the fee of every executed transaction.
    let after = banks.get_balance(authority.pubkey()).await.unwrap();
    let fees = shim.fees_charged(&authority.pubkey()).await;
    let executed = shim.executed().len() as u64;
    assert_eq!(fees, 5_000 * executed);
    assert_eq!(before - after, model_rent(&stories) + fees);
    let reported_fees = published["lamports"]["fees"].as_u64().unwrap()
        + sealed["lamports"]["fees"].as_u64().unwrap();
    assert_eq!(reported_fees, fees);
    assert_eq!(
        published["transactions"]["total"].as_u64().unwrap()
            + sealed["transactions"]["total"].as_u64().unwrap(),
        executed
    );
    // At "processed" a transaction counts the first time it is seen.
    for e in shim.executed() {
        assert_eq!(shim.reported(&e.transaction.signatures[0]), ["processed"]);
    }

    // status (at "confirmed") and verify read it back over RPC.
    let status = client_json(
        &["status", &model, "--artifact", &stories_file],
        &url,
        &keypair,
        "confirmed",
    )
    .await;
    assert_eq!(status["state"], "Sealed");
    assert_eq!(status["running_hash"], weights_hash(&stories).as_str());
    assert_eq!(status["lamports"]["rent_held"], model_rent(&stories));
    for section in status["sections"].as_array().unwrap() {
        assert_eq!(section["differing_bytes"], 0, "{section}");
    }
    let verified = client_json(
        &["verify", &model, &stories_file],
        &url,
        &keypair,
        "finalized",
    )
    .await;
    assert_eq!(verified["ok"], true);
    assert_eq!(verified["onchain_hash"], weights_hash(&stories).as_str());

    // A second model, left open and closed: all its rent comes back.
    let tiny = tiny_artifact();
    let tiny_path = dir.path().join("tiny.curta");
    std::fs::write(&tiny_path, &tiny).unwrap();
    let before_tiny = banks.get_balance(authority.pubkey()).await.unwrap();
    let executed_before = shim.executed().len() as u64;
    let tiny_published = client_json(
        &["publish", &tiny_path.display().to_string()],
        &url,
        &keypair,
        "confirmed",
    )
    .await;
    let tiny_model = tiny_published["model"].as_str().unwrap().to_string();
    assert_eq!(tiny_published["lamports"]["rent"], model_rent(&tiny));
    let closed = client_json(&["close", &tiny_model], &url, &keypair, "confirmed").await;
    assert_eq!(closed["state"], "closed");
    assert_eq!(
        closed["lamports"]["recovered"],
        model_rent(&tiny),
        "{closed}"
    );
    assert_eq!(closed["lamports"]["fees"], 5_000);
    assert_eq!(closed["accounts_closed"], 3);
    let tiny_model = Pubkey::from_str(&tiny_model).unwrap();
    assert_eq!(banks.get_account(tiny_model).await.unwrap(), None);
    let executed_tiny = shim.executed().len() as u64 - executed_before;
    assert_eq!(
        before_tiny - banks.get_balance(authority.pubkey()).await.unwrap(),
        5_000 * executed_tiny,
        "only fees are lost"
    );
    assert_eq!(shim.dropped(), 0);
}

/// A small artifact: a synthetic llama2.c checkpoint (dimension 16, one layer, 300 tokens)
/// and tokenizer, converted.
fn tiny_artifact() -> Vec<u8> {
    use curta_core::convert::synth;
    let config = curta_core::Config {
        dim: 16,
        hidden_dim: 32,
        layers: 1,
        heads: 2,
        kv_heads: 2,
        vocab_size: 300,
        context_length: 8,
    };
    curta_core::convert::convert(
        &synth::checkpoint(&config, true, 11),
        &synth::tokenizer(config.vocab_size, 12),
    )
    .unwrap()
}

/// `client run <MODEL> --on-chain` over RPC: the JSON's tokens and text equal `client run` of
/// the file (the off-chain run), the runner's balance on the bank drops by exactly the fees it
/// reports (the rent came back at close); with `--keep` the run stays, and the same command
/// without it finds the run finished at its last step and closes it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cli_run_on_chain_over_rpc_equals_run_of_the_file() {
    let runner = Keypair::new();
    let shim = RpcShim::start(&[(runner.pubkey(), 100 * SOL)]).await;
    let url = shim.url();
    let banks = shim.banks();
    let dir = tempfile::tempdir().unwrap();
    let keypair = dir.path().join("runner.json");
    std::fs::write(
        &keypair,
        serde_json::to_string(&runner.to_bytes().to_vec()).unwrap(),
    )
    .unwrap();
    let stories = curta_core::convert::convert(
        curta_client::rehearse::STORIES260K,
        curta_client::rehearse::TOK512,
    )
    .unwrap();
    let path = dir.path().join("stories260K.curta");
    std::fs::write(&path, &stories).unwrap();
    let file = path.display().to_string();
    let published = client_json(&["publish", &file, "--seal"], &url, &keypair, "confirmed").await;
    assert_eq!(published["state"], "Sealed");
    let model = published["model"].as_str().unwrap().to_string();
    let options = [
        "--prompt",
        "Once upon a time",
        "--steps",
        "6",
        "--temperature",
        "0.9",
        "--seed",
        "77",
        // The test node's slot does not move: no seed can be drawn there.
        "--chosen-seed",
    ];
    let off = client_json(
        &[&["run", &file][..], &options[..]].concat(),
        &url,
        &keypair,
        "confirmed",
    )
    .await;

    let before = banks.get_balance(runner.pubkey()).await.unwrap();
    let on = client_json(
        &[&["run", &model, "--on-chain"][..], &options[..]].concat(),
        &url,
        &keypair,
        "confirmed",
    )
    .await;
    for key in ["prompt_tokens", "tokens", "text", "weights_hash", "seed"] {
        assert_eq!(on[key], off[key], "{key}");
    }
    let steps = on["steps"].as_u64().unwrap();
    assert_eq!(on["transactions"].as_u64().unwrap(), steps + 2);
    assert_eq!(on["fees"].as_u64().unwrap(), 5_000 * (steps + 2));
    assert_eq!(on["closed"], true);
    let after = banks.get_balance(runner.pubkey()).await.unwrap();
    assert_eq!(before - after, on["fees"].as_u64().unwrap());

    // --keep, then the same command without it: resumed at the end, one close.
    let kept = client_json(
        &[
            &["run", &model, "--on-chain", "--keep", "--nonce", "1"][..],
            &options[..],
        ]
        .concat(),
        &url,
        &keypair,
        "confirmed",
    )
    .await;
    assert_eq!(kept["tokens"], off["tokens"]);
    assert_eq!(kept["closed"], false);
    let rent = kept["rent_held"].as_u64().unwrap();
    assert!(rent > 0);
    // `run --from-run`: the kept run recomputed from its own fields, every token agreeing.
    let run = kept["run"].as_str().unwrap().to_string();
    let replay = client_json(&["run", "--from-run", &run], &url, &keypair, "confirmed").await;
    assert_eq!(replay["agrees"], true, "{replay}");
    assert_eq!(replay["chain_tokens"], off["tokens"]);
    assert_eq!(replay["offline_tokens"], off["tokens"]);
    assert_eq!(replay["seed_source"], "chosen");
    assert_eq!(replay["seed"].as_u64(), Some(77));
    assert_eq!(replay["state"], "equal");
    assert_eq!(replay["status"], "steps done");
    // The model's address is no run: exit status 1, the account named.
    let mut args: Vec<String> = ["run", "--from-run", &model, "--url", &url, "--keypair"]
        .iter()
        .map(|s| s.to_string())
        .collect();
    args.push(keypair.display().to_string());
    let (ok, _, stderr) = client(args).await;
    assert!(!ok);
    assert!(
        stderr.contains(&format!(
            "run account {model}: an account of program {} that is not a run",
            curta_interface::id()
        )),
        "{stderr}"
    );
    let closed = client_json(
        &[
            &["run", &model, "--on-chain", "--nonce", "1"][..],
            &options[..],
        ]
        .concat(),
        &url,
        &keypair,
        "confirmed",
    )
    .await;
    assert_eq!(closed["resumed_from"].as_u64(), Some(steps));
    assert_eq!(closed["tokens"], off["tokens"]);
    assert_eq!(closed["transactions"], 1);
    assert_eq!(
        banks.get_balance(runner.pubkey()).await.unwrap(),
        // The kept run's start and steps, then its close; its rent went in and came back.
        after - 5_000 * (steps + 1) - 5_000
    );
}

/// `client claim --no-wait` over RPC: a greedy claim answered with the tokens `client run` of
/// the file prints, the claimer's balance lower by its two fees and what the claim holds (its
/// rent and the minimum bond); `client claims --claimer` lists it; `client close-claim`
/// refuses it within its window (exit status 1, nothing spent); the same command again
/// resumes it without a transaction.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cli_claim_over_rpc_answers_what_run_of_the_file_prints() {
    let claimer = Keypair::new();
    let shim = RpcShim::start(&[(claimer.pubkey(), 100 * SOL)]).await;
    let url = shim.url();
    let banks = shim.banks();
    let dir = tempfile::tempdir().unwrap();
    let keypair = dir.path().join("claimer.json");
    std::fs::write(
        &keypair,
        serde_json::to_string(&claimer.to_bytes().to_vec()).unwrap(),
    )
    .unwrap();
    let stories = curta_core::convert::convert(
        curta_client::rehearse::STORIES260K,
        curta_client::rehearse::TOK512,
    )
    .unwrap();
    let path = dir.path().join("stories260K.curta");
    std::fs::write(&path, &stories).unwrap();
    let file = path.display().to_string();
    let published = client_json(&["publish", &file, "--seal"], &url, &keypair, "confirmed").await;
    let model = published["model"].as_str().unwrap().to_string();
    let options = [
        "--prompt",
        "Once upon a time",
        "--steps",
        "6",
        "--temperature",
        "0",
    ];
    let off = client_json(
        &[&["run", &file][..], &options[..]].concat(),
        &url,
        &keypair,
        "confirmed",
    )
    .await;
    let before = banks.get_balance(claimer.pubkey()).await.unwrap();
    let claim_args = [
        &["claim", &model, "--no-wait", "--nonce", "0"][..],
        &options[..],
    ]
    .concat();
    let claimed = client_json(&claim_args, &url, &keypair, "confirmed").await;
    assert_eq!(claimed["tokens"], off["tokens"]);
    assert_eq!(claimed["text"], off["text"]);
    assert_eq!(claimed["state"], "answered");
    assert_eq!(claimed["seed_source"], "none");
    assert_eq!(claimed["transactions"], 2);
    assert_eq!(claimed["fees"], 10_000);
    let held = claimed["lamports_held"].as_u64().unwrap();
    assert_eq!(
        held,
        claimed["rent"].as_u64().unwrap() + claimed["minimum_bond"].as_u64().unwrap()
    );
    let after = banks.get_balance(claimer.pubkey()).await.unwrap();
    assert_eq!(before - after, 10_000 + held);
    let address = claimed["claim"].as_str().unwrap().to_string();

    let me = claimer.pubkey().to_string();
    let listed = client_json(
        &["claims", &model, "--claimer", &me, "--nonces", "4"],
        &url,
        &keypair,
        "confirmed",
    )
    .await;
    assert_eq!(listed["claims"][0]["address"], address.as_str());
    assert_eq!(listed["claims"][0]["state"], "answered");
    assert_eq!(listed["claims"].as_array().unwrap().len(), 1);

    let mut args: Vec<String> = ["close-claim", &address, "--url", &url, "--keypair"]
        .iter()
        .map(|s| s.to_string())
        .collect();
    args.push(keypair.display().to_string());
    let (ok, _, stderr) = client(args).await;
    assert!(!ok);
    assert!(
        stderr.contains(&format!(
            "claim account {address}: is answered and within its challenge window until slot"
        )),
        "{stderr}"
    );
    let resumed = client_json(&claim_args, &url, &keypair, "confirmed").await;
    assert_eq!(resumed["resumed"], true);
    assert_eq!(resumed["transactions"], 0);
    assert_eq!(resumed["tokens"], off["tokens"]);
    assert_eq!(banks.get_balance(claimer.pubkey()).await.unwrap(), after);
}

/// `client watch --output json` stops cleanly on Ctrl-C (SIGINT): its first line is the
/// `started` event, its last the `stopped` summary, and it exits with status 0. This node has
/// no getProgramAccounts, so each poll in between is reported as `trouble` and tried again
/// (a node that fails is no reason to stop watching).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cli_watch_stops_cleanly_on_ctrl_c() {
    use std::io::BufRead;
    let watcher = Keypair::new();
    let shim = RpcShim::start(&[(watcher.pubkey(), SOL)]).await;
    let url = shim.url();
    let dir = tempfile::tempdir().unwrap();
    let keypair = dir.path().join("watcher.json");
    std::fs::write(
        &keypair,
        serde_json::to_string(&watcher.to_bytes().to_vec()).unwrap(),
    )
    .unwrap();
    let model = Pubkey::new_unique().to_string();
    let keypair = keypair.display().to_string();
    let lines = tokio::task::spawn_blocking(move || {
        let mut child = Command::new(env!("CARGO_BIN_EXE_client"))
            .args(["watch", "--model", &model, "--challenge", "--poll-ms", "50"])
            .args(["--url", &url, "--keypair", &keypair, "--output", "json"])
            .env("RUST_LOG", "error")
            .stdout(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let mut stdout = std::io::BufReader::new(child.stdout.take().unwrap());
        let mut lines = Vec::new();
        let mut line = String::new();
        while lines.len() < 2 && stdout.read_line(&mut line).unwrap() > 0 {
            lines.push(std::mem::take(&mut line));
        }
        let pid = child.id().to_string();
        assert!(Command::new("kill")
            .args(["-INT", &pid])
            .status()
            .unwrap()
            .success());
        lines.extend(stdout.lines().map(Result::unwrap));
        assert!(child.wait().unwrap().success(), "{lines:?}");
        lines
    })
    .await
    .unwrap();
    let events: Vec<Value> = lines
        .iter()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect();
    assert_eq!(events[0]["event"], "started", "{lines:?}");
    assert_eq!(events[0]["watcher"], watcher.pubkey().to_string());
    assert_eq!(events[0]["challenge"], true);
    assert_eq!(events[1]["event"], "trouble", "{lines:?}");
    let last = events.last().unwrap();
    assert_eq!(last["event"], "stopped", "{lines:?}");
    assert_eq!(last["verified"], 0);
    assert_eq!(last["disputes_left"], serde_json::json!([]));
}
