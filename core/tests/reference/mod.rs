//! The float reference the integer engine is measured against, written from llama2.c's run.c
//! semantics and independent of `curta_core::infer`:
//!
//! - [`Model::from_checkpoint`] reads a llama2.c checkpoint file itself (the 28-byte header of
//!   seven i32, then the f32 tensors in run.c's order; the file's own rotary floats are passed
//!   over) and keeps every weight as f64;
//! - [`Model::weights_only`] is the same float model with every matrix (embedding, classifier,
//!   query, key, value, attention output, gate, down, up) replaced by the artifact's int8 rows
//!   dequantized, `(stored - 128) × scale / 2^24`; the normalization weights stay the
//!   checkpoint's floats. It is the error the int8 weights alone cost, the integer engine's
//!   target;
//! - [`Model::forward`] is run.c's `forward` in f64: rmsnorm (eps 1e-5), RoPE with the angle
//!   pos / 10000^(2j / head size) computed in f64, grouped-query attention, SwiGLU, classifier;
//! - a seeded sampler (run.c's default sampling: temperature 1, top-p 0.9, drawn with the
//!   reference's own generator) and greedy decoding, both stopping after token 1 or 2 as a run
//!   does.
#![allow(dead_code)]

use std::fmt;

const HEADER_LEN: usize = 28;
const EPS: f64 = 1e-5;

/// The seven header fields, the vocabulary as its absolute value.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Shape {
    pub dim: usize,
    pub hidden: usize,
    pub layers: usize,
    pub heads: usize,
    pub kv_heads: usize,
    pub vocab: usize,
    pub seq_len: usize,
    /// Positive vocabulary in the file: the classifier is the embedding.
    pub tied: bool,
}

impl Shape {
    pub fn head_size(&self) -> usize {
        self.dim / self.heads
    }

    pub fn kv_dim(&self) -> usize {
        self.dim * self.kv_heads / self.heads
    }
}

#[derive(Debug)]
pub struct Error(pub String);

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for Error {}

fn err<T>(msg: impl Into<String>) -> Result<T, Error> {
    Err(Error(msg.into()))
}

/// A row-major matrix: `rows` outputs, each the dot product of a row with the input.
#[derive(Clone, Debug)]
pub struct Mat {
    pub rows: usize,
    pub cols: usize,
    pub w: Vec<f64>,
}

impl Mat {
    fn new(rows: usize, cols: usize, w: Vec<f64>) -> Mat {
        assert_eq!(w.len(), rows * cols);
        Mat { rows, cols, w }
    }

    pub fn row(&self, r: usize) -> &[f64] {
        &self.w[r * self.cols..(r + 1) * self.cols]
    }

    /// out = W x.
    fn apply(&self, x: &[f64], out: &mut [f64]) {
        debug_assert_eq!(x.len(), self.cols);
        debug_assert_eq!(out.len(), self.rows);
        for (o, row) in out.iter_mut().zip(self.w.chunks_exact(self.cols)) {
            *o = row.iter().zip(x).map(|(a, b)| a * b).sum();
        }
    }
}

#[derive(Clone, Debug)]
pub struct Layer {
    pub rms_att: Vec<f64>,
    pub wq: Mat,
    pub wk: Mat,
    pub wv: Mat,
    pub wo: Mat,
    pub rms_ffn: Vec<f64>,
    pub w1: Mat,
    pub w2: Mat,
    pub w3: Mat,
}

#[derive(Clone, Debug)]
pub struct Model {
    pub shape: Shape,
    pub embedding: Mat,
    pub classifier: Mat,
    pub layers: Vec<Layer>,
    pub rms_final: Vec<f64>,
}

/// Reads consecutive little-endian f32 values from the checkpoint.
struct Floats<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl Floats<'_> {
    fn take(&mut self, what: &str, n: usize) -> Result<Vec<f64>, Error> {
        let end = self.at + 4 * n;
        if end > self.bytes.len() {
            return err(format!(
                "checkpoint ends inside {what}: needs {end} bytes, has {}",
                self.bytes.len()
            ));
        }
        let v = self.bytes[self.at..end]
            .chunks_exact(4)
            .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]) as f64)
            .collect();
        self.at = end;
        Ok(v)
    }
}

/// Splits `layers` consecutive matrices of rows × cols.
fn per_layer(all: Vec<f64>, layers: usize, rows: usize, cols: usize) -> Vec<Mat> {
    all.chunks_exact(rows * cols)
        .take(layers)
        .map(|c| Mat::new(rows, cols, c.to_vec()))
        .collect()
}

fn per_layer_vec(all: Vec<f64>, layers: usize, n: usize) -> Vec<Vec<f64>> {
    all.chunks_exact(n)
        .take(layers)
        .map(|c| c.to_vec())
        .collect()
}

impl Model {
    /// The float model as run.c maps it from the checkpoint file.
    pub fn from_checkpoint(bytes: &[u8]) -> Result<Model, Error> {
        if bytes.len() < HEADER_LEN {
            return err(format!("checkpoint of {} bytes has no header", bytes.len()));
        }
        let field = |i: usize| {
            i32::from_le_bytes([
                bytes[4 * i],
                bytes[4 * i + 1],
                bytes[4 * i + 2],
                bytes[4 * i + 3],
            ])
        };
        let fields: Vec<i32> = (0..7).map(field).collect();
        for (i, &f) in fields.iter().enumerate() {
            if i != 5 && f <= 0 {
                return err(format!("header field {i} is {f}"));
            }
        }
        if fields[5] == 0 {
            return err("vocabulary 0");
        }
        let shape = Shape {
            dim: fields[0] as usize,
            hidden: fields[1] as usize,
            layers: fields[2] as usize,
            heads: fields[3] as usize,
            kv_heads: fields[4] as usize,
            vocab: fields[5].unsigned_abs() as usize,
            seq_len: fields[6] as usize,
            tied: fields[5] > 0,
        };
        if !shape.dim.is_multiple_of(shape.heads)
            || !shape.heads.is_multiple_of(shape.kv_heads)
            || !shape.head_size().is_multiple_of(2)
        {
            return err(format!("unsupported shape {shape:?}"));
        }
        let (d, h, l, v, k) = (
            shape.dim,
            shape.hidden,
            shape.layers,
            shape.vocab,
            shape.kv_dim(),
        );
        let mut f = Floats {
            bytes,
            at: HEADER_LEN,
        };
        let embedding = Mat::new(v, d, f.take("the embedding", v * d)?);
        let rms_att = per_layer_vec(f.take("rms_att", l * d)?, l, d);
        let wq = per_layer(f.take("wq", l * d * d)?, l, d, d);
        let wk = per_layer(f.take("wk", l * k * d)?, l, k, d);
        let wv = per_layer(f.take("wv", l * k * d)?, l, k, d);
        let wo = per_layer(f.take("wo", l * d * d)?, l, d, d);
        let rms_ffn = per_layer_vec(f.take("rms_ffn", l * d)?, l, d);
        let w1 = per_layer(f.take("w1", l * h * d)?, l, h, d);
        let w2 = per_layer(f.take("w2", l * d * h)?, l, d, h);
        let w3 = per_layer(f.take("w3", l * h * d)?, l, h, d);
        let rms_final = f.take("rms_final", d)?;
        // freq_cis_real and freq_cis_imag: context × head size / 2 floats each, not used.
        f.take("the rotary floats", shape.seq_len * shape.head_size())?;
        let classifier = if shape.tied {
            embedding.clone()
        } else {
            Mat::new(v, d, f.take("the classifier", v * d)?)
        };
        if f.at != bytes.len() {
            return err(format!(
                "checkpoint has {} bytes after its last tensor",
                bytes.len() - f.at
            ));
        }
        let mut layers = Vec::with_capacity(l);
        let mut iters = (
            rms_att.into_iter(),
            wq.into_iter(),
            wk.into_iter(),
            wv.into_iter(),
            wo.into_iter(),
            rms_ffn.into_iter(),
            w1.into_iter(),
            w2.into_iter(),
            w3.into_iter(),
        );
        for _ in 0..l {
            layers.push(Layer {
                rms_att: iters.0.next().unwrap(),
                wq: iters.1.next().unwrap(),
                wk: iters.2.next().unwrap(),
                wv: iters.3.next().unwrap(),
                wo: iters.4.next().unwrap(),
                rms_ffn: iters.5.next().unwrap(),
                w1: iters.6.next().unwrap(),
                w2: iters.7.next().unwrap(),
                w3: iters.8.next().unwrap(),
            });
        }
        Ok(Model {
            shape,
            embedding,
            classifier,
            layers,
            rms_final,
        })
    }

    /// The float model with every matrix replaced by the artifact's dequantized int8 rows
    /// (matrix i per the spec's tensor order); normalization weights from the checkpoint.
    pub fn weights_only(checkpoint: &[u8], artifact: &[u8]) -> Result<Model, Error> {
        let mut model = Model::from_checkpoint(checkpoint)?;
        let a = curta_core::decode(artifact).map_err(|e| Error(format!("artifact: {e}")))?;
        let count = a.metadata().matrix_count();
        if count != 2 + 7 * model.shape.layers {
            return err(format!("artifact has {count} matrices"));
        }
        let dequantized = |i: usize, like: &Mat| -> Result<Mat, Error> {
            let m = a.matrix(i);
            let (rows, cols) = (m.descriptor.rows as usize, m.descriptor.columns as usize);
            if (rows, cols) != (like.rows, like.cols) {
                return err(format!(
                    "matrix {i} is {rows} × {cols}, the checkpoint's {} × {}",
                    like.rows, like.cols
                ));
            }
            let mut w = Vec::with_capacity(rows * cols);
            for r in 0..rows {
                let row = m.row(r as u32);
                let scale = row.scale as f64 / 16_777_216.0;
                w.extend(row.weights.iter().map(|&b| (b as f64 - 128.0) * scale));
            }
            Ok(Mat::new(rows, cols, w))
        };
        model.embedding = dequantized(0, &model.embedding)?;
        model.classifier = dequantized(1, &model.classifier)?;
        for l in 0..model.shape.layers {
            let base = 2 + 7 * l;
            let layer = &mut model.layers[l];
            layer.wq = dequantized(base, &layer.wq)?;
            layer.wk = dequantized(base + 1, &layer.wk)?;
            layer.wv = dequantized(base + 2, &layer.wv)?;
            layer.wo = dequantized(base + 3, &layer.wo)?;
            layer.w1 = dequantized(base + 4, &layer.w1)?;
            layer.w2 = dequantized(base + 5, &layer.w2)?;
            layer.w3 = dequantized(base + 6, &layer.w3)?;
        }
        Ok(model)
    }

    pub fn state(&self) -> State {
        let s = &self.shape;
        State {
            key: vec![vec![0.0; s.seq_len * s.kv_dim()]; s.layers],
            value: vec![vec![0.0; s.seq_len * s.kv_dim()]; s.layers],
        }
    }

    /// run.c's `forward(token, pos)` in f64: the logits after `token` at `pos`, the key and
    /// value cache of positions 0..pos taken from `state` (filled by the earlier calls).
    pub fn forward(&self, state: &mut State, token: usize, pos: usize) -> Vec<f64> {
        let s = &self.shape;
        assert!(token < s.vocab && pos < s.seq_len, "token {token} at {pos}");
        let (d, hs, kv) = (s.dim, s.head_size(), s.kv_dim());
        let group = s.heads / s.kv_heads;
        let mut x = self.embedding.row(token).to_vec();
        let mut xb = vec![0.0; d];
        let mut q = vec![0.0; d];
        let mut k = vec![0.0; kv];
        let mut v = vec![0.0; kv];
        let mut att_out = vec![0.0; d];
        let mut proj = vec![0.0; d];
        let mut gate = vec![0.0; s.hidden];
        let mut up = vec![0.0; s.hidden];
        let mut scores = vec![0.0; pos + 1];
        let inv_sqrt = 1.0 / (hs as f64).sqrt();
        for (l, layer) in self.layers.iter().enumerate() {
            rmsnorm(&mut xb, &x, &layer.rms_att);
            layer.wq.apply(&xb, &mut q);
            layer.wk.apply(&xb, &mut k);
            layer.wv.apply(&xb, &mut v);
            // RoPE: pair (2j, 2j + 1) of every head turns by pos / 10000^(2j / head size);
            // the key has kv_dim values, so only its first kv_heads heads turn.
            for head_start in (0..d).step_by(hs) {
                for j in 0..hs / 2 {
                    let angle = pos as f64 / 10000f64.powf((2 * j) as f64 / hs as f64);
                    let (sin, cos) = angle.sin_cos();
                    let i = head_start + 2 * j;
                    rotate(&mut q[i..i + 2], cos, sin);
                    if i < kv {
                        rotate(&mut k[i..i + 2], cos, sin);
                    }
                }
            }
            state.key[l][pos * kv..(pos + 1) * kv].copy_from_slice(&k);
            state.value[l][pos * kv..(pos + 1) * kv].copy_from_slice(&v);
            for h in 0..s.heads {
                let qh = &q[h * hs..(h + 1) * hs];
                let kv_off = (h / group) * hs;
                for (t, score) in scores.iter_mut().enumerate() {
                    let kt = &state.key[l][t * kv + kv_off..t * kv + kv_off + hs];
                    *score = qh.iter().zip(kt).map(|(a, b)| a * b).sum::<f64>() * inv_sqrt;
                }
                softmax(&mut scores);
                let out = &mut att_out[h * hs..(h + 1) * hs];
                out.fill(0.0);
                for (t, &a) in scores.iter().enumerate() {
                    let vt = &state.value[l][t * kv + kv_off..t * kv + kv_off + hs];
                    for (o, &val) in out.iter_mut().zip(vt) {
                        *o += a * val;
                    }
                }
            }
            layer.wo.apply(&att_out, &mut proj);
            for (xi, p) in x.iter_mut().zip(&proj) {
                *xi += p;
            }
            rmsnorm(&mut xb, &x, &layer.rms_ffn);
            layer.w1.apply(&xb, &mut gate);
            layer.w3.apply(&xb, &mut up);
            for (g, u) in gate.iter_mut().zip(&up) {
                *g = *g / (1.0 + (-*g).exp()) * u;
            }
            layer.w2.apply(&gate, &mut proj);
            for (xi, p) in x.iter_mut().zip(&proj) {
                *xi += p;
            }
        }
        let mut normed = vec![0.0; d];
        rmsnorm(&mut normed, &x, &self.rms_final);
        let mut logits = vec![0.0; s.vocab];
        self.classifier.apply(&normed, &mut logits);
        logits
    }

    /// Teacher-forced scoring of `tokens`: for each position but the last, the argmax of the
    /// logits and the log-probability of the next token.
    pub fn score(&self, tokens: &[u32]) -> Vec<Scored> {
        let mut state = self.state();
        (0..tokens.len().saturating_sub(1))
            .map(|pos| {
                let logits = self.forward(&mut state, tokens[pos] as usize, pos);
                Scored {
                    argmax: argmax(&logits),
                    logprob: log_softmax_at(&logits, tokens[pos + 1] as usize),
                }
            })
            .collect()
    }

    /// Samples from token 1 as run.c does by default (temperature, then the top-p nucleus:
    /// the most probable tokens whose mass first exceeds `top_p`, drawn in proportion) until
    /// token 1 or 2 comes out (kept) or the sequence holds `max_len` tokens. Returns the
    /// sequence, token 1 first, and the teacher-forced scores of it (the logits sampling
    /// computed, before the temperature), one per token after the first.
    pub fn sample(
        &self,
        rng: &mut Rng,
        max_len: usize,
        temperature: f64,
        top_p: f64,
    ) -> (Vec<u32>, Vec<Scored>) {
        let mut state = self.state();
        let mut tokens = vec![1u32];
        let mut logits_seen = Vec::new();
        let max_len = max_len.min(self.shape.seq_len + 1);
        while tokens.len() < max_len {
            let pos = tokens.len() - 1;
            let logits = self.forward(&mut state, tokens[pos] as usize, pos);
            let mut probs: Vec<f64> = logits.iter().map(|l| l / temperature).collect();
            softmax(&mut probs);
            let mut order: Vec<usize> = (0..probs.len()).collect();
            order.sort_by(|&a, &b| probs[b].total_cmp(&probs[a]).then(a.cmp(&b)));
            let (mut kept, mut mass) = (0, 0.0);
            for &i in &order {
                mass += probs[i];
                kept += 1;
                if mass > top_p {
                    break;
                }
            }
            let coin = rng.unit() * mass;
            let mut cdf = 0.0;
            let mut next = order[kept - 1];
            for &i in &order[..kept] {
                cdf += probs[i];
                if coin < cdf {
                    next = i;
                    break;
                }
            }
            tokens.push(next as u32);
            logits_seen.push(logits);
            if next == 1 || next == 2 {
                break;
            }
        }
        let scores = logits_seen
            .iter()
            .zip(&tokens[1..])
            .map(|(logits, &next)| Scored {
                argmax: argmax(logits),
                logprob: log_softmax_at(logits, next as usize),
            })
            .collect();
        (tokens, scores)
    }

    /// Greedy generation after `prompt`: up to `steps` tokens, ending after token 1 or 2.
    pub fn greedy(&self, prompt: &[u32], steps: usize) -> Vec<u32> {
        assert!(!prompt.is_empty());
        let mut state = self.state();
        let mut seq = prompt.to_vec();
        let mut out = Vec::new();
        let mut pos = 0;
        while out.len() < steps && pos < self.shape.seq_len {
            let logits = self.forward(&mut state, seq[pos] as usize, pos);
            pos += 1;
            if pos < seq.len() {
                continue; // still reading the prompt
            }
            let next = argmax(&logits) as u32;
            out.push(next);
            seq.push(next);
            if next == 1 || next == 2 {
                break;
            }
        }
        out
    }
}

/// The reference's key and value cache: per layer, seq_len × kv_dim.
pub struct State {
    key: Vec<Vec<f64>>,
    value: Vec<Vec<f64>>,
}

#[derive(Clone, Copy, Debug)]
pub struct Scored {
    pub argmax: usize,
    pub logprob: f64,
}

fn rotate(pair: &mut [f64], cos: f64, sin: f64) {
    let (a, b) = (pair[0], pair[1]);
    pair[0] = a * cos - b * sin;
    pair[1] = a * sin + b * cos;
}

fn rmsnorm(out: &mut [f64], x: &[f64], weight: &[f64]) {
    let ms = x.iter().map(|v| v * v).sum::<f64>() / x.len() as f64;
    let inv = 1.0 / (ms + EPS).sqrt();
    for ((o, xi), w) in out.iter_mut().zip(x).zip(weight) {
        *o = w * (inv * xi);
    }
}

pub fn softmax(x: &mut [f64]) {
    let max = x.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let mut sum = 0.0;
    for v in x.iter_mut() {
        *v = (*v - max).exp();
        sum += *v;
    }
    for v in x.iter_mut() {
        *v /= sum;
    }
}

/// ln softmax(logits)[target], computed stably.
pub fn log_softmax_at(logits: &[f64], target: usize) -> f64 {
    let max = logits.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let sum: f64 = logits.iter().map(|l| (l - max).exp()).sum();
    logits[target] - max - sum.ln()
}

/// The first index of the largest value.
pub fn argmax(x: &[f64]) -> usize {
    let mut best = 0;
    for (i, &v) in x.iter().enumerate() {
        if v > x[best] {
            best = i;
        }
    }
    best
}

/// exp(-mean log p).
pub fn perplexity(logprobs: impl IntoIterator<Item = f64>) -> f64 {
    let (mut sum, mut n) = (0.0, 0usize);
    for lp in logprobs {
        sum += lp;
        n += 1;
    }
    (-sum / n as f64).exp()
}

/// xorshift64* (Vigna): the reference's own seeded generator.
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        // A zero state would stay zero.
        Rng(seed ^ 0x2545_f491_4f6c_dd1d | 1)
    }

    pub fn next_u64(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    /// Uniform in [0, 1), 53 random bits.
    pub fn unit(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }
}
