//! The question account (owned by this program, created by the asker with QUESTION_LEN bytes
//! of data, all zero), little-endian:
//!
//! | Offset | Size | Field |
//! |---|---|---|
//! | 0 | 8 | magic `CURTAQST` |
//! | 8 | 1 | state: 0 empty, 1 asked, 2 bound, 3 answered |
//! | 9 | 1 | what is bound: 0 a run, 1 a claim |
//! | 10 | 2 | reserved, zero |
//! | 12 | 4 | prompt length, u32 (1..32) |
//! | 16 | 32 | asker |
//! | 48 | 32 | model (the Curta model account's address) |
//! | 80 | 4 | temperature, u32 |
//! | 84 | 4 | top-p, u32 |
//! | 88 | 32 | the bound run's (or claim's) address (zero unless bound or answered) |
//! | 120 | 8 | the bound run's start slot (a claim's open slot), u64 |
//! | 128 | 4 | answer length, u32 (the generated tokens, at most 64 kept) |
//! | 132 | 4 | the bound run's (claim's) token count (steps), u32 |
//! | 136 | 8 | the bound run's runner seed (claim's claimer seed), u64 |
//! | 144 | 4 | expiry, u32: slots after the bound start (or open) slot from which anyone may release the question (MIN_EXPIRY..=MAX_EXPIRY) |
//! | 148 | 4 | releases, u32: how many times the question was released |
//! | 152 | 128 | prompt ids, u32 each |
//! | 280 | 256 | answer ids, u32 each |

pub const QUESTION_LEN: usize = 536;
pub const MAGIC: [u8; 8] = *b"CURTAQST";
pub const MAX_PROMPT: usize = 32;
pub const MAX_ANSWER: usize = 64;
/// The least expiry a question may ask (slots): the SlotHashes sysvar's 512 entries, the time
/// a run's start slot stays drawable. Until then a bound run nobody stepped can still draw its
/// seed and be stepped to its end by anyone, and each release (a retry of the asker who walked
/// away from a run: docs/program.md, "The seed") costs at least that long.
pub const MIN_EXPIRY: u32 = 512;
/// The most expiry a question may ask (slots): an epoch of 432,000 slots (about two days at
/// 400 ms a slot), so that a question bound to a run nobody finishes comes back within it.
pub const MAX_EXPIRY: u32 = 432_000;

/// The settings a run accepts (curta-core's ranges, docs/inference.md): temperature up to 16
/// and top-p above 0 up to 1, both with 16 fractional bits. A question outside them could never
/// be bound.
pub const MAX_TEMPERATURE: u32 = 16 << 16;
pub const MAX_TOP_P: u32 = 1 << 16;

pub mod field {
    pub const MAGIC: usize = 0;
    pub const STATE: usize = 8;
    pub const BOUND_KIND: usize = 9;
    pub const PROMPT_LEN: usize = 12;
    pub const ASKER: usize = 16;
    pub const MODEL: usize = 48;
    pub const TEMPERATURE: usize = 80;
    pub const TOP_P: usize = 84;
    pub const RUN: usize = 88;
    pub const START_SLOT: usize = 120;
    pub const ANSWER_LEN: usize = 128;
    pub const STEPS: usize = 132;
    pub const RUNNER_SEED: usize = 136;
    pub const EXPIRY: usize = 144;
    pub const RELEASES: usize = 148;
    pub const PROMPT: usize = 152;
    pub const ANSWER: usize = 280;
}

const _: () = assert!(field::ANSWER + 4 * MAX_ANSWER == QUESTION_LEN);
const _: () = assert!(field::PROMPT + 4 * MAX_PROMPT == field::ANSWER);

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum QuestionState {
    Empty = 0,
    Asked = 1,
    Bound = 2,
    Answered = 3,
}

/// The shortest challenge window of a claim the example consumer accepts, in slots: its
/// watchers' time to see a wrong answer and challenge it (curta's least, 150, doubled).
pub const MIN_CLAIM_WINDOW: u32 = 300;

/// What a bound question is bound to (byte 9).
pub const BOUND_RUN: u8 = 0;
pub const BOUND_CLAIM: u8 = 1;

pub fn u32_at(data: &[u8], at: usize) -> u32 {
    u32::from_le_bytes([data[at], data[at + 1], data[at + 2], data[at + 3]])
}

pub fn u64_at(data: &[u8], at: usize) -> u64 {
    u32_at(data, at) as u64 | (u32_at(data, at + 4) as u64) << 32
}

pub fn put(data: &mut [u8], at: usize, bytes: &[u8]) {
    data[at..at + bytes.len()].copy_from_slice(bytes);
}

/// The question's prompt ids (the stored count, at most MAX_PROMPT).
pub fn prompt_ids(data: &[u8], out: &mut [u32; MAX_PROMPT]) -> usize {
    let n = (u32_at(data, field::PROMPT_LEN) as usize).min(MAX_PROMPT);
    for (i, id) in out.iter_mut().enumerate().take(n) {
        *id = u32_at(data, field::PROMPT + 4 * i);
    }
    n
}
