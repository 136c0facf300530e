//! Exact bytes of a tiny model (dimension 2, one layer, 259 tokens), with the expected file
//! assembled here by hand from the spec and D1..D10: offsets, scales and weights computed on
//! paper, table entries from the formulas.

mod common;
use common::*;
use curta_core::convert::convert;

const TWO_24: u32 = 1 << 24;

/// Embedding rows 3..259: a few eighths and quarters.
fn generic_row(i: usize) -> [f32; 2] {
    [
        ((i * 7) % 19) as f32 / 8.0 - 1.0,
        ((i * 5) % 13) as f32 / -4.0,
    ]
}

fn checkpoint() -> Vec<u8> {
    let mut floats = vec![127.0, 62.5, 0.0, 0.0, -2.5, 1.0];
    for i in 3..259 {
        floats.extend(generic_row(i));
    }
    floats.extend([1.0, 0.5]); // attention normalization
    floats.extend([63.5, -20.25, 1.0, -1.0]); // query
    floats.extend([0.0; 4]); // key
    floats.extend([-2.5, 1.0, 508.0, 2.0]); // value
    floats.extend([1e-30, 0.0, -127.0, 127.0]); // attention output
    floats.extend([-0.25, 2.0]); // feed-forward normalization
    floats.extend([-0.5, 0.25, 3.0, 3.0]); // gate
    floats.extend([1.0, 2.0, 3.0, 4.0]); // down
    floats.extend([-1.0, -1.0, 0.5, -0.5]); // up
    floats.extend([1.5, 0.0]); // final normalization
    floats.extend([1.0, 0.0, 0.54, 0.84]); // the checkpoint's rotary floats (skipped)
    write_checkpoint([2, 2, 1, 1, 1, 259, 2], &floats)
}

fn tokens() -> Vec<(f32, Vec<u8>)> {
    let mut t: Vec<(f32, Vec<u8>)> = vec![
        (0.0, b"<unk>".to_vec()),
        (-0.0, b"<s>".to_vec()),
        (1.0, b"</s>".to_vec()),
        (-1.0, b"b".to_vec()),
        (-2.5, b"a".to_vec()),
        (3.0, b"".to_vec()),
        (0.5, b"ab".to_vec()),
        (-0.5, b"a".to_vec()),
        (0.0, vec![0xff]),
        (0.0, vec![0x7f]),
    ];
    for id in 10..259 {
        t.push((-(id as f32), format!("t{id:03}").into_bytes()));
    }
    t
}

fn put32(f: &mut [u8], at: usize, v: u32) {
    f[at..at + 4].copy_from_slice(&v.to_le_bytes());
}

fn put64(f: &mut [u8], at: usize, v: u64) {
    f[at..at + 8].copy_from_slice(&v.to_le_bytes());
}

/// A 16-byte row of two columns: scale, 4 zero bytes, two weights + 128, six bytes of 128.
fn row(scale: u32, q: [i32; 2]) -> [u8; 16] {
    let mut r = [128u8; 16];
    r[..4].copy_from_slice(&scale.to_le_bytes());
    r[4..8].fill(0);
    r[8] = (q[0] + 128) as u8;
    r[9] = (q[1] + 128) as u8;
    r
}

fn expected_file() -> Vec<u8> {
    // Section zero: header 4,096; norm 3 × 2 i32 at 4,096; rotary 2 × 2 at 4,120; exp at
    // 4,136; SiLU at 4,136 + 16,388 = 20,524; entries at 36,912; sorted ids at 36,912 + 4,144
    // = 41,056; strings at 41,056 + 1,036 = 42,092; 1,015 string bytes end at 43,107, padded
    // to 43,112. Section one: embedding 259 × 16 = 4,144, then 7 matrices of 2 × 16.
    let mut f = vec![0u8; 43_112 + 4_144 + 7 * 32];
    f[..8].copy_from_slice(b"CURTAW01");
    for (i, v) in [
        2, 2, 1, 1, 1, 259, 2, 2, 4096, 4120, 4136, 20_524, 36_912, 41_056, 42_092,
    ]
    .into_iter()
    .enumerate()
    {
        put32(&mut f, 8 + 4 * i, v);
    }
    put32(&mut f, 68, 11_863_283); // round(2^24 / sqrt 2) = round(11,863,283.20)
    put64(&mut f, 128, 0);
    put64(&mut f, 136, 43_112);
    put64(&mut f, 144, 43_112);
    put64(&mut f, 152, 4_144 + 224);
    let descriptors = [
        (259, 0),
        (259, 0),
        (2, 4144),
        (2, 4176),
        (2, 4208),
        (2, 4240),
        (2, 4272),
        (2, 4304),
        (2, 4336),
    ];
    for (i, (rows, offset)) in descriptors.into_iter().enumerate() {
        let at = 512 + 24 * i;
        put32(&mut f, at, 1);
        put32(&mut f, at + 4, 2);
        put32(&mut f, at + 8, rows);
        put32(&mut f, at + 12, 16);
        put64(&mut f, at + 16, offset);
    }
    // Normalization: layer 0 attention, layer 0 feed-forward, final.
    let norm = [TWO_24 as i32, 1 << 23, -(1 << 22), 1 << 25, 3 << 23, 0];
    for (i, v) in norm.into_iter().enumerate() {
        put32(&mut f, 4096 + 4 * i, v as u32);
    }
    // Rotary: head size 2, one pair: angle = pos. pos 0: (2^24, 0); pos 1: cos 1, sin 1.
    for (i, v) in [TWO_24, 0, 9_064_768, 14_117_540].into_iter().enumerate() {
        put32(&mut f, 4120 + 4 * i, v);
    }
    for i in 0..4097 {
        let e = (-(i as f64) / 256.0).exp() * (1u64 << 30) as f64;
        put32(&mut f, 4136 + 4 * i, e.round() as u32);
        let x = i as f64 / 128.0 - 16.0;
        let s = x / (1.0 + (-x).exp()) * 65_536.0;
        put32(&mut f, 20_524 + 4 * i, s.round() as i32 as u32);
    }
    // Tokenizer entries: score key, length, offset, zero.
    let mut at = 42_092u32;
    for (id, (score, bytes)) in tokens().iter().enumerate() {
        let bits = score.to_bits();
        let key = if *score > 0.0 || bits == 0 {
            bits | 0x8000_0000
        } else {
            !bits
        };
        put32(&mut f, 36_912 + 16 * id, key);
        put32(&mut f, 36_912 + 16 * id + 4, bytes.len() as u32);
        put32(&mut f, 36_912 + 16 * id + 8, at);
        f[at as usize..at as usize + bytes.len()].copy_from_slice(bytes);
        at += bytes.len() as u32;
    }
    assert_eq!(at, 43_107);
    // Sorted ids, worked out by hand: "" < "</s>" < "<s>" < "<unk>" < "a" (4, then 7) < "ab"
    // < "b" < "t010".."t258" < [7f] < [ff].
    let mut sorted = vec![5u32, 2, 1, 0, 4, 7, 6, 3];
    sorted.extend(10..259);
    sorted.extend([9, 8]);
    for (i, id) in sorted.into_iter().enumerate() {
        put32(&mut f, 41_056 + 4 * i, id);
    }
    // Section one rows.
    let s1 = 43_112;
    let mut rows: Vec<[u8; 16]> = vec![
        row(TWO_24, [127, 63]),   // [127, 62.5]: scale 1, 62.5 rounds away from zero
        row(1, [0, 0]),           // a row of zeros: the smallest scale
        row(330_260, [-127, 51]), // [-2.5, 1]: scale 2.5/127, 1/scale = 50.8
    ];
    for i in 3..259 {
        rows.push(expected_row(&generic_row(i), 16).try_into().unwrap());
    }
    rows.push(row(1 << 23, [127, -41])); // query [63.5, -20.25]: scale 0.5, -40.5 -> -41
    rows.push(row(132_104, [127, -127])); // query [1, -1]: round(2^24 / 127)
    rows.push(row(1, [0, 0])); // key: zeros
    rows.push(row(1, [0, 0]));
    rows.push(row(330_260, [-127, 51])); // value [-2.5, 1]
    rows.push(row(1 << 26, [127, 1])); // value [508, 2]: scale 4, 0.5 -> 1
    rows.push(row(1, [127, 0])); // output [1e-30, 0]: scale rounds to 0, stored as 1
    rows.push(row(TWO_24, [-127, 127])); // output [-127, 127]
    for w in [
        [-0.5, 0.25],
        [3.0, 3.0],
        [1.0, 2.0],
        [3.0, 4.0],
        [-1.0, -1.0],
        [0.5, -0.5],
    ] {
        rows.push(expected_row(&w, 16).try_into().unwrap());
    }
    for (i, r) in rows.iter().enumerate() {
        f[s1 + 16 * i..s1 + 16 * (i + 1)].copy_from_slice(r);
    }
    f
}

#[test]
fn tiny_model_bytes_are_exact() {
    let tokenizer = write_tokenizer(&tokens());
    let art = convert(&checkpoint(), &tokenizer).unwrap();
    let expected = expected_file();
    assert_eq!(art.len(), expected.len());
    if let Some(i) = (0..art.len()).find(|&i| art[i] != expected[i]) {
        panic!(
            "first difference at byte {i}: {} expected {}",
            art[i], expected[i]
        );
    }
}

#[test]
fn tiny_model_hand_values() {
    let art = convert(&checkpoint(), &write_tokenizer(&tokens())).unwrap();
    // Exponential table entry 0 is 2^30, entry 256 is round(e^-1 × 2^30), entry 4,096 is
    // round(120.83); SiLU at x = 0 (entry 2,048) is 0, at x = 1 round(47,910.66), at 16
    // round(1,048,575.88), at -16 round(-0.118) = 0.
    assert_eq!(u32le(&art, 4136), 1 << 30);
    assert_eq!(u32le(&art, 4136 + 4), 1_069_555_701);
    assert_eq!(u32le(&art, 4136 + 4 * 256), 395_007_542);
    assert_eq!(u32le(&art, 4136 + 4 * 4096), 121);
    assert_eq!(i32le(&art, 20_524 + 4 * 2048), 0);
    assert_eq!(i32le(&art, 20_524 + 4 * 2176), 47_911);
    assert_eq!(i32le(&art, 20_524 + 4 * 2047), -255);
    assert_eq!(i32le(&art, 20_524 + 4 * 4096), 1_048_576);
    assert_eq!(i32le(&art, 20_524), 0);
    // Score keys: +0.0, -0.0 (a different key), 1.0, -1.0.
    assert_eq!(u32le(&art, 36_912), 0x8000_0000);
    assert_eq!(u32le(&art, 36_912 + 16), 0x7fff_ffff);
    assert_eq!(u32le(&art, 36_912 + 32), 0xbf80_0000);
    assert_eq!(u32le(&art, 36_912 + 48), 0x407f_ffff);
    // The empty token 5: length 0, offset where token 6 starts.
    assert_eq!(u32le(&art, 36_912 + 16 * 5 + 4), 0);
    assert_eq!(
        u32le(&art, 36_912 + 16 * 5 + 8),
        u32le(&art, 36_912 + 16 * 6 + 8)
    );
    let a = curta_core::decode(&art).unwrap();
    assert_eq!(a.section_count(), 2);
    assert_eq!(a.metadata().token_bytes(5).unwrap(), b"");
}
