//! The stages of a token's work (docs/inference.md, "Stages"): their codes in the state, their
//! items, the sections and matrices they read and the work of an item.

use super::super::state::HIST_LEN;
use crate::Config;

/// Stages per layer.
pub(super) const LAYER_STAGES: u32 = 10;
/// Stages after the layers: the final normalization, the classifier and the four of sampling.
pub(super) const END_STAGES: u32 = 6;

/// One stage of a token's work.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stage {
    /// x = the token's embedding row (1 item).
    Embed,
    /// xb = rmsnorm(x), the layer's attention coefficients (1 item).
    AttentionNorm(u32),
    /// q = query × xb, a row per item.
    Query(u32),
    /// The key cache at this position = key × xb, a row per item.
    Key(u32),
    /// The value cache at this position = value × xb, a row per item.
    Value(u32),
    /// Rotary on q and the new key (1 item).
    Rotary(u32),
    /// xb = attention, a head per item.
    Attention(u32),
    /// x += attention output × xb, a row per item.
    Output(u32),
    /// xb = rmsnorm(x), the layer's feed-forward coefficients (1 item).
    FeedForwardNorm(u32),
    /// hb = SiLU(gate × xb) × (up × xb), a row of both per item.
    Hidden(u32),
    /// x += down × hb, a row per item.
    Down(u32),
    /// xb = rmsnorm(x), the final coefficients (1 item).
    FinalNorm,
    /// logits = classifier × xb, a row per item.
    Classifier,
    /// The highest logit, an id per item: the token when greedy or scoring.
    Max,
    /// Sampling with a temperature: each id's exponential-table index counted and its weight
    /// summed, an id per item.
    Weigh,
    /// The top-p nucleus from the counts, and the generator's draw (1 item).
    Cut,
    /// The walk of the nucleus in id order to the drawn token, an id per item; it ends at the
    /// token drawn.
    Draw,
}

impl Stage {
    /// Stage code `code`: 0 is Embed, 1 + 10l + k the k-th stage of layer l, then FinalNorm,
    /// Classifier, Max, Weigh, Cut and Draw.
    pub fn of(code: u32, layers: u32) -> Option<Stage> {
        if code == 0 {
            return Some(Stage::Embed);
        }
        let c = code - 1;
        if c < layers * LAYER_STAGES {
            let l = c / LAYER_STAGES;
            return Some(match c % LAYER_STAGES {
                0 => Stage::AttentionNorm(l),
                1 => Stage::Query(l),
                2 => Stage::Key(l),
                3 => Stage::Value(l),
                4 => Stage::Rotary(l),
                5 => Stage::Attention(l),
                6 => Stage::Output(l),
                7 => Stage::FeedForwardNorm(l),
                8 => Stage::Hidden(l),
                _ => Stage::Down(l),
            });
        }
        match c - layers * LAYER_STAGES {
            0 => Some(Stage::FinalNorm),
            1 => Some(Stage::Classifier),
            2 => Some(Stage::Max),
            3 => Some(Stage::Weigh),
            4 => Some(Stage::Cut),
            5 => Some(Stage::Draw),
            _ => None,
        }
    }

    /// Items of the stage.
    pub fn items(self, c: &Config) -> u32 {
        match self {
            Stage::Query(_) | Stage::Output(_) | Stage::Down(_) => c.dim,
            Stage::Key(_) | Stage::Value(_) => c.kv_dim(),
            Stage::Attention(_) => c.heads,
            Stage::Hidden(_) => c.hidden_dim,
            Stage::Classifier | Stage::Max | Stage::Weigh | Stage::Draw => c.vocab_size,
            _ => 1,
        }
    }

    /// The section besides section zero whose matrix the items of this stage read, if any: the
    /// spec's layout, section one for the vocabulary matrices (and every layer's in a
    /// two-section file, `multi` false), section 2 + l for layer l's seven.
    pub fn section(self, multi: bool) -> Option<usize> {
        match self {
            Stage::Embed | Stage::Classifier => Some(1),
            Stage::Query(l)
            | Stage::Key(l)
            | Stage::Value(l)
            | Stage::Output(l)
            | Stage::Hidden(l)
            | Stage::Down(l) => Some(if multi { 2 + l as usize } else { 1 }),
            _ => None,
        }
    }

    /// The first matrix the items of this stage read, if any (the spec's tensor order).
    pub fn matrix(self) -> Option<usize> {
        let layer = |l: u32, k: usize| Some(2 + 7 * l as usize + k);
        match self {
            Stage::Embed => Some(0),
            Stage::Classifier => Some(1),
            Stage::Query(l) => layer(l, 0),
            Stage::Key(l) => layer(l, 1),
            Stage::Value(l) => layer(l, 2),
            Stage::Output(l) => layer(l, 3),
            Stage::Hidden(l) => layer(l, 4),
            Stage::Down(l) => layer(l, 5),
            _ => None,
        }
    }

    /// The work of one item at `pos`, in multiply-accumulates (docs/inference.md, "Work").
    pub fn cost(self, c: &Config, pos: u32) -> u64 {
        let (d, h) = (c.dim as u64, c.hidden_dim as u64);
        match self {
            Stage::Embed | Stage::AttentionNorm(_) | Stage::FeedForwardNorm(_) => d,
            Stage::FinalNorm => d,
            Stage::Query(_) | Stage::Key(_) | Stage::Value(_) | Stage::Output(_) => d,
            Stage::Classifier => d,
            Stage::Rotary(_) => d + c.kv_dim() as u64,
            Stage::Attention(_) => 2 * (pos as u64 + 1) * c.head_size() as u64,
            Stage::Hidden(_) => 2 * d,
            Stage::Down(_) => h,
            Stage::Max | Stage::Weigh | Stage::Draw => 1,
            Stage::Cut => HIST_LEN as u64,
        }
    }

    /// The index of the normalization coefficients a normalization stage reads: per layer the
    /// attention then the feed-forward coefficients, then the final.
    #[inline(always)]
    pub fn coefficients(self, c: &Config) -> usize {
        let d = c.dim as usize;
        match self {
            Stage::AttentionNorm(l) => 2 * l as usize * d,
            Stage::FeedForwardNorm(l) => (2 * l as usize + 1) * d,
            _ => 2 * c.layers as usize * d,
        }
    }

    /// The stage's code in the state: [`Stage::of`]'s inverse.
    pub fn code(self, layers: u32) -> u32 {
        let layer = |l: u32, k: u32| 1 + l * LAYER_STAGES + k;
        let end = 1 + layers * LAYER_STAGES;
        match self {
            Stage::Embed => 0,
            Stage::AttentionNorm(l) => layer(l, 0),
            Stage::Query(l) => layer(l, 1),
            Stage::Key(l) => layer(l, 2),
            Stage::Value(l) => layer(l, 3),
            Stage::Rotary(l) => layer(l, 4),
            Stage::Attention(l) => layer(l, 5),
            Stage::Output(l) => layer(l, 6),
            Stage::FeedForwardNorm(l) => layer(l, 7),
            Stage::Hidden(l) => layer(l, 8),
            Stage::Down(l) => layer(l, 9),
            Stage::FinalNorm => end,
            Stage::Classifier => end + 1,
            Stage::Max => end + 2,
            Stage::Weigh => end + 3,
            Stage::Cut => end + 4,
            Stage::Draw => end + 5,
        }
    }
}
