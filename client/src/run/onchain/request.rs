//! A run on chain's inputs ([`RunRequest`]), what it did ([`OnChainRun`]) and why it did not
//! complete ([`RunOnChainError`]).

use super::pipeline::AccountLimit;
use crate::model::FetchError;
use crate::run::Prompt;
use crate::Error;
use curta_core::infer::{RunError, Settings, Status};
use curta_interface::run::{SeedSource, MAX_STEP_BUDGET};
use solana_pubkey::Pubkey;

/// Why a run on chain did not complete.
#[derive(Debug, thiserror::Error)]
pub enum RunOnChainError {
    #[error(transparent)]
    Fetch(#[from] FetchError),
    #[error(transparent)]
    Client(#[from] Error),
    /// The offline run refused the prompt or settings: nothing was sent.
    #[error("{0}")]
    Refused(#[from] RunError),
    #[error("a step's budget is 1 to {MAX_STEP_BUDGET} estimated compute units, not {0}")]
    Budget(u32),
    #[error("the StartRun transaction with this prompt is {bytes} bytes, over the {most}-byte packet: shorten the prompt (text goes as its bytes, token ids as 4 bytes each)")]
    PromptTooLong { bytes: usize, most: usize },
    #[error("run account {address}: {problem}")]
    RunAccount { address: Pubkey, problem: String },
    /// The chain's run differs from curta-core's offline run of the same inputs.
    #[error("run account {address} differs from curta-core's offline run of the same model, prompt and settings: {what}")]
    Diverged { address: Pubkey, what: String },
    /// StartRun's simulation failed: nothing was sent.
    #[error("starting run {address} would fail (nothing was sent): {error}{}", logs_tail(.logs))]
    StartRefused {
        address: Pubkey,
        error: String,
        logs: Vec<String>,
    },
    #[error("a step of run {address} fails: {error}{}{}", logs_tail(.logs), .after.as_deref().map_or(String::new(), |a| format!("\n{a}")))]
    StepRefused {
        address: Pubkey,
        error: String,
        logs: Vec<String>,
        /// What the client did about the run then (closed it, or left it).
        after: Option<String>,
    },
}

pub(super) fn logs_tail(logs: &[String]) -> String {
    let tail: Vec<&str> = logs
        .iter()
        .rev()
        .take(6)
        .rev()
        .map(String::as_str)
        .collect();
    match tail.is_empty() {
        true => String::new(),
        false => format!("\nprogram log:\n  {}", tail.join("\n  ")),
    }
}

/// One run's inputs.
#[derive(Clone, Debug)]
pub struct RunRequest {
    pub prompt: Prompt,
    /// Tokens to generate at most (None: 256, or what the context leaves).
    pub steps: Option<u32>,
    pub settings: Settings,
    /// Where the seed in force comes from: none for a greedy run; drawn on chain from the
    /// runner's seed (`settings.seed`) and the start slot's hash; or chosen (`settings.seed`
    /// as it is, a reproducible run).
    pub source: SeedSource,
    /// The run's number among the runner's runs of the model (its address's seed).
    pub nonce: u32,
    /// Leave the run account open after the last step (its rent stays in it).
    pub keep: bool,
    /// Estimated compute units per step (at most [`MAX_STEP_BUDGET`]).
    pub budget: u32,
    /// Micro-lamports per compute unit, if any.
    pub compute_unit_price: Option<u64>,
    /// The transaction format asked for (auto: version 1 where the cluster accepts it).
    pub tx_version: crate::send::format::TxVersion,
    /// The cluster's per-account compute-unit limit per block (None: read from its features,
    /// [`super::pipeline::account_limit`]); the steps in flight are this over a step's units.
    pub account_limit: Option<u64>,
}

impl RunRequest {
    pub fn new(prompt: Prompt, steps: Option<u32>, settings: Settings) -> RunRequest {
        RunRequest {
            prompt,
            steps,
            source: match settings.temperature {
                0 => SeedSource::None,
                _ => SeedSource::Drawn,
            },
            settings,
            nonce: 0,
            keep: false,
            budget: MAX_STEP_BUDGET,
            compute_unit_price: None,
            tx_version: crate::send::format::TxVersion::Auto,
            account_limit: None,
        }
    }
}

/// The default token count of a run: 256, or what the context leaves after the prompt.
pub fn default_steps(context: u32, prompt_len: usize) -> u32 {
    256.min((context + 1).saturating_sub(prompt_len as u32))
        .max(1)
}

/// What a run on chain did.
#[derive(Clone, Debug, serde::Serialize)]
pub struct OnChainRun {
    pub prompt_tokens: Vec<u32>,
    /// The generated ids read back from the run account (the last may be 1 or 2).
    pub tokens: Vec<u32>,
    /// The run account's text (invalid UTF-8 replaced).
    pub text: String,
    pub tokens_per_second: f64,
    pub weights_hash: String,
    /// The seed in force (drawn, chosen, or 0 for a greedy run).
    pub seed: u64,
    /// "none", "drawn" or "chosen".
    pub seed_source: &'static str,
    /// The runner's seed StartRun carried, and the slot it landed in.
    pub runner_seed: u64,
    pub start_slot: u64,
    /// The slot whose hash a drawn seed came from (0 otherwise).
    pub seed_slot: u64,
    pub model: String,
    pub run: String,
    pub nonce: u32,
    /// How StartRun carried a text prompt: "text" (tokenized by the program) or "tokens"
    /// (the client's ids, when the text's StartRun would not fit a packet or the compute
    /// limit); "tokens" for ids; null when resumed.
    pub prompt_sent_as: Option<&'static str>,
    /// Steps of this client's budget the whole run takes from its start.
    pub steps: u32,
    /// Steps this call sent that advanced the run.
    pub steps_sent: u32,
    /// Of those, the steps that continued the text prompt's tokenization (a long text: what
    /// StartRun's compute units left of it).
    pub encoding_steps: u32,
    /// Steps this call sent that landed after the run had ended (refused with RunEnded: each
    /// paid its fee and changed nothing).
    pub steps_after_end: u32,
    /// Steps this call sent that landed where the run's next item reads a section they did
    /// not carry (refused with SectionNotLoaded, each paid its fee and changed nothing: a model
    /// too large for a step to carry every section, whose run others' steps moved on).
    pub steps_out_of_reach: u32,
    /// Steps this call sent that landed in a drawn run's start slot once the run had started
    /// (refused with SeedNotReady, each paid its fee and changed nothing: the slot's hash, which
    /// the seed is drawn from, exists once the slot ends). Others' steps ended the encoding
    /// these were sent to continue, or the drawing step landed in the start slot after all.
    pub steps_before_seed: u32,
    /// Steps that landed that this call did not send (anyone may step a run; 0 when resumed,
    /// where the earlier steps are not told apart).
    pub steps_by_others: u32,
    /// The steps landed on chain in all (the run header's count).
    pub steps_landed: u32,
    /// Steps in flight at once, and the per-account limit it came from.
    pub window: usize,
    pub account_limit: AccountLimit,
    /// The compute units each step requested.
    pub step_unit_limit: u32,
    /// The steps landed when the run was resumed (None: started by this call).
    pub resumed_from: Option<u32>,
    /// Transactions that landed: start, steps, close (failed ones included).
    pub transactions: u64,
    pub failed_transactions: u64,
    /// Compute units of the start and the close, measured by simulating each just before it
    /// was sent.
    pub start_units: Option<u64>,
    pub close_units: Option<u64>,
    /// Fees of every transaction that landed.
    pub fees: u64,
    /// Rent put into the run account by this call (0 when resumed).
    pub rent: u64,
    /// The rent the run account holds at the end (0 when closed).
    pub rent_held: u64,
    /// The runner's balance before and after.
    pub balance_before: u64,
    pub balance_after: u64,
    pub closed: bool,
    pub seconds: f64,
    /// The format the run's transactions went in ("legacy" or "v1").
    pub tx_version: crate::send::format::Format,
    #[serde(skip)]
    pub text_bytes: Vec<u8>,
    #[serde(skip)]
    pub end: Status,
}

impl OnChainRun {
    pub fn lamports_spent(&self) -> i128 {
        self.balance_before as i128 - self.balance_after as i128
    }
}

/// A seed source's name in reports and errors.
pub fn source_name(source: SeedSource) -> &'static str {
    match source {
        SeedSource::None => "none",
        SeedSource::Drawn => "drawn",
        SeedSource::Chosen => "chosen",
    }
}
