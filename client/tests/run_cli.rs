//! `client run` and `client perplexity` as a user runs them: the JSON documents' keys and
//! values against curta-core driven directly, the streamed text, and every refused input
//! with its message and no output.

use curta_core::infer::{encode, state_len, Model, Progress, Run, Settings};
use std::path::PathBuf;
use std::process::{Command, Output};

fn model(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../models")
        .join(name)
}

/// stories260K converted into a temporary directory (kept alive with the path).
fn artifact() -> (tempfile::TempDir, PathBuf, Vec<u8>) {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("stories260K.curta");
    curta_core::convert::convert_file(&model("stories260K.bin"), &model("tok512.bin"), &out)
        .unwrap();
    let bytes = std::fs::read(&out).unwrap();
    (dir, out, bytes)
}

fn client(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_client"))
        .args(args)
        .output()
        .unwrap()
}

fn json(o: &Output) -> serde_json::Value {
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    serde_json::from_slice(&o.stdout).unwrap()
}

fn keys(v: &serde_json::Value) -> Vec<String> {
    let mut k: Vec<String> = v.as_object().unwrap().keys().cloned().collect();
    k.sort();
    k
}

fn ids(v: &serde_json::Value) -> Vec<u32> {
    v.as_array()
        .unwrap()
        .iter()
        .map(|t| t.as_u64().unwrap() as u32)
        .collect()
}

/// Generation driven through curta-core directly.
fn core_generate(bytes: &[u8], prompt: &[u32], steps: u32, settings: Settings) -> Vec<u32> {
    let a = curta_core::decode(bytes).unwrap();
    let m = Model::from_artifact(&a).unwrap();
    let mut state = vec![0u8; state_len(&m.config())];
    let mut run = Run::start(&mut state, &m, prompt, steps, settings).unwrap();
    let mut out = Vec::new();
    loop {
        match run.advance(&m, u64::MAX).unwrap() {
            Progress::Token { id, .. } => out.push(id),
            Progress::Finished(_) => return out,
            _ => {}
        }
    }
}

#[test]
fn run_prints_the_documented_json_and_streams_the_same_text() {
    let (_dir, path, bytes) = artifact();
    let p = path.to_str().unwrap();
    let o = client(&[
        "run",
        p,
        "--prompt-tokens",
        "1,300,67",
        "--steps",
        "20",
        "--temperature",
        "0",
        "--output",
        "json",
    ]);
    let v = json(&o);
    assert_eq!(
        keys(&v),
        [
            "prompt_tokens",
            "seed",
            "text",
            "tokens",
            "tokens_per_second",
            "weights_hash"
        ]
    );
    assert_eq!(ids(&v["prompt_tokens"]), [1, 300, 67]);
    let expected = core_generate(&bytes, &[1, 300, 67], 20, Settings::greedy());
    assert_eq!(ids(&v["tokens"]), expected);
    let hash = curta_core::weights_hash(curta_core::decode(&bytes).unwrap().sections());
    let hex: String = hash.iter().map(|b| format!("{b:02x}")).collect();
    assert_eq!(v["weights_hash"], hex.as_str());
    assert!(v["tokens_per_second"].as_f64().unwrap() > 0.0);

    // Text mode streams the same pieces, then a newline; the report goes to stderr.
    let o = client(&[
        "run",
        p,
        "--prompt-tokens",
        "1,300,67",
        "--steps",
        "20",
        "--temperature",
        "0",
    ]);
    assert!(o.status.success());
    let text = String::from_utf8(o.stdout).unwrap();
    assert_eq!(text, format!("{}\n", v["text"].as_str().unwrap()));
    let report = String::from_utf8(o.stderr).unwrap();
    assert!(report.contains("tokens/s"), "{report}");
    assert!(report.contains(&hex), "{report}");

    // Any thread count gives the same tokens; 0 is refused.
    for threads in ["1", "3"] {
        let o = client(&[
            "run",
            p,
            "--prompt-tokens",
            "1,300,67",
            "--steps",
            "20",
            "--temperature",
            "0",
            "--threads",
            threads,
            "--output",
            "json",
        ]);
        assert!(o.status.success(), "--threads {threads}");
        let v = json(&o);
        assert_eq!(ids(&v["tokens"]), expected, "--threads {threads}");
    }
    let o = client(&["run", p, "--threads", "0"]);
    assert!(!o.status.success());
    assert!(String::from_utf8_lossy(&o.stderr).contains("--threads 0"));
}

#[test]
fn a_text_prompt_is_tokenized_and_a_seed_repeats_its_tokens() {
    let (_dir, path, bytes) = artifact();
    let p = path.to_str().unwrap();
    let args = [
        "run",
        p,
        "--prompt",
        "e4 e5 Nf3",
        "--steps",
        "16",
        "--temperature",
        "0.8",
        "--top-p",
        "0.9",
        "--seed",
        "7",
        "--output",
        "json",
    ];
    let (a, b) = (json(&client(&args)), json(&client(&args)));
    let a_art = curta_core::decode(&bytes).unwrap();
    let mut prompt = vec![0u32; 11];
    let n = encode(a_art.metadata(), b"e4 e5 Nf3", &mut prompt).unwrap();
    assert_eq!(ids(&a["prompt_tokens"]), prompt[..n]);
    assert_eq!(a["tokens"], b["tokens"]);
    assert_eq!(a["seed"], 7);
    let settings = Settings {
        temperature: 52_429,
        top_p: 58_982,
        seed: 7,
    };
    assert_eq!(
        ids(&a["tokens"]),
        core_generate(&bytes, &prompt[..n], 16, settings)
    );
}

#[test]
fn perplexity_prints_one_argmax_and_nll_per_predicted_position() {
    let (_dir, path, bytes) = artifact();
    let p = path.to_str().unwrap();
    let tokens = [1u32, 300, 67, 91, 400, 12, 5, 77];
    let list: Vec<String> = tokens.iter().map(u32::to_string).collect();
    let v = json(&client(&[
        "perplexity",
        p,
        "--tokens",
        &list.join(","),
        "--output",
        "json",
    ]));
    assert_eq!(
        keys(&v),
        ["argmax", "mean_nll", "nll", "perplexity", "tokens"]
    );
    assert_eq!(v["tokens"], 8);
    let nll: Vec<f64> = v["nll"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| x.as_f64().unwrap())
        .collect();
    assert_eq!(nll.len(), 7);
    assert!(nll.iter().all(|&x| x > 0.0));
    let mean = nll.iter().sum::<f64>() / 7.0;
    assert!((v["mean_nll"].as_f64().unwrap() - mean).abs() < 1e-12);
    assert!((v["perplexity"].as_f64().unwrap() - mean.exp()).abs() < 1e-9);
    // The argmax at position i is greedy generation's next token after tokens[..=i].
    let argmax = ids(&v["argmax"]);
    for i in [0usize, 3, 6] {
        let next = core_generate(&bytes, &tokens[..=i], 1, Settings::greedy());
        assert_eq!(argmax[i], next[0], "position {i}");
    }
}

#[test]
fn bad_input_is_refused_with_the_value_before_any_work() {
    let (dir, path, _) = artifact();
    let p = path.to_str().unwrap();
    let long: Vec<String> = std::iter::repeat_n("5".to_string(), 513).collect();
    let long = long.join(",");
    let garbage = dir.path().join("garbage.curta");
    std::fs::write(&garbage, vec![7u8; 5000]).unwrap();
    let g = garbage.to_str().unwrap();
    let cases: Vec<(Vec<&str>, &str)> = vec![
        (vec!["run", p, "--prompt-tokens", &long], "the prompt is 513 tokens, longer than the model's context of 512"),
        (vec!["run", p, "--prompt-tokens", "1,2,3", "--steps", "511"], "511 steps after a prompt of 3 tokens run past the model's context of 512 (at most 510 steps)"),
        (vec!["run", p, "--prompt-tokens", "1,512"], "token 1 of the input is 512, but the vocabulary has 512 tokens (0 to 511)"),
        (vec!["run", p, "--prompt-tokens", "1,x"], "--prompt-tokens: 'x' is not a token id"),
        (vec!["run", p, "--temperature", "17"], "--temperature 17 is out of range: 0 (greedy) to 16"),
        (vec!["run", p, "--temperature=-1"], "--temperature '-1' is not a decimal number"),
        (vec!["run", p, "--temperature", "0.5x"], "--temperature '0.5x' is not a decimal number"),
        (vec!["run", p, "--top-p", "0"], "--top-p 0 is out of range: above 0"),
        (vec!["run", p, "--top-p", "1.5"], "--top-p 1.5 is out of range: above 0"),
        (vec!["run", p, "--seed", "0"], "--seed 0 cannot sample"),
        (vec!["run", p, "--steps", "0"], "steps must be at least 1"),
        (vec!["run", g], "not a CURTAW01 artifact"),
        (vec!["run", "no-such-file.curta"], "'no-such-file.curta' is neither an artifact file nor a base-58 model address"),
        (vec!["perplexity", p, "--tokens", "1"], "teacher forcing needs at least 2 tokens, got 1"),
    ];
    for (args, message) in cases {
        let o = client(&args);
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(!o.status.success(), "{args:?} succeeded");
        assert!(err.contains(message), "{args:?}: {err}");
        assert!(
            o.stdout.is_empty(),
            "{args:?} printed {:?}",
            String::from_utf8_lossy(&o.stdout)
        );
    }
}

/// `rehearse-run` publishes, seals and runs the model on chain in the bank: the JSON has the
/// off-chain run's keys and values (the same tokens and text as `run` of the file sampled with
/// the seed the chain drew from `--seed`, or with `--seed` itself under `--chosen-seed`) and
/// the on-chain figures; text mode streams the same text. `run --on-chain`
/// refuses a file, and `--keep` without `--on-chain`, before any work.
#[test]
fn rehearse_run_equals_run_and_reports_the_chain_figures() {
    let (_dir, path, _) = artifact();
    let p = path.to_str().unwrap();
    let args = [
        "--prompt",
        "Once upon a time",
        "--steps",
        "6",
        "--temperature",
        "0.8",
        "--seed",
        "5",
        "--output",
        "json",
    ];
    let keypair = _dir.path().join("id.json");
    let secret: Vec<u8> = solana_keypair_bytes();
    std::fs::write(&keypair, serde_json::to_string(&secret).unwrap()).unwrap();
    let k = keypair.to_str().unwrap();
    let on = json(&client(
        &[&["rehearse-run", p, "--keypair", k][..], &args[..]].concat(),
    ));
    // The seed in force was drawn on chain from runner seed 5 and the start slot's hash.
    assert_eq!(on["seed_source"], "drawn");
    assert_eq!(on["runner_seed"].as_u64(), Some(5));
    assert_eq!(on["seed_slot"], on["start_slot"]);
    let drawn = on["seed"].as_u64().unwrap().to_string();
    assert_ne!(drawn, "5");
    let mut off_args = args.to_vec();
    off_args[7] = &drawn;
    let off = json(&client(&[&["run", p][..], &off_args[..]].concat()));
    for key in ["prompt_tokens", "tokens", "text", "weights_hash", "seed"] {
        assert_eq!(on[key], off[key], "{key}");
    }
    // With --chosen-seed the seed in force is 5 itself: `run --seed 5`'s tokens.
    let chosen = json(&client(
        &[
            &["rehearse-run", p, "--keypair", k, "--chosen-seed"][..],
            &args[..],
        ]
        .concat(),
    ));
    let off5 = json(&client(&[&["run", p][..], &args[..]].concat()));
    assert_eq!(chosen["seed_source"], "chosen");
    for key in ["prompt_tokens", "tokens", "text", "weights_hash", "seed"] {
        assert_eq!(chosen[key], off5[key], "{key}");
    }
    let steps = on["steps"].as_u64().unwrap();
    assert_eq!(on["transactions"].as_u64().unwrap(), steps + 2);
    assert_eq!(on["steps_sent"].as_u64(), Some(steps));
    assert_eq!(on["steps_landed"].as_u64(), Some(steps));
    assert_eq!(on["steps_after_end"].as_u64(), Some(0));
    assert_eq!(on["lamports_spent"].as_u64(), on["fees"].as_u64());
    assert_eq!(on["closed"], true);
    assert_eq!(on["rehearsal"]["state"], "Sealed");
    // The bank accepts version 1 transactions: publish, seal, start, steps and close went
    // in v1 (`auto`), and the run equals the file's.
    assert_eq!(on["tx_version"], "v1");
    assert_eq!(on["rehearsal"]["tx_version"], "v1");
    for key in [
        "balance_after",
        "balance_before",
        "account_limit",
        "close_units",
        "end",
        "failed_transactions",
        "fees",
        "model",
        "nonce",
        "rent",
        "rent_held",
        "resumed_from",
        "run",
        "seconds",
        "start_units",
        "step_unit_limit",
        "tokens_per_second",
        "window",
    ] {
        assert!(on.get(key).is_some(), "{key} in {on}");
    }

    let text_args: Vec<&str> = args[..8].to_vec();
    let o = client(
        &[
            &["rehearse-run", p, "--keypair", k, "--chosen-seed"][..],
            &text_args[..],
        ]
        .concat(),
    );
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let text = String::from_utf8(o.stdout).unwrap();
    assert_eq!(text, format!("{}\n", off5["text"].as_str().unwrap()));
    let report = String::from_utf8(o.stderr).unwrap();
    assert!(report.contains("on chain in"), "{report}");

    let o = client(&["run", p, "--on-chain", "--prompt", "x"]);
    assert!(!o.status.success());
    assert!(
        String::from_utf8_lossy(&o.stderr)
            .contains("--on-chain runs a sealed model: give its address"),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let o = client(&["run", p, "--keep"]);
    assert!(!o.status.success());
    assert!(o.stdout.is_empty());
}

/// A fixed ed25519 keypair's 64 bytes (secret then public), as a Solana keypair file holds.
fn solana_keypair_bytes() -> Vec<u8> {
    let keypair = solana_keypair::Keypair::new_from_array([7; 32]);
    keypair.to_bytes().to_vec()
}
