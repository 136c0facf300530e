//! `client run` on trap models (issue 26): the file of a model the seal refuses (an
//! exponential table other than the spec's, a table block not at a multiple of 4) is refused
//! with the reader's message and no panic; a model the seal accepts (a token entry too long or
//! outside section zero, tables and scales at their extremes) runs to its end with the tokens
//! curta-core gives, and no panic; a model the seal refuses for a sorted id past its vocabulary
//! runs a prompt of ids and refuses a text prompt with the encoder's message.

use curta_core::infer::{decode, state_len, Model, Progress, Run, Settings};
use std::path::Path;
use std::process::{Command, Output};

#[path = "../../tests/support/traps.rs"]
mod traps;

fn stories260k() -> Vec<u8> {
    curta_core::convert::convert(
        curta_client::rehearse::STORIES260K,
        curta_client::rehearse::TOK512,
    )
    .unwrap()
}

fn run_file(dir: &Path, name: &str, bytes: &[u8]) -> Output {
    let path = dir.join(name);
    std::fs::write(&path, bytes).unwrap();
    Command::new(env!("CARGO_BIN_EXE_client"))
        .args(["run", path.to_str().unwrap()])
        .args([
            "--prompt-tokens",
            "1",
            "--steps",
            "24",
            "--temperature",
            "0",
        ])
        .args(["--output", "json"])
        .output()
        .unwrap()
}

/// `client run` of the file of `bytes` with the text prompt "Lily", 4 greedy steps.
fn run_text(dir: &Path, name: &str, bytes: &[u8]) -> Output {
    let path = dir.join(name);
    std::fs::write(&path, bytes).unwrap();
    Command::new(env!("CARGO_BIN_EXE_client"))
        .args([
            "run",
            path.to_str().unwrap(),
            "--prompt",
            "Lily",
            "--steps",
            "4",
        ])
        .args(["--temperature", "0", "--output", "json"])
        .output()
        .unwrap()
}

/// The greedy run from token 1 through curta-core: the tokens and the text.
fn core_run(bytes: &[u8]) -> (Vec<u32>, Vec<u8>) {
    let a = curta_core::decode(bytes).unwrap();
    let m = Model::from_artifact(&a).unwrap();
    let mut state = vec![0u8; state_len(&m.config())];
    let mut run = Run::start(&mut state, &m, &[1], 24, Settings::greedy()).unwrap();
    let (mut tokens, mut text) = (vec![], vec![]);
    loop {
        match run.advance(&m, u64::MAX).unwrap() {
            Progress::Token { pos, id } => {
                tokens.push(id);
                let piece = decode(a.metadata(), run.token(pos - 1), id).unwrap();
                text.extend_from_slice(piece.bytes());
            }
            Progress::Finished(_) => return (tokens, text),
            _ => {}
        }
    }
}

#[test]
fn a_model_the_seal_refuses_is_refused_by_client_run_without_a_panic() {
    let dir = tempfile::tempdir().unwrap();
    let artifact = stories260k();
    let cases = [
        (
            traps::exp_entry(&artifact, 0, 0),
            "exponential table entry 0 is 0, expected 1073741824",
        ),
        (
            traps::misaligned_sorted_ids(&artifact),
            "not a multiple of 4",
        ),
    ];
    for (i, (trap, message)) in cases.into_iter().enumerate() {
        let o = run_file(dir.path(), &format!("trap{i}.curta"), &trap);
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(!o.status.success());
        assert!(err.contains(message), "{err}");
        assert!(!err.contains("panicked"), "{err}");
        assert!(o.stdout.is_empty());
    }
}

#[test]
fn a_model_the_seal_accepts_runs_to_its_end_in_client_run() {
    let dir = tempfile::tempdir().unwrap();
    let artifact = stories260k();
    let (tokens, _) = core_run(&artifact);
    let id = *tokens.iter().skip(1).find(|&&t| t > 258).unwrap();
    for (i, trap) in [
        traps::token_too_long(&artifact, id),
        traps::token_outside(&artifact, id),
        traps::wild_tables(&artifact),
    ]
    .into_iter()
    .enumerate()
    {
        let o = run_file(dir.path(), &format!("runs{i}.curta"), &trap);
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(o.status.success(), "{err}");
        let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
        let (expected, text) = core_run(&trap);
        let got: Vec<u32> = v["tokens"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t.as_u64().unwrap() as u32)
            .collect();
        assert_eq!(got, expected);
        assert_eq!(v["text"].as_str().unwrap(), String::from_utf8_lossy(&text));
        if i < 2 {
            assert_eq!(expected, tokens, "the entry does not change the tokens");
        }
    }
}

/// A model the seal refuses for its tokenizer (a sorted id past the vocabulary): `client run`
/// reads it (the reader does not check sorted ids: a prompt of ids needs none), and refuses a
/// text prompt with the encoder's message, no panic.
#[test]
fn a_tokenizer_the_seal_refuses_fails_text_prompts_in_client_run() {
    let dir = tempfile::tempdir().unwrap();
    let trap = traps::sorted_id_past_vocab(&stories260k(), 256);
    assert!(run_file(dir.path(), "ids.curta", &trap).status.success());
    let o = run_text(dir.path(), "text.curta", &trap);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(!o.status.success());
    let message = "sorted token id 256 is 512, expected a token id below the vocabulary (512)";
    assert!(err.contains(message), "{err}");
    assert!(!err.contains("panicked"), "{err}");
}

/// A vocabulary without " " runs a text prompt: its space prefix is the byte token of " " (35).
#[test]
fn a_vocabulary_without_a_space_token_runs_text_prompts_in_client_run() {
    let dir = tempfile::tempdir().unwrap();
    let spaceless = traps::no_space_token(&stories260k());
    let o = run_text(dir.path(), "spaceless.curta", &spaceless);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let prompt: Vec<u64> = v["prompt_tokens"]
        .as_array()
        .expect("prompt_tokens")
        .iter()
        .map(|t| t.as_u64().unwrap())
        .collect();
    assert_eq!(prompt[..2], [1, 35]);
}
