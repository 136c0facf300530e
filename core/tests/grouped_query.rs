//! An untied-classifier grouped-query model (key and value heads a quarter of the heads) over
//! 1,000,000 weights: L + 2 sections, the classifier stored as its own matrix.

mod common;
use common::*;
use curta_core::convert::{convert, synth};
use curta_core::decode;

#[test]
fn untied_grouped_query_model() {
    let config = synth::GQA;
    assert_eq!(config.fields(), [128, 384, 6, 8, 2, 512, 128]);
    // 128 × 512 + 6 × (2 × 128 × 128 + 2 × 128 × 32 + 3 × 128 × 384) = 1,196,032 weights.
    assert_eq!(config.weight_count(), 1_196_032);
    let checkpoint = synth::checkpoint(&config, false, 7);
    assert_eq!(
        i32le(&checkpoint, 20),
        -512,
        "a negative vocabulary: untied"
    );
    let tokenizer = synth::tokenizer(512, 7);
    let art = convert(&checkpoint, &tokenizer).unwrap();
    let ck = Ckpt::read(&checkpoint);
    assert!(!ck.shared);

    assert_eq!(u32le(&art, 24), 2, "kv heads");
    assert_eq!(u32le(&art, 36), 8, "6 layers + 2 sections");
    // Section one: embedding then classifier, 512 rows of 136 bytes each.
    assert_eq!(u64le(&art, 136 + 16), 2 * 512 * 136);
    let desc = |i: usize| {
        let at = 512 + 24 * i;
        (
            u32le(&art, at),
            u32le(&art, at + 4),
            u32le(&art, at + 8),
            u32le(&art, at + 12),
            u64le(&art, at + 16),
        )
    };
    assert_eq!(desc(0), (1, 128, 512, 136, 0));
    assert_eq!(desc(1), (1, 128, 512, 136, 512 * 136));
    // A layer: query 128 × 136, key and value 32 × 136, output 128 × 136, gate 384 × 136,
    // down 128 × 392, up 384 × 136, one after another from offset 0 of section 2 + l.
    let layer = [
        (128, 128, 136),
        (128, 32, 136),
        (128, 32, 136),
        (128, 128, 136),
        (128, 384, 136),
        (384, 128, 392),
        (128, 384, 136),
    ];
    for l in 0..6 {
        let mut offset = 0;
        for (m, &(cols, rows, row_bytes)) in layer.iter().enumerate() {
            assert_eq!(
                desc(2 + 7 * l + m),
                (2 + l as u32, cols, rows, row_bytes, offset),
                "layer {l} matrix {m}"
            );
            offset += rows as u64 * row_bytes as u64;
        }
        assert_eq!(
            u64le(&art, 136 + 16 * (2 + l)),
            offset,
            "layer {l} section length"
        );
    }
    check_all_rows(&art, &ck);
    // The classifier really is the checkpoint's last tensor, not the embedding.
    assert_ne!(ck.wcls, ck.token_embedding);
    let a = decode(&art).unwrap();
    assert_eq!(a.section_count(), 8);
    assert_eq!(
        curta_core::weights_hash(a.sections()),
        chain(&sections(&art))
    );
}
