//! The question account (owned by this program, created by the asker with QUESTION_LEN bytes
//! of data, all zero), little-endian:
//!
//! | Offset | Size | Field |
//! |---|---|---|
//! | 0 | 8 | magic `CURTAQST` |
//! | 8 | 1 | state: 0 empty, 1 asked, 2 bound, 3 answered |
//! | 12 | 4 | prompt length, u32 (1..32) |
//! | 16 | 32 | asker |
//! | 48 | 32 | model (the Curta model account's address) |
//! | 80 | 4 | temperature, u32 |
//! | 84 | 4 | top-p, u32 |
//! | 88 | 32 | the bound run's address |
//! | 120 | 8 | the bound run's start slot, u64 |
//! | 128 | 4 | answer length, u32 (the run's generated tokens, at most 64 kept) |
//! | 136 | 128 | prompt ids, u32 each |
//! | 264 | 256 | answer ids, u32 each |

pub const QUESTION_LEN: usize = 520;
pub const MAGIC: [u8; 8] = *b"CURTAQST";
pub const MAX_PROMPT: usize = 32;
pub const MAX_ANSWER: usize = 64;

pub mod field {
    pub const MAGIC: usize = 0;
    pub const STATE: usize = 8;
    pub const PROMPT_LEN: usize = 12;
    pub const ASKER: usize = 16;
    pub const MODEL: usize = 48;
    pub const TEMPERATURE: usize = 80;
    pub const TOP_P: usize = 84;
    pub const RUN: usize = 88;
    pub const START_SLOT: usize = 120;
    pub const ANSWER_LEN: usize = 128;
    pub const PROMPT: usize = 136;
    pub const ANSWER: usize = 264;
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum QuestionState {
    Empty = 0,
    Asked = 1,
    Bound = 2,
    Answered = 3,
}

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
