//! End to end on a real `solana-test-validator`: the program deployed as its SBF ELF at a fresh
//! random program id, the `client` binary (and the library, where a test injects faults) over
//! JSON-RPC on 127.0.0.1. Each test starts its own validator through `scripts/local-validator`
//! and stops it when it ends, and bounds every client run in time.
//!
//! These tests need the validator binary (`scripts/local-validator install`, a long build) and
//! are run by `scripts/test-validator`; a plain `cargo test` lists them as ignored. Expected
//! values come from the sha2 crate, the spec's rent numbers and raw `getAccountInfo` answers,
//! never from the client's own decoder.

// The independent expected values, and the shared fault-injecting transport of
// tests/support/client.rs.
#[allow(dead_code)]
#[path = "../../tests/support/expected.rs"]
mod expected;
#[allow(dead_code)]
#[path = "../../tests/support/client.rs"]
mod support;

use base64::Engine as _;
use curta_interface::error::CurtaError;
use serde_json::{json, Value};
use solana_client::client_error::ClientError;
use solana_client::rpc_client::{GetConfirmedSignaturesForAddress2Config, RpcClient};
use solana_client::rpc_request::RpcRequest;
use solana_commitment_config::CommitmentConfig;
use solana_instruction::error::InstructionError;
use solana_keypair::Keypair;
use solana_pubkey::Pubkey;
use solana_signature::Signature;
use solana_signer::Signer;
use solana_transaction::Transaction;
use solana_transaction_error::TransactionError;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::str::FromStr;
use std::time::{Duration, Instant};
use support::{rent, Fault, Faulty, FEE};

const SOL: u64 = 1_000_000_000;
/// What each test's payer gets from the faucet: the 16.5 MB model holds 115.2 SOL of rent.
const FUNDS: u64 = 500 * SOL;
/// The longest any one client run may take here (the 16.5 MB publish takes about a minute).
const CLIENT_DEADLINE: Duration = Duration::from_secs(600);

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap()
        .to_path_buf()
}

/// A solana-test-validator started by `scripts/local-validator` on its own port and ledger,
/// with the program at a fresh random id; stopped (by its PID file) when dropped.
struct Validator {
    port: u16,
    ledger: PathBuf,
    program_id: Pubkey,
}

impl Validator {
    fn start(port: u16, name: &str) -> Validator {
        let ledger = Path::new(env!("CARGO_TARGET_TMPDIR"))
            .join("validator")
            .join(name);
        std::fs::create_dir_all(ledger.parent().unwrap()).unwrap();
        let validator = Validator {
            port,
            ledger,
            program_id: Keypair::new().pubkey(),
        };
        validator.script("start", false);
        validator
    }

    /// Starts it again on the ledger it left (after [`Validator::kill`]), and waits until it
    /// has replayed its ledger past `slot`: RPC answers `getHealth` before the replay ends,
    /// and reads at the replay's slot show an older state (a payer without its airdrop).
    fn restart(&self, slot: u64) {
        self.script("start", true);
        let rpc = self.rpc();
        let deadline = Instant::now() + Duration::from_secs(120);
        while rpc.get_slot().map_or(true, |s| s <= slot) {
            assert!(
                Instant::now() < deadline,
                "no slot past {slot} after the restart"
            );
            std::thread::sleep(Duration::from_millis(200));
        }
    }

    fn script(&self, command: &str, keep_ledger: bool) {
        let out = Command::new(repo().join("scripts/local-validator"))
            .arg(command)
            .arg(self.program_id.to_string())
            .env("CURTA_RPC_PORT", self.port.to_string())
            .env("CURTA_LEDGER", &self.ledger)
            .env("CURTA_KEEP_LEDGER", if keep_ledger { "1" } else { "0" })
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "scripts/local-validator {command}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }

    /// SIGKILL, as a crash: no shutdown, the ledger left as it was.
    fn kill(&self) {
        let pid_file = self.ledger.with_extension("pid");
        let pid = std::fs::read_to_string(&pid_file).unwrap();
        let pid = pid.trim();
        assert!(Command::new("kill")
            .args(["-9", pid])
            .status()
            .unwrap()
            .success());
        let deadline = Instant::now() + Duration::from_secs(30);
        while Path::new(&format!("/proc/{pid}")).exists() && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(100));
        }
        std::fs::remove_file(pid_file).unwrap();
    }

    fn url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    fn rpc(&self) -> RpcClient {
        RpcClient::new_with_commitment(self.url(), CommitmentConfig::confirmed())
    }

    /// A new keypair, written to `dir`, funded from the validator's faucet; returns the
    /// keypair, its file and the airdrop's signature (the payer's history starts after it).
    fn funded_payer(&self, dir: &Path, sol: u64) -> (Keypair, PathBuf, Signature) {
        let payer = Keypair::new();
        let file = dir.join(format!("{}.json", payer.pubkey()));
        std::fs::write(&file, format!("{:?}", payer.to_bytes().to_vec())).unwrap();
        let rpc = self.rpc();
        let airdrop = rpc.request_airdrop(&payer.pubkey(), sol * SOL).unwrap();
        let deadline = Instant::now() + Duration::from_secs(60);
        while !rpc.confirm_transaction(&airdrop).unwrap() {
            assert!(Instant::now() < deadline, "airdrop {airdrop} not confirmed");
            std::thread::sleep(Duration::from_millis(200));
        }
        assert_eq!(rpc.get_balance(&payer.pubkey()).unwrap(), sol * SOL);
        (payer, file, airdrop)
    }
}

impl Drop for Validator {
    fn drop(&mut self) {
        let _ = Command::new(repo().join("scripts/local-validator"))
            .arg("stop")
            .env("CURTA_RPC_PORT", self.port.to_string())
            .env("CURTA_LEDGER", &self.ledger)
            .status();
    }
}

/// `client <args> --url <validator> --keypair <file> --commitment confirmed --output json`.
fn client_args(args: &[&str], validator: &Validator, keypair: &Path) -> Vec<String> {
    let mut all: Vec<String> = args.iter().map(|s| s.to_string()).collect();
    let url = validator.url();
    let keypair = keypair.display().to_string();
    all.extend(["--url", &url, "--keypair", &keypair].map(String::from));
    // verify-program names the program it checks as its argument, not with --program-id.
    if args.first() != Some(&"verify-program") {
        all.extend(["--program-id".to_string(), validator.program_id.to_string()]);
    }
    all.extend(["--commitment", "confirmed", "--output", "json"].map(String::from));
    all
}

fn spawn_client(args: &[String]) -> Child {
    Command::new(env!("CARGO_BIN_EXE_client"))
        .args(args)
        .env("RUST_LOG", "error")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

/// Waits for the client, killing it (and failing) past the deadline.
fn finish(mut child: Child, args: &[String]) -> (bool, String, String) {
    let started = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if started.elapsed() > CLIENT_DEADLINE {
            let _ = child.kill();
            panic!("client {args:?} still running after {CLIENT_DEADLINE:?}");
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    let (mut out, mut err) = (String::new(), String::new());
    child
        .stdout
        .take()
        .unwrap()
        .read_to_string(&mut out)
        .unwrap();
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut err)
        .unwrap();
    (status.success(), out, err)
}

/// A client run that must succeed and print one JSON document.
fn client_json(args: &[&str], validator: &Validator, keypair: &Path) -> Value {
    let args = client_args(args, validator, keypair);
    let (ok, out, err) = finish(spawn_client(&args), &args);
    assert!(ok, "client {args:?} failed: {err}");
    serde_json::from_str(&out).unwrap_or_else(|e| panic!("client {args:?}: {e}: {out}"))
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn weights_hash(artifact: &[u8]) -> [u8; 32] {
    expected::sha256_chain(curta_core::decode(artifact).unwrap().sections())
}

fn stories260k() -> Vec<u8> {
    curta_core::convert::convert(
        curta_client::rehearse::STORIES260K,
        curta_client::rehearse::TOK512,
    )
    .unwrap()
}

/// A stories15M-shaped artifact (16.5 MB, 8 sections) from a seeded synthetic checkpoint.
fn stories15m_shape() -> Vec<u8> {
    let config = curta_core::convert::synth::STORIES15M;
    let checkpoint = curta_core::convert::synth::checkpoint(&config, true, 11);
    let tokenizer = curta_core::convert::synth::tokenizer(config.vocab_size, 11);
    curta_core::convert::convert(&checkpoint, &tokenizer).unwrap()
}

/// An account as JSON-RPC `getAccountInfo` returns it, decoded here from base64: (lamports,
/// owner, data), or `None` when there is no account.
fn raw_account(rpc: &RpcClient, address: &Pubkey) -> Option<(u64, Pubkey, Vec<u8>)> {
    let answer: Value = rpc
        .send(
            RpcRequest::GetAccountInfo,
            json!([address.to_string(), {"encoding": "base64", "commitment": "confirmed"}]),
        )
        .unwrap();
    let value = &answer["value"];
    if value.is_null() {
        return None;
    }
    let data = base64::engine::general_purpose::STANDARD
        .decode(value["data"][0].as_str().unwrap())
        .unwrap();
    Some((
        value["lamports"].as_u64().unwrap(),
        Pubkey::from_str(value["owner"].as_str().unwrap()).unwrap(),
        data,
    ))
}

/// What the model account's bytes say (offsets from docs/program.md): state byte, seal pass,
/// declared and running hash, seal cursor, total chunks, and the weight account addresses.
struct RawModel {
    lamports: u64,
    state: u8,
    pass: u32,
    declared: [u8; 32],
    running: [u8; 32],
    cursor: u32,
    total_chunks: u32,
    /// The creation id every Seal names (the slot of the CreateModel that made the model).
    creation: u64,
    weights: Vec<Pubkey>,
}

fn raw_model(validator: &Validator, address: &Pubkey) -> RawModel {
    let (lamports, owner, data) = raw_account(&validator.rpc(), address).expect("model account");
    assert_eq!(owner, validator.program_id, "model {address} owner");
    assert_eq!(&data[0..8], b"CURTAMDL");
    let u32_at = |o: usize| u32::from_le_bytes(data[o..o + 4].try_into().unwrap());
    let sections = data[11] as usize;
    RawModel {
        lamports,
        state: data[9],
        pass: u32_at(12),
        declared: data[48..80].try_into().unwrap(),
        running: data[80..112].try_into().unwrap(),
        cursor: u32_at(112),
        total_chunks: u32_at(116),
        creation: u64::from_le_bytes(data[152..160].try_into().unwrap()),
        weights: (0..sections)
            .map(|i| Pubkey::try_from(&data[232 + 32 * i..264 + 32 * i]).unwrap())
            .collect(),
    }
}

const SEALED: u8 = 4;

fn model_rent(artifact: &[u8]) -> u64 {
    let decoded = curta_core::decode(artifact).unwrap();
    support::model_rent(&decoded.sections().map(<[u8]>::len).collect::<Vec<_>>())
}

/// Checks the published model through raw account reads: Sealed in pass `pass`, declared and
/// running hash equal to the sha2 chain, every weight account owned by the program holding its
/// section's bytes after the 2,048-byte header, and the rent of each account exactly the
/// minimum. Returns the rent held.
fn assert_sealed_on_chain(validator: &Validator, model: &Pubkey, artifact: &[u8]) -> u64 {
    let raw = raw_model(validator, model);
    let hash = weights_hash(artifact);
    assert_eq!(raw.state, SEALED, "state byte");
    assert_eq!(
        raw.pass, 0,
        "sealed in the first pass: nothing sealed twice"
    );
    assert_eq!(raw.declared, hash, "declared hash");
    assert_eq!(raw.running, hash, "running hash");
    assert_eq!(raw.cursor, raw.total_chunks, "seal cursor at the end");
    let decoded = curta_core::decode(artifact).unwrap();
    let sections: Vec<&[u8]> = decoded.sections().collect();
    assert_eq!(raw.weights.len(), sections.len());
    let mut held = raw.lamports;
    assert_eq!(raw.lamports, rent(808));
    let rpc = validator.rpc();
    for (i, (address, section)) in raw.weights.iter().zip(&sections).enumerate() {
        let (lamports, owner, data) = raw_account(&rpc, address).expect("weight account");
        assert_eq!(owner, validator.program_id, "section {i} owner");
        assert_eq!(lamports, rent(2_048 + section.len()), "section {i} rent");
        assert_eq!(data[9], 1, "section {i} frozen");
        assert!(&data[2_048..] == *section, "section {i} bytes");
        held += lamports;
    }
    assert_eq!(held, model_rent(artifact));
    held
}

/// A validator of its own for one test, a funded payer (keypair file in a temporary folder)
/// and the payer's airdrop, after which its history is counted.
struct Run {
    validator: Validator,
    dir: tempfile::TempDir,
    payer: Keypair,
    keypair: PathBuf,
    airdrop: Signature,
}

impl Run {
    fn start(port: u16, name: &str) -> Run {
        let validator = Validator::start(port, name);
        let dir = tempfile::tempdir().unwrap();
        let (payer, keypair, airdrop) = validator.funded_payer(dir.path(), FUNDS / SOL);
        Run {
            validator,
            dir,
            payer,
            keypair,
            airdrop,
        }
    }

    /// Writes the artifact into the run's folder: its path and the model address it
    /// publishes to.
    fn artifact(&self, name: &str, artifact: &[u8]) -> (String, Pubkey) {
        let path = self.dir.path().join(name);
        std::fs::write(&path, artifact).unwrap();
        let model = curta_interface::state::model_address(
            &self.validator.program_id,
            &self.payer.pubkey(),
            &weights_hash(artifact),
        )
        .0;
        (path.display().to_string(), model)
    }

    fn args(&self, args: &[&str]) -> Vec<String> {
        client_args(args, &self.validator, &self.keypair)
    }

    fn client_json(&self, args: &[&str]) -> Value {
        client_json(args, &self.validator, &self.keypair)
    }

    /// Signatures the payer took part in after its airdrop, from the validator's transaction
    /// history: every one paid the 5,000-lamport fee, landed successfully or not.
    fn paid_signatures(&self) -> u64 {
        let rpc = self.validator.rpc();
        let mut count = 0;
        let mut before = None;
        loop {
            let page = rpc
                .get_signatures_for_address_with_config(
                    &self.payer.pubkey(),
                    GetConfirmedSignaturesForAddress2Config {
                        before,
                        until: Some(self.airdrop),
                        limit: Some(1_000),
                        commitment: Some(CommitmentConfig::confirmed()),
                    },
                )
                .unwrap();
            let Some(last) = page.last() else {
                return count;
            };
            count += page.len() as u64;
            before = Some(Signature::from_str(&last.signature).unwrap());
        }
    }

    /// Every lamport the payer spent since its airdrop is `rent` (held by accounts, or sent
    /// elsewhere) or a fee of a transaction the node recorded.
    fn assert_spent(&self, rent: u64) {
        let balance = self
            .validator
            .rpc()
            .get_balance(&self.payer.pubkey())
            .unwrap();
        assert_eq!(FUNDS - balance, rent + FEE * self.paid_signatures());
    }
}

/// Waits until the model account exists (the client's creates landed), failing if `child`
/// ends first.
fn wait_for_model(run: &Run, model: &Pubkey, child: &mut Child) {
    let rpc = run.validator.rpc();
    let deadline = Instant::now() + Duration::from_secs(120);
    while raw_account(&rpc, model).is_none() {
        assert!(Instant::now() < deadline, "the model was never created");
        if child.try_wait().unwrap().is_some() {
            let mut err = String::new();
            child
                .stderr
                .take()
                .unwrap()
                .read_to_string(&mut err)
                .unwrap();
            panic!("publish ended before the model was created: {err}");
        }
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// publish --seal of stories260K and of the 16.5 MB stories15M shape, then status, verify and
/// raw account reads; the payer paid exactly the rent plus 5,000 per transaction.
#[test]
#[ignore = "needs solana-test-validator: scripts/test-validator"]
fn publish_seal_status_verify_on_a_validator() {
    let run = Run::start(18_000, "publish");
    let mut rent_held = 0;
    for (name, artifact) in [
        ("stories260K.curta", stories260k()),
        ("stories15M-shape.curta", stories15m_shape()),
    ] {
        let (file, model) = run.artifact(name, &artifact);
        let hash = hex(&weights_hash(&artifact));
        let report = run.client_json(&["publish", &file, "--seal"]);
        assert_eq!(report["model"], model.to_string());
        assert_eq!(report["state"], "Sealed");
        assert_eq!(report["cluster"], run.validator.url());
        assert_eq!(report["weights_hash"], hash);
        assert_eq!(report["transactions"]["failed"], 0);
        let held = assert_sealed_on_chain(&run.validator, &model, &artifact);
        assert_eq!(report["lamports"]["rent_held"], held);
        rent_held += held;

        let status = run.client_json(&["status", &model.to_string()]);
        assert_eq!(status["state"], "Sealed");
        assert_eq!(status["weights_hash"], hash);
        assert_eq!(status["running_hash"], hash);
        assert_eq!(status["lamports"]["rent_held"], held);
        let verified = run.client_json(&["verify", &model.to_string(), &file]);
        assert_eq!(verified["ok"], true, "{verified}");
    }
    run.assert_spent(rent_held);
}

/// Publish killed part-way (SIGKILL to the client), then run again: it finishes, sends only the
/// writes `status --artifact` says still differ, and over both runs the payer paid exactly the
/// rent held plus one fee per transaction: no rent lost.
#[test]
#[ignore = "needs solana-test-validator: scripts/test-validator"]
fn a_killed_publish_resumes_without_losing_rent() {
    let run = Run::start(18_300, "kill-client");
    let artifact = stories15m_shape();
    let (file, model) = run.artifact("stories15M-shape.curta", &artifact);
    let mut child = spawn_client(&run.args(&["publish", &file, "--seal"]));
    wait_for_model(&run, &model, &mut child);
    std::thread::sleep(Duration::from_secs(8));
    child.kill().unwrap();
    child.wait().unwrap();
    // What was in flight lands (or not) within a few slots: read until two reads 5 s apart
    // agree (on this loaded 2-core machine the node may take a while to drain).
    let mut status = run.client_json(&["status", &model.to_string(), "--artifact", &file]);
    loop {
        std::thread::sleep(Duration::from_secs(5));
        let again = run.client_json(&["status", &model.to_string(), "--artifact", &file]);
        if again["transactions"] == status["transactions"] {
            break;
        }
        status = again;
    }
    assert_ne!(status["state"], "Sealed", "killed before the end: {status}");
    let writes_left = status["transactions"]["write"].as_u64().unwrap();
    assert!(writes_left > 0, "killed before the writes ended: {status}");

    let report = run.client_json(&["publish", &file, "--seal"]);
    assert_eq!(report["state"], "Sealed");
    assert_eq!(report["transactions"]["write"], writes_left, "{report}");
    assert_eq!(
        report["transactions"]["create"], status["transactions"]["create"],
        "{report}"
    );
    let held = assert_sealed_on_chain(&run.validator, &model, &artifact);
    let after = run.client_json(&["status", &model.to_string()]);
    assert_eq!(after["lamports"]["rent_held"], held);
    run.assert_spent(held);
}

/// The validator SIGKILLed during publish and restarted on the same ledger: the client rides it
/// out or fails with an error naming the node, and the next publish completes. Nothing sealed
/// twice (pass 0), nothing stranded (every lamport spent is rent held or a fee).
#[test]
#[ignore = "needs solana-test-validator: scripts/test-validator"]
fn a_validator_killed_during_publish_and_restarted() {
    let run = Run::start(18_600, "kill-validator");
    let artifact = stories15m_shape();
    let (file, model) = run.artifact("stories15M-shape.curta", &artifact);
    let args = run.args(&["publish", &file, "--seal"]);
    let mut child = spawn_client(&args);
    wait_for_model(&run, &model, &mut child);
    std::thread::sleep(Duration::from_secs(5));
    let slot = run.validator.rpc().get_slot().unwrap();
    run.validator.kill();
    std::thread::sleep(Duration::from_secs(2));
    run.validator.restart(slot);
    let (ok, out, err) = finish(child, &args);
    if ok {
        let report: Value = serde_json::from_str(&out).unwrap();
        assert_eq!(report["state"], "Sealed");
    } else {
        assert!(err.contains("127.0.0.1"), "the error names the node: {err}");
    }
    let report = run.client_json(&["publish", &file, "--seal"]);
    assert_eq!(report["state"], "Sealed");
    let held = assert_sealed_on_chain(&run.validator, &model, &artifact);
    run.assert_spent(held);
}

/// Sends `instructions` signed by the payer under a fresh blockhash and waits for the outcome.
fn send(
    run: &Run,
    instructions: &[solana_instruction::Instruction],
) -> Result<Signature, ClientError> {
    let rpc = run.validator.rpc();
    let tx = Transaction::new_signed_with_payer(
        instructions,
        Some(&run.payer.pubkey()),
        &[&run.payer],
        rpc.get_latest_blockhash().unwrap(),
    );
    rpc.send_and_confirm_transaction(&tx)
}

/// The custom program error of instruction 0 of a refused transaction.
fn custom_error(result: Result<Signature, ClientError>) -> u32 {
    let err = result.expect_err("refused");
    match err.get_transaction_error() {
        Some(TransactionError::InstructionError(0, InstructionError::Custom(code))) => code,
        other => panic!("not a custom program error: {other:?} ({err})"),
    }
}

/// Transactions signed under a blockhash that expires before they land (the first 24 Writes
/// are never delivered) are signed again and land once. Replays are harmless: a Write sent again
/// under a new blockhash leaves the bytes as they were, and once sealed a replayed Write is
/// `SectionFrozen` and a replayed Seal `ModelSealed`, with the model unchanged.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs solana-test-validator: scripts/test-validator"]
async fn expired_blockhashes_are_signed_again_and_replays_are_harmless() {
    let run = Run::start(18_900, "expiry");
    let artifact = stories260k();
    let (_, model) = run.artifact("stories260K.curta", &artifact);
    let program = run.validator.program_id;
    let rpc = curta_client::RpcTransport::with_program_id(
        &run.validator.url(),
        CommitmentConfig::confirmed(),
        program,
    );
    let faulty = Faulty::new(&rpc, Fault::DropFirstWrites { count: 24 }, 1);
    let options = curta_client::Options::default();
    let published = curta_client::publish(&faulty, &run.payer, &artifact, false, &options)
        .await
        .unwrap();
    assert_eq!(faulty.dropped(), 24);
    assert!(published.counts.resigned >= 24, "{:?}", published.counts);

    // A Write of section 0's first bytes, as already applied, under a fresh blockhash.
    let blocking = run.validator.rpc();
    let raw = raw_model(&run.validator, &model);
    let decoded = curta_core::decode(&artifact).unwrap();
    let section0 = decoded.sections().next().unwrap();
    let write = curta_interface::instruction::write(
        &program,
        &raw.weights[0],
        &run.payer.pubkey(),
        0,
        &section0[..900],
    );
    let before = raw_account(&blocking, &raw.weights[0]).unwrap().2;
    send(&run, std::slice::from_ref(&write)).expect("a replayed Write lands");
    assert!(raw_account(&blocking, &raw.weights[0]).unwrap().2 == before);

    let sealed = curta_client::seal(&faulty, &run.payer, &model, None, &options)
        .await
        .unwrap();
    assert_eq!(sealed.state.to_string(), "Sealed");
    let held = assert_sealed_on_chain(&run.validator, &model, &artifact);
    let model_bytes = raw_account(&blocking, &model).unwrap().2;
    assert_eq!(
        custom_error(send(&run, &[write])),
        CurtaError::SectionFrozen as u32
    );
    // Chunk 1 of the last pass, naming the model's creation id (a Seal naming another is
    // StaleCreation before anything else).
    let sealed_raw = raw_model(&run.validator, &model);
    let seal = curta_interface::instruction::seal(
        &program,
        &model,
        &raw.weights[0],
        sealed_raw.creation,
        sealed_raw.pass,
        1,
    );
    assert_eq!(
        custom_error(send(&run, &[seal])),
        CurtaError::ModelSealed as u32
    );
    assert!(raw_account(&blocking, &model).unwrap().2 == model_bytes);
    assert_sealed_on_chain(&run.validator, &model, &artifact);
    // Rent, plus 5,000 for each transaction the node saw: the 24 never delivered paid nothing.
    run.assert_spent(held);
}

/// close of an unsealed model returns every lamport its accounts held to the destination, and
/// the accounts are gone.
#[test]
#[ignore = "needs solana-test-validator: scripts/test-validator"]
fn close_returns_every_lamport_to_the_destination() {
    let run = Run::start(19_200, "close");
    let artifact = stories260k();
    let (file, model) = run.artifact("stories260K.curta", &artifact);
    let published = run.client_json(&["publish", &file]);
    assert_eq!(published["state"], "Open");

    let rpc = run.validator.rpc();
    let raw = raw_model(&run.validator, &model);
    let mut held = raw.lamports;
    for weight in &raw.weights {
        held += raw_account(&rpc, weight).unwrap().0;
    }
    assert_eq!(held, model_rent(&artifact));
    let destination = Keypair::new().pubkey();
    let closed = run.client_json(&[
        "close",
        &model.to_string(),
        "--destination",
        &destination.to_string(),
    ]);
    assert_eq!(rpc.get_balance(&destination).unwrap(), held, "{closed}");
    assert!(raw_account(&rpc, &model).is_none());
    for weight in &raw.weights {
        assert!(raw_account(&rpc, weight).is_none(), "{weight} closed");
    }
    // The payer paid the rent that went to the destination, and one fee per transaction.
    run.assert_spent(held);
}

/// `client verify-program` against the program the validator loaded from
/// target/deploy/curta_program.so: the deployed executable (read through the loader the
/// validator used) hashes, without trailing zeros, to the file's sha2 digest computed here; a
/// local binary with one byte changed is reported as different, with a non-zero exit.
#[test]
#[ignore = "needs solana-test-validator: scripts/test-validator"]
fn verify_program_compares_the_deployed_binary_with_the_local_build() {
    use sha2::Digest;
    let run = Run::start(19_500, "verify-program");
    let so = repo().join("target/deploy/curta_program.so");
    let elf = std::fs::read(&so).unwrap();
    let end = elf.iter().rposition(|&b| b != 0).unwrap() + 1;
    let expected = hex(&sha2::Sha256::digest(&elf[..end]));
    let id = run.validator.program_id.to_string();
    let so_arg = so.display().to_string();
    let report = run.client_json(&["verify-program", &id, "--so", &so_arg]);
    assert_eq!(report["matches"], true, "{report}");
    assert_eq!(report["deployed_hash"], expected);
    assert_eq!(report["local_hash"], expected);
    assert_eq!(report["deployed_len"], end);
    let (_, owner, _) = raw_account(&run.validator.rpc(), &run.validator.program_id).unwrap();
    let loader = if owner == curta_client::program::UPGRADEABLE_LOADER {
        "upgradeable loader"
    } else {
        assert_eq!(owner, curta_client::program::BPF_LOADER);
        "BPF loader v2"
    };
    assert_eq!(report["loader"], loader);

    let mut tampered = elf.clone();
    tampered[0x200] ^= 1;
    let other = run.dir.path().join("tampered.so");
    std::fs::write(&other, &tampered).unwrap();
    let args = run.args(&["verify-program", &id, "--so", &other.display().to_string()]);
    let (ok, out, err) = finish(spawn_client(&args), &args);
    assert!(!ok, "{out}");
    let report: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(report["matches"], false);
    assert_eq!(report["deployed_hash"], expected);
    assert!(
        err.contains(&format!(
            "program {id} is not the local build: deployed {expected}"
        )),
        "{err}"
    );
}

/// Issue 19's end to end: stories260K published and sealed on the validator, then run on chain
/// to 16 tokens (greedy, after "Once upon a time"): the tokens and the text read back from the
/// run account equal `client run` of the file, the run account is closed, and the payer spent
/// exactly the model's rent plus one fee per transaction (the run's rent came back).
#[test]
#[ignore = "needs solana-test-validator: scripts/test-validator"]
fn a_sealed_model_runs_on_chain_as_client_run_runs_the_file() {
    let run = Run::start(19_800, "run-on-chain");
    let artifact = stories260k();
    let (file, model) = run.artifact("stories260K.curta", &artifact);
    let report = run.client_json(&["publish", &file, "--seal"]);
    assert_eq!(report["state"], "Sealed");
    let held = assert_sealed_on_chain(&run.validator, &model, &artifact);
    let settings = [
        "--prompt",
        "Once upon a time",
        "--steps",
        "16",
        "--temperature",
        "0",
    ];
    let model_text = model.to_string();
    let mut on_chain_args = vec!["run", model_text.as_str(), "--on-chain"];
    on_chain_args.extend(settings);
    let on_chain = run.client_json(&on_chain_args);
    let mut file_args = vec!["run", file.as_str()];
    file_args.extend(settings);
    let offline = run.client_json(&file_args);
    assert_eq!(on_chain["tokens"], offline["tokens"], "{on_chain}");
    assert_eq!(on_chain["text"], offline["text"]);
    assert_eq!(on_chain["prompt_tokens"], offline["prompt_tokens"]);
    assert!(!offline["tokens"].as_array().unwrap().is_empty());
    let address = Pubkey::from_str(on_chain["run"].as_str().unwrap()).unwrap();
    assert!(
        raw_account(&run.validator.rpc(), &address).is_none(),
        "the run account is closed"
    );
    run.assert_spent(held);
}

/// Issue 27 on a real cluster: a sampled run of stories260K whose seed the chain draws (the
/// first step after the start slot reads the start slot's hash from SlotHashes), kept, then
/// `client run --from-run` recomputes it from its own fields (the drawn seed checked against
/// SlotHashes while the slot is still there) and `client close-run` returns its rent.
#[test]
#[ignore = "needs solana-test-validator: scripts/test-validator"]
fn a_drawn_seed_run_is_recomputed_from_its_account() {
    let run = Run::start(20_100, "drawn-seed");
    let artifact = stories260k();
    let (file, model) = run.artifact("stories260K.curta", &artifact);
    let report = run.client_json(&["publish", &file, "--seal"]);
    assert_eq!(report["state"], "Sealed");
    let model_text = model.to_string();
    let settings = [
        "--prompt-tokens",
        "1,306",
        "--steps",
        "12",
        "--temperature",
        "0.8",
        "--seed",
        "7",
    ];
    let mut args = vec!["run", model_text.as_str(), "--on-chain", "--keep"];
    args.extend(settings);
    let on_chain = run.client_json(&args);
    assert_eq!(on_chain["seed_source"], "drawn");
    assert_eq!(on_chain["runner_seed"].as_u64(), Some(7));
    assert_eq!(on_chain["seed_slot"], on_chain["start_slot"]);
    let seed = on_chain["seed"].as_u64().unwrap().to_string();
    // The same tokens as `client run` of the file with the drawn seed.
    let mut file_args = vec!["run", file.as_str()];
    file_args.extend(&settings[..6]);
    file_args.extend(["--seed", seed.as_str()]);
    let offline = run.client_json(&file_args);
    assert_eq!(on_chain["tokens"], offline["tokens"], "{on_chain}");
    let address = on_chain["run"].as_str().unwrap();
    let replay = run.client_json(&["run", "--from-run", address]);
    assert_eq!(replay["agrees"], true, "{replay}");
    assert_eq!(replay["seed_derivation_agrees"], true);
    assert_eq!(replay["slot_hash_agrees"], true);
    assert_eq!(replay["chain_tokens"], offline["tokens"]);
    let closed = run.client_json(&["close-run", address]);
    assert!(closed["returned"].as_u64().unwrap() > 0, "{closed}");
}

/// Issue 26 on a real cluster: a greedy run of the 16.5 MB stories15M shape, 8 tokens with the
/// client's steps in flight, while a stranger steps the same run with budgets of its own. Every
/// step the stranger landed counts as progress (the client's `steps_by_others`), the tokens
/// equal `client run` of the file, and the run is closed with its rent back.
#[test]
#[ignore = "needs solana-test-validator: scripts/test-validator"]
fn a_pipelined_run_stepped_by_a_stranger_equals_client_run() {
    let run = Run::start(20_400, "stranger-steps");
    let artifact = stories15m_shape();
    let (file, model) = run.artifact("stories15M-shape.curta", &artifact);
    let report = run.client_json(&["publish", &file, "--seal"]);
    assert_eq!(report["state"], "Sealed");
    let held = assert_sealed_on_chain(&run.validator, &model, &artifact);
    let weights = raw_model(&run.validator, &model).weights;
    let (stranger, _, _) = run.validator.funded_payer(run.dir.path(), 10);
    let address = curta_interface::run::run_address(
        &run.validator.program_id,
        &run.payer.pubkey(),
        &model,
        0,
    );

    let settings = ["--prompt-tokens", "1", "--steps", "8", "--temperature", "0"];
    let model_text = model.to_string();
    let mut args = vec!["run", model_text.as_str(), "--on-chain"];
    args.extend(settings);
    let args = run.args(&args);
    let child = spawn_client(&args);
    // The stranger: once the run account exists, a step every 50 ms with a budget of its own
    // (1 to 1,200,000 units), sent without preflight, until the client is done.
    let done = std::sync::atomic::AtomicBool::new(false);
    let (finished, sent) = std::thread::scope(|scope| {
        let stranger_steps = scope.spawn(|| {
            let rpc = run.validator.rpc();
            let mut sent = Vec::new();
            let mut ticket = 0u32;
            while !done.load(std::sync::atomic::Ordering::Relaxed) {
                std::thread::sleep(Duration::from_millis(50));
                if raw_account(&rpc, &address).is_none() {
                    continue;
                }
                ticket += 1;
                let budget = 1 + ticket.wrapping_mul(7_919_993) % 1_200_000;
                let step = curta_interface::instruction::step(
                    &run.validator.program_id,
                    &address,
                    &model,
                    &weights,
                    ticket,
                    budget,
                );
                let limit =
                    solana_compute_budget_interface::ComputeBudgetInstruction::set_compute_unit_limit(
                        1_400_000,
                    );
                let Ok(blockhash) = rpc.get_latest_blockhash() else {
                    continue;
                };
                let tx = Transaction::new_signed_with_payer(
                    &[limit, step],
                    Some(&stranger.pubkey()),
                    &[&stranger],
                    blockhash,
                );
                let config = solana_client::rpc_config::RpcSendTransactionConfig {
                    skip_preflight: true,
                    ..Default::default()
                };
                if let Ok(signature) = rpc.send_transaction_with_config(&tx, config) {
                    sent.push(signature);
                }
            }
            sent
        });
        let finished = finish(child, &args);
        done.store(true, std::sync::atomic::Ordering::Relaxed);
        (finished, stranger_steps.join().unwrap())
    });
    let (ok, out, err) = finished;
    assert!(ok, "client {args:?} failed: {err}");
    let on_chain: Value = serde_json::from_str(&out).unwrap();

    // The stranger's steps that executed successfully (the others landed after the run ended
    // or after it was closed, or were dropped).
    let rpc = run.validator.rpc();
    std::thread::sleep(Duration::from_secs(2));
    let mut landed = 0u64;
    for batch in sent.chunks(256) {
        let statuses = rpc.get_signature_statuses(batch).unwrap().value;
        landed += statuses
            .iter()
            .flatten()
            .filter(|s| s.err.is_none())
            .count() as u64;
    }
    assert!(
        landed > 0,
        "no step of the stranger landed ({} sent)",
        sent.len()
    );
    assert_eq!(
        on_chain["steps_by_others"].as_u64(),
        Some(landed),
        "{on_chain}"
    );

    let mut file_args = vec!["run", file.as_str()];
    file_args.extend(settings);
    let offline = run.client_json(&file_args);
    assert_eq!(on_chain["tokens"], offline["tokens"], "{on_chain}");
    assert_eq!(on_chain["text"], offline["text"]);
    assert_eq!(on_chain["closed"], true);
    assert!(
        raw_account(&rpc, &address).is_none(),
        "the run account is closed"
    );
    run.assert_spent(held);
    println!(
        "stories15M shape, 8 tokens: {} steps sent by the client, {landed} by the stranger, {} s",
        on_chain["steps_sent"], on_chain["seconds"]
    );
}
