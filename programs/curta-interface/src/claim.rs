//! The claim account: an answer computed off chain and posted with a bond, settled unless a
//! challenge overturns it by re-running it on chain (docs/program.md, "Claims"). Read and
//! written in place.
//!
//! The claimer creates the account with `create_account_with_seed` at the address of
//! (claimer, model, nonce), as runs are created, with its rent and the bond, and OpenClaim binds
//! it in the same transaction.

use curta_core::le::{u32_at, u64_at};

use crate::describe::{DefinedDoc, DefinedKind, FieldDoc, LayoutDoc, TypeDoc, VariantDoc};
use crate::error::CurtaError;
use crate::instruction::{Prompt, Reader, Wire};
use crate::run::SeedSource;
use crate::state::Address;

pub const CLAIM_MAGIC: [u8; 8] = *b"CURTACLM";
pub const CLAIM_VERSION: u8 = 1;
/// The claim header's length: the prompt's wire bytes follow it.
pub const CLAIM_HEADER_LEN: usize = 280;

/// The shortest challenge window, in slots (about a minute at 400 ms a slot): time for a
/// watcher to see the answer, recompute it (a 256-token stories15M answer takes about a second
/// natively) and land a challenge through a congested leader or two.
pub const MIN_WINDOW: u32 = 150;
/// The longest: an epoch (432,000 slots, about two days). A bond is locked for the window, and
/// a consumer waits for it.
pub const MAX_WINDOW: u32 = 432_000;

/// Seed length of a claim address: "claim-" + 16 hex digits of the model address + "-" + 8 hex
/// digits of the nonce.
pub const CLAIM_SEED_LEN: usize = 31;

pub const CLAIM_LAYOUT: LayoutDoc = LayoutDoc {
    name: "claim",
    docs: &[
        "An answer posted with a bond: a 280-byte header, then the prompt as OpenClaim carried it (its wire bytes, promptLength of them).",
        "",
        "Address: create_with_seed(claimer, \"claim-\" + hex of the model address's first 8 bytes + \"-\" + the nonce as 8 hex digits, program id).",
    ],
    size: None,
    pda: None,
    fields: &[
        FieldDoc::new("magic", TypeDoc::Magic("CURTACLM"), &[]),
        FieldDoc::new("version", TypeDoc::Version(CLAIM_VERSION), &[]),
        FieldDoc::new("state", TypeDoc::Defined("claim_state"), &[]),
        FieldDoc::new("seed_source", TypeDoc::Defined("seed_source"), &[]),
        FieldDoc::new("reserved", TypeDoc::Reserved(1), &[]),
        FieldDoc::new("nonce", TypeDoc::U32, &[]),
        FieldDoc::new("model", TypeDoc::Pubkey, &[]),
        FieldDoc::new("claimer", TypeDoc::Pubkey, &[]),
        FieldDoc::new("challenger", TypeDoc::Pubkey, &["zero until challenged"]),
        FieldDoc::new("dispute_run", TypeDoc::Pubkey, &["the run Challenge started; zero until challenged"]),
        FieldDoc::new("steps", TypeDoc::U32, &["the most tokens to generate"]),
        FieldDoc::new("temperature", TypeDoc::U32, &["16 fractional bits; 0 is greedy"]),
        FieldDoc::new("top_p", TypeDoc::U32, &["16 fractional bits"]),
        FieldDoc::new("window", TypeDoc::U32, &["slots after the answer's during which anyone may challenge (150 to 432,000)"]),
        FieldDoc::new("claimer_seed", TypeDoc::U64, &["the claimer's seed, as OpenClaim gave it"]),
        FieldDoc::new("open_slot", TypeDoc::U64, &["the slot OpenClaim landed in"]),
        FieldDoc::new("answer_slot", TypeDoc::U64, &["the slot AnswerClaim landed in; 0 before"]),
        FieldDoc::new("seed_in_force", TypeDoc::U64, &["drawn: 0 until AnswerClaim draws it from the open slot's hash; chosen: the claimer's seed; none: 0"]),
        FieldDoc::new("slot_hash", TypeDoc::Bytes(32), &["drawn: the open slot's hash the seed was drawn from; zero otherwise"]),
        FieldDoc::new("bond", TypeDoc::U64, &["lamports the claimer posted and a challenger posts"]),
        FieldDoc::new("priority_price", TypeDoc::U64, &["micro-lamports per compute unit the bond covers a dispute's steps at"]),
        FieldDoc::new("token_count", TypeDoc::U32, &["the answer's generated ids (an end token 1 or 2 included); 0 before"]),
        FieldDoc::new("prompt_length", TypeDoc::U32, &["bytes of the prompt after the header"]),
        FieldDoc::new("answer_hash", TypeDoc::Bytes(32), &["SHA-256 of the answer's ids (u32 little-endian each) then its text; zero before"]),
        FieldDoc::new("prompt", TypeDoc::Rest, &["the prompt's wire bytes (a kind byte, then text or ids, as OpenClaim carried it)"]),
    ],
};

/// Claim account field offsets (from [`CLAIM_LAYOUT`]).
pub mod claim_field {
    use super::CLAIM_LAYOUT as L;
    pub const MAGIC: usize = L.offset("magic");
    pub const VERSION: usize = L.offset("version");
    pub const STATE: usize = L.offset("state");
    pub const SEED_SOURCE: usize = L.offset("seed_source");
    pub const NONCE: usize = L.offset("nonce");
    pub const MODEL: usize = L.offset("model");
    pub const CLAIMER: usize = L.offset("claimer");
    pub const CHALLENGER: usize = L.offset("challenger");
    pub const DISPUTE_RUN: usize = L.offset("dispute_run");
    pub const STEPS: usize = L.offset("steps");
    pub const TEMPERATURE: usize = L.offset("temperature");
    pub const TOP_P: usize = L.offset("top_p");
    pub const WINDOW: usize = L.offset("window");
    pub const CLAIMER_SEED: usize = L.offset("claimer_seed");
    pub const OPEN_SLOT: usize = L.offset("open_slot");
    pub const ANSWER_SLOT: usize = L.offset("answer_slot");
    pub const SEED: usize = L.offset("seed_in_force");
    pub const SLOT_HASH: usize = L.offset("slot_hash");
    pub const BOND: usize = L.offset("bond");
    pub const PRIORITY_PRICE: usize = L.offset("priority_price");
    pub const TOKEN_COUNT: usize = L.offset("token_count");
    pub const PROMPT_LEN: usize = L.offset("prompt_length");
    pub const ANSWER_HASH: usize = L.offset("answer_hash");
}

const _: () = assert!(CLAIM_LAYOUT.fixed_len() == CLAIM_HEADER_LEN);

/// A claim's state (header byte 9).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum ClaimState {
    /// Opened, not answered yet.
    Open = 1,
    /// Answered: challengeable for `window` slots after the answer's, settled after.
    Answered = 2,
    /// Challenged: its dispute run decides it.
    Challenged = 3,
    /// The dispute run agreed with the answer: settled.
    Upheld = 4,
    /// The dispute run disagreed: the answer is wrong.
    Overturned = 5,
}

impl ClaimState {
    pub fn from_u8(value: u8) -> Option<ClaimState> {
        match value {
            1 => Some(ClaimState::Open),
            2 => Some(ClaimState::Answered),
            3 => Some(ClaimState::Challenged),
            4 => Some(ClaimState::Upheld),
            5 => Some(ClaimState::Overturned),
            _ => None,
        }
    }
}

pub const CLAIM_STATE_DOC: DefinedDoc = DefinedDoc {
    name: "claim_state",
    docs: &[
        "1 Open, 2 Answered (settled once its window has passed), 3 Challenged, 4 Upheld, 5 Overturned; 0 is an account the program never initialized.",
    ],
    kind: DefinedKind::Enum(&[
        VariantDoc::unit("uninitialized"),
        VariantDoc::unit("open"),
        VariantDoc::unit("answered"),
        VariantDoc::unit("challenged"),
        VariantDoc::unit("upheld"),
        VariantDoc::unit("overturned"),
    ]),
};

/// "claim-{hex of the model address's first 8 bytes}-{nonce as 8 hex digits}".
pub fn claim_seed_bytes(model: &Address, nonce: u32) -> [u8; CLAIM_SEED_LEN] {
    let mut seed = *b"claim-0000000000000000-00000000";
    crate::run::write_model_and_nonce(&mut seed[6..], model, nonce);
    seed
}

/// The length of a claim account whose prompt's wire bytes are `prompt_len` long.
pub const fn claim_len(prompt_len: usize) -> usize {
    CLAIM_HEADER_LEN + prompt_len
}

/// A claim account's data, read in place: an initialized claim (magic, version, a known state
/// and seed source, the prompt's length the data's rest, the prompt a prompt).
#[derive(Clone, Copy, Debug)]
pub struct ClaimView<'d> {
    data: &'d [u8],
}

impl<'d> ClaimView<'d> {
    #[inline(always)]
    pub fn new(data: &'d [u8]) -> Result<Self, CurtaError> {
        match is_claim(data) {
            true => Ok(ClaimView { data }),
            false => Err(CurtaError::NotAClaim),
        }
    }

    fn address(&self, at: usize) -> &'d Address {
        self.data[at..at + 32].try_into().unwrap_or(&[0; 32])
    }

    pub fn state(&self) -> ClaimState {
        ClaimState::from_u8(self.data[claim_field::STATE]).unwrap_or(ClaimState::Open)
    }

    pub fn seed_source(&self) -> SeedSource {
        SeedSource::from_u8(self.data[claim_field::SEED_SOURCE]).unwrap_or(SeedSource::None)
    }

    pub fn nonce(&self) -> u32 {
        u32_at(self.data, claim_field::NONCE)
    }

    pub fn model(&self) -> &'d Address {
        self.address(claim_field::MODEL)
    }

    pub fn claimer(&self) -> &'d Address {
        self.address(claim_field::CLAIMER)
    }

    pub fn challenger(&self) -> &'d Address {
        self.address(claim_field::CHALLENGER)
    }

    pub fn dispute_run(&self) -> &'d Address {
        self.address(claim_field::DISPUTE_RUN)
    }

    pub fn steps(&self) -> u32 {
        u32_at(self.data, claim_field::STEPS)
    }

    pub fn temperature(&self) -> u32 {
        u32_at(self.data, claim_field::TEMPERATURE)
    }

    pub fn top_p(&self) -> u32 {
        u32_at(self.data, claim_field::TOP_P)
    }

    pub fn window(&self) -> u32 {
        u32_at(self.data, claim_field::WINDOW)
    }

    pub fn claimer_seed(&self) -> u64 {
        u64_at(self.data, claim_field::CLAIMER_SEED)
    }

    pub fn open_slot(&self) -> u64 {
        u64_at(self.data, claim_field::OPEN_SLOT)
    }

    pub fn answer_slot(&self) -> u64 {
        u64_at(self.data, claim_field::ANSWER_SLOT)
    }

    /// The seed in force (drawn: 0 until answered).
    pub fn seed(&self) -> u64 {
        u64_at(self.data, claim_field::SEED)
    }

    pub fn slot_hash(&self) -> &'d [u8; 32] {
        self.address(claim_field::SLOT_HASH)
    }

    pub fn bond(&self) -> u64 {
        u64_at(self.data, claim_field::BOND)
    }

    pub fn priority_price(&self) -> u64 {
        u64_at(self.data, claim_field::PRIORITY_PRICE)
    }

    pub fn token_count(&self) -> u32 {
        u32_at(self.data, claim_field::TOKEN_COUNT)
    }

    pub fn answer_hash(&self) -> &'d [u8; 32] {
        self.address(claim_field::ANSWER_HASH)
    }

    /// The prompt's wire bytes.
    pub fn prompt_bytes(&self) -> &'d [u8] {
        &self.data[CLAIM_HEADER_LEN..]
    }

    /// The prompt, read from its wire bytes (`None` when they are not exactly one prompt).
    #[inline(always)]
    pub fn prompt(&self) -> Option<Prompt<'d>> {
        read_prompt(self.prompt_bytes())
    }

    /// Whether an answer of `token_count` ids whose answer hash ([`ANSWER_HASH_DOC`]) is
    /// `digest` is the claim's.
    pub fn answer_is(&self, token_count: u32, digest: &[u8; 32]) -> bool {
        self.token_count() == token_count && self.answer_hash() == digest
    }

    /// The last slot a challenge may land in: the answer's slot plus the window.
    pub fn window_end(&self) -> u64 {
        self.answer_slot().saturating_add(self.window() as u64)
    }

    /// Settled at `slot`: answered and past its window unchallenged, or upheld by its dispute.
    pub fn settled(&self, slot: u64) -> bool {
        match self.state() {
            ClaimState::Answered => slot > self.window_end(),
            ClaimState::Upheld => true,
            _ => false,
        }
    }
}

/// Whether `data` is an initialized claim ([`ClaimView`]'s checks). A frame of its own: one
/// copy in a program that checks claims in several instructions.
#[inline(never)]
pub fn is_claim(data: &[u8]) -> bool {
    use claim_field as f;
    data.len() >= CLAIM_HEADER_LEN
        && data[f::MAGIC..f::MAGIC + 8] == CLAIM_MAGIC
        && data[f::VERSION] == CLAIM_VERSION
        && ClaimState::from_u8(data[f::STATE]).is_some()
        && SeedSource::from_u8(data[f::SEED_SOURCE]).is_some()
        && u32_at(data, f::PROMPT_LEN) as u64 == (data.len() - CLAIM_HEADER_LEN) as u64
        && read_prompt(&data[CLAIM_HEADER_LEN..]).is_some()
}

/// A prompt's wire bytes read exactly (`None` when they are not one prompt).
#[inline(always)]
pub fn read_prompt(bytes: &[u8]) -> Option<Prompt<'_>> {
    let mut reader = Reader::new(bytes, 0, 0)?;
    let prompt = Prompt::read(&mut reader)?;
    reader.is_done().then_some(prompt)
}

/// What the answer hash hashes: the generated ids (u32 little-endian each), then the text.
/// The program hashes the run's own bytes (`sol_sha256` over both slices); off chain
/// [`answer_hash`].
pub const ANSWER_HASH_DOC: &str =
    "SHA-256 of the generated ids (u32 little-endian each, an end token 1 or 2 included) then the text";

#[cfg(not(target_os = "solana"))]
pub use host::*;

#[cfg(not(target_os = "solana"))]
mod host {
    use super::*;
    use alloc::string::String;
    use alloc::vec::Vec;
    use solana_pubkey::Pubkey;

    /// The answer hash of `ids` and `text` ([`ANSWER_HASH_DOC`]).
    pub fn answer_hash(ids: &[u32], text: &[u8]) -> [u8; 32] {
        let bytes: Vec<u8> = ids.iter().flat_map(|id| id.to_le_bytes()).collect();
        sha256_of(&[&bytes, text])
    }

    /// SHA-256 of `parts` one after the other (off chain; the program and consumers hash with
    /// the `sol_sha256` syscall).
    pub fn sha256_of(parts: &[&[u8]]) -> [u8; 32] {
        curta_core::sha256(&parts.concat())
    }

    /// The seed of a claim address ([`claim_seed_bytes`]).
    pub fn claim_seed(model: &Pubkey, nonce: u32) -> String {
        claim_seed_bytes(&model.to_bytes(), nonce)
            .iter()
            .map(|&b| b as char)
            .collect()
    }

    /// The address of the claim `nonce` of `claimer` on `model`.
    pub fn claim_address(
        program_id: &Pubkey,
        claimer: &Pubkey,
        model: &Pubkey,
        nonce: u32,
    ) -> Pubkey {
        // 31 bytes of seed and a program owner: derivation cannot fail.
        Pubkey::create_with_seed(claimer, &claim_seed(model, nonce), program_id).unwrap_or_default()
    }

    /// The wire bytes of a prompt (what a claim account holds after its header).
    pub fn prompt_bytes(prompt: &Prompt) -> Vec<u8> {
        let mut out = Vec::new();
        prompt.write(&mut out);
        out
    }

    /// A claim account, decoded.
    #[derive(Clone, Debug, PartialEq, Eq)]
    pub struct ClaimHeader {
        pub state: ClaimState,
        pub seed_source: SeedSource,
        pub nonce: u32,
        pub model: Pubkey,
        pub claimer: Pubkey,
        pub challenger: Pubkey,
        pub dispute_run: Pubkey,
        pub steps: u32,
        pub temperature: u32,
        pub top_p: u32,
        pub window: u32,
        pub claimer_seed: u64,
        pub open_slot: u64,
        pub answer_slot: u64,
        pub seed: u64,
        pub slot_hash: [u8; 32],
        pub bond: u64,
        pub priority_price: u64,
        pub token_count: u32,
        pub answer_hash: [u8; 32],
        /// The prompt's wire bytes.
        pub prompt: Vec<u8>,
    }

    impl ClaimHeader {
        pub fn unpack(data: &[u8]) -> Result<ClaimHeader, CurtaError> {
            let c = ClaimView::new(data)?;
            Ok(ClaimHeader {
                state: c.state(),
                seed_source: c.seed_source(),
                nonce: c.nonce(),
                model: Pubkey::from(*c.model()),
                claimer: Pubkey::from(*c.claimer()),
                challenger: Pubkey::from(*c.challenger()),
                dispute_run: Pubkey::from(*c.dispute_run()),
                steps: c.steps(),
                temperature: c.temperature(),
                top_p: c.top_p(),
                window: c.window(),
                claimer_seed: c.claimer_seed(),
                open_slot: c.open_slot(),
                answer_slot: c.answer_slot(),
                seed: c.seed(),
                slot_hash: *c.slot_hash(),
                bond: c.bond(),
                priority_price: c.priority_price(),
                token_count: c.token_count(),
                answer_hash: *c.answer_hash(),
                prompt: c.prompt_bytes().to_vec(),
            })
        }

        /// The prompt (its wire bytes were checked by `unpack`).
        pub fn prompt(&self) -> Option<Prompt<'_>> {
            read_prompt(&self.prompt)
        }

        /// Settled at `slot` ([`ClaimView::settled`]).
        pub fn settled(&self, slot: u64) -> bool {
            match self.state {
                ClaimState::Answered => slot > self.answer_slot.saturating_add(self.window as u64),
                ClaimState::Upheld => true,
                _ => false,
            }
        }
    }
}
