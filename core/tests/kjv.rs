//! The bundled English model, models/kjv.bin with models/tok1024.bin (trained by
//! scripts/train-model on the King James Bible, models/README.md), measured as
//! `quality.rs` measures stories260K but on held-out text: chapters the model never saw.
//!
//! The expectations come from outside the engine: models/kjv-heldout.json holds the first
//! tokens of six held-out chapters as the training script's own encoder (run.c's rules, in
//! Python) tokenized them, and PyTorch's float32 perplexity over them; `reference/mod.rs`
//! (run.c's forward pass in f64) gives the float and weights-only figures; models/kjv-words.txt
//! is the English word list (wamerican's words that occur in the corpus).
//!
//! `cargo test -p curta-core --test kjv -- --nocapture` prints every figure.

mod reference;

use curta_core::infer::{self, Model, Piece, Progress, Run, Settings};
use reference::{log_softmax_at, perplexity, Scored};
use std::collections::HashSet;
use std::path::PathBuf;
use std::sync::OnceLock;

fn model_file(name: &str) -> Vec<u8> {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../models")
        .join(name);
    std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The demo's prompt and length in tokens (client/src/rehearse.rs `DEMO_PROMPT`, `DEMO_STEPS`).
const DEMO_PROMPT: &str = "In the beginning God";
const DEMO_STEPS: u32 = 64;

/// models/kjv-heldout.json, written by scripts/train/train.py.
struct HeldOut {
    chapters: Vec<String>,
    texts: Vec<String>,
    /// BOS and the first tokens of each text, by the training script's encoder.
    ids: Vec<Vec<u32>>,
    /// PyTorch's float32 perplexity over `ids` (each sequence from its BOS).
    float32_perplexity: f64,
}

fn held_out() -> HeldOut {
    let json: serde_json::Value =
        serde_json::from_slice(&model_file("kjv-heldout.json")).expect("kjv-heldout.json");
    let strings = |key: &str| -> Vec<String> {
        json[key]
            .as_array()
            .unwrap_or_else(|| panic!("kjv-heldout.json: no {key}"))
            .iter()
            .map(|s| s.as_str().expect("a string").to_owned())
            .collect()
    };
    let ids = json["ids"]
        .as_array()
        .expect("kjv-heldout.json: no ids")
        .iter()
        .map(|seq| {
            seq.as_array()
                .expect("a list of ids")
                .iter()
                .map(|id| id.as_u64().expect("an id") as u32)
                .collect()
        })
        .collect();
    HeldOut {
        chapters: strings("chapters"),
        texts: strings("texts"),
        ids,
        float32_perplexity: json["float32_perplexity"].as_f64().expect("a perplexity"),
    }
}

struct Case {
    artifact: Vec<u8>,
    float: reference::Model,
    weights_only: reference::Model,
    held: HeldOut,
    float_scores: Vec<Vec<Scored>>,
    weights_only_scores: Vec<Vec<Scored>>,
}

fn case() -> &'static Case {
    static CASE: OnceLock<Case> = OnceLock::new();
    CASE.get_or_init(|| {
        let checkpoint = model_file("kjv.bin");
        let artifact =
            curta_core::convert::convert(&checkpoint, &model_file("tok1024.bin")).unwrap();
        let float = reference::Model::from_checkpoint(&checkpoint).unwrap();
        let weights_only = reference::Model::weights_only(&checkpoint, &artifact).unwrap();
        let held = held_out();
        let float_scores = held.ids.iter().map(|s| float.score(s)).collect();
        let weights_only_scores = held.ids.iter().map(|s| weights_only.score(s)).collect();
        Case {
            artifact,
            float,
            weights_only,
            held,
            float_scores,
            weights_only_scores,
        }
    })
}

fn flat(scores: &[Vec<Scored>]) -> impl Iterator<Item = &Scored> {
    scores.iter().flatten()
}

/// The engine's encoder (curta_core::infer::encode, run.c's rules over the artifact's
/// tokenizer) gives the ids the model was trained on.
#[test]
fn the_engine_encodes_held_out_text_as_training_did() {
    let case = case();
    let artifact = curta_core::decode(&case.artifact).unwrap();
    assert_eq!(case.held.texts.len(), case.held.ids.len());
    for ((chapter, text), expected) in case
        .held
        .chapters
        .iter()
        .zip(&case.held.texts)
        .zip(&case.held.ids)
    {
        let mut out = vec![0u32; text.len() + 2];
        let n = infer::encode(artifact.metadata(), text.as_bytes(), &mut out).unwrap();
        assert!(n >= expected.len(), "{chapter}: {n} tokens");
        assert_eq!(&out[..expected.len()], &expected[..], "{chapter}");
    }
}

/// The f64 reference read from kjv.bin scores the held-out slice as PyTorch did in float32
/// when it wrote the checkpoint: the checkpoint's layout, the RoPE pairs and the grouped heads
/// are the ones the model was trained with.
#[test]
fn float_reference_agrees_with_pytorch() {
    let case = case();
    let float_ppl = perplexity(flat(&case.float_scores).map(|s| s.logprob));
    let expected = case.held.float32_perplexity;
    eprintln!(
        "kjv: float perplexity over the held-out slice {float_ppl:.4} (f64 reference), \
         {expected:.4} (PyTorch, float32)"
    );
    assert!(
        (float_ppl / expected - 1.0).abs() < 1e-3,
        "reference {float_ppl}, PyTorch {expected}"
    );
}

/// The integer engine's teacher-forced argmax and log-probabilities (from its Q16 logits).
fn integer_score(model: &Model<'_>, tokens: &[u32]) -> Vec<Scored> {
    let vocab = model.config().vocab_size;
    let mut state = vec![0u8; infer::state_len(&model.config())];
    let mut run = Run::score(&mut state, model, tokens).unwrap();
    let mut out = Vec::new();
    loop {
        match run.advance(model, u64::MAX).unwrap() {
            Progress::Scored { pos, .. } => {
                let logits: Vec<f64> = (0..vocab)
                    .map(|id| run.logit(id) as f64 / 65_536.0)
                    .collect();
                out.push(Scored {
                    argmax: reference::argmax(&logits),
                    logprob: log_softmax_at(&logits, tokens[pos as usize + 1] as usize),
                });
            }
            Progress::Finished(_) => break,
            Progress::Working | Progress::Token { .. } => {}
        }
    }
    assert_eq!(out.len(), tokens.len() - 1);
    out
}

fn integer_greedy(model: &Model<'_>, prompt: &[u32], steps: u32) -> Vec<u32> {
    let mut state = vec![0u8; infer::state_len(&model.config())];
    let mut run = Run::start(&mut state, model, prompt, steps, Settings::greedy()).unwrap();
    let mut out = Vec::new();
    loop {
        match run.advance(model, u64::MAX).unwrap() {
            Progress::Token { id, .. } => out.push(id),
            Progress::Finished(_) => break,
            Progress::Working | Progress::Scored { .. } => {}
        }
    }
    out
}

/// The bar: integer perplexity within 1 % of weights-only, argmax agreement with
/// weights-only at least 97 %, greedy 8 tokens equal to weights-only on at least 9 prompts of
/// 10 (each a BOS and 2 to 6 held-out tokens).
#[test]
fn integer_engine_on_held_out_text() {
    let case = case();
    let artifact = curta_core::decode(&case.artifact).unwrap();
    let model = Model::from_artifact(&artifact).unwrap();
    let integer: Vec<Vec<Scored>> = case
        .held
        .ids
        .iter()
        .map(|s| integer_score(&model, s))
        .collect();
    let positions = flat(&integer).count();
    let ppl = |scores: &[Vec<Scored>]| perplexity(flat(scores).map(|s| s.logprob));
    let (float_ppl, wo_ppl, int_ppl) = (
        ppl(&case.float_scores),
        ppl(&case.weights_only_scores),
        ppl(&integer),
    );
    let agree = |other: &[Vec<Scored>]| {
        flat(&integer)
            .zip(flat(other))
            .filter(|(a, b)| a.argmax == b.argmax)
            .count() as f64
            / positions as f64
    };
    let (agreement, agreement_float) =
        (agree(&case.weights_only_scores), agree(&case.float_scores));
    let mut greedy_matches = 0;
    let mut greedy_float_matches = 0;
    for p in 0..10 {
        let seq = &case.held.ids[p % case.held.ids.len()];
        // The first prompts open their chapters; the later ones start 40 tokens in.
        let start = if p < case.held.ids.len() { 1 } else { 41 };
        let mut prompt = vec![infer::BOS];
        prompt.extend_from_slice(&seq[start..start + 2 + p % 5]);
        let reference = case.weights_only.greedy(&prompt, 8);
        let float = case.float.greedy(&prompt, 8);
        let got = integer_greedy(&model, &prompt, 8);
        eprintln!(
            "kjv: prompt {prompt:?}: integer {got:?}, weights-only {reference:?}{}, float {float:?}",
            if got == reference { "" } else { " DIFFERS" }
        );
        greedy_matches += (got == reference) as usize;
        greedy_float_matches += (got == float) as usize;
    }
    eprintln!(
        "kjv: {} sequences, {positions} held-out positions; perplexity float {float_ppl:.4}, \
         weights-only {wo_ppl:.4} ({:.4} × float), integer {int_ppl:.4} ({:.4} × weights-only); \
         argmax agreement with weights-only {:.2} %, with float {:.2} %; greedy 8 tokens equal \
         weights-only on {greedy_matches} of 10 (float on {greedy_float_matches})",
        integer.len(),
        wo_ppl / float_ppl,
        int_ppl / wo_ppl,
        100.0 * agreement,
        100.0 * agreement_float,
    );
    assert!(positions >= 1_000, "{positions} positions");
    let ratio = int_ppl / wo_ppl;
    assert!(
        (0.99..=1.01).contains(&ratio),
        "integer / weights-only perplexity {ratio}"
    );
    assert!(agreement >= 0.97, "argmax agreement {agreement}");
    assert!(greedy_matches >= 9, "greedy matches {greedy_matches}");
}

/// English words of `text`: letters and inner apostrophes, lowercased.
fn words(text: &str) -> Vec<String> {
    text.split(|c: char| !(c.is_ascii_alphabetic() || c == '\''))
        .map(|w| w.trim_matches('\'').to_ascii_lowercase())
        .filter(|w| !w.is_empty())
        .collect()
}

/// The demo's text reads as English: at least 90 % of the words of the integer engine's greedy
/// continuation of the demo's prompt are in models/kjv-words.txt (wamerican's words), and it
/// has at least 10 different words.
#[test]
fn the_demo_text_is_english() {
    let case = case();
    let artifact = curta_core::decode(&case.artifact).unwrap();
    let model = Model::from_artifact(&artifact).unwrap();
    let mut prompt = vec![0u32; DEMO_PROMPT.len() + 2];
    let n = infer::encode(artifact.metadata(), DEMO_PROMPT.as_bytes(), &mut prompt).unwrap();
    prompt.truncate(n);
    let ids = integer_greedy(&model, &prompt, DEMO_STEPS);
    let mut text = Vec::new();
    let mut previous = *prompt.last().unwrap();
    for &id in &ids {
        match infer::decode(artifact.metadata(), previous, id).unwrap() {
            Piece::None => {}
            Piece::Byte(b) => text.push(b),
            Piece::Bytes(b) => text.extend_from_slice(b),
        }
        previous = id;
    }
    let text = String::from_utf8(text).expect("ASCII text");
    let list = String::from_utf8(model_file("kjv-words.txt")).unwrap();
    let english: HashSet<&str> = list.lines().collect();
    let words = words(&text);
    let unknown: Vec<&String> = words
        .iter()
        .filter(|w| !english.contains(w.as_str()))
        .collect();
    let share = 1.0 - unknown.len() as f64 / words.len() as f64;
    eprintln!(
        "kjv: greedy after {DEMO_PROMPT:?} ({} tokens): {text:?}\nkjv: {} words, {:.1} % English; \
         not in the list: {unknown:?}",
        ids.len(),
        words.len(),
        100.0 * share
    );
    assert!(words.len() >= 20, "only {} words: {text:?}", words.len());
    // Not one word over and over: a text.
    let distinct: HashSet<&String> = words.iter().collect();
    assert!(
        distinct.len() >= 10,
        "{} distinct words: {text:?}",
        distinct.len()
    );
    assert!(share >= 0.9, "{:.1} % English words", 100.0 * share);
}
