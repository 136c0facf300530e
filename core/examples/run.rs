//! A native run of an artifact, timed as `client run` times it (the same loop as
//! client/src/run.rs's `generate`: `Run::start`, `advance` to each token, `decode` each piece),
//! for benchmarks that cannot build the client (sdk/bench/run.ts falls back to it).
//!
//! cargo run --release -p curta-core --example run -- ARTIFACT STEPS [PROMPT_TOKENS]
//!
//! Greedy. Prints `{"tokens": [...], "tokens_per_second": x}` (the keys of `client run
//! --output json`).

use curta_core::infer::{decode as decode_token, state_len, Model, Progress, Run, Settings};
use std::time::Instant;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if args.len() < 3 || args.len() > 4 {
        eprintln!("usage: run ARTIFACT STEPS [PROMPT_TOKENS, e.g. 1,306]");
        std::process::exit(2);
    }
    // Loaded as `client run` loads it (on huge pages where the system gives them).
    let file = curta_core::convert::LoadedFile::open(std::path::Path::new(&args[1]))
        .unwrap_or_else(|e| panic!("{}: {e}", args[1]));
    let bytes = file.bytes();
    let steps: u32 = args[2].parse().expect("STEPS is a number");
    let prompt: Vec<u32> = match args.get(3) {
        Some(list) => list
            .split(',')
            .map(|t| t.trim().parse().expect("a token id"))
            .collect(),
        None => vec![1],
    };
    let artifact = curta_core::decode(bytes).unwrap_or_else(|e| panic!("{}: {e}", args[1]));
    let model = Model::from_artifact(&artifact).expect("model");
    let meta = model.metadata();
    let mut state = vec![0u8; state_len(&model.config())];
    // The kernel set's one-time check outside the clock, as `client run` does.
    curta_core::infer::Path::detect();
    let start = Instant::now();
    let mut run = Run::start(&mut state, &model, &prompt, steps, Settings::greedy())
        .unwrap_or_else(|e| panic!("{e}"));
    let (mut tokens, mut text) = (Vec::new(), Vec::new());
    let mut previous = *prompt.last().expect("a prompt");
    loop {
        match run.advance(&model, u64::MAX).expect("advance") {
            Progress::Token { id, .. } => {
                let piece = decode_token(meta, previous, id).expect("decode");
                text.extend_from_slice(piece.bytes());
                tokens.push(id);
                previous = id;
            }
            Progress::Finished(_) => break,
            _ => {}
        }
    }
    let seconds = start.elapsed().as_secs_f64();
    let list: Vec<String> = tokens.iter().map(|t| t.to_string()).collect();
    println!(
        "{{\"tokens\": [{}], \"tokens_per_second\": {}}}",
        list.join(", "),
        tokens.len() as f64 / seconds.max(1e-9)
    );
}
