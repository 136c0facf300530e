//! Account layouts: the model account and the weight accounts (docs/program.md has the tables).
//! Every field sits at a fixed offset and is little-endian.
//!
//! The program reads and writes both accounts in place ([`ModelAccount`], [`WeightFields`]):
//! no copy of the 808-byte model per instruction. The decoded structs the client and the tests
//! use ([`Model`], [`WeightHeader`], with `solana_pubkey::Pubkey` addresses) exist off chain
//! only and are built on the same checks.

use crate::error::CurtaError;
#[cfg(not(target_os = "solana"))]
use curta_core::le::u32_at;
use curta_core::Config;

/// An account address as the program sees it.
pub type Address = [u8; 32];

/// Size of the model account's data.
pub const MODEL_LEN: usize = 808;
/// Size of a weight account's header; the section's bytes follow it.
pub const WEIGHT_HEADER_LEN: usize = 2048;
/// Solana's largest account: a weight account holding a section of the largest size.
pub const MAX_WEIGHT_ACCOUNT_LEN: usize = 10_485_760;
/// Most sections a model has.
pub const MAX_SECTIONS: usize = 18;
/// Fewest sections a model has.
pub const MIN_SECTIONS: usize = 2;
/// Solana's limit on the account data one transaction loads (64 MiB, counting every account
/// of the transaction, its program's executable included).
pub const MAX_LOADED_ACCOUNTS_BYTES: u64 = 64 * 1024 * 1024;
/// What a model's accounts may hold together (the model's 808 bytes and every weight account's
/// 2,048 + its section's length): 64 MiB less 1 MiB left for the rest of a Close transaction
/// (its fee payer, authority and destination, the program's executable, a compute-budget
/// instruction, and the 64 bytes the runtime counts per account). Reopen and Close take every
/// weight account in one instruction, so CreateModel refuses a model over this
/// (`ModelTooLarge`): its rent could never be recovered.
pub const MAX_MODEL_BYTES: u64 = MAX_LOADED_ACCOUNTS_BYTES - 1024 * 1024;

/// The data the accounts of a model with these section lengths hold together: the model's 808
/// bytes plus 2,048 + the length for each section.
pub fn model_bytes(lengths: impl IntoIterator<Item = u32>) -> u64 {
    lengths
        .into_iter()
        .map(|length| WEIGHT_HEADER_LEN as u64 + length as u64)
        .sum::<u64>()
        + MODEL_LEN as u64
}

/// The least account data a Step of any run loads: the model's 808 bytes, section zero's
/// weight account, the weight account of the section its next item reads (a step carries
/// section zero and any of the others: docs/program.md, "7 Step") and the run account, each at
/// most an account's 10 MiB. Under [`MAX_MODEL_BYTES`] (the same 1 MiB margin for the rest of
/// the transaction), so every run of every model that can be created can be stepped.
pub const LEAST_STEP_BYTES: u64 = MODEL_LEN as u64 + 3 * MAX_WEIGHT_ACCOUNT_LEN as u64;
const _: () = assert!(LEAST_STEP_BYTES <= MAX_MODEL_BYTES);

/// Length of a weight account's seed: "curta-" + 2 digits + "-" + 20 hex digits.
pub const WEIGHT_SEED_LEN: usize = 29;

/// First seed of the model PDA: [b"model", authority, weights hash].
pub const MODEL_SEED: &[u8] = b"model";
pub const MODEL_MAGIC: [u8; 8] = *b"CURTAMDL";
pub const WEIGHT_MAGIC: [u8; 8] = *b"CURTAWSC";
pub const LAYOUT_VERSION: u8 = 1;

const _: () = assert!(WEIGHT_HEADER_LEN + curta_core::MAX_SECTION_LEN == MAX_WEIGHT_ACCOUNT_LEN);
const _: () = assert!(MAX_SECTIONS == curta_core::MAX_SECTIONS);
const _: () = assert!(MIN_SECTIONS == curta_core::MIN_SECTIONS);

/// Where a model is in its life: written (Open), being hashed (Sealing), hashed to another
/// value than declared (Mismatch), or hashed to the declared value (Sealed, forever).
#[repr(u8)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ModelState {
    Open = 1,
    Sealing = 2,
    Mismatch = 3,
    Sealed = 4,
}

impl ModelState {
    pub fn from_u8(value: u8) -> Option<Self> {
        match value {
            1 => Some(ModelState::Open),
            2 => Some(ModelState::Sealing),
            3 => Some(ModelState::Mismatch),
            4 => Some(ModelState::Sealed),
            _ => None,
        }
    }

    /// The state rule of every instruction: the model must be in one of `allowed`; a Sealed
    /// model is `ModelSealed` (it never changes again), any other state `WrongState`.
    #[inline(always)]
    pub fn require(self, allowed: &[ModelState]) -> Result<(), CurtaError> {
        // A fold over the (constant) states, not `contains`: LLVM unrolls it into compares
        // instead of a loop over the list in read-only data.
        if allowed
            .iter()
            .fold(false, |found, &state| found | (state == self))
        {
            Ok(())
        } else if self == ModelState::Sealed {
            Err(CurtaError::ModelSealed)
        } else {
            Err(CurtaError::WrongState)
        }
    }
}

/// Whether two addresses are equal. Account keys and the layouts' address fields sit at 8-byte
/// aligned addresses: there the comparison takes four word loads (LLVM's BPF backend compares
/// unaligned bytes one at a time); anywhere else it is byte-wise.
#[inline(always)]
pub fn same_address(a: &Address, b: &Address) -> bool {
    let (pa, pb) = (a.as_ptr() as *const u64, b.as_ptr() as *const u64);
    if (pa as usize | pb as usize) & 7 == 0 {
        // SAFETY: both point to 32 readable bytes, 8-byte aligned. Written out: as a loop
        // over the four words (opt-level "s" does not unroll it) it costs three times as much.
        unsafe {
            pa.read() == pb.read()
                && pa.add(1).read() == pb.add(1).read()
                && pa.add(2).read() == pb.add(2).read()
                && pa.add(3).read() == pb.add(3).read()
        }
    } else {
        a == b
    }
}

/// Whether `bytes` are all zero: a word at a time over the 8-byte aligned part.
#[inline(always)]
pub fn all_zero(bytes: &[u8]) -> bool {
    // SAFETY: align_to only reinterprets the aligned middle as whole u64 words.
    let (head, words, tail) = unsafe { bytes.align_to::<u64>() };
    head.iter().all(|&b| b == 0) && words.iter().all(|&w| w == 0) && tail.iter().all(|&b| b == 0)
}

fn array_at<const N: usize>(data: &[u8], offset: usize) -> &[u8; N] {
    // Callers index inside a layout whose length they checked.
    data[offset..offset + N]
        .try_into()
        .expect("field inside the checked layout")
}

/// The little-endian u32 at `at` (a multiple of 4) of account data. On chain one word load:
/// the runtime hands a program every account's data 8-byte aligned (the loader's input
/// serialization), and this module reads only account data (the model account, weight
/// headers) at field offsets that are multiples of the field's size. Off chain (the client's
/// and the tests' buffers have any alignment) byte-wise.
#[inline(always)]
fn word32(data: &[u8], at: usize) -> u32 {
    let bytes = &data[at..at + 4];
    #[cfg(target_os = "solana")]
    {
        // SAFETY: 4 readable bytes; 4-byte aligned, as above.
        u32::from_le(unsafe { (bytes.as_ptr() as *const u32).read() })
    }
    #[cfg(not(target_os = "solana"))]
    u32_at(bytes, 0)
}

/// The little-endian u16 at `at` (a multiple of 2), as `word32`.
#[inline(always)]
fn word16(data: &[u8], at: usize) -> u16 {
    let bytes = &data[at..at + 2];
    #[cfg(target_os = "solana")]
    {
        // SAFETY: 2 readable bytes; 2-byte aligned, as `word32` says.
        u16::from_le(unsafe { (bytes.as_ptr() as *const u16).read() })
    }
    #[cfg(not(target_os = "solana"))]
    curta_core::le::u16_at(bytes, 0)
}

/// The little-endian u64 at `at` (a multiple of 8), as `word32`.
#[inline(always)]
fn word64(data: &[u8], at: usize) -> u64 {
    let bytes = &data[at..at + 8];
    #[cfg(target_os = "solana")]
    {
        // SAFETY: 8 readable bytes; 8-byte aligned, as `word32` says.
        u64::from_le(unsafe { (bytes.as_ptr() as *const u64).read() })
    }
    #[cfg(not(target_os = "solana"))]
    curta_core::le::u64_at(bytes, 0)
}

/// Writes `value` little-endian at `at` (a multiple of 4), as `word32` reads it.
#[inline(always)]
fn put32(data: &mut [u8], at: usize, value: u32) {
    let bytes = &mut data[at..at + 4];
    #[cfg(target_os = "solana")]
    // SAFETY: 4 writable bytes; 4-byte aligned, as `word32` says.
    unsafe {
        (bytes.as_mut_ptr() as *mut u32).write(value.to_le())
    };
    #[cfg(not(target_os = "solana"))]
    bytes.copy_from_slice(&value.to_le_bytes());
}

fn put(dst: &mut [u8], offset: usize, bytes: &[u8]) {
    dst[offset..offset + bytes.len()].copy_from_slice(bytes);
}

/// Checks a model account's data: exactly MODEL_LEN bytes, the magic, layout version 1, a
/// known state and a section count of 2 to 18; anything else is `NotAModel`.
pub fn check_model(data: &[u8]) -> Result<ModelState, CurtaError> {
    use model_field as f;
    if data.len() != MODEL_LEN
        || word64(data, f::MAGIC) != u64::from_le_bytes(MODEL_MAGIC)
        || data[f::VERSION] != LAYOUT_VERSION
        || !(MIN_SECTIONS..=MAX_SECTIONS).contains(&(data[f::SECTION_COUNT] as usize))
    {
        return Err(CurtaError::NotAModel);
    }
    ModelState::from_u8(data[f::STATE]).ok_or(CurtaError::NotAModel)
}

/// The section and the chunk within it of chunk `cursor` of the whole artifact.
pub fn locate_chunk(sections: impl IntoIterator<Item = u32>, cursor: u32) -> Option<(usize, u32)> {
    let mut first = 0u32;
    for (section, length) in sections.into_iter().enumerate() {
        let chunks = curta_core::chunk_count(length as u64) as u32;
        if cursor < first + chunks {
            return Some((section, cursor - first));
        }
        first += chunks;
    }
    None
}

/// [`ModelAccount::locate_seal`]: the cursor's section as recorded at bytes 148 and 150, the
/// result as one register, `section | chunk_in_section << 32`, or `u64::MAX` (the cursor past
/// that section, as after the last chunk, or the ticket outside it).
#[inline(always)]
fn locate_in(data: &[u8; MODEL_LEN], cursor: u32, ticket: u32) -> u64 {
    use model_field as f;
    // In u64, with no truncation to 32 bits per step (SBF's ALU is 64-bit), and the chunk
    // count as (length + 65,535) >> 16: `chunk_count` (div_ceil) without its remainder test.
    const SHIFT: u32 = curta_core::CHUNK_LEN.trailing_zeros();
    const _: () = assert!(curta_core::CHUNK_LEN == 1 << SHIFT);
    let section = (data[f::SEAL_SECTION] as usize).min(MAX_SECTIONS - 1);
    let first = word16(data, f::SEAL_SECTION_FIRST) as u64;
    let length = word32(data, f::SECTION_LENGTHS + 4 * section) as u64;
    let chunks = (length + (1 << SHIFT) - 1) >> SHIFT;
    // Below the section's first chunk wraps around: one comparison each.
    let in_section = (cursor as u64).wrapping_sub(first);
    if in_section >= chunks || (ticket as u64).wrapping_sub(first) >= chunks {
        return u64::MAX;
    }
    section as u64 | in_section << 32
}

/// A model account's data, checked once and then read and written in place.
pub struct ModelAccount<'a> {
    /// Exactly MODEL_LEN bytes: every fixed offset is in bounds without a check.
    data: &'a mut [u8; MODEL_LEN],
    state: ModelState,
}

impl<'a> ModelAccount<'a> {
    /// The model in `data` (see [`check_model`]).
    pub fn new(data: &'a mut [u8]) -> Result<Self, CurtaError> {
        let state = check_model(data)?;
        let data = data.try_into().map_err(|_| CurtaError::NotAModel)?;
        Ok(ModelAccount { data, state })
    }

    /// Lays out a new model in `data` (MODEL_LEN zero bytes): state Open, pass 0, cursor 0,
    /// running hash and config zero, creation id `creation`. `section_lengths` is the
    /// little-endian u32 table of the instruction data, already checked.
    pub fn create(
        data: &'a mut [u8],
        creation: u64,
        bump: u8,
        authority: &Address,
        weights_hash: &Address,
        section_lengths: &[u32],
        total_chunks: u32,
    ) -> Result<Self, CurtaError> {
        use model_field as f;
        if data.len() != MODEL_LEN || section_lengths.len() > MAX_SECTIONS {
            return Err(CurtaError::NotAModel);
        }
        data.fill(0);
        put(data, f::MAGIC, &MODEL_MAGIC);
        data[f::VERSION] = LAYOUT_VERSION;
        data[f::STATE] = ModelState::Open as u8;
        data[f::BUMP] = bump;
        data[f::SECTION_COUNT] = section_lengths.len() as u8;
        put(data, f::AUTHORITY, authority);
        put(data, f::WEIGHTS_HASH, weights_hash);
        put(data, f::TOTAL_CHUNKS, &total_chunks.to_le_bytes());
        put(data, f::CREATION, &creation.to_le_bytes());
        for (i, length) in section_lengths.iter().enumerate() {
            put(data, f::SECTION_LENGTHS + 4 * i, &length.to_le_bytes());
        }
        ModelAccount::new(data)
    }

    pub fn state(&self) -> ModelState {
        self.state
    }

    pub fn set_state(&mut self, state: ModelState) {
        self.state = state;
        self.data[model_field::STATE] = state as u8;
    }

    pub fn section_count(&self) -> usize {
        // At most MAX_SECTIONS (`check_model`): the bound lets every per-section offset go
        // without a bounds check.
        (self.data[model_field::SECTION_COUNT] as usize).min(MAX_SECTIONS)
    }

    /// The section of chunk `cursor` of the whole artifact, its declared length and the
    /// chunk's index within it ([`locate_chunk`] over the declared lengths, read in place);
    /// `None` when the cursor is past the artifact or `ticket` (a Seal's chunk number) is not
    /// a chunk of the cursor's section.
    #[inline(always)]
    pub fn locate_seal(&self, cursor: u32, ticket: u32) -> Option<(usize, u32, u32)> {
        match locate_in(self.data, cursor, ticket) {
            u64::MAX => None,
            found => {
                // Below the section count (at most 18): `min` changes nothing and lets the
                // section's fields be read without a bounds check.
                let section = (found as u32 as usize).min(MAX_SECTIONS - 1);
                Some((section, self.section_length(section), (found >> 32) as u32))
            }
        }
    }

    pub fn seal_pass(&self) -> u32 {
        word32(self.data, model_field::SEAL_PASS)
    }

    /// The creation id: the slot of the CreateModel that made the model. Every Seal names it,
    /// so a Seal signed for an earlier model at this address (closed, then created again in a
    /// later slot) is refused.
    pub fn creation(&self) -> u64 {
        word64(self.data, model_field::CREATION)
    }

    pub fn authority(&self) -> &Address {
        array_at(self.data, model_field::AUTHORITY)
    }

    pub fn weights_hash(&self) -> &Address {
        array_at(self.data, model_field::WEIGHTS_HASH)
    }

    pub fn running_hash(&self) -> &Address {
        array_at(self.data, model_field::RUNNING_HASH)
    }

    pub fn seal_cursor(&self) -> u32 {
        word32(self.data, model_field::SEAL_CURSOR)
    }

    pub fn total_chunks(&self) -> u32 {
        word32(self.data, model_field::TOTAL_CHUNKS)
    }

    pub fn section_length(&self, section: usize) -> u32 {
        word32(self.data, model_field::SECTION_LENGTHS + 4 * section)
    }

    /// The declared lengths of the model's sections.
    pub fn sections(&self) -> impl Iterator<Item = u32> + '_ {
        (0..self.section_count()).map(|s| self.section_length(s))
    }

    /// The bound weight account of `section` (zero until initialized).
    pub fn weight_account(&self, section: usize) -> &Address {
        array_at(self.data, model_field::WEIGHT_ACCOUNTS + 32 * section)
    }

    pub fn set_weight_account(&mut self, section: usize, address: &Address) {
        put(
            self.data,
            model_field::WEIGHT_ACCOUNTS + 32 * section,
            address,
        );
    }

    /// The running hash, to chain a chunk into in place.
    pub fn running_hash_mut(&mut self) -> &mut Address {
        (&mut self.data[model_field::RUNNING_HASH..model_field::RUNNING_HASH + 32])
            .try_into()
            .expect("field inside the checked layout")
    }

    pub fn set_seal_cursor(&mut self, seal_cursor: u32) {
        put32(self.data, model_field::SEAL_CURSOR, seal_cursor);
    }

    /// The seal chain so far: running hash and cursor.
    pub fn set_chain(&mut self, running_hash: &Address, seal_cursor: u32) {
        put(self.data, model_field::RUNNING_HASH, running_hash);
        put32(self.data, model_field::SEAL_CURSOR, seal_cursor);
    }

    /// The cursor has moved into section `section`, whose first chunk it is (bytes 148, 150).
    pub fn set_seal_section(&mut self, section: usize, first_chunk: u32) {
        put32(
            self.data,
            model_field::SEAL_SECTION_FIRST,
            first_chunk & 0xffff | (section as u32) << 16,
        );
    }

    pub fn set_config(&mut self, config: &Config) {
        for (i, value) in config.fields().iter().enumerate() {
            put32(self.data, model_field::CONFIG + 4 * i, *value);
        }
    }

    /// A new seal pass (Reopen): pass + 1, cursor 0, running hash and config zero, Open.
    pub fn start_over(&mut self) -> Result<(), CurtaError> {
        let pass = self
            .seal_pass()
            .checked_add(1)
            .ok_or(CurtaError::Overflow)?;
        put32(self.data, model_field::SEAL_PASS, pass);
        self.set_chain(&[0; 32], 0);
        self.set_seal_section(0, 0);
        self.set_config(&Config::default());
        self.set_state(ModelState::Open);
        Ok(())
    }
}

/// An initialized weight account's header, read in place.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WeightFields<'a> {
    pub frozen: bool,
    pub section: u16,
    pub length: u32,
    pub model: &'a Address,
    pub authority: &'a Address,
}

impl<'a> WeightFields<'a> {
    /// Reads an initialized weight account's data: the magic, layout version 1, frozen 0 or 1
    /// and a data length of exactly 2,048 + the section length; anything else (an account the
    /// program owns but has not initialized included) is `NotInitialized`.
    pub fn parse(data: &'a [u8]) -> Result<Self, CurtaError> {
        use weight_field as f;
        if data.len() < WEIGHT_HEADER_LEN
            || word64(data, f::MAGIC) != u64::from_le_bytes(WEIGHT_MAGIC)
            || data[f::VERSION] != LAYOUT_VERSION
            || data[f::FROZEN] > 1
        {
            return Err(CurtaError::NotInitialized);
        }
        let length = word32(data, f::LENGTH);
        if data.len() != WEIGHT_HEADER_LEN + length as usize {
            return Err(CurtaError::NotInitialized);
        }
        Ok(WeightFields {
            frozen: data[f::FROZEN] == 1,
            section: word16(data, f::SECTION),
            length,
            model: array_at(data, f::MODEL),
            authority: array_at(data, f::AUTHORITY),
        })
    }

    /// The one rule for "this weight account is section `section` of the model at `model`":
    /// its header names the model (`WrongModel`) and the section (`WrongSection`), holds the
    /// declared length, and, once the model recorded an account for the section (`recorded`
    /// non-zero), the account at `key` is that one (`WeightAddressMismatch`).
    pub fn belongs_to(
        &self,
        model: &Address,
        section: usize,
        declared_length: u32,
        recorded: &Address,
        key: &Address,
    ) -> Result<(), CurtaError> {
        if !same_address(self.model, model) {
            return Err(CurtaError::WrongModel);
        }
        if self.section as usize != section {
            return Err(CurtaError::WrongSection);
        }
        if (!same_address(recorded, key) && !all_zero(recorded)) || self.length != declared_length {
            return Err(CurtaError::WeightAddressMismatch);
        }
        Ok(())
    }
}

/// Writes a new header into `dst[..2048]` (bytes 80..2048 become zero): not frozen.
pub fn write_weight_header(
    dst: &mut [u8],
    section: u16,
    length: u32,
    model: &Address,
    authority: &Address,
) {
    use weight_field as f;
    let dst = &mut dst[..WEIGHT_HEADER_LEN];
    dst.fill(0);
    put(dst, f::MAGIC, &WEIGHT_MAGIC);
    dst[f::VERSION] = LAYOUT_VERSION;
    put(dst, f::SECTION, &section.to_le_bytes());
    put(dst, f::LENGTH, &length.to_le_bytes());
    put(dst, f::MODEL, model);
    put(dst, f::AUTHORITY, authority);
}

/// Sets or clears the frozen byte of an initialized header in place.
pub fn set_frozen(dst: &mut [u8], frozen: bool) {
    dst[weight_field::FROZEN] = frozen as u8;
}

/// Whether a weight address's header bytes (the first 2,048, or all of a shorter account) are
/// all zero: created, never initialized. Word-wise: Close reads up to 18 of these.
pub fn header_is_zero(data: &[u8]) -> bool {
    all_zero(&data[..data.len().min(WEIGHT_HEADER_LEN)])
}

/// The seed of section `section`'s weight account: "curta-{section:02}-{hex of the model
/// address's first 10 bytes}", 29 bytes (the system program allows 32).
pub fn weight_seed_bytes(model: &Address, section: u8) -> [u8; WEIGHT_SEED_LEN] {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let mut seed = *b"curta-00-00000000000000000000";
    seed[6] = b'0' + section / 10 % 10;
    seed[7] = b'0' + section % 10;
    for (i, byte) in model[..10].iter().enumerate() {
        seed[9 + 2 * i] = HEX[(byte >> 4) as usize];
        seed[10 + 2 * i] = HEX[(byte & 15) as usize];
    }
    seed
}

mod layout;
pub use layout::*;

#[cfg(not(target_os = "solana"))]
mod decoded;
#[cfg(not(target_os = "solana"))]
pub use decoded::*;
