//! Models with many sections, converted from seeded synthetic llama2.c checkpoints, and the
//! helpers their tests share: the section lengths each shape must have (worked out from the
//! spec by hand, never read back from the converter), publishing by planting bytes, and the
//! wire size of a transaction.

use crate::harness::*;
use curta_core::convert::{convert, synth};
use curta_core::Config;
use curta_program::state::WEIGHT_HEADER_LEN;
use curta_tests::split_sections;
use solana_instruction::Instruction;
use solana_sdk::signature::Keypair;
use std::sync::OnceLock;

/// A transaction's most bytes on the wire (Solana's PACKET_DATA_SIZE).
pub const PACKET: usize = 1232;

/// 18 sections: 16 layers (the most), dimension 64, hidden dimension 240, two heads (head
/// size 32), vocabulary 259 (specials and byte tokens only), context 8. Matrix weights:
/// 64 × 259 + 16 × (2 × 64 × 64 + 2 × 64 × 64 + 3 × 64 × 240) = 16,576 + 16 × 62,464
/// = 1,016,000, just over the 1,000,000 that puts one layer per section (hidden 232 would
/// give 991,424 and two sections).
pub const EIGHTEEN: Config = Config {
    dim: 64,
    hidden_dim: 240,
    layers: 16,
    heads: 2,
    kv_heads: 2,
    vocab_size: 259,
    context_length: 8,
};

/// 3 sections: one layer, dimension 256, hidden dimension 880, four heads (head size 64),
/// vocabulary 259, context 8. Matrix weights: 256 × 259 + 4 × 256 × 256 + 3 × 256 × 880
/// = 66,304 + 262,144 + 675,840 = 1,004,288 (hidden 872: 998,144, two sections).
pub const THREE: Config = Config {
    dim: 256,
    hidden_dim: 880,
    layers: 1,
    heads: 4,
    kv_heads: 4,
    vocab_size: 259,
    context_length: 8,
};

/// Section zero of a 259-token model with the synthetic tokenizer (`<unk>`, `<s>`, `</s>`
/// and the 256 tokens `<0xXX>`: 5 + 3 + 4 + 256 × 6 = 1,548 string bytes): the header, the
/// norm and rotary coefficients, the two 4,097-entry tables, 259 entries of 16 bytes, 259
/// sorted ids, the strings, padded to 8.
fn section_zero_259(c: &Config) -> usize {
    let (d, l, context) = (c.dim as usize, c.layers as usize, c.context_length as usize);
    let head_size = d / c.heads as usize;
    let len = 4096
        + 4 * (2 * l + 1) * d
        + 4 * context * head_size
        + 2 * 4 * 4097
        + 16 * 259
        + 4 * 259
        + 1548;
    len.next_multiple_of(8)
}

/// The 18 section lengths of EIGHTEEN, by hand. Section zero: 4,096 (header), 4 × 33 × 64
/// (norm), 4 × 8 × 32 (rotary), 32,776 (tables), 4,144, 1,036 and 1,548 (tokenizer): 53,072.
/// Section one: the embedding (the tied classifier stored once), 259 rows of 72 bytes: 18,648.
/// Each layer: query, key, value and output 64 rows of 72 bytes (18,432), gate and up 240 rows
/// of 72 bytes (34,560), down 64 rows of 248 bytes (15,872): 68,864, two chunks, the second
/// 3,328 bytes.
pub fn eighteen_lengths() -> Vec<usize> {
    let mut out = vec![53_072, 18_648];
    out.extend([68_864; 16]);
    assert_eq!(out[0], section_zero_259(&EIGHTEEN));
    out
}

/// THREE's lengths by hand. Section zero: 4,096, 4 × 3 × 256, 4 × 8 × 64, 32,776, 4,144,
/// 1,036 and 1,548: 48,720. Section one: 259 rows of 264 bytes, 68,376 (two chunks). Section
/// two: four 256-row matrices of 264-byte rows (270,336), gate and up 880 rows of 264 bytes
/// (464,640), down 256 rows of 888 bytes (227,328): 962,304 (15 chunks).
pub fn three_lengths() -> Vec<usize> {
    let out = vec![48_720, 68_376, 962_304];
    assert_eq!(out[0], section_zero_259(&THREE));
    out
}

/// stories15M's lengths (the spec's numbers): section one the 9,472,000-byte embedding, six
/// layer sections of 1,019,136 bytes; section zero from the tokenizer's string bytes.
pub fn stories15m_lengths(strings: usize) -> Vec<usize> {
    let zero = 4096 + 4 * 13 * 288 + 4 * 256 * 48 + 2 * 4 * 4097 + 16 * 32_000 + 4 * 32_000;
    let mut out = vec![(zero + strings).next_multiple_of(8), 9_472_000];
    out.extend([1_019_136; 6]);
    out
}

/// The sections of the artifact converted from a seeded synthetic checkpoint of `config`
/// (classifier tied) and a seeded tokenizer of its vocabulary.
fn converted(config: &Config, seed: u64) -> Vec<Vec<u8>> {
    let checkpoint = synth::checkpoint(config, true, seed);
    let tokenizer = synth::tokenizer(config.vocab_size, seed + 1);
    let artifact = convert(&checkpoint, &tokenizer)
        .unwrap_or_else(|e| panic!("converting the synthetic {config:?}: {e}"));
    split_sections(&artifact)
}

/// EIGHTEEN's 18 sections (1,173,544 bytes), converted once per test binary.
pub fn eighteen_sections() -> Vec<Vec<u8>> {
    static S: OnceLock<Vec<Vec<u8>>> = OnceLock::new();
    S.get_or_init(|| converted(&EIGHTEEN, 180)).clone()
}

/// THREE's 3 sections (1,079,400 bytes), converted once per test binary.
pub fn three_sections() -> Vec<Vec<u8>> {
    static S: OnceLock<Vec<Vec<u8>>> = OnceLock::new();
    S.get_or_init(|| converted(&THREE, 30)).clone()
}

/// A stories15M-shaped artifact's 8 sections (about 16.5 MB) and its tokenizer's total string
/// bytes, converted once per test binary.
pub fn stories15m_sections() -> &'static (Vec<Vec<u8>>, usize) {
    static S: OnceLock<(Vec<Vec<u8>>, usize)> = OnceLock::new();
    S.get_or_init(|| {
        let config = synth::STORIES15M;
        let tokenizer = synth::tokenizer(config.vocab_size, 151);
        // The tokenizer file: a u32, then per token a score (4), a length (4) and the bytes.
        let (mut at, mut strings) = (4usize, 0usize);
        for _ in 0..config.vocab_size {
            let len = u32::from_le_bytes(tokenizer[at + 4..at + 8].try_into().unwrap()) as usize;
            strings += len;
            at += 8 + len;
        }
        assert_eq!(at, tokenizer.len());
        let checkpoint = synth::checkpoint(&config, true, 150);
        let artifact = convert(&checkpoint, &tokenizer)
            .unwrap_or_else(|e| panic!("converting the synthetic stories15M: {e}"));
        (split_sections(&artifact), strings)
    })
}

/// The independent count of chunks: each section in 65,536-byte chunks, the last one short.
pub fn chunk_total(lengths: &[usize]) -> u32 {
    lengths.iter().map(|l| l.div_ceil(65_536) as u32).sum()
}

/// Publishes `sections` by instructions (CreateModel, and create_account_with_seed +
/// InitWeightAccount for every section) but puts the section bytes into the weight accounts
/// directly, in place of the thousands of Writes a multi-megabyte model takes (the Write
/// instruction itself is tested on the 10 MiB account in max_account.rs).
pub async fn planted(bank: &mut Bank, sections: Vec<Vec<u8>>) -> Published {
    let p = create(bank, sections, None).await;
    init_all(bank, &p).await;
    for (s, w) in p.weights.iter().enumerate() {
        let mut account = bank.account(w).await.expect("initialized weight account");
        account.data[WEIGHT_HEADER_LEN..].copy_from_slice(&p.sections[s]);
        bank.plant(w, account);
    }
    p
}

/// The bytes of chunk `c` of section `s`.
pub fn chunk_of(p: &Published, s: usize, c: u32) -> &[u8] {
    let start = c as usize * 65_536;
    let end = (start + 65_536).min(p.sections[s].len());
    &p.sections[s][start..end]
}

/// The rent of an account of `len` data bytes, from the rent the bank runs with:
/// (128 + len) × 6,960 lamports (3,480 lamports per byte-year, two years).
pub fn rent_of(len: usize) -> u64 {
    (128 + len as u64) * 6_960
}

/// The wire size of the transaction Bank::send would build for `instructions` (the context's
/// fee payer and `signers`).
pub fn wire_len(bank: &Bank, instructions: &[Instruction], signers: &[&Keypair]) -> usize {
    bincode::serialize(&bank.transaction(instructions, signers))
        .unwrap()
        .len()
}
