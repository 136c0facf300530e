//! The spec's own numbers: a synthetic checkpoint of stories15M's shape with the real
//! tokenizer.bin.

mod common;
use common::*;
use curta_core::convert::{convert, synth};

#[test]
fn stories15m_shape_has_the_specs_numbers() {
    let checkpoint = synth::checkpoint(&STORIES15M, true, 15);
    assert_eq!(
        checkpoint.len(),
        60_816_028,
        "a stories15M-sized checkpoint (60 MB)"
    );
    let tokenizer = read_model("tokenizer.bin");
    let art = convert(&checkpoint, &tokenizer).unwrap();

    // 8 sections: section zero, the embedding, six layers.
    assert_eq!(u32le(&art, 36), 8);
    let lengths: Vec<u64> = (0..8).map(|i| u64le(&art, 136 + 16 * i)).collect();
    assert_eq!(lengths[1], 9_472_000);
    for layer in 0..6 {
        assert_eq!(lengths[2 + layer], 1_019_136, "layer {layer}");
    }
    // Section zero: header, (2 × 6 + 1) × 288 norm values, 256 × 48 rotary values, two
    // 4,097-entry tables, 32,000 entries of 16 bytes, 32,000 sorted ids, the strings, padding.
    let strings: usize = read_tokenizer(&tokenizer, 32_000)
        .iter()
        .map(|t| t.1.len())
        .sum();
    let zero =
        4096 + 4 * 13 * 288 + 4 * 256 * 48 + 2 * 4 * 4097 + 16 * 32_000 + 4 * 32_000 + strings;
    assert_eq!(lengths[0], zero.next_multiple_of(8) as u64);
    assert_eq!(lengths.iter().sum::<u64>(), art.len() as u64);
    let mut offset = 0;
    for (i, len) in lengths.iter().enumerate() {
        assert_eq!(u64le(&art, 128 + 16 * i), offset, "section {i} offset");
        offset += len;
    }
    // Every descriptor: a row of 288 columns is 296 bytes, of 768 columns 776 bytes.
    for index in 0..2 + 7 * 6 {
        let at = 512 + 24 * index;
        let (cols, row_bytes) = (u32le(&art, at + 4), u32le(&art, at + 12));
        let expected = match cols {
            288 => 296,
            768 => 776,
            other => panic!("matrix {index}: {other} columns"),
        };
        assert_eq!(row_bytes, expected, "matrix {index}");
    }
    // The embedding is 32,000 rows of 296 bytes; the tied classifier is a copy of descriptor 0.
    assert_eq!(
        (u32le(&art, 512), u32le(&art, 520), u32le(&art, 524)),
        (1, 32_000, 296)
    );
    assert_eq!(art[512..536], art[536..560]);
    // Descriptor slots past the last matrix are zero.
    assert!(art[512 + 24 * 44..4096].iter().all(|&b| b == 0));

    let ck = Ckpt::read(&checkpoint);
    check_all_rows(&art, &ck);
    let decoded = curta_core::decode(&art).unwrap();
    assert_eq!(decoded.section_count(), 8);
    // The SDK's reader: the first MAX_SECTION_LEN bytes of the 17 MB file and its length.
    let head = curta_core::decode_head(&art[..curta_core::MAX_SECTION_LEN], art.len() as u64);
    assert_eq!(head.unwrap().bytes(), decoded.metadata().bytes());
    assert_eq!(
        curta_core::weights_hash(decoded.sections()),
        chain(&sections(&art))
    );
}
