//! A claim's inputs ([`ClaimRequest`]), what `client claim` did ([`ClaimReport`]) and why a
//! claim operation did not complete ([`ClaimError`]).

use crate::model::FetchError;
use crate::run::onchain::RunOnChainError;
use crate::run::Prompt;
use crate::send::format::TxVersion;
use crate::Error;
use curta_core::infer::{RunError, Settings};
use curta_interface::claim::{ClaimState, MIN_WINDOW};
use curta_interface::run::SeedSource;
use solana_pubkey::Pubkey;

/// Why a claim operation did not complete. Every variant names the account or the option at
/// fault; `Input` and `OpenRefused` say that nothing was sent.
#[derive(Debug, thiserror::Error)]
pub enum ClaimError {
    #[error(transparent)]
    Fetch(#[from] FetchError),
    #[error(transparent)]
    Client(#[from] Error),
    /// curta-core refused the prompt or the settings: nothing was sent.
    #[error("{0} (nothing was sent)")]
    Refused(#[from] RunError),
    #[error(transparent)]
    Run(#[from] RunOnChainError),
    /// An option the program would refuse, found before anything was sent.
    #[error("{field}: {problem} (nothing was sent)")]
    Input {
        field: &'static str,
        problem: String,
    },
    #[error("claim account {address}: {problem}")]
    Account { address: Pubkey, problem: String },
    /// OpenClaim's simulation failed: nothing was sent.
    #[error("opening claim {address} would fail (nothing was sent): {error}{}", logs_tail(.logs))]
    OpenRefused {
        address: Pubkey,
        error: String,
        logs: Vec<String>,
    },
}

/// The last lines of a program log, for an error message.
pub(crate) fn logs_tail(logs: &[String]) -> String {
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

/// One claim's inputs.
#[derive(Clone, Debug)]
pub struct ClaimRequest {
    pub prompt: Prompt,
    /// Tokens to generate at most (None: 256, or what the context leaves).
    pub steps: Option<u32>,
    /// Temperature, top-p and the claimer's seed (drawn: the seed the draw hashes; chosen: the
    /// seed in force; none: unused).
    pub settings: Settings,
    pub source: SeedSource,
    /// Slots after the answer's during which anyone may challenge.
    pub window: u32,
    /// Micro-lamports per compute unit the bond covers a dispute's steps at (recorded in the
    /// claim; the bond rule prices the dispute's transactions at it).
    pub priority_price: u64,
    /// Lamports posted (None: the rule's minimum, `cost::claim_bond`).
    pub bond: Option<u64>,
    /// The claim's number among the claimer's claims of the model (None: the first free one).
    /// The same request with the same nonce resumes an interrupted claim.
    pub nonce: Option<u32>,
    /// Wait until the claim is settled (or resolved) before returning.
    pub wait: bool,
    /// Micro-lamports per compute unit the claimer's own transactions pay, if any.
    pub compute_unit_price: Option<u64>,
    pub tx_version: TxVersion,
    /// Threads the off-chain run uses (the same tokens for any count).
    pub threads: usize,
    /// The claimer's seed was not given (the CLI took one from the clock): a claim found at
    /// the nonce with these terms otherwise is resumed with its own seed.
    pub any_seed: bool,
}

impl ClaimRequest {
    /// A claim of `prompt` with the default options: a greedy claim when the temperature is 0,
    /// else a drawn seed; the shortest window; the minimum bond at no priority price.
    pub fn new(prompt: Prompt, steps: Option<u32>, settings: Settings) -> ClaimRequest {
        ClaimRequest {
            prompt,
            steps,
            source: match settings.temperature {
                0 => SeedSource::None,
                _ => SeedSource::Drawn,
            },
            settings,
            window: MIN_WINDOW,
            priority_price: 0,
            bond: None,
            nonce: None,
            wait: true,
            compute_unit_price: None,
            tx_version: TxVersion::Auto,
            threads: 1,
            any_seed: false,
        }
    }
}

/// A claim state's name in reports: "open", "answered", "challenged", "upheld",
/// "overturned" (and "settled" for an answered claim past its window, by [`state_at`]).
pub fn state_name(state: ClaimState) -> &'static str {
    match state {
        ClaimState::Open => "open",
        ClaimState::Answered => "answered",
        ClaimState::Challenged => "challenged",
        ClaimState::Upheld => "upheld",
        ClaimState::Overturned => "overturned",
    }
}

/// A claim's state at `slot` as reports name it: "settled" for an answered claim past its
/// window, else [`state_name`].
pub fn state_at(header: &curta_interface::claim::ClaimHeader, slot: u64) -> &'static str {
    match header.state {
        ClaimState::Answered if header.settled(slot) => "settled",
        state => state_name(state),
    }
}

/// What `client claim` did.
#[derive(Clone, Debug, serde::Serialize)]
pub struct ClaimReport {
    pub claim: String,
    pub model: String,
    pub claimer: String,
    pub nonce: u32,
    pub prompt_tokens: Vec<u32>,
    /// The answer's generated ids (an end token 1 or 2 included).
    pub tokens: Vec<u32>,
    /// The answer's text (invalid UTF-8 replaced).
    pub text: String,
    /// SHA-256 of the ids (u32 little-endian each) then the text, as posted.
    pub answer_hash: String,
    /// The seed in force, its source, and the claimer's seed OpenClaim carried.
    pub seed: u64,
    pub seed_source: &'static str,
    pub claimer_seed: u64,
    pub temperature: u32,
    pub top_p: u32,
    pub steps: u32,
    pub open_slot: u64,
    pub answer_slot: u64,
    pub window: u32,
    /// The last slot a challenge may land in (answer slot + window).
    pub window_end: u64,
    /// The slot the report was made at, and the claim's state then ("answered", "settled",
    /// "challenged", "upheld", "overturned").
    pub slot: u64,
    pub state: &'static str,
    pub settled: bool,
    pub bond: u64,
    pub minimum_bond: u64,
    pub priority_price: u64,
    /// The claim account's rent (it comes back with the bond at `client close-claim`).
    pub rent: u64,
    /// Transactions this call sent that landed (failed ones included), and their fees.
    pub transactions: u64,
    pub failed_transactions: u64,
    pub fees: u64,
    pub balance_before: u64,
    pub balance_after: u64,
    /// Lamports the claim account holds at the end (its rent and the bond while open).
    pub lamports_held: u64,
    /// Seconds of the off-chain run, and of the whole call.
    pub compute_seconds: f64,
    pub seconds: f64,
    /// Whether this call found the claim opened (or answered) already and went on from there.
    pub resumed: bool,
    pub tx_version: crate::send::format::Format,
    #[serde(skip)]
    pub text_bytes: Vec<u8>,
}
