//! A few runs of the `client` binary: bad keypair files and bad artifacts fail with a clear
//! message before anything is sent; `demo --output json` prints the report's keys.

use std::process::Command;

#[path = "../../tests/support/expected.rs"]
mod expected;

fn client(args: &[&str]) -> (bool, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_client"))
        .args(args)
        .env("RUST_LOG", "error")
        .output()
        .unwrap();
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into(),
        String::from_utf8_lossy(&out.stderr).into(),
    )
}

fn artifact_file(dir: &tempfile::TempDir) -> String {
    let artifact = curta_core::convert::convert(
        curta_client::rehearse::STORIES260K,
        curta_client::rehearse::TOK512,
    )
    .unwrap();
    let path = dir.path().join("stories260K.curta");
    std::fs::write(&path, artifact).unwrap();
    path.display().to_string()
}

#[test]
fn bad_keypair_files_are_named() {
    let dir = tempfile::tempdir().unwrap();
    let artifact = artifact_file(&dir);
    // Port 9 (discard) on localhost: nothing may be sent; the keypair is read first.
    let url = "http://127.0.0.1:9";
    let missing = dir.path().join("missing.json").display().to_string();
    let (ok, _, err) = client(&["publish", &artifact, "--keypair", &missing, "--url", url]);
    assert!(!ok);
    assert!(
        err.contains(&format!("keypair file {missing}")) && err.contains("No such file"),
        "{err}"
    );

    let malformed = dir.path().join("malformed.json");
    std::fs::write(&malformed, "not a keypair").unwrap();
    let malformed = malformed.display().to_string();
    let (ok, _, err) = client(&["publish", &artifact, "-k", &malformed, "-u", url]);
    assert!(!ok);
    assert!(
        err.contains(&format!("keypair file {malformed}: not a Solana keypair")),
        "{err}"
    );

    let short = dir.path().join("short.json");
    std::fs::write(&short, "[1,2,3]").unwrap();
    let (ok, _, err) = client(&[
        "publish",
        &artifact,
        "-k",
        &short.display().to_string(),
        "-u",
        url,
    ]);
    assert!(!ok);
    assert!(err.contains("expected 64 bytes, found 3"), "{err}");
}

#[test]
fn bad_artifacts_and_urls_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let junk = dir.path().join("junk.bin");
    std::fs::write(&junk, b"hello, not an artifact").unwrap();
    let junk = junk.display().to_string();
    let (ok, _, err) = client(&["rehearse", &junk]);
    assert!(!ok);
    assert!(
        err.contains(&format!("artifact {junk}: not a CURTAW01 artifact")),
        "{err}"
    );

    let artifact = artifact_file(&dir);
    let (ok, _, err) = client(&[
        "status",
        "11111111111111111111111111111111",
        "--url",
        "mainnet",
    ]);
    assert!(!ok);
    assert!(err.contains("--url mainnet: expected an http(s) URL or one of localhost, devnet, testnet, mainnet-beta"), "{err}");
    let (ok, _, err) = client(&["verify", "not-an-address", &artifact]);
    assert!(!ok);
    assert!(
        err.contains("model 'not-an-address' is not a base-58 account address"),
        "{err}"
    );
}

#[test]
fn demo_prints_the_json_report() {
    let (ok, out, err) = client(&["demo", "--output", "json"]);
    assert!(ok, "{err}");
    // The program's own msg! lines (printed by the native bank) may precede the JSON.
    let json: serde_json::Value = serde_json::from_str(&out[out.find("{\n").unwrap()..]).unwrap();
    assert_eq!(json["state"], "Sealed");
    assert_eq!(json["verified"], true);
    assert_eq!(json["weights_hash"].as_str().unwrap().len(), 64);
    assert!(json["model"].as_str().unwrap().len() >= 32);
    for key in ["create", "write", "seal"] {
        assert!(json["transactions"][key].as_u64().unwrap() > 0, "{key}");
    }
    // The bank accepts version 1 transactions (program-test activates enable_tx_v1): auto
    // sends v1, each Write carrying a 4,096-byte packet's worth.
    assert_eq!(json["tx_version"], "v1");
    assert_eq!(json["tx_version_note"], serde_json::Value::Null);
    let capacity =
        curta_client::model::items::write_capacity_in(curta_client::Format::V1, false) as u64;
    assert_eq!(capacity, 3_871);
    assert_eq!(json["write_bytes_per_tx"]["capacity"], capacity);
    assert!(json["write_bytes_per_tx"]["max"].as_u64().unwrap() <= capacity);
    assert!(json["write_bytes_per_tx"]["max"].as_u64().unwrap() > 1019);
    assert!(json["write_bytes_per_tx"]["min"].as_u64().unwrap() >= 1);
    // Rent from the spec's numbers: (128 + len) x 6,960 for the model and both weight accounts.
    let artifact =
        curta_core::convert::convert(curta_client::rehearse::KJV, curta_client::rehearse::TOK1024)
            .unwrap();
    let lengths: Vec<u64> = curta_core::decode(&artifact)
        .unwrap()
        .sections()
        .map(|s| s.len() as u64)
        .collect();
    let rent = (128 + 808) * 6960 + lengths.iter().map(|l| (128 + 2048 + l) * 6960).sum::<u64>();
    assert_eq!(json["lamports"]["rent"], rent);
    assert_eq!(
        json["lamports"]["fees"],
        5000 * json["transactions"]["total"].as_u64().unwrap()
    );
    assert!(json["seconds"].as_f64().unwrap() > 0.0);
    // The demo ends by running the sealed model: its tokens are curta-core's greedy tokens
    // after the demo's prompt, run here on the converted file.
    let a = curta_core::decode(&artifact).unwrap();
    let demo_prompt = curta_client::rehearse::DEMO_PROMPT.as_bytes();
    let mut prompt = vec![0u32; demo_prompt.len() + 2];
    let n = curta_core::infer::encode(a.metadata(), demo_prompt, &mut prompt).unwrap();
    let model = curta_core::infer::Model::from_artifact(&a).unwrap();
    let mut state = vec![0u8; curta_core::infer::state_len(&model.config())];
    let greedy = curta_core::infer::Settings::greedy();
    let mut run = curta_core::infer::Run::start(
        &mut state,
        &model,
        &prompt[..n],
        curta_client::rehearse::DEMO_STEPS,
        greedy,
    )
    .unwrap();
    let mut tokens = Vec::new();
    loop {
        match run.advance(&model, u64::MAX).unwrap() {
            curta_core::infer::Progress::Token { id, .. } => tokens.push(serde_json::json!(id)),
            curta_core::infer::Progress::Finished(_) => break,
            _ => {}
        }
    }
    let prompt: Vec<serde_json::Value> =
        prompt[..n].iter().map(|&t| serde_json::json!(t)).collect();
    assert_eq!(
        json["run"]["prompt_tokens"],
        serde_json::Value::Array(prompt)
    );
    assert_eq!(json["run"]["tokens"], serde_json::Value::Array(tokens));
    assert_eq!(json["run"]["weights_hash"], json["weights_hash"]);
    // And again inside the program: the same tokens and text, the run closed, the runner
    // out of pocket by exactly the fees (5,000 lamports a transaction: start, steps, close).
    let on = &json["run_on_chain"];
    assert_eq!(on["tokens"], json["run"]["tokens"]);
    assert_eq!(on["text"], json["run"]["text"]);
    assert_eq!(on["closed"], true);
    assert_eq!(on["tx_version"], "v1");
    let transactions = on["transactions"].as_u64().unwrap();
    assert_eq!(transactions, on["steps_sent"].as_u64().unwrap() + 2);
    assert_eq!(on["fees"].as_u64(), Some(5_000 * transactions));
    assert_eq!(on["lamports_spent"], on["fees"]);
}

/// Every key the issue asks of `--output json`, with numbers where numbers belong.
fn assert_report_keys(json: &serde_json::Value) {
    assert_eq!(json["weights_hash"].as_str().unwrap().len(), 64, "{json}");
    assert!(json["model"].as_str().unwrap().len() >= 32, "{json}");
    assert!(json["state"].is_string(), "{json}");
    for key in ["create", "write", "seal"] {
        assert!(
            json["transactions"][key].is_u64(),
            "transactions.{key}: {json}"
        );
    }
    for key in ["rent", "fees"] {
        assert!(json["lamports"][key].is_u64(), "lamports.{key}: {json}");
    }
    assert!(json["seconds"].is_f64(), "{json}");
}

#[test]
fn rehearse_with_a_price_prints_every_json_key() {
    let dir = tempfile::tempdir().unwrap();
    let artifact = artifact_file(&dir);
    let (ok, out, err) = client(&[
        "rehearse",
        &artifact,
        "--with-compute-unit-price",
        "12345",
        "--tx-version",
        "legacy",
        "--output",
        "json",
    ]);
    assert!(ok, "{err}");
    assert!(!err.contains("Note:"), "{err}");
    let json: serde_json::Value = serde_json::from_str(&out[out.find("{\n").unwrap()..]).unwrap();
    assert_report_keys(&json);
    assert_eq!(json["state"], "Sealed");
    // 1,019 bytes less the compute-budget program key (32) and its two instructions (8 + 12).
    assert_eq!(json["write_bytes_per_tx"]["max"], 967);
    assert_eq!(json["write_bytes_per_tx"]["capacity"], 1019);
    assert_eq!(
        json["write_bytes_per_tx"]["capacity_with_compute_budget"],
        967
    );
    assert!(json["write_bytes_per_tx"]["min"].as_u64().unwrap() >= 1);
    // Each transaction pays 5,000 + a priority fee of 12,345 x its limit / 10^6 > 0.
    let total = json["transactions"]["total"].as_u64().unwrap();
    assert!(json["lamports"]["fees"].as_u64().unwrap() > 5000 * total);
}

#[test]
fn rehearse_in_v1_with_a_price_pays_the_priority_fee_in_lamports() {
    let dir = tempfile::tempdir().unwrap();
    let artifact = artifact_file(&dir);
    let (ok, out, err) = client(&[
        "rehearse",
        &artifact,
        "--with-compute-unit-price",
        "12345",
        "--tx-version",
        "v1",
        "--output",
        "json",
    ]);
    assert!(ok, "{err}");
    let json: serde_json::Value = serde_json::from_str(&out[out.find("{\n").unwrap()..]).unwrap();
    assert_report_keys(&json);
    assert_eq!(json["state"], "Sealed");
    assert_eq!(json["tx_version"], "v1");
    // v1 carries the priority fee as a u64 in the message: 8 bytes instead of the legacy
    // compute-budget program key and two instructions.
    let capacity = curta_client::model::items::write_capacity_in(curta_client::Format::V1, false);
    let priced = curta_client::model::items::write_capacity_in(curta_client::Format::V1, true);
    assert_eq!(priced, capacity - 8);
    assert_eq!(json["write_bytes_per_tx"]["capacity"], capacity);
    assert_eq!(
        json["write_bytes_per_tx"]["capacity_with_compute_budget"],
        priced
    );
    assert!(json["write_bytes_per_tx"]["max"].as_u64().unwrap() <= priced as u64);
    // Each transaction pays 5,000 + its priority fee, 12,345 x its limit / 10^6 rounded up.
    let total = json["transactions"]["total"].as_u64().unwrap();
    assert!(json["lamports"]["fees"].as_u64().unwrap() > 5000 * total);
}

#[test]
fn tx_version_is_checked_by_the_parser() {
    let (ok, _, err) = client(&["rehearse", "x", "--tx-version", "v0"]);
    assert!(!ok);
    assert!(
        err.contains("invalid value 'v0' for '--tx-version <VERSION>'"),
        "{err}"
    );
    assert!(err.contains("[possible values: legacy, v1, auto]"), "{err}");
}

#[test]
fn rehearse_with_a_keypair_reports_the_model_address_publish_will_use() {
    use solana_signer::Signer;
    let dir = tempfile::tempdir().unwrap();
    let artifact = artifact_file(&dir);
    let keypair = solana_keypair::Keypair::new();
    let path = dir.path().join("id.json");
    std::fs::write(&path, format!("{:?}", keypair.to_bytes().to_vec())).unwrap();
    let (ok, out, err) = client(&[
        "rehearse",
        &artifact,
        "--keypair",
        &path.display().to_string(),
        "--output",
        "json",
    ]);
    assert!(ok, "{err}");
    let json: serde_json::Value = serde_json::from_str(&out).unwrap();
    let bytes = std::fs::read(&artifact).unwrap();
    let decoded = curta_core::decode(&bytes).unwrap();
    let hash = curta_core::weights_hash(decoded.sections());
    let (model, _) =
        curta_interface::state::model_address(&curta_interface::id(), &keypair.pubkey(), &hash);
    assert_eq!(json["model"], model.to_string());
    assert_eq!(json["state"], "Sealed");
}

/// `--program-id` beats `CURTA_PROGRAM_ID`, which beats the crate's id: rehearse (which loads
/// the program at that id) reports the model address derived from the id in force. A
/// malformed id is refused with its source named.
#[test]
fn program_id_from_the_flag_then_the_environment() {
    use solana_signer::Signer;
    let dir = tempfile::tempdir().unwrap();
    let artifact = artifact_file(&dir);
    let keypair = solana_keypair::Keypair::new();
    let path = dir.path().join("id.json");
    std::fs::write(&path, format!("{:?}", keypair.to_bytes().to_vec())).unwrap();
    let bytes = std::fs::read(&artifact).unwrap();
    let decoded = curta_core::decode(&bytes).unwrap();
    let hash = curta_core::weights_hash(decoded.sections());
    let model = |program: &solana_pubkey::Pubkey| {
        curta_interface::state::model_address(program, &keypair.pubkey(), &hash)
            .0
            .to_string()
    };
    let flag = solana_pubkey::Pubkey::new_unique();
    let env = solana_pubkey::Pubkey::new_unique();
    let run = |extra: &[&str], env_id: Option<&str>| {
        let mut command = Command::new(env!("CARGO_BIN_EXE_client"));
        command
            .args([
                "rehearse",
                &artifact,
                "--keypair",
                &path.display().to_string(),
            ])
            .args(["--output", "json"])
            .args(extra)
            .env("RUST_LOG", "error")
            .env_remove("CURTA_PROGRAM_ID");
        if let Some(id) = env_id {
            command.env("CURTA_PROGRAM_ID", id);
        }
        let out = command.output().unwrap();
        (
            out.status.success(),
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };
    let json = |out: &str| serde_json::from_str::<serde_json::Value>(out).unwrap();
    let flag_s = flag.to_string();
    let env_s = env.to_string();

    let (ok, out, err) = run(&["--program-id", &flag_s], Some(&env_s));
    assert!(ok, "{err}");
    assert_eq!(json(&out)["model"], model(&flag), "the flag wins");
    let (ok, out, err) = run(&[], Some(&env_s));
    assert!(ok, "{err}");
    assert_eq!(json(&out)["model"], model(&env), "then the environment");
    let (ok, out, err) = run(&[], None);
    assert!(ok, "{err}");
    assert_eq!(
        json(&out)["model"],
        model(&curta_interface::id()),
        "then the crate's id"
    );
    let (ok, _, err) = run(&["--program-id", "not-base58!"], None);
    assert!(!ok);
    assert!(
        err.contains("--program-id 'not-base58!' (or CURTA_PROGRAM_ID) is not a base-58 address"),
        "{err}"
    );
}

/// `--output json` is honoured by the artifact commands too: convert and hash print the
/// weights hash computed independently (sha2 over the 65,536-byte chunks), and inspect's
/// `--json` is the same document as `--output json`.
#[test]
fn artifact_commands_honour_output_json() {
    let dir = tempfile::tempdir().unwrap();
    let models = concat!(env!("CARGO_MANIFEST_DIR"), "/../models");
    let out = dir.path().join("s.curta").display().to_string();
    let (ok, stdout, err) = client(&[
        "convert",
        &format!("{models}/stories260K.bin"),
        &format!("{models}/tok512.bin"),
        "-o",
        &out,
        "--output",
        "json",
    ]);
    assert!(ok, "{err}");
    let converted: serde_json::Value = serde_json::from_str(&stdout).unwrap();
    let bytes = std::fs::read(&out).unwrap();
    let decoded = curta_core::decode(&bytes).unwrap();
    let hash = expected::sha256_chain_hex(decoded.sections());
    assert_eq!(converted["weights_hash"], hash.as_str());
    assert_eq!(converted["bytes"], bytes.len() as u64);
    assert_eq!(converted["out"], out.as_str());
    let lengths: Vec<u64> = decoded.sections().map(|s| s.len() as u64).collect();
    assert_eq!(converted["section_lengths"], serde_json::json!(lengths));

    let (ok, stdout, err) = client(&["hash", &out, "--output", "json"]);
    assert!(ok, "{err}");
    assert_eq!(
        serde_json::from_str::<serde_json::Value>(&stdout).unwrap(),
        serde_json::json!({ "weights_hash": hash })
    );
    let (ok, plain, _) = client(&["hash", &out]);
    assert!(ok);
    assert_eq!(plain, format!("{hash}\n"));

    let (ok, a, _) = client(&["inspect", &out, "--json"]);
    assert!(ok);
    let (ok, b, _) = client(&["inspect", &out, "--output", "json"]);
    assert!(ok);
    assert_eq!(a, b);
    assert_eq!(
        serde_json::from_str::<serde_json::Value>(&a).unwrap()["weights_hash"],
        hash.as_str()
    );
}

/// `client claim` refuses input OpenClaim would refuse before it reads the cluster (port 9:
/// nothing may be sent): the option named, "(nothing was sent)", exit status 1.
#[test]
fn claim_input_is_refused_before_anything_is_sent() {
    let dir = tempfile::tempdir().unwrap();
    let keypair = dir.path().join("claimer.json");
    let bytes = solana_keypair::Keypair::new().to_bytes().to_vec();
    std::fs::write(&keypair, serde_json::to_string(&bytes).unwrap()).unwrap();
    let keypair = keypair.display().to_string();
    let model = "11111111111111111111111111111111";
    for (args, message) in [
        (
            vec!["--window", "149"],
            "--window: 149 slots is out of range: a challenge window is 150 to 432000 slots",
        ),
        (
            vec!["--temperature", "0", "--seed-source", "chosen"],
            "--seed-source: chosen is for sampled claims",
        ),
        (
            vec!["--temperature", "0.5", "--seed-source", "none"],
            "--seed-source: none is for greedy claims",
        ),
    ] {
        let mut all = vec!["claim", model, "-k", &keypair, "-u", "http://127.0.0.1:9"];
        all.extend(args);
        let (ok, _, err) = client(&all);
        assert!(!ok, "{all:?}");
        assert!(
            err.contains(message) && err.contains("(nothing was sent)"),
            "{err}"
        );
    }
}
