//! Running a model off chain, from a local artifact or a sealed model read from a cluster
//! (`model::sealed`): generation with streamed pieces, and teacher-forced scoring
//! (perplexity). The arithmetic is curta-core's (docs/inference.md).

use crate::artifact::hex;
use curta_core::infer::{
    decode, state_len, Model, Piece, Progress, Run, RunError, Settings, Status,
};
use curta_core::Artifact;
use std::time::Instant;

/// What a generation produced.
#[derive(Clone, Debug, serde::Serialize)]
pub struct Generation {
    pub prompt_tokens: Vec<u32>,
    /// The generated ids only (the last may be 1 or 2).
    pub tokens: Vec<u32>,
    /// The pieces' bytes as UTF-8 (invalid sequences replaced).
    pub text: String,
    pub tokens_per_second: f64,
    pub weights_hash: String,
    #[serde(skip)]
    pub end: Status,
    #[serde(skip)]
    pub seconds: f64,
}

/// At most `steps` tokens after `prompt`; each generated token's id and text bytes go to
/// `on_token` as soon as it exists. A matrix stage's rows are split across up to `threads`
/// threads (the same tokens for any count). Refused before any work when the run is invalid.
pub fn generate(
    artifact: &Artifact,
    prompt: &[u32],
    steps: u32,
    settings: Settings,
    threads: usize,
    mut on_token: impl FnMut(u32, &[u8]),
) -> Result<Generation, RunError> {
    let model = Model::from_artifact(artifact)?;
    let meta = model.metadata();
    let mut state = vec![0u8; state_len(&model.config())];
    // The kernel set's one-time known-answer check runs before the clock starts, as the other
    // engines' setup does.
    curta_core::infer::Path::detect();
    let start = Instant::now();
    let mut run = Run::start(&mut state, &model, prompt, steps, settings)?.with_threads(threads);
    let mut tokens = Vec::new();
    let mut text = Vec::new();
    let mut previous = *prompt.last().unwrap_or(&0);
    let end = loop {
        let progress = run.advance(&model, u64::MAX)?;
        match progress {
            Progress::Token { id, .. } => {
                let piece = decode(meta, previous, id)?;
                on_token(id, piece.bytes());
                text.extend_from_slice(piece.bytes());
                tokens.push(id);
                previous = id;
            }
            Progress::Finished(status) => break status,
            Progress::Working | Progress::Scored { .. } => {}
        }
    };
    let seconds = start.elapsed().as_secs_f64();
    Ok(Generation {
        prompt_tokens: prompt.to_vec(),
        tokens_per_second: tokens.len() as f64 / seconds.max(1e-9),
        tokens,
        text: String::from_utf8_lossy(&text).into_owned(),
        weights_hash: hex(&curta_core::weights_hash(artifact.sections())),
        end,
        seconds,
    })
}

/// Teacher-forced evaluation: per predicted position, the argmax id and the negative
/// log-likelihood of the next token (from the integer logits, in f64: a measurement).
#[derive(Clone, Debug, serde::Serialize)]
pub struct Perplexity {
    pub tokens: usize,
    pub argmax: Vec<u32>,
    pub nll: Vec<f64>,
    pub mean_nll: f64,
    pub perplexity: f64,
}

/// −log softmax(logits)[next], the logits with 16 fractional bits.
fn nll(run: &Run, vocab: u32, next: u32) -> f64 {
    let logit = |i: u32| run.logit(i) as f64 / 65_536.0;
    let max = (0..vocab).map(logit).fold(f64::MIN, f64::max);
    let sum: f64 = (0..vocab).map(|i| (logit(i) - max).exp()).sum();
    max + sum.ln() - logit(next)
}

/// Scores `tokens` (at least 2). A sequence longer than the context is cut into windows of
/// the context's length, each after the first starting at the previous one's last token, so
/// that every token but the first is predicted once: n − 1 predictions in all.
pub fn perplexity(artifact: &Artifact, tokens: &[u32]) -> Result<Perplexity, RunError> {
    let model = Model::from_artifact(artifact)?;
    let c = model.config();
    if tokens.len() < 2 {
        return Err(RunError::ScoreTooShort {
            tokens: tokens.len(),
        });
    }
    let mut state = vec![0u8; state_len(&c)];
    let (mut argmax, mut nlls) = (Vec::new(), Vec::new());
    let window = c.context_length.max(2) as usize;
    let mut start = 0;
    while start + 1 < tokens.len() {
        let end = (start + window).min(tokens.len());
        let span = &tokens[start..end];
        let mut run = Run::score(&mut state, &model, span).map_err(|e| match e {
            RunError::TokenOutOfRange { index, id, vocab } => RunError::TokenOutOfRange {
                index: start + index,
                id,
                vocab,
            },
            e => e,
        })?;
        loop {
            match run.advance(&model, u64::MAX)? {
                Progress::Scored { pos, argmax: best } => {
                    argmax.push(best);
                    nlls.push(nll(&run, c.vocab_size, span[pos as usize + 1]));
                }
                Progress::Finished(_) => break,
                Progress::Working | Progress::Token { .. } => {}
            }
        }
        start = end - 1;
    }
    let mean = nlls.iter().sum::<f64>() / nlls.len() as f64;
    Ok(Perplexity {
        tokens: tokens.len(),
        argmax,
        nll: nlls,
        mean_nll: mean,
        perplexity: mean.exp(),
    })
}

/// The text of `tokens` after `previous`, piece by piece (for reports).
pub fn detokenize(artifact: &Artifact, previous: u32, tokens: &[u32]) -> Result<Vec<u8>, RunError> {
    let mut out = Vec::new();
    let mut p = previous;
    for &t in tokens {
        let piece: Piece = decode(artifact.metadata(), p, t)?;
        out.extend_from_slice(piece.bytes());
        p = t;
    }
    Ok(out)
}
