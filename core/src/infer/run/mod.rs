//! A run over its state buffer: start it (a prompt to continue, or tokens to score), then
//! advance it by bounded work until it ends. Every token's work is a fixed list of stages, each
//! of a fixed number of items (docs/inference.md, "Stages"); the state records the next item,
//! and an advance does whole items only, so any split of the work into advances gives the same
//! state bytes and the same tokens as one advance.

mod advance;
mod sampling;
mod stage;

pub use stage::Stage;
use stage::{END_STAGES, LAYER_STAGES};

use super::backend::{Backend, Options, Target};
use super::forward::Path;
use super::sample::{Settings, MAX_TEMPERATURE, ONE};
use super::state::{
    field, get, word, zero, Mode, StateLayout, Status, STATE_HEADER_LEN, STATE_TAG,
};
use super::tokenizer::{BOS, EOS};
use super::{Model, RunError};
use crate::le::{put_u32, put_u64, u32_at};
use crate::Config;

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
    /// The backend's choices: the kernel set and the threads of a matrix stage (not part of
    /// the state: every choice gives the same bytes).
    options: Options,
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
            options: Target::options(),
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
            options: Target::options(),
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
    /// the calling thread; on chain there is one). The same bytes for any count.
    pub fn with_threads(mut self, threads: usize) -> Run<'s> {
        self.options = Target::with_threads(self.options, threads);
        self
    }

    /// The same run by the kernels of `path` (by default the widest this machine has; a path
    /// it lacks falls back to the widest it has). The same bytes for every path: for tests and
    /// benchmarks.
    pub fn with_path(mut self, path: Path) -> Run<'s> {
        self.options = Target::with_path(self.options, path);
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
            let code = stage.code(layers) + 1;
            put_u32(self.state, field::STAGE, code);
            return None;
        }
        // The token is chosen: sampling's values between its items are cleared, and a run
        // that ends here stands at the first sampling stage (the state's bytes are those of
        // the one-item sampler).
        zero(&mut self.state[field::SAMPLE_MAX..STATE_HEADER_LEN]);
        put_u32(self.state, field::STAGE, Stage::Max.code(layers));
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
