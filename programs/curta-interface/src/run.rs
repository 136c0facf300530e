//! The run account: one run of a sealed model, its state buffer (docs/inference.md) and the
//! text of its generated tokens. docs/program.md, "Run account", lists every byte.
//!
//! A run's state is larger than the 10 KiB a program may allocate through CPI (stories260K's is
//! 679,480 bytes), so the runner creates the account with `create_account_with_seed` at the
//! address of (runner, model, nonce), as weight accounts are created, and StartRun binds it.

use curta_core::infer::state_len;
use curta_core::{Config, MAX_TOKEN_LEN};

use crate::describe::{DefinedDoc, DefinedKind, FieldDoc, LayoutDoc, TypeDoc, VariantDoc};
use crate::error::CurtaError;
use crate::state::{same_address, Address};

/// The run header's length: the state starts here (8-byte aligned in the account's data).
pub const RUN_HEADER_LEN: usize = 192;
pub const RUN_MAGIC: [u8; 8] = *b"CURTARUN";
pub const RUN_VERSION: u8 = 2;
/// Text room per step of the budget: a token's piece is at most the longest token's bytes.
pub const TEXT_PER_STEP: usize = MAX_TOKEN_LEN;
/// The largest step budget, in estimated compute units (the program's `run::step_cost`): every estimate is at or
/// above the VM's measure, and a step's fixed work (the checks, resuming the state) is under
/// 20,000 units, so a step stays under 1,200,000 (scripts/bench-cu measures it).
pub const MAX_STEP_BUDGET: u32 = 1_175_000;

/// Seed length of a run address: "run-" + 16 hex digits of the model address + "-" + 8 hex
/// digits of the nonce.
pub const RUN_SEED_LEN: usize = 29;

/// The run account's layout: the 192-byte header, then the state buffer and the text region.
pub const RUN_LAYOUT: LayoutDoc = LayoutDoc {
    name: "run",
    docs: &[
        "One run of a sealed model: a 192-byte header, the state buffer (docs/inference.md, \"The state buffer\"; stateLength bytes), then the text region (textCapacity bytes, textLength written).",
        "",
        "Address: create_with_seed(runner, \"run-\" + hex of the model address's first 8 bytes + \"-\" + the nonce as 8 hex digits, program id).",
    ],
    size: None,
    pda: None,
    fields: &[
        FieldDoc::new("magic", TypeDoc::Magic("CURTARUN"), &[]),
        FieldDoc::new("version", TypeDoc::Version(RUN_VERSION), &[]),
        FieldDoc::new("seed_source", TypeDoc::Defined("seed_source"), &[]),
        FieldDoc::new("dispute", TypeDoc::Bool, &["1 for a claim's dispute run (Challenge started it): CloseRun refuses it, Resolve closes it"]),
        FieldDoc::new("reserved", TypeDoc::Reserved(1), &[]),
        FieldDoc::new("nonce", TypeDoc::U32, &[]),
        FieldDoc::new("model", TypeDoc::Pubkey, &[]),
        FieldDoc::new("runner", TypeDoc::Pubkey, &[]),
        FieldDoc::new("steps_landed", TypeDoc::U32, &["every Step that landed, anyone's"]),
        FieldDoc::new("text_length", TypeDoc::U32, &[]),
        FieldDoc::new("text_capacity", TypeDoc::U32, &["128 x steps"]),
        FieldDoc::new("state_length", TypeDoc::U32, &[]),
        FieldDoc::new("temperature", TypeDoc::U32, &["16 fractional bits; 0 is greedy"]),
        FieldDoc::new("top_p", TypeDoc::U32, &["16 fractional bits"]),
        FieldDoc::new("runner_seed", TypeDoc::U64, &["the runner's seed, as StartRun gave it"]),
        FieldDoc::new("start_slot", TypeDoc::U64, &["the slot StartRun landed in"]),
        FieldDoc::new("seed_slot", TypeDoc::U64, &["drawn: the slot whose hash was drawn (the start slot), 0 before the draw"]),
        FieldDoc::new("seed_in_force", TypeDoc::U64, &["drawn: 0 until the first step after the start slot draws it; chosen: the runner's seed; none: 0"]),
        FieldDoc::new("slot_hash", TypeDoc::Bytes(32), &["drawn: the hash the seed was drawn from; zero otherwise"]),
        // The state buffer then holds curta-core's `Encoding`, not a run's state.
        FieldDoc::new("encoding", TypeDoc::U32, &["1 while the text prompt is still tokenized (the state buffer holds the encoding, continued by Steps), else 0"]),
        FieldDoc::new("reserved", TypeDoc::Reserved(20), &[]),
        FieldDoc::new("body", TypeDoc::Rest, &["the state buffer (stateLength bytes), then the text region (textCapacity bytes)"]),
    ],
};

/// Run account field offsets (from [`RUN_LAYOUT`]).
pub mod run_field {
    use super::RUN_LAYOUT as L;
    pub const MAGIC: usize = L.offset("magic");
    pub const VERSION: usize = L.offset("version");
    pub const SEED_SOURCE: usize = L.offset("seed_source");
    pub const DISPUTE: usize = L.offset("dispute");
    pub const NONCE: usize = L.offset("nonce");
    pub const MODEL: usize = L.offset("model");
    pub const RUNNER: usize = L.offset("runner");
    pub const STEPS_LANDED: usize = L.offset("steps_landed");
    pub const TEXT_LEN: usize = L.offset("text_length");
    pub const TEXT_CAPACITY: usize = L.offset("text_capacity");
    pub const STATE_LEN: usize = L.offset("state_length");
    pub const TEMPERATURE: usize = L.offset("temperature");
    pub const TOP_P: usize = L.offset("top_p");
    pub const RUNNER_SEED: usize = L.offset("runner_seed");
    pub const START_SLOT: usize = L.offset("start_slot");
    pub const SEED_SLOT: usize = L.offset("seed_slot");
    pub const SEED: usize = L.offset("seed_in_force");
    pub const SLOT_HASH: usize = L.offset("slot_hash");
    pub const ENCODING: usize = L.offset("encoding");
}

const _: () = assert!(RUN_LAYOUT.fixed_len() == RUN_HEADER_LEN);

pub const SEED_SOURCE_DOC: DefinedDoc = DefinedDoc {
    name: "seed_source",
    docs: &["Where a run's seed comes from: none (greedy, temperature 0), drawn from the chain (SHA-256 of \"curta-seed\", the runner's seed, the run address, the start slot and that slot's hash from the SlotHashes sysvar), or chosen by the runner."],
    kind: DefinedKind::Enum(&[
        VariantDoc::unit("none"),
        VariantDoc::unit("drawn"),
        VariantDoc::unit("chosen"),
    ]),
};

/// Where a run's seed comes from (run header byte 9, StartRun data byte 25).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum SeedSource {
    /// A greedy run (temperature 0): nothing is drawn, the seed in force is 0.
    None = 0,
    /// Drawn on chain by the first step after the start slot: SHA-256 of the runner's seed,
    /// the run's address, the start slot and that slot's hash ([`seed_preimage`]).
    Drawn = 1,
    /// The runner's seed, in force as given: a reproducible run whose outcome the runner
    /// could choose.
    Chosen = 2,
}

impl SeedSource {
    /// The source of a reproducible run: none when greedy, the runner's seed otherwise.
    pub fn reproducible(temperature: u32) -> SeedSource {
        match temperature {
            0 => SeedSource::None,
            _ => SeedSource::Chosen,
        }
    }

    pub fn from_u8(value: u8) -> Option<SeedSource> {
        match value {
            0 => Some(SeedSource::None),
            1 => Some(SeedSource::Drawn),
            2 => Some(SeedSource::Chosen),
            _ => None,
        }
    }
}

/// What a drawn seed hashes: "curta-seed", the runner's seed (u64), the run's address, the
/// start slot (u64) and the start slot's hash.
pub const SEED_PREIMAGE_LEN: usize = 90;

pub fn seed_preimage(
    runner_seed: u64,
    run: &Address,
    slot: u64,
    slot_hash: &[u8; 32],
) -> [u8; SEED_PREIMAGE_LEN] {
    let mut bytes = [0u8; SEED_PREIMAGE_LEN];
    bytes[..10].copy_from_slice(b"curta-seed");
    bytes[10..18].copy_from_slice(&runner_seed.to_le_bytes());
    bytes[18..50].copy_from_slice(run);
    bytes[50..58].copy_from_slice(&slot.to_le_bytes());
    bytes[58..90].copy_from_slice(slot_hash);
    bytes
}

/// The seed in force of a drawn run: the first 8 bytes of the preimage's SHA-256,
/// little-endian, or 1 where they are 0 (the generator's state is never 0).
pub fn seed_from_digest(digest: &[u8; 32]) -> u64 {
    match curta_core::le::u64_at(digest, 0) {
        0 => 1,
        seed => seed,
    }
}

/// The hash of `slot` in the SlotHashes sysvar's data (a u64 count, then (slot u64, hash)
/// entries, newest first).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SlotHashLookup {
    Found([u8; 32]),
    /// The newest entry is older than `slot`: the slot has not ended yet.
    NotYet,
    /// Every entry is newer than `slot`, or the slot is missing: it left the sysvar.
    Gone,
}

pub fn find_slot_hash(data: &[u8], slot: u64) -> SlotHashLookup {
    let Some((count, entries)) = data.split_first_chunk::<8>() else {
        return SlotHashLookup::NotYet;
    };
    let count = u64::from_le_bytes(*count).min(u32::MAX as u64) as usize;
    let mut newest = true;
    for entry in entries.chunks_exact(40).take(count) {
        let (entry_slot, hash) = entry.split_at(8);
        let entry_slot = u64::from_le_bytes(entry_slot.try_into().unwrap_or([0; 8]));
        if entry_slot == slot {
            return SlotHashLookup::Found(hash.try_into().unwrap_or([0; 32]));
        }
        if entry_slot < slot {
            break;
        }
        newest = false;
    }
    match newest {
        true => SlotHashLookup::NotYet,
        false => SlotHashLookup::Gone,
    }
}

/// What StartRun writes into a new run's header.
#[derive(Clone, Copy, Debug)]
pub struct RunStart<'k> {
    pub nonce: u32,
    pub model: &'k Address,
    pub runner: &'k Address,
    pub state_len: u32,
    pub text_capacity: u32,
    pub temperature: u32,
    pub top_p: u32,
    pub runner_seed: u64,
    pub source: SeedSource,
    pub start_slot: u64,
}

/// The data length of a run of `steps` tokens of a model of configuration `c`.
pub fn run_len(c: &Config, steps: u32) -> u64 {
    RUN_HEADER_LEN as u64 + state_len(c) as u64 + TEXT_PER_STEP as u64 * steps as u64
}

/// "run-{hex of the model address's first 8 bytes}-{nonce as 8 hex digits}".
pub fn run_seed_bytes(model: &Address, nonce: u32) -> [u8; RUN_SEED_LEN] {
    let mut seed = *b"run-0000000000000000-00000000";
    write_model_and_nonce(&mut seed[4..], model, nonce);
    seed
}

/// Writes "{hex of the model address's first 8 bytes}-{nonce as 8 hex digits}" (25 bytes) at
/// the start of `out`: the end of a run's or a claim's seed.
pub(crate) fn write_model_and_nonce(out: &mut [u8], model: &Address, nonce: u32) {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    for (i, byte) in model[..8].iter().enumerate() {
        out[2 * i] = HEX[(byte >> 4) as usize];
        out[1 + 2 * i] = HEX[(byte & 15) as usize];
    }
    out[16] = b'-';
    for i in 0..8 {
        out[17 + i] = HEX[((nonce >> (28 - 4 * i)) & 15) as usize];
    }
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

    /// Writes a new header (the rest of the header zero). The seed in force is the runner's
    /// for a chosen seed, 0 otherwise (a drawn seed is written by [`Self::record_seed`]).
    pub fn create(data: &'a mut [u8], start: &RunStart) -> Self {
        use run_field as f;
        let header = &mut data[..RUN_HEADER_LEN];
        header.fill(0);
        header[f::MAGIC..f::MAGIC + 8].copy_from_slice(&RUN_MAGIC);
        header[f::VERSION] = RUN_VERSION;
        header[f::SEED_SOURCE] = start.source as u8;
        header[f::MODEL..f::MODEL + 32].copy_from_slice(start.model);
        header[f::RUNNER..f::RUNNER + 32].copy_from_slice(start.runner);
        let words = [
            (f::NONCE, start.nonce),
            (f::TEXT_CAPACITY, start.text_capacity),
            (f::STATE_LEN, start.state_len),
            (f::TEMPERATURE, start.temperature),
            (f::TOP_P, start.top_p),
        ];
        for (at, value) in words {
            header[at..at + 4].copy_from_slice(&value.to_le_bytes());
        }
        let in_force = match start.source {
            SeedSource::Chosen => start.runner_seed,
            SeedSource::None | SeedSource::Drawn => 0,
        };
        let longs = [
            (f::RUNNER_SEED, start.runner_seed),
            (f::START_SLOT, start.start_slot),
            (f::SEED, in_force),
        ];
        for (at, value) in longs {
            header[at..at + 8].copy_from_slice(&value.to_le_bytes());
        }
        RunAccount { data }
    }

    fn u64_field(&self, at: usize) -> u64 {
        curta_core::le::u64_at(self.data, at)
    }

    /// A drawn seed not drawn yet: the runner's seed and the start slot to draw it from.
    pub fn seed_to_draw(&self) -> Option<(u64, u64)> {
        (self.data[run_field::SEED_SOURCE] == SeedSource::Drawn as u8
            && self.u64_field(run_field::SEED) == 0)
            .then(|| {
                (
                    self.u64_field(run_field::RUNNER_SEED),
                    self.u64_field(run_field::START_SLOT),
                )
            })
    }

    /// Records the drawn seed in the header and makes it the generator's state (state byte
    /// 48): no token was sampled before, since a drawn run steps only once it is drawn.
    pub fn record_seed(&mut self, slot: u64, slot_hash: &[u8; 32], seed: u64) {
        use run_field as f;
        let rng = RUN_HEADER_LEN + curta_core::infer::state::field::RNG;
        // The header and the state's header are within the data (`new`, `running`).
        if let Some(header) = self.data.get_mut(..rng + 8) {
            header[f::SEED_SLOT..f::SEED_SLOT + 8].copy_from_slice(&slot.to_le_bytes());
            header[f::SEED..f::SEED + 8].copy_from_slice(&seed.to_le_bytes());
            header[f::SLOT_HASH..f::SLOT_HASH + 32].copy_from_slice(slot_hash);
            header[rng..rng + 8].copy_from_slice(&seed.to_le_bytes());
        }
    }

    /// Presets a dispute run's drawn seed (its claim's, drawn at AnswerClaim) in the header
    /// only: the run's state takes it when the engine starts (no draw follows: the seed in
    /// force is not 0).
    pub fn preset_seed(&mut self, slot: u64, slot_hash: &[u8; 32], seed: u64) {
        use run_field as f;
        self.data[f::SEED_SLOT..f::SEED_SLOT + 8].copy_from_slice(&slot.to_le_bytes());
        self.data[f::SEED..f::SEED + 8].copy_from_slice(&seed.to_le_bytes());
        self.data[f::SLOT_HASH..f::SLOT_HASH + 32].copy_from_slice(slot_hash);
    }

    /// The seed in force (drawn: 0 until drawn).
    pub fn seed(&self) -> u64 {
        self.u64_field(run_field::SEED)
    }

    /// Whether a claim's dispute holds the run (header byte 10).
    pub fn dispute(&self) -> bool {
        self.data[run_field::DISPUTE] == 1
    }

    pub fn set_dispute(&mut self) {
        self.data[run_field::DISPUTE] = 1;
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

    /// Whether the run's text prompt is still being tokenized (run header byte 168): the state
    /// buffer holds curta-core's `Encoding`, and Steps continue it.
    pub fn encoding(&self) -> bool {
        self.u32_field(run_field::ENCODING) == 1
    }

    pub fn set_encoding(&mut self, encoding: bool) {
        self.set_u32_field(run_field::ENCODING, encoding as u32)
    }

    /// Where the run's seed comes from (header byte 9).
    pub fn seed_source(&self) -> SeedSource {
        SeedSource::from_u8(self.data[run_field::SEED_SOURCE]).unwrap_or(SeedSource::None)
    }

    /// The sampling settings StartRun was given: temperature, top-p and the runner's seed.
    pub fn settings(&self) -> (u32, u32, u64) {
        (
            self.u32_field(run_field::TEMPERATURE),
            self.u32_field(run_field::TOP_P),
            self.u64_field(run_field::RUNNER_SEED),
        )
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

    /// The most tokens the run may generate: its text capacity over [`TEXT_PER_STEP`].
    pub fn steps(&self) -> u32 {
        self.text_capacity() / TEXT_PER_STEP as u32
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
        pub seed_source: SeedSource,
        pub temperature: u32,
        pub top_p: u32,
        pub runner_seed: u64,
        pub start_slot: u64,
        /// The slot whose hash the seed was drawn from (0 until drawn, and for other sources).
        pub seed_slot: u64,
        /// The seed in force: 0 until a drawn seed is drawn, and for a greedy run.
        pub seed: u64,
        pub slot_hash: [u8; 32],
        /// The text prompt is still being tokenized: `state` holds curta-core's `Encoding`.
        pub encoding: bool,
        /// A claim's dispute run: nobody may close it; Resolve does.
        pub dispute: bool,
        /// The most tokens the run may generate (its text capacity over [`TEXT_PER_STEP`]).
        pub steps: u32,
        pub state: Vec<u8>,
        pub text: Vec<u8>,
    }

    impl RunHeader {
        pub fn unpack(data: &[u8]) -> Result<RunHeader, CurtaError> {
            let mut copy = data.to_vec();
            let mut run = RunAccount::new(&mut copy)?;
            let (model, runner) = (Pubkey::from(*run.model()), Pubkey::from(*run.runner()));
            let (steps_landed, nonce) = (run.steps_landed(), run.nonce());
            let seed_source =
                SeedSource::from_u8(data[run_field::SEED_SOURCE]).ok_or(CurtaError::NotARun)?;
            let u32_at = |at| curta_core::le::u32_at(data, at);
            let u64_at = |at| curta_core::le::u64_at(data, at);
            let mut slot_hash = [0u8; 32];
            slot_hash.copy_from_slice(&data[run_field::SLOT_HASH..run_field::SLOT_HASH + 32]);
            let text_len = run.text_len() as usize;
            let encoding = run.encoding();
            let dispute = run.dispute();
            let steps = run.steps();
            let (state, text) = run.state_and_text();
            Ok(RunHeader {
                nonce,
                model,
                runner,
                steps_landed,
                seed_source,
                temperature: u32_at(run_field::TEMPERATURE),
                top_p: u32_at(run_field::TOP_P),
                runner_seed: u64_at(run_field::RUNNER_SEED),
                start_slot: u64_at(run_field::START_SLOT),
                seed_slot: u64_at(run_field::SEED_SLOT),
                seed: u64_at(run_field::SEED),
                slot_hash,
                encoding,
                dispute,
                steps,
                state: state.to_vec(),
                text: text[..text_len].to_vec(),
            })
        }
    }

    /// The seed in force of a run drawn from `slot`'s hash (off chain: the `sha2` crate; the
    /// program hashes the same bytes with the `sol_sha256` syscall).
    pub fn drawn_seed(runner_seed: u64, run: &Pubkey, slot: u64, slot_hash: &[u8; 32]) -> u64 {
        let preimage = seed_preimage(runner_seed, &run.to_bytes(), slot, slot_hash);
        seed_from_digest(&curta_core::sha256(&preimage))
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
