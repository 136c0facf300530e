//! Writes a synthetic checkpoint (and optionally a tokenizer) from a seed.
//!
//! cargo run --release -p curta-core --example synth -- <OUT> [stories15M|gqa|tiny] [SEED] [TOKENIZER_OUT]
//!
//! stories15M: dim 288, hidden 768, 6 layers, 6 heads, vocabulary 32,000, context 256, tied.
//! gqa: dim 128, hidden 384, 6 layers, 8 heads, 2 kv heads, vocabulary 512, untied.
//! tiny: dim 8, hidden 16, 1 layer, 2 heads, 1 kv head, vocabulary 259, context 4, tied.

use curta_core::convert::synth;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let Some(out) = args.get(1) else {
        eprintln!("usage: synth <OUT> [stories15M|gqa|tiny] [SEED] [TOKENIZER_OUT]");
        std::process::exit(2);
    };
    let shape = args.get(2).map(String::as_str).unwrap_or("stories15M");
    let seed = args
        .get(3)
        .map(|s| s.parse().expect("SEED is a u64"))
        .unwrap_or(15);
    let (config, tied) = match shape {
        "stories15M" => (synth::STORIES15M, true),
        "gqa" => (synth::GQA, false),
        "tiny" => (synth::TINY, true),
        other => {
            eprintln!("unknown shape {other}");
            std::process::exit(2);
        }
    };
    std::fs::write(out, synth::checkpoint(&config, tied, seed)).expect("write the checkpoint");
    if let Some(tokenizer) = args.get(4) {
        std::fs::write(tokenizer, synth::tokenizer(config.vocab_size, seed))
            .expect("write the tokenizer");
    }
}
