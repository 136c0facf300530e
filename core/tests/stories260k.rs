//! stories260K.bin + tok512.bin: two sections, weights within half a scale, the tokenizer
//! round-trips, the tables and coefficients, the hash by a second path.

mod common;
use common::*;
use curta_core::convert::convert;
use curta_core::decode;

type Tokens = Vec<(f32, Vec<u8>)>;

fn artifact() -> (Vec<u8>, Ckpt, Tokens) {
    let checkpoint = read_model("stories260K.bin");
    let tokenizer = read_model("tok512.bin");
    let art = convert(&checkpoint, &tokenizer).unwrap();
    let ck = Ckpt::read(&checkpoint);
    let tokens = read_tokenizer(&tokenizer, ck.vocab);
    (art, ck, tokens)
}

#[test]
fn two_sections_and_every_row_exact() {
    let (art, ck, _) = artifact();
    // dim 64, hidden 172, 5 layers, 8 heads, 4 kv heads, vocab 512, context 512, shared.
    assert_eq!(
        (
            ck.dim,
            ck.hidden,
            ck.layers,
            ck.heads,
            ck.kv_heads,
            ck.vocab,
            ck.seq_len
        ),
        (64, 172, 5, 8, 4, 512, 512)
    );
    assert!(ck.shared);
    let a = decode(&art).unwrap();
    assert_eq!(a.section_count(), 2);
    // Section one: the embedding once (512 × 72), then per layer query 64 × 72, key and value
    // 32 × 72, output 64 × 72, gate 172 × 72, down 64 × 184, up 172 × 72.
    let layer = 64 * 72 + 2 * 32 * 72 + 64 * 72 + 172 * 72 + 64 * 184 + 172 * 72;
    assert_eq!(a.section(1).len(), 512 * 72 + 5 * layer);
    assert_eq!(
        art[512..536],
        art[536..560],
        "tied classifier: descriptor 1 is descriptor 0"
    );
    check_all_rows(&art, &ck);
}

#[test]
fn dequantized_weights_within_half_a_scale() {
    let (art, ck, _) = artifact();
    let a = decode(&art).unwrap();
    let mut checked = 0u64;
    for index in 0..a.metadata().matrix_count() {
        let m = a.matrix(index);
        let (rows, cols, w) = ck.matrix(index);
        assert_eq!(
            (m.descriptor.rows as usize, m.descriptor.columns as usize),
            (rows, cols)
        );
        for r in 0..rows {
            let row = m.row(r as u32);
            let scale = row.scale as f64 / 16_777_216.0;
            // The stored scale is itself rounded to 2^-24: allow 127 × 2^-25 for that.
            let tolerance = scale / 2.0 + 127.0 / 33_554_432.0;
            for c in 0..cols {
                let q = row.weights[c] as i32 - 128;
                assert!((-127..=127).contains(&q));
                let original = w[r * cols + c] as f64;
                let err = (q as f64 * scale - original).abs();
                assert!(
                    err <= tolerance,
                    "matrix {index} row {r} col {c}: {original} vs {q} × {scale}"
                );
                checked += 1;
            }
        }
    }
    // Every matrix weight with the shared classifier counted twice.
    assert_eq!(checked, 259_328 + 512 * 64);
}

#[test]
fn tokenizer_round_trips() {
    let (art, _, tokens) = artifact();
    let a = decode(&art).unwrap();
    let meta = a.metadata();
    for (id, (score, bytes)) in tokens.iter().enumerate() {
        let id = id as u32;
        assert_eq!(meta.token_bytes(id).unwrap(), &bytes[..], "token {id}");
        let bits = score.to_bits();
        let key = if bits >> 31 == 0 {
            bits + 0x8000_0000
        } else {
            u32::MAX - bits
        };
        assert_eq!(meta.token(id).score_key, key, "token {id} score {score}");
        assert_eq!(meta.token(id).length as usize, bytes.len());
    }
    // Keys order the way scores do.
    for i in 0..tokens.len() {
        for j in 0..tokens.len() {
            if tokens[i].0 < tokens[j].0 {
                assert!(meta.token(i as u32).score_key < meta.token(j as u32).score_key);
            }
        }
    }
    // Sorted ids: a permutation ordered by bytes, then id.
    let sorted: Vec<u32> = (0..512).map(|i| meta.sorted_id(i).unwrap()).collect();
    let mut expected: Vec<u32> = (0..512).collect();
    expected.sort_by(|&a, &b| {
        tokens[a as usize]
            .1
            .cmp(&tokens[b as usize].1)
            .then(a.cmp(&b))
    });
    assert_eq!(sorted, expected);
    // Strings in id order, straight after the sorted ids, to the end of section zero (padded).
    let b = meta.blocks();
    assert_eq!(b.token_strings, b.sorted_ids + 4 * 512);
    let mut at = b.token_strings;
    for id in 0..512u32 {
        assert_eq!(meta.token(id).offset, at);
        at += meta.token(id).length;
    }
    let zero = a.section(0);
    assert_eq!(zero.len(), (at as usize).next_multiple_of(8));
    assert!(zero[at as usize..].iter().all(|&x| x == 0));
}

#[test]
fn coefficients_and_tables() {
    let (art, ck, _) = artifact();
    let a = decode(&art).unwrap();
    let meta = a.metadata();
    let d = ck.dim;
    let b = meta.blocks();
    assert_eq!(b.norm, 4096);
    assert_eq!(b.rotary, 4096 + 4 * 11 * 64);
    assert_eq!(b.exp, b.rotary + 4 * 512 * 8);
    assert_eq!(b.silu, b.exp + 4 * 4097);
    assert_eq!(b.token_entries, b.silu + 4 * 4097);
    assert_eq!(b.sorted_ids, b.token_entries + 16 * 512);
    let fixed = |x: f32| (x as f64 * 16_777_216.0).round() as i32;
    for l in 0..ck.layers {
        for i in 0..d {
            assert_eq!(meta.norm(2 * l * d + i), fixed(ck.rms_att[l * d + i]));
            assert_eq!(meta.norm((2 * l + 1) * d + i), fixed(ck.rms_ffn[l * d + i]));
        }
    }
    for i in 0..d {
        assert_eq!(meta.norm(2 * ck.layers * d + i), fixed(ck.rms_final[i]));
    }
    // Head size 8: pairs j = 0..4, angle pos / 10000^(j / 4).
    for pos in 0..512 {
        for j in 0..4 {
            let theta = pos as f64 * 10000f64.powf(-(j as f64) / 4.0);
            let (cos, sin) = (
                meta.rotary(pos * 8 + 2 * j),
                meta.rotary(pos * 8 + 2 * j + 1),
            );
            assert!(
                (cos as f64 - theta.cos() * 16_777_216.0).abs() <= 0.5 + 1e-6,
                "pos {pos} j {j}"
            );
            assert!(
                (sin as f64 - theta.sin() * 16_777_216.0).abs() <= 0.5 + 1e-6,
                "pos {pos} j {j}"
            );
        }
    }
    assert_eq!((meta.rotary(0), meta.rotary(1)), (1 << 24, 0));
    assert_eq!(meta.exp(0), 1 << 30);
    assert_eq!(meta.silu(2048), 0);
    // round(2^24 / sqrt(8)) = round(5,931,641.60)
    assert_eq!(meta.inv_sqrt_head_size(), 5_931_642);
}

#[test]
fn hash_by_a_second_path() {
    let (art, _, _) = artifact();
    let a = decode(&art).unwrap();
    let expected = chain(&sections(&art));
    assert_eq!(curta_core::weights_hash(a.sections()), expected);
    // Section zero is 2 chunks, section one 5: 7 links.
    assert_eq!(curta_core::chunk_count(a.section(0).len() as u64), 2);
    assert_eq!(curta_core::chunk_count(a.section(1).len() as u64), 5);
}
