//! The run account: one run of a sealed model, its state buffer (docs/inference.md) and the
//! text of its generated tokens. docs/program.md, "Run account", lists every byte.
//!
//! A run's state is larger than the 10 KiB a program may allocate through CPI (stories260K's is
//! 679,480 bytes), so the runner creates the account with `create_account_with_seed` at the
//! address of (runner, model, nonce), as weight accounts are created, and StartRun binds it.

use curta_core::infer::{state_len, Stage};
use curta_core::{Config, MAX_TOKEN_LEN};

use crate::error::CurtaError;
use crate::state::{same_address, Address};

/// The run header's length: the state starts here (8-byte aligned in the account's data).
pub const RUN_HEADER_LEN: usize = 128;
pub const RUN_MAGIC: [u8; 8] = *b"CURTARUN";
pub const RUN_VERSION: u8 = 1;
/// Text room per step of the budget: a token's piece is at most the longest token's bytes.
pub const TEXT_PER_STEP: usize = MAX_TOKEN_LEN;
/// The largest step budget, in estimated compute units ([`step_cost`]): every estimate is at or
/// above the VM's measure, and a step's fixed work (the checks, resuming the state) is under
/// 20,000 units, so a step stays under 1,200,000 (scripts/bench-cu measures it).
pub const MAX_STEP_BUDGET: u32 = 1_175_000;

/// Whether a run with these settings can always step: sampling (temperature above 0) is one
/// item over the whole vocabulary, so its estimate must fit a step's budget (stories260K's 512
/// tokens do; a 32,000-token vocabulary samples only greedily on chain).
pub fn sampling_fits(c: &Config, temperature: u32) -> bool {
    step_cost(Stage::Sample, c, 0, temperature) <= MAX_STEP_BUDGET as u64
}
/// Seed length of a run address: "run-" + 16 hex digits of the model address + "-" + 8 hex
/// digits of the nonce.
pub const RUN_SEED_LEN: usize = 29;

/// Run account field offsets.
pub mod run_field {
    pub const MAGIC: usize = 0;
    pub const VERSION: usize = 8;
    pub const NONCE: usize = 12;
    pub const MODEL: usize = 16;
    pub const RUNNER: usize = 48;
    /// Steps that landed (counted, never checked: steps are order-free).
    pub const STEPS_LANDED: usize = 80;
    pub const TEXT_LEN: usize = 84;
    pub const TEXT_CAPACITY: usize = 88;
    pub const STATE_LEN: usize = 92;
}

/// The data length of a run of `steps` tokens of a model of configuration `c`.
pub fn run_len(c: &Config, steps: u32) -> u64 {
    RUN_HEADER_LEN as u64 + state_len(c) as u64 + TEXT_PER_STEP as u64 * steps as u64
}

/// "run-{hex of the model address's first 8 bytes}-{nonce as 8 hex digits}".
pub fn run_seed_bytes(model: &Address, nonce: u32) -> [u8; RUN_SEED_LEN] {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let mut seed = *b"run-0000000000000000-00000000";
    for (i, byte) in model[..8].iter().enumerate() {
        seed[4 + 2 * i] = HEX[(byte >> 4) as usize];
        seed[5 + 2 * i] = HEX[(byte & 15) as usize];
    }
    for i in 0..8 {
        seed[21 + i] = HEX[((nonce >> (28 - 4 * i)) & 15) as usize];
    }
    seed
}

/// The estimated compute units of one item of `stage` at `pos` on the SBF binary, in a run of
/// temperature `temperature` (greedy sampling costs less): what a Step's budget counts
/// (`Run::advance_by`, through [`step_costs`]). Per stage a cost per multiply-accumulate and a cost per
/// item, calibrated by scripts/bench-cu (docs/program.md, "Runs"); every estimate is at or
/// above what the VM measured.
pub fn step_cost(stage: Stage, c: &Config, pos: u32, temperature: u32) -> u64 {
    let (d, h, v) = (c.dim as u64, c.hidden_dim as u64, c.vocab_size as u64);
    let kv = c.kv_dim() as u64;
    let positions = pos as u64 + 1;
    match stage {
        Stage::Embed => 12 * d + 200,
        Stage::AttentionNorm(_) | Stage::FeedForwardNorm(_) | Stage::FinalNorm => 32 * d + 600,
        Stage::Query(_) => matrix(d, d),
        Stage::Key(_) | Stage::Value(_) => matrix(d, kv),
        Stage::Classifier => matrix(d, v),
        Stage::Rotary(_) => 25 * (d + kv) + 200,
        Stage::Attention(_) => {
            positions * (ATTENTION_PER_VALUE * c.head_size() as u64 + ATTENTION_PER_POSITION) + 500
        }
        // Two rows (gate and up) and the gate's SiLU.
        Stage::Hidden(_) => 2 * row(d) + (5 * d + 300) / h + 60,
        // The row, then the residual: x_i + the product, saturated.
        Stage::Output(_) => matrix(d, d) + 30,
        Stage::Down(_) => matrix(h, d) + 30,
        Stage::Sample if temperature == 0 => GREEDY_PER_TOKEN * v + 1_500,
        Stage::Sample => SAMPLE_PER_TOKEN * v + 5_000,
    }
}

/// One row of a matrix of `rows` rows and `columns` columns: [`row`], and the stage's own
/// work (widening the input, about 5 units a value, and 300 more) shared by its rows.
fn matrix(columns: u64, rows: u64) -> u64 {
    row(columns) + (5 * columns + 300) / rows
}

/// One row product of `columns` columns (`curta_core::infer::kernels::sbf`): three rows a turn
/// at 10 units per column and 5 per 32 columns, 55/16 units a column with the group's share;
/// the columns past a multiple of 32 half a unit more each (turns of four), those past a
/// multiple of 4 eight more each; and 36 for the row itself (its scale, rounding, saturation
/// and store).
fn row(columns: u64) -> u64 {
    55 * columns / 16 + columns % 32 / 2 + 8 * (columns % 4) + 36
}

/// One head's attention, per position: per value of the head (a score and a value term) and
/// per position (the score's rounding, the exponential, the weight).
const ATTENTION_PER_VALUE: u64 = 11;
const ATTENTION_PER_POSITION: u64 = 88;
/// Sampling, per token of the vocabulary: with a temperature (and top-p), and greedy (the
/// highest logit alone).
const SAMPLE_PER_TOKEN: u64 = 130;
const GREEDY_PER_TOKEN: u64 = 10;

/// The cost function of a run whose temperature is `temperature` (state byte 40): what the
/// program passes to `Run::advance_by`, and what a client passes to simulate the steps.
pub fn step_costs(temperature: u32) -> impl Fn(Stage, &Config, u32) -> u64 + Copy {
    move |stage, c, pos| step_cost(stage, c, pos, temperature)
}

/// A run account's data, read and written in place.
pub struct RunAccount<'a> {
    data: &'a mut [u8],
}

impl<'a> RunAccount<'a> {
    /// An initialized run account (magic and version; `NotARun` otherwise) whose declared state
    /// and text lengths fit its data.
    pub fn new(data: &'a mut [u8]) -> Result<Self, CurtaError> {
        use run_field as f;
        if data.len() < RUN_HEADER_LEN
            || data[f::MAGIC..f::MAGIC + 8] != RUN_MAGIC
            || data[f::VERSION] != RUN_VERSION
        {
            return Err(CurtaError::NotARun);
        }
        let run = RunAccount { data };
        let end = RUN_HEADER_LEN as u64 + run.state_len() as u64 + run.text_capacity() as u64;
        if end != run.data.len() as u64 || run.text_len() > run.text_capacity() {
            return Err(CurtaError::NotARun);
        }
        Ok(run)
    }

    /// Writes a new header (the rest of the header zero).
    pub fn create(
        data: &'a mut [u8],
        nonce: u32,
        model: &Address,
        runner: &Address,
        state_len: u32,
        text_capacity: u32,
    ) -> Self {
        use run_field as f;
        let header = &mut data[..RUN_HEADER_LEN];
        header.fill(0);
        header[f::MAGIC..f::MAGIC + 8].copy_from_slice(&RUN_MAGIC);
        header[f::VERSION] = RUN_VERSION;
        header[f::NONCE..f::NONCE + 4].copy_from_slice(&nonce.to_le_bytes());
        header[f::MODEL..f::MODEL + 32].copy_from_slice(model);
        header[f::RUNNER..f::RUNNER + 32].copy_from_slice(runner);
        header[f::TEXT_CAPACITY..f::TEXT_CAPACITY + 4]
            .copy_from_slice(&text_capacity.to_le_bytes());
        header[f::STATE_LEN..f::STATE_LEN + 4].copy_from_slice(&state_len.to_le_bytes());
        RunAccount { data }
    }

    fn u32_field(&self, at: usize) -> u32 {
        curta_core::le::u32_at(self.data, at)
    }

    fn set_u32_field(&mut self, at: usize, v: u32) {
        self.data[at..at + 4].copy_from_slice(&v.to_le_bytes());
    }

    pub fn model(&self) -> &Address {
        self.data[run_field::MODEL..run_field::MODEL + 32]
            .try_into()
            .unwrap_or(&[0; 32])
    }

    pub fn runner(&self) -> &Address {
        self.data[run_field::RUNNER..run_field::RUNNER + 32]
            .try_into()
            .unwrap_or(&[0; 32])
    }

    pub fn belongs_to_model(&self, model: &Address) -> bool {
        same_address(self.model(), model)
    }

    pub fn nonce(&self) -> u32 {
        self.u32_field(run_field::NONCE)
    }

    /// The steps that landed so far.
    pub fn steps_landed(&self) -> u32 {
        self.u32_field(run_field::STEPS_LANDED)
    }

    pub fn count_step(&mut self) {
        let landed = self.steps_landed().saturating_add(1);
        self.set_u32_field(run_field::STEPS_LANDED, landed)
    }

    /// Whether the state's status is 0, running (docs/inference.md, "The state buffer"): read
    /// in place before the model is loaded, so a step after the end is refused cheaply.
    pub fn running(&self) -> bool {
        let status = RUN_HEADER_LEN + curta_core::infer::state::field::STATUS;
        self.state_len() as usize >= curta_core::infer::state::STATE_HEADER_LEN
            && curta_core::le::u32_at(self.data, status) == 0
    }

    pub fn state_len(&self) -> u32 {
        self.u32_field(run_field::STATE_LEN)
    }

    pub fn text_len(&self) -> u32 {
        self.u32_field(run_field::TEXT_LEN)
    }

    pub fn text_capacity(&self) -> u32 {
        self.u32_field(run_field::TEXT_CAPACITY)
    }

    /// The state buffer and the text region, apart.
    pub fn state_and_text(&mut self) -> (&mut [u8], &mut [u8]) {
        let state_len = self.state_len() as usize;
        self.data[RUN_HEADER_LEN..].split_at_mut(state_len)
    }

    /// Appends a token's piece to the text (the capacity holds TEXT_PER_STEP per step, and a
    /// piece is at most that long; a piece that would not fit is cut, never written past).
    pub fn append_text(&mut self, piece: &[u8]) {
        let at = self.text_len() as usize;
        let (_, text) = self.state_and_text();
        let n = piece.len().min(text.len() - at.min(text.len()));
        text[at..at + n].copy_from_slice(&piece[..n]);
        self.set_u32_field(run_field::TEXT_LEN, (at + n) as u32);
    }
}

#[cfg(not(target_os = "solana"))]
pub use host::*;

/// The decoded run account and the address derivation, for the client and the tests.
#[cfg(not(target_os = "solana"))]
mod host {
    use super::*;
    use alloc::string::String;
    use alloc::vec::Vec;
    use solana_pubkey::Pubkey;

    /// A run account, decoded: the header's fields, the state buffer and the text.
    #[derive(Clone, Debug, PartialEq, Eq)]
    pub struct RunHeader {
        pub nonce: u32,
        pub model: Pubkey,
        pub runner: Pubkey,
        /// Steps that landed (anyone's).
        pub steps_landed: u32,
        pub state: Vec<u8>,
        pub text: Vec<u8>,
    }

    impl RunHeader {
        pub fn unpack(data: &[u8]) -> Result<RunHeader, CurtaError> {
            let mut copy = data.to_vec();
            let mut run = RunAccount::new(&mut copy)?;
            let (model, runner) = (Pubkey::from(*run.model()), Pubkey::from(*run.runner()));
            let (steps_landed, nonce) = (run.steps_landed(), run.nonce());
            let text_len = run.text_len() as usize;
            let (state, text) = run.state_and_text();
            Ok(RunHeader {
                nonce,
                model,
                runner,
                steps_landed,
                state: state.to_vec(),
                text: text[..text_len].to_vec(),
            })
        }
    }

    /// The seed of a run ([`run_seed_bytes`]).
    pub fn run_seed(model: &Pubkey, nonce: u32) -> String {
        run_seed_bytes(&model.to_bytes(), nonce)
            .iter()
            .map(|&b| b as char)
            .collect()
    }

    /// The address of the run `nonce` of `runner` on `model`: create_with_seed(runner,
    /// run_seed, program id).
    pub fn run_address(program_id: &Pubkey, runner: &Pubkey, model: &Pubkey, nonce: u32) -> Pubkey {
        // The seed is 29 bytes and the owner is a program id, so derivation cannot fail.
        Pubkey::create_with_seed(runner, &run_seed(model, nonce), program_id).unwrap_or_default()
    }
}
