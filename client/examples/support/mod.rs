//! What the benchmarks share: the tests' forwarding transport (it records what landed and
//! tells Writes apart), and the models.

// The client tests' transport (tests/support/client.rs): with `Fault::None` it forwards
// everything and records each transaction sent and the order they landed in.
#[allow(dead_code)]
#[path = "../../../tests/support/client.rs"]
mod client;
#[allow(dead_code)]
pub mod node;

#[allow(unused_imports)]
pub use client::{is_write, Fault, Faulty};
use curta_core::convert::synth;
use curta_core::Config;

/// The benchmark models: the bundled stories260K, a ~1.7 MB grouped-query model, and a
/// stories15M-shaped one (16.5 MB, 8 sections), synthetic from fixed seeds.
pub fn model(name: &str) -> Vec<u8> {
    let (config, tied) = match name {
        "stories260K" => {
            return curta_core::convert::convert(
                curta_client::rehearse::STORIES260K,
                curta_client::rehearse::TOK512,
            )
            .unwrap()
        }
        "gqa" => (
            Config {
                dim: 192,
                hidden_dim: 512,
                layers: 3,
                heads: 6,
                kv_heads: 2,
                vocab_size: 2048,
                context_length: 256,
            },
            true,
        ),
        "stories15M" => (synth::STORIES15M, true),
        other => panic!("unknown model {other}"),
    };
    let checkpoint = synth::checkpoint(&config, tied, 42);
    let tokenizer = synth::tokenizer(config.vocab_size, 43);
    curta_core::convert::convert(&checkpoint, &tokenizer).unwrap()
}
