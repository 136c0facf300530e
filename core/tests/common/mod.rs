//! Helpers for the integration tests, written independently of the converter: a llama2.c
//! checkpoint reader, a scalar quantizer straight from the spec, and the hash chain.
#![allow(dead_code)]

use sha2::{Digest, Sha256};
use std::path::PathBuf;

pub fn model(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../models")
        .join(name)
}

pub fn read_model(name: &str) -> Vec<u8> {
    std::fs::read(model(name)).unwrap_or_else(|e| panic!("{name}: {e}"))
}

pub fn u32le(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes(b[at..at + 4].try_into().unwrap())
}

pub fn i32le(b: &[u8], at: usize) -> i32 {
    i32::from_le_bytes(b[at..at + 4].try_into().unwrap())
}

pub fn u64le(b: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(b[at..at + 8].try_into().unwrap())
}

#[allow(unused_imports)]
pub use curta_core::convert::synth::STORIES15M;

/// A checkpoint read as run.c's `memory_map_weights` does: the header and each tensor's floats.
pub struct Ckpt {
    pub dim: usize,
    pub hidden: usize,
    pub layers: usize,
    pub heads: usize,
    pub kv_heads: usize,
    pub vocab: usize,
    pub seq_len: usize,
    pub shared: bool,
    pub token_embedding: Vec<f32>,
    pub rms_att: Vec<f32>,
    pub wq: Vec<f32>,
    pub wk: Vec<f32>,
    pub wv: Vec<f32>,
    pub wo: Vec<f32>,
    pub rms_ffn: Vec<f32>,
    pub w1: Vec<f32>,
    pub w2: Vec<f32>,
    pub w3: Vec<f32>,
    pub rms_final: Vec<f32>,
    pub wcls: Vec<f32>,
}

impl Ckpt {
    pub fn read(b: &[u8]) -> Ckpt {
        let h: Vec<i32> = (0..7).map(|i| i32le(b, 4 * i)).collect();
        let (dim, hidden, layers, heads, kv_heads) = (
            h[0] as usize,
            h[1] as usize,
            h[2] as usize,
            h[3] as usize,
            h[4] as usize,
        );
        let shared = h[5] > 0;
        let vocab = h[5].unsigned_abs() as usize;
        let seq_len = h[6] as usize;
        let head_size = dim / heads;
        let kv_dim = dim * kv_heads / heads;
        let mut at = 28;
        let mut take = |n: usize| -> Vec<f32> {
            let v = b[at..at + 4 * n]
                .chunks(4)
                .map(|c| f32::from_le_bytes(c.try_into().unwrap()))
                .collect();
            at += 4 * n;
            v
        };
        let token_embedding = take(vocab * dim);
        let rms_att = take(layers * dim);
        let wq = take(layers * dim * dim);
        let wk = take(layers * kv_dim * dim);
        let wv = take(layers * kv_dim * dim);
        let wo = take(layers * dim * dim);
        let rms_ffn = take(layers * dim);
        let w1 = take(layers * hidden * dim);
        let w2 = take(layers * dim * hidden);
        let w3 = take(layers * hidden * dim);
        let rms_final = take(dim);
        let _freq_cis = take(seq_len * head_size);
        let wcls = if shared {
            token_embedding.clone()
        } else {
            take(vocab * dim)
        };
        assert_eq!(at, b.len(), "test checkpoint reader: size");
        Ckpt {
            dim,
            hidden,
            layers,
            heads,
            kv_heads,
            vocab,
            seq_len,
            shared,
            token_embedding,
            rms_att,
            wq,
            wk,
            wv,
            wo,
            rms_ffn,
            w1,
            w2,
            w3,
            rms_final,
            wcls,
        }
    }

    /// The floats of matrix `index` in the spec's tensor order, as (rows, columns, floats).
    pub fn matrix(&self, index: usize) -> (usize, usize, &[f32]) {
        let (d, h) = (self.dim, self.hidden);
        let k = d * self.kv_heads / self.heads;
        if index == 0 {
            return (self.vocab, d, &self.token_embedding);
        }
        if index == 1 {
            return (self.vocab, d, &self.wcls);
        }
        let l = (index - 2) / 7;
        let (rows, cols, all) = match (index - 2) % 7 {
            0 => (d, d, &self.wq),
            1 => (k, d, &self.wk),
            2 => (k, d, &self.wv),
            3 => (d, d, &self.wo),
            4 => (h, d, &self.w1),
            5 => (d, h, &self.w2),
            _ => (h, d, &self.w3),
        };
        (rows, cols, &all[l * rows * cols..(l + 1) * rows * cols])
    }
}

/// One row quantized by the spec's formulas, scalar, with `f64::round`.
pub fn expected_row(w: &[f32], row_len: usize) -> Vec<u8> {
    let m = w.iter().map(|x| x.abs() as f64).fold(0.0, f64::max);
    let mut row = vec![0u8; 8];
    if m == 0.0 {
        row[..4].copy_from_slice(&1u32.to_le_bytes());
        row.extend(w.iter().map(|_| 128u8));
    } else {
        let scale = m / 127.0;
        let stored = (scale * 16_777_216.0).round().max(1.0);
        assert!(stored <= u32::MAX as f64);
        row[..4].copy_from_slice(&(stored as u32).to_le_bytes());
        row.extend(
            w.iter()
                .map(|&x| ((x as f64 / scale).round().clamp(-127.0, 127.0) + 128.0) as u8),
        );
    }
    row.resize(row_len, 128);
    row
}

/// The weights hash, by building each `prev || chunk` buffer and hashing it whole.
pub fn chain(sections: &[&[u8]]) -> [u8; 32] {
    let mut h = [0u8; 32];
    for s in sections {
        let mut at = 0;
        while at < s.len() {
            let end = (at + 65_536).min(s.len());
            let mut buf = h.to_vec();
            buf.extend_from_slice(&s[at..end]);
            h = Sha256::digest(&buf).into();
            at = end;
        }
    }
    h
}

/// Sections of an artifact read straight from its section table.
pub fn sections(art: &[u8]) -> Vec<&[u8]> {
    let count = u32le(art, 36) as usize;
    (0..count)
        .map(|i| {
            let (off, len) = (
                u64le(art, 128 + 16 * i) as usize,
                u64le(art, 136 + 16 * i) as usize,
            );
            &art[off..off + len]
        })
        .collect()
}

/// A tokenizer file read as run.c's `build_tokenizer` does: (score, bytes) per token.
pub fn read_tokenizer(b: &[u8], vocab: usize) -> Vec<(f32, Vec<u8>)> {
    let mut at = 4;
    let mut out = Vec::new();
    for _ in 0..vocab {
        let score = f32::from_le_bytes(b[at..at + 4].try_into().unwrap());
        let len = u32le(b, at + 4) as usize;
        out.push((score, b[at + 8..at + 8 + len].to_vec()));
        at += 8 + len;
    }
    assert_eq!(at, b.len());
    out
}

/// Writes a tokenizer file from (score, bytes) pairs.
pub fn write_tokenizer(tokens: &[(f32, Vec<u8>)]) -> Vec<u8> {
    let max = tokens.iter().map(|t| t.1.len()).max().unwrap_or(0) as u32;
    let mut out = max.to_le_bytes().to_vec();
    for (score, bytes) in tokens {
        out.extend_from_slice(&score.to_le_bytes());
        out.extend_from_slice(&(bytes.len() as u32).to_le_bytes());
        out.extend_from_slice(bytes);
    }
    out
}

/// Writes a checkpoint: the seven header fields, then the floats.
pub fn write_checkpoint(header: [i32; 7], floats: &[f32]) -> Vec<u8> {
    let mut out: Vec<u8> = header.iter().flat_map(|x| x.to_le_bytes()).collect();
    out.extend(floats.iter().flat_map(|x| x.to_le_bytes()));
    out
}

/// Checks every row of every matrix of `art` against the scalar quantizer.
pub fn check_all_rows(art: &[u8], ck: &Ckpt) {
    let secs = sections(art);
    let matrices = 2 + 7 * ck.layers;
    for index in 0..matrices {
        let at = 512 + 24 * index;
        let (section, cols, rows, row_len, offset) = (
            u32le(art, at) as usize,
            u32le(art, at + 4) as usize,
            u32le(art, at + 8) as usize,
            u32le(art, at + 12) as usize,
            u64le(art, at + 16) as usize,
        );
        let (r, c, w) = ck.matrix(index);
        assert_eq!((rows, cols), (r, c), "matrix {index} shape");
        assert_eq!(
            row_len,
            (cols + 8).div_ceil(8) * 8,
            "matrix {index} row length"
        );
        let bytes = &secs[section][offset..offset + rows * row_len];
        for row in 0..rows {
            let expected = expected_row(&w[row * cols..(row + 1) * cols], row_len);
            assert!(
                bytes[row * row_len..(row + 1) * row_len] == expected[..],
                "matrix {index} row {row}"
            );
        }
    }
}
