//! A run over its state buffer: start it (a prompt to continue, or tokens to score), then
//! advance it by bounded work until it ends. Every token's work is a fixed list of stages, each
//! of a fixed number of items (docs/inference.md, "Stages"); the state records the next item,
//! and an advance does whole items only, so any split of the work into advances gives the same
//! state bytes and the same tokens as one advance.

use super::forward::{attention_heads, embed, rmsnorm, rotary, write_rows, Input, Scratch, Write};
#[cfg(not(target_os = "solana"))]
use super::forward::{write_products, Path, Product};
use super::sample::{cut, draw_part, max_part, weigh_part, Settings, MAX_TEMPERATURE, ONE};
use super::state::{
    field, get, get_u32, set_u32, word, zero, Mode, StateLayout, Status, CACHE_OFFSET, HIST_LEN,
    STATE_HEADER_LEN, STATE_TAG,
};
use super::tokenizer::{BOS, EOS};
use super::{Model, Rows, RunError};
use crate::le::{put_u32, put_u64, u32_at, u64_at};
use crate::{Block, Config, MatrixKind};

/// Stages per layer.
const LAYER_STAGES: u32 = 10;
/// Stages after the layers: the final normalization, the classifier and the four of sampling.
const END_STAGES: u32 = 6;

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
}

/// What an advance reached.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Progress {
    /// The budget is spent; the run goes on.
    Working,
    /// A generated token, at position `pos` of the sequence.
    Token { pos: u32, id: u32 },
    /// Teacher forcing: the logits of position `pos` are in the state (until the next
    /// advance), their highest at `argmax`.
    Scored { pos: u32, argmax: u32 },
    /// The run has ended: by token 1 or 2, or its steps done, or every position scored.
    Finished(Status),
}

/// A run in its state buffer.
pub struct Run<'s> {
    state: &'s mut [u8],
    layout: StateLayout,
    config: Config,
    /// The kernel set and the threads of a matrix stage (off chain; not part of the state:
    /// every choice gives the same bytes).
    #[cfg(not(target_os = "solana"))]
    path: Path,
    #[cfg(not(target_os = "solana"))]
    threads: usize,
}

fn check_tokens(tokens: &[u32], vocab: u32) -> Result<(), RunError> {
    match tokens.iter().position(|&t| t >= vocab) {
        Some(index) => Err(RunError::TokenOutOfRange {
            index,
            id: tokens[index],
            vocab,
        }),
        None => Ok(()),
    }
}

/// The model's configuration and state layout, and the first `layout.len` bytes of `state`
/// (`StateTooSmall` when it is shorter).
fn sized<'s>(
    state: &'s mut [u8],
    model: &Model,
) -> Result<(Config, StateLayout, &'s mut [u8]), RunError> {
    let config = model.config();
    let layout = StateLayout::new(&config);
    if state.len() < layout.len {
        return Err(RunError::StateTooSmall {
            len: state.len(),
            needed: layout.len,
        });
    }
    Ok((config, layout, &mut state[..layout.len]))
}

impl Settings {
    /// The ranges of docs/inference.md: temperature 0 to 16, top-p above 0 up to 1, a seed
    /// other than 0 when sampling.
    pub fn validate(&self) -> Result<(), RunError> {
        if self.temperature > MAX_TEMPERATURE {
            return Err(RunError::Temperature {
                value: self.temperature,
            });
        }
        if self.top_p == 0 || self.top_p > ONE {
            return Err(RunError::TopP { value: self.top_p });
        }
        if self.temperature != 0 && self.seed == 0 {
            return Err(RunError::SeedZero);
        }
        Ok(())
    }
}

impl<'s> Run<'s> {
    fn init(
        state: &'s mut [u8],
        model: &Model,
        tokens: &[u32],
        mode: Mode,
        steps: u32,
        settings: &Settings,
    ) -> Result<Run<'s>, RunError> {
        let (config, layout, state) = sized(state, model)?;
        super::state::zero(state);
        state[..8].copy_from_slice(&STATE_TAG);
        for (i, f) in config.fields().into_iter().enumerate() {
            put_u32(state, field::CONFIG + 4 * i, f);
        }
        put_u32(state, field::PROMPT_LEN, tokens.len() as u32);
        put_u32(state, field::STEPS, steps);
        put_u32(state, field::MODE, mode as u32);
        put_u32(state, field::TEMPERATURE, settings.temperature);
        put_u32(state, field::TOP_P, settings.top_p);
        put_u64(state, field::RNG, settings.seed);
        for (i, &t) in tokens.iter().enumerate() {
            put_u32(state, layout.tokens + 4 * i, t);
        }
        Ok(Run {
            state,
            layout,
            config,
            #[cfg(not(target_os = "solana"))]
            path: Path::detect(),
            #[cfg(not(target_os = "solana"))]
            threads: 1,
        })
    }

    /// A run that continues `prompt` by up to `steps` tokens. Refused before any work: an
    /// empty prompt, a token outside the vocabulary, a prompt longer than the context, steps
    /// of 0 or past the context (the last generated token is never fed back, so prompt +
    /// steps − 1 positions must fit), settings out of range, a buffer too small.
    pub fn start(
        state: &'s mut [u8],
        model: &Model,
        prompt: &[u32],
        steps: u32,
        settings: Settings,
    ) -> Result<Run<'s>, RunError> {
        let c = model.config();
        if prompt.is_empty() {
            return Err(RunError::EmptyPrompt);
        }
        check_tokens(prompt, c.vocab_size)?;
        if prompt.len() > c.context_length as usize {
            return Err(RunError::PromptTooLong {
                tokens: prompt.len(),
                context: c.context_length,
            });
        }
        if steps == 0 {
            return Err(RunError::NoSteps);
        }
        if prompt.len() as u64 + steps as u64 - 1 > c.context_length as u64 {
            return Err(RunError::StepsPastContext {
                steps,
                prompt: prompt.len() as u32,
                context: c.context_length,
            });
        }
        settings.validate()?;
        Run::init(state, model, prompt, Mode::Generate, steps, &settings)
    }

    /// Teacher forcing over `tokens` (2 up to the context): the logits of every position but
    /// the last.
    pub fn score(state: &'s mut [u8], model: &Model, tokens: &[u32]) -> Result<Run<'s>, RunError> {
        let c = model.config();
        if tokens.len() < 2 {
            return Err(RunError::ScoreTooShort {
                tokens: tokens.len(),
            });
        }
        check_tokens(tokens, c.vocab_size)?;
        if tokens.len() > c.context_length as usize {
            return Err(RunError::PromptTooLong {
                tokens: tokens.len(),
                context: c.context_length,
            });
        }
        Run::init(state, model, tokens, Mode::Score, 0, &Settings::greedy())
    }

    /// A run resumed from its bytes: the tag, the model's configuration and every header
    /// field's range are checked, so that advancing cannot read outside the state.
    pub fn resume(state: &'s mut [u8], model: &Model) -> Result<Run<'s>, RunError> {
        let (config, layout, state) = sized(state, model)?;
        if state[..8] != STATE_TAG {
            return Err(RunError::NotAState);
        }
        let fields = config.fields();
        if (0..7).any(|i| u32_at(state, field::CONFIG + 4 * i) != fields[i]) {
            return Err(RunError::ModelMismatch);
        }
        let context = config.context_length as u64;
        let prompt = u32_at(state, field::PROMPT_LEN) as u64;
        let steps = u32_at(state, field::STEPS) as u64;
        let mode = u32_at(state, field::MODE) as u64;
        // Weigh, Cut and Draw, the last three, only in a run that samples with a temperature.
        let temperature = u32_at(state, field::TEMPERATURE);
        let sampling = mode == Mode::Generate as u64 && temperature != 0;
        let stage_count = 1 + LAYER_STAGES as u64 * config.layers as u64 + END_STAGES as u64
            - if sampling { 0 } else { 3 };
        let checks: [(&'static str, u64, u64); 8] = [
            ("mode", mode, 1),
            ("status", u32_at(state, field::STATUS) as u64, 2),
            ("prompt length", prompt, context),
            ("steps", steps, context + 1 - prompt.min(context)),
            ("generated", u32_at(state, field::GENERATED) as u64, steps),
            (
                "position",
                u32_at(state, field::POSITION) as u64,
                context - 1,
            ),
            ("stage", u32_at(state, field::STAGE) as u64, stage_count - 1),
            ("temperature", temperature as u64, MAX_TEMPERATURE as u64),
        ];
        for (field, value, max) in checks {
            if value > max {
                return Err(RunError::BadState { field, value, max });
            }
        }
        let mut run = Run {
            state,
            layout,
            config,
            #[cfg(not(target_os = "solana"))]
            path: Path::detect(),
            #[cfg(not(target_os = "solana"))]
            threads: 1,
        };
        let stage = run.stage();
        let item = u32_at(run.state, field::ITEM) as u64;
        let items = stage.items(&config) as u64;
        if item >= items {
            return Err(RunError::BadState {
                field: "item",
                value: item,
                max: items - 1,
            });
        }
        let top_p = u32_at(run.state, field::TOP_P);
        if top_p == 0 || top_p > ONE {
            return Err(RunError::TopP { value: top_p });
        }
        if prompt == 0 || (mode == Mode::Score as u64 && prompt < 2) {
            return Err(RunError::BadState {
                field: "prompt length",
                value: prompt,
                max: context,
            });
        }
        run.check_tokens_held()?;
        Ok(run)
    }

    /// Every token of the sequence so far is in the vocabulary.
    fn check_tokens_held(&mut self) -> Result<(), RunError> {
        // By chunks and word loads: every step runs this, over every position so far.
        let held = (self.prompt_len() + self.generated()) as usize;
        let tokens = &self.state[self.layout.tokens..self.layout.tokens + 4 * held];
        let vocab = self.config.vocab_size;
        match tokens.chunks_exact(4).position(|t| word(t) as u32 >= vocab) {
            None => Ok(()),
            Some(index) => Err(RunError::TokenOutOfRange {
                index,
                id: self.token(index as u32),
                vocab,
            }),
        }
    }

    /// The same run, its matrix stages' rows and its heads split across up to `threads`
    /// threads (std: the calling thread and the process's team of helpers; the default is 1,
    /// the calling thread). The same bytes for any count.
    #[cfg(not(target_os = "solana"))]
    pub fn with_threads(mut self, threads: usize) -> Run<'s> {
        self.threads = threads.max(1);
        #[cfg(feature = "std")]
        super::team::prepare(self.threads);
        self
    }

    /// The same run by the kernels of `path` (by default the widest this machine has; a path
    /// it lacks falls back to the widest it has). The same bytes for every path: for tests and
    /// benchmarks.
    #[cfg(not(target_os = "solana"))]
    pub fn with_path(mut self, path: Path) -> Run<'s> {
        self.path = path;
        self
    }

    /// The state's bytes.
    pub fn bytes(&self) -> &[u8] {
        self.state
    }

    pub fn status(&self) -> Status {
        match u32_at(self.state, field::STATUS) {
            0 => Status::Running,
            1 => Status::EndToken,
            _ => Status::Done,
        }
    }

    fn mode(&self) -> Mode {
        match u32_at(self.state, field::MODE) {
            0 => Mode::Generate,
            _ => Mode::Score,
        }
    }

    pub fn position(&self) -> u32 {
        u32_at(self.state, field::POSITION)
    }

    pub fn prompt_len(&self) -> u32 {
        u32_at(self.state, field::PROMPT_LEN)
    }

    pub fn generated(&self) -> u32 {
        u32_at(self.state, field::GENERATED)
    }

    /// Token `i` of the sequence (the prompt, then the generated tokens).
    pub fn token(&self, i: u32) -> u32 {
        u32_at(self.state, self.layout.tokens + 4 * i as usize)
    }

    /// Logit `id` of the last classifier, 16 fractional bits.
    pub fn logit(&self, id: u32) -> i32 {
        get(&self.state[self.layout.logits..], id as usize)
    }

    /// The section besides section zero that the next item reads, if it reads one.
    pub fn section_needed(&self) -> Option<usize> {
        if self.status() != Status::Running {
            return None;
        }
        self.stage().section(self.config.section_count() > 2)
    }

    fn stage(&self) -> Stage {
        // resume checked the code's range; every code below the count is a stage.
        Stage::of(u32_at(self.state, field::STAGE), self.config.layers).unwrap_or(Stage::Embed)
    }

    fn code(stage: Stage, layers: u32) -> u32 {
        let layer = |l: u32, k: u32| 1 + l * LAYER_STAGES + k;
        let end = 1 + layers * LAYER_STAGES;
        match stage {
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

    /// Advances by whole items while their work fits `budget` (at least one item), stopping
    /// early at a generated or scored token. Returns what it reached.
    pub fn advance(&mut self, model: &Model, budget: u64) -> Result<Progress, RunError> {
        self.advance_counted(model, budget).map(|(p, _)| p)
    }

    /// [`Run::advance`], and the work it did.
    pub fn advance_counted(
        &mut self,
        model: &Model,
        budget: u64,
    ) -> Result<(Progress, u64), RunError> {
        self.advance_by(model, budget, Stage::cost)
    }

    /// [`Run::advance_counted`] with the work of one item measured by `cost(stage, config,
    /// pos)` instead of [`Stage::cost`]: the program counts estimated compute units, so that a
    /// step's budget holds whatever stage it meets. The split changes, the bytes do not.
    ///
    /// A model that does not hold a section (a step given only some weight accounts) stops
    /// before the first item that reads it: `Progress::Working` after some work, and
    /// [`RunError::SectionMissing`] (nothing changed) when that is the next item.
    #[inline(always)]
    pub fn advance_by(
        &mut self,
        model: &Model,
        budget: u64,
        cost: impl Fn(Stage, &Config, u32) -> u64,
    ) -> Result<(Progress, u64), RunError> {
        let mut read = 0u32;
        self.advance_reading(model, budget, cost, &mut read)
    }

    /// [`Run::advance_by`], and the sections besides zero that its items read, one bit each
    /// (bit s for section s) added to `read`: what a step that does this work must carry.
    #[inline(always)]
    pub fn advance_reading(
        &mut self,
        model: &Model,
        budget: u64,
        cost: impl Fn(Stage, &Config, u32) -> u64,
        read: &mut u32,
    ) -> Result<(Progress, u64), RunError> {
        if model.config() != self.config {
            return Err(RunError::ModelMismatch);
        }
        let multi = self.config.section_count() > 2;
        let mut used = 0u64;
        let mut advanced = false;
        #[cfg(not(target_os = "solana"))]
        let mut scratch = Scratch::with(self.path, self.threads);
        #[cfg(target_os = "solana")]
        let mut scratch = Scratch::new();
        loop {
            let status = self.status();
            if status != Status::Running {
                return Ok((Progress::Finished(status), used));
            }
            let pos = self.position();
            let stage = self.stage();
            let item = u32_at(self.state, field::ITEM);
            let items = stage.items(&self.config);
            // Off chain a layer's query, key and value stages (one input, three matrices) run
            // as one split when the three fit the budget whole: the same bytes as in turn.
            #[cfg(not(target_os = "solana"))]
            if let (Stage::Query(layer), 0) = (stage, item) {
                let whole = |s: Stage| cost(s, &self.config, pos) * s.items(&self.config) as u64;
                let three: u64 = [stage, Stage::Key(layer), Stage::Value(layer)]
                    .map(whole)
                    .iter()
                    .sum();
                let section = stage.section(multi).unwrap_or(0);
                if three <= budget - used.min(budget) && model.holds(section) {
                    self.query_key_value(model, layer, pos, &mut scratch)?;
                    *read |= 1 << section;
                    advanced = true;
                    used += three;
                    if let Some(progress) = self.next_stage(Stage::Value(layer), pos) {
                        return Ok((progress, used));
                    }
                    continue;
                }
            }
            let cost = cost(stage, &self.config, pos);
            let room = (budget - used.min(budget)) / cost.max(1);
            let fit = match room.min((items - item) as u64) as u32 {
                0 if used == 0 => 1,
                n => n,
            };
            if fit == 0 {
                return Ok((Progress::Working, used));
            }
            if let Some(section) = stage.section(multi) {
                if !model.holds(section) {
                    if !advanced {
                        let matrix = stage.matrix().unwrap_or(0);
                        return Err(RunError::SectionMissing { section, matrix });
                    }
                    return Ok((Progress::Working, used));
                }
                *read |= 1 << section;
            }
            // The draw may end its stage before its last item, at the token drawn.
            let early = self.items(model, stage, pos, item..item + fit, &mut scratch)?;
            advanced = true;
            used += early.unwrap_or(fit) as u64 * cost;
            if early.is_none() && item + fit < items {
                put_u32(self.state, field::ITEM, item + fit);
                continue;
            }
            if let Some(progress) = self.next_stage(stage, pos) {
                return Ok((progress, used));
            }
        }
    }

    /// Layer `layer`'s query, key and value stages whole at `pos`, in one split of their rows
    /// (off chain): the bytes of the three stages in turn.
    #[cfg(not(target_os = "solana"))]
    fn query_key_value(
        &mut self,
        model: &Model,
        layer: u32,
        pos: u32,
        scratch: &mut Scratch,
    ) -> Result<(), RunError> {
        let (d, kv_dim) = (self.config.dim as usize, self.layout.kv_dim);
        let start = layer as usize * 4 * self.layout.cache_layer + 4 * pos as usize * kv_dim;
        let at_pos = start..start + 4 * kv_dim;
        let r = self.layout.split(self.state);
        let input = Input::new(r.xb, u64_at(r.header, field::XB_SUM) as i64, scratch);
        let [q, k, v] = [MatrixKind::Query, MatrixKind::Key, MatrixKind::Value]
            .map(|kind| layer_matrix(model, layer, kind).map(|m| [(m, Write::Set)]));
        let (q, k, v) = (q?, k?, v?);
        write_products(
            &mut [
                Product::new(&q, 0..d, &mut r.q[..4 * d]),
                Product::new(&k, 0..kv_dim, &mut r.keys[at_pos.clone()]),
                Product::new(&v, 0..kv_dim, &mut r.values[at_pos.clone()]),
            ],
            &input,
        );
        // As the value stage leaves its row: in the caches' offset binary.
        let value = &mut r.values[at_pos];
        for i in 0..kv_dim {
            set_u32(value, i, get_u32(value, i) ^ CACHE_OFFSET);
        }
        Ok(())
    }

    /// Items `range` of `stage` at `pos`; `Some(n)` when the stage ended after the first `n`
    /// of them (the draw reached its token). Inlined into its one caller: on SBF a
    /// call may pass at most five arguments in registers and return no aggregate.
    #[inline(always)]
    fn items(
        &mut self,
        model: &Model,
        stage: Stage,
        pos: u32,
        range: core::ops::Range<u32>,
        scratch: &mut Scratch,
    ) -> Result<Option<u32>, RunError> {
        let meta = model.metadata();
        let c = self.config;
        let d = c.dim as usize;
        let kv_dim = self.layout.kv_dim;
        let rows = range.start as usize..range.end as usize;
        let first = range.start == 0;
        let cache_layer = 4 * self.layout.cache_layer;
        let r = self.layout.split(self.state);
        let header = r.header;
        let xb_sum = u64_at(header, field::XB_SUM) as i64;
        let hb_sum = u64_at(header, field::HB_SUM) as i64;
        let matrix = |l: u32, kind: MatrixKind| layer_matrix(model, l, kind);
        // The layer's key and value caches, and the slice of position `pos` in them.
        let layer_cache = |l: u32| l as usize * cache_layer..(l as usize + 1) * cache_layer;
        let at_pos = |l: u32| {
            let start = l as usize * cache_layer + 4 * pos as usize * kv_dim;
            start..start + 4 * kv_dim
        };
        // The scratch's vector stays valid across the query, key and value stages only (they
        // read xb and write elsewhere).
        if !matches!(stage, Stage::Key(_) | Stage::Value(_)) {
            Input::forget(scratch);
        }
        match stage {
            Stage::Embed => {
                let token = get_u32(r.tokens, pos as usize);
                if token >= c.vocab_size {
                    return Err(RunError::TokenOutOfRange {
                        index: pos as usize,
                        id: token,
                        vocab: c.vocab_size,
                    });
                }
                embed(r.x, &model.rows(0)?, token as usize);
            }
            Stage::AttentionNorm(_) | Stage::FeedForwardNorm(_) | Stage::FinalNorm => {
                // Per layer the attention then the feed-forward coefficients, then the final.
                let coefficients = match stage {
                    Stage::AttentionNorm(l) => 2 * l as usize * d,
                    Stage::FeedForwardNorm(l) => (2 * l as usize + 1) * d,
                    _ => 2 * c.layers as usize * d,
                };
                let sum = rmsnorm(r.x, r.xb, meta, coefficients);
                put_u64(header, field::XB_SUM, sum as u64);
            }
            Stage::Query(layer) => {
                let m = matrix(layer, MatrixKind::Query)?;
                let input = Input::new(r.xb, xb_sum, scratch);
                write_rows(&m, rows, &input, r.q, Write::Set);
            }
            Stage::Key(layer) | Stage::Value(layer) => {
                let (kind, cache) = match stage {
                    Stage::Key(_) => (MatrixKind::Key, r.keys),
                    _ => (MatrixKind::Value, r.values),
                };
                let m = matrix(layer, kind)?;
                let input = Input::reuse(r.xb, xb_sum, scratch);
                let out = &mut cache[at_pos(layer)];
                write_rows(&m, rows.clone(), &input, out, Write::Set);
                // The value row into the caches' offset binary here, the key row once the
                // rotary stage has rotated it. (Not a kind of `Write`: one more in the row
                // kernels' loop cost native runs 5%.)
                if matches!(stage, Stage::Value(_)) {
                    for i in rows {
                        set_u32(out, i, get_u32(out, i) ^ CACHE_OFFSET);
                    }
                }
            }
            Stage::Rotary(layer) => rotary(r.q, &mut r.keys[at_pos(layer)], meta, pos),
            Stage::Attention(layer) => {
                let group = (c.heads / c.kv_heads) as usize;
                let keys = &r.keys[layer_cache(layer)];
                let values = &r.values[layer_cache(layer)];
                let start = if first { 0 } else { xb_sum };
                let sum = attention_heads(
                    meta, r.q, keys, values, group, pos, rows, r.att, r.xb, scratch,
                );
                put_u64(header, field::XB_SUM, (start + sum) as u64);
            }
            Stage::Output(layer) | Stage::Down(layer) => {
                let (m, input) = match stage {
                    Stage::Output(_) => (
                        matrix(layer, MatrixKind::AttentionOutput)?,
                        Input::new(r.xb, xb_sum, scratch),
                    ),
                    _ => (
                        matrix(layer, MatrixKind::FeedForwardDown)?,
                        Input::new(r.hb, hb_sum, scratch),
                    ),
                };
                write_rows(&m, rows, &input, r.x, Write::Add);
            }
            Stage::Hidden(layer) => {
                let gate = matrix(layer, MatrixKind::FeedForwardGate)?;
                let up = matrix(layer, MatrixKind::FeedForwardUp)?;
                let table = meta.block_bytes(Block::Silu);
                let input = Input::new(r.xb, xb_sum, scratch);
                let mut sum = if first { 0 } else { hb_sum };
                // The gate's rows, then the up rows over them (Write::Gate), then the sum.
                #[cfg(target_os = "solana")]
                {
                    write_rows(&gate, rows.clone(), &input, r.hb, Write::Set);
                    write_rows(&up, rows.clone(), &input, r.hb, Write::Gate(table));
                }
                #[cfg(not(target_os = "solana"))]
                {
                    let both = [(gate, Write::Set), (up, Write::Gate(table))];
                    let out = &mut r.hb[4 * rows.start..4 * rows.end];
                    write_products(&mut [Product::new(&both, rows.clone(), out)], &input);
                }
                for i in rows {
                    sum += get(r.hb, i) as i64;
                }
                put_u64(header, field::HB_SUM, sum as u64);
            }
            Stage::Classifier => {
                let m = model.rows(1)?;
                let input = Input::new(r.xb, xb_sum, scratch);
                write_rows(&m, rows, &input, r.logits, Write::Set);
            }
            Stage::Max | Stage::Weigh | Stage::Cut | Stage::Draw => {
                let exp = meta.block_bytes(Block::Exp);
                return Ok(sampling(stage, header, r.logits, r.hist, exp, rows));
            }
        }
        Ok(None)
    }

    /// Moves to the stage after `stage` (item 0); at the end of a token's work, to the next
    /// position. Returns the event a caller sees, if any.
    fn next_stage(&mut self, stage: Stage, pos: u32) -> Option<Progress> {
        let layers = self.config.layers;
        let last_layer = Stage::Down(layers - 1);
        let forced = self.mode() == Mode::Generate && pos + 1 < self.prompt_len();
        put_u32(self.state, field::ITEM, 0);
        if stage == last_layer && forced {
            self.next_position(pos);
            return None;
        }
        let sampling = self.mode() == Mode::Generate && u32_at(self.state, field::TEMPERATURE) != 0;
        let last = match stage {
            Stage::Max => !sampling,
            Stage::Draw => true,
            _ => false,
        };
        if !last {
            let code = Run::code(stage, layers) + 1;
            put_u32(self.state, field::STAGE, code);
            return None;
        }
        // The token is chosen: sampling's values between its items are cleared, and a run
        // that ends here stands at the first sampling stage (the state's bytes are those of
        // the one-item sampler).
        zero(&mut self.state[field::SAMPLE_MAX..STATE_HEADER_LEN]);
        put_u32(self.state, field::STAGE, Run::code(Stage::Max, layers));
        let chosen = u32_at(self.state, field::ARGMAX);
        match self.mode() {
            Mode::Score => {
                let last = pos + 2 == self.prompt_len();
                if last {
                    self.end(Status::Done);
                } else {
                    self.next_position(pos);
                }
                Some(Progress::Scored {
                    pos,
                    argmax: chosen,
                })
            }
            Mode::Generate => {
                let generated = self.generated() + 1;
                let at = pos + 1;
                put_u32(self.state, self.layout.tokens + 4 * at as usize, chosen);
                put_u32(self.state, field::GENERATED, generated);
                if chosen == BOS || chosen == EOS {
                    self.end(Status::EndToken);
                } else if generated == u32_at(self.state, field::STEPS) {
                    self.end(Status::Done);
                } else {
                    self.next_position(pos);
                }
                Some(Progress::Token {
                    pos: at,
                    id: chosen,
                })
            }
        }
    }

    fn next_position(&mut self, pos: u32) {
        put_u32(self.state, field::POSITION, pos + 1);
        put_u32(self.state, field::STAGE, 0);
    }

    fn end(&mut self, status: Status) {
        put_u32(self.state, field::STATUS, status as u32);
    }
}

/// Matrix `kind` of layer `l` (the artifact's matrices 2 + 7l onwards, in `MatrixKind::LAYER`'s
/// order).
#[inline(always)]
fn layer_matrix<'m>(model: &Model<'m>, l: u32, kind: MatrixKind) -> Result<Rows<'m>, RunError> {
    let k = MatrixKind::LAYER
        .iter()
        .position(|&m| m == kind)
        .unwrap_or(0);
    model.rows(2 + 7 * l as usize + k)
}

/// Items `ids` of a sampling stage (docs/inference.md, "Sampling in items"), its values between
/// items in the header's words (word loads on chain: the header is 8-byte aligned); `Some(n)`
/// when the draw reached its token at the n-th id of the range.
#[inline(always)]
fn sampling(
    stage: Stage,
    header: &mut [u8],
    logits: &[u8],
    hist: &mut [u8],
    exp: &[u8],
    ids: core::ops::Range<usize>,
) -> Option<u32> {
    let at = |h: &[u8], offset: usize| get_u32(h, offset / 4);
    let at64 = |h: &[u8], offset: usize| at(h, offset) as u64 | (at(h, offset + 4) as u64) << 32;
    let put = |h: &mut [u8], offset: usize, v: u32| set_u32(h, offset / 4, v);
    let put64 = |h: &mut [u8], offset: usize, v: u64| {
        put(h, offset, v as u32);
        put(h, offset + 4, (v >> 32) as u32);
    };
    let first = ids.start == 0;
    let max = at(header, field::SAMPLE_MAX) as i32;
    let temperature = at(header, field::TEMPERATURE);
    match stage {
        Stage::Max => {
            let mut best = match first {
                true => (0, i32::MIN),
                false => (at(header, field::ARGMAX), max),
            };
            max_part(logits, ids, &mut best);
            put(header, field::ARGMAX, best.0);
            put(header, field::SAMPLE_MAX, best.1 as u32);
        }
        Stage::Weigh => {
            let mut total = match first {
                true => {
                    zero(hist);
                    0
                }
                false => at64(header, field::SAMPLE_LEFT),
            };
            weigh_part(logits, ids, hist, exp, max, temperature, &mut total);
            put64(header, field::SAMPLE_LEFT, total);
        }
        Stage::Cut => {
            let total = at64(header, field::SAMPLE_LEFT);
            let mut rng = at64(header, field::RNG);
            let nucleus = cut(hist, exp, total, at(header, field::TOP_P), &mut rng);
            put64(header, field::RNG, rng);
            put(header, field::SAMPLE_CUT, nucleus.cut);
            put(header, field::SAMPLE_TAKE, nucleus.take);
            put64(header, field::SAMPLE_LEFT, nucleus.r);
        }
        _ => {
            let start = ids.start as u32;
            let cut = at(header, field::SAMPLE_CUT);
            let mut take = at(header, field::SAMPLE_TAKE);
            let mut left = at64(header, field::SAMPLE_LEFT);
            let drawn = draw_part(
                logits,
                ids,
                exp,
                max,
                temperature,
                cut,
                &mut take,
                &mut left,
            );
            put(header, field::SAMPLE_TAKE, take);
            put64(header, field::SAMPLE_LEFT, left);
            // Past the last id without a token (never: r is below the nucleus's weight, which
            // the walk sums), the highest logit's id stays chosen.
            if let Some(id) = drawn {
                put(header, field::ARGMAX, id);
                return Some(id - start + 1);
            }
        }
    }
    None
}
