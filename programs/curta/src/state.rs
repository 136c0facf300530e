//! Account layouts: the model account and the weight accounts (docs/program.md has the tables).
//! Every field sits at a fixed offset and is little-endian.

use alloc::string::String;
use core::fmt::Write;
use curta_core::Config;
use solana_program_error::ProgramError;
use solana_pubkey::Pubkey;

use crate::error::CurtaError;

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

/// First seed of the model PDA: [b"model", authority, weights hash].
pub const MODEL_SEED: &[u8] = b"model";
pub const MODEL_MAGIC: [u8; 8] = *b"CURTAMDL";
pub const WEIGHT_MAGIC: [u8; 8] = *b"CURTAWSC";
pub const LAYOUT_VERSION: u8 = 1;

const _: () = assert!(WEIGHT_HEADER_LEN + curta_core::MAX_SECTION_LEN == MAX_WEIGHT_ACCOUNT_LEN);
const _: () = assert!(MAX_SECTIONS == curta_core::MAX_SECTIONS);

/// Model account field offsets.
mod model_field {
    pub const MAGIC: usize = 0;
    pub const VERSION: usize = 8;
    pub const STATE: usize = 9;
    pub const BUMP: usize = 10;
    pub const SECTION_COUNT: usize = 11;
    pub const SEAL_PASS: usize = 12;
    pub const AUTHORITY: usize = 16;
    pub const WEIGHTS_HASH: usize = 48;
    pub const RUNNING_HASH: usize = 80;
    pub const SEAL_CURSOR: usize = 112;
    pub const TOTAL_CHUNKS: usize = 116;
    pub const CONFIG: usize = 120;
    pub const SECTION_LENGTHS: usize = 160;
    pub const WEIGHT_ACCOUNTS: usize = 232;
}

/// Weight account header field offsets.
mod weight_field {
    pub const MAGIC: usize = 0;
    pub const VERSION: usize = 8;
    pub const FROZEN: usize = 9;
    pub const SECTION: usize = 10;
    pub const LENGTH: usize = 12;
    pub const MODEL: usize = 16;
    pub const AUTHORITY: usize = 48;
}

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
}

/// The model account, decoded.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Model {
    pub state: ModelState,
    pub bump: u8,
    pub section_count: u8,
    pub seal_pass: u32,
    pub authority: Pubkey,
    pub weights_hash: [u8; 32],
    pub running_hash: [u8; 32],
    pub seal_cursor: u32,
    pub total_chunks: u32,
    pub config: Config,
    pub section_lengths: [u32; MAX_SECTIONS],
    pub weight_accounts: [Pubkey; MAX_SECTIONS],
}

fn u32_at(data: &[u8], offset: usize) -> u32 {
    let mut word = [0u8; 4];
    word.copy_from_slice(&data[offset..offset + 4]);
    u32::from_le_bytes(word)
}

fn bytes32_at(data: &[u8], offset: usize) -> [u8; 32] {
    let mut bytes = [0u8; 32];
    bytes.copy_from_slice(&data[offset..offset + 32]);
    bytes
}

fn put(dst: &mut [u8], offset: usize, bytes: &[u8]) {
    dst[offset..offset + bytes.len()].copy_from_slice(bytes);
}

impl Model {
    /// Decodes a model account's data: exactly MODEL_LEN bytes, the magic, layout version 1, a
    /// known state and a section count of 2 to 18; anything else is `NotAModel`.
    pub fn unpack(data: &[u8]) -> Result<Model, ProgramError> {
        use model_field as f;
        if data.len() != MODEL_LEN
            || data[f::MAGIC..f::MAGIC + 8] != MODEL_MAGIC
            || data[f::VERSION] != LAYOUT_VERSION
        {
            return Err(CurtaError::NotAModel.into());
        }
        let state = ModelState::from_u8(data[f::STATE]).ok_or(CurtaError::NotAModel)?;
        let section_count = data[f::SECTION_COUNT];
        if !(MIN_SECTIONS..=MAX_SECTIONS).contains(&(section_count as usize)) {
            return Err(CurtaError::NotAModel.into());
        }
        let config = Config::from_fields(core::array::from_fn(|i| u32_at(data, f::CONFIG + 4 * i)));
        let mut section_lengths = [0u32; MAX_SECTIONS];
        let mut weight_accounts = [Pubkey::default(); MAX_SECTIONS];
        for i in 0..MAX_SECTIONS {
            section_lengths[i] = u32_at(data, f::SECTION_LENGTHS + 4 * i);
            weight_accounts[i] =
                Pubkey::new_from_array(bytes32_at(data, f::WEIGHT_ACCOUNTS + 32 * i));
        }
        Ok(Model {
            state,
            bump: data[f::BUMP],
            section_count,
            seal_pass: u32_at(data, f::SEAL_PASS),
            authority: Pubkey::new_from_array(bytes32_at(data, f::AUTHORITY)),
            weights_hash: bytes32_at(data, f::WEIGHTS_HASH),
            running_hash: bytes32_at(data, f::RUNNING_HASH),
            seal_cursor: u32_at(data, f::SEAL_CURSOR),
            total_chunks: u32_at(data, f::TOTAL_CHUNKS),
            config,
            section_lengths,
            weight_accounts,
        })
    }

    /// Writes the whole layout into `dst` (MODEL_LEN bytes; padding bytes become zero).
    pub fn pack(&self, dst: &mut [u8]) {
        use model_field as f;
        let dst = &mut dst[..MODEL_LEN];
        dst.fill(0);
        put(dst, f::MAGIC, &MODEL_MAGIC);
        dst[f::VERSION] = LAYOUT_VERSION;
        dst[f::STATE] = self.state as u8;
        dst[f::BUMP] = self.bump;
        dst[f::SECTION_COUNT] = self.section_count;
        put(dst, f::SEAL_PASS, &self.seal_pass.to_le_bytes());
        put(dst, f::AUTHORITY, self.authority.as_ref());
        put(dst, f::WEIGHTS_HASH, &self.weights_hash);
        put(dst, f::RUNNING_HASH, &self.running_hash);
        put(dst, f::SEAL_CURSOR, &self.seal_cursor.to_le_bytes());
        put(dst, f::TOTAL_CHUNKS, &self.total_chunks.to_le_bytes());
        let config = self.config.fields();
        for (i, value) in config.iter().enumerate() {
            put(dst, f::CONFIG + 4 * i, &value.to_le_bytes());
        }
        for i in 0..MAX_SECTIONS {
            put(
                dst,
                f::SECTION_LENGTHS + 4 * i,
                &self.section_lengths[i].to_le_bytes(),
            );
            put(
                dst,
                f::WEIGHT_ACCOUNTS + 32 * i,
                self.weight_accounts[i].as_ref(),
            );
        }
    }

    /// The declared lengths of the model's sections.
    pub fn sections(&self) -> &[u32] {
        &self.section_lengths[..self.section_count as usize]
    }

    /// The bound weight account of each section (`Pubkey::default()` until initialized).
    pub fn weights(&self) -> &[Pubkey] {
        &self.weight_accounts[..self.section_count as usize]
    }

    /// The section and the chunk within it of chunk `cursor` of the whole artifact.
    pub fn locate_chunk(&self, cursor: u32) -> Option<(usize, u32)> {
        let mut first = 0u32;
        for (section, &length) in self.sections().iter().enumerate() {
            let chunks = curta_core::chunk_count(length as u64) as u32;
            if cursor < first + chunks {
                return Some((section, cursor - first));
            }
            first += chunks;
        }
        None
    }
}

/// The 2,048-byte header of a weight account, decoded.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WeightHeader {
    pub frozen: bool,
    pub section: u16,
    pub length: u32,
    pub model: Pubkey,
    pub authority: Pubkey,
}

impl WeightHeader {
    /// Decodes an initialized weight account's data: the magic, layout version 1, frozen 0 or 1
    /// and a data length of exactly 2,048 + the section length; anything else (an account the
    /// program owns but has not initialized included) is `NotInitialized`.
    pub fn unpack(data: &[u8]) -> Result<Self, ProgramError> {
        use weight_field as f;
        if data.len() < WEIGHT_HEADER_LEN
            || data[f::MAGIC..f::MAGIC + 8] != WEIGHT_MAGIC
            || data[f::VERSION] != LAYOUT_VERSION
            || data[f::FROZEN] > 1
        {
            return Err(CurtaError::NotInitialized.into());
        }
        let length = u32_at(data, f::LENGTH);
        if data.len() != WEIGHT_HEADER_LEN + length as usize {
            return Err(CurtaError::NotInitialized.into());
        }
        Ok(WeightHeader {
            frozen: data[f::FROZEN] == 1,
            section: u16::from_le_bytes([data[f::SECTION], data[f::SECTION + 1]]),
            length,
            model: Pubkey::new_from_array(bytes32_at(data, f::MODEL)),
            authority: Pubkey::new_from_array(bytes32_at(data, f::AUTHORITY)),
        })
    }

    /// Writes the header into `dst[..2048]` (bytes 80..2048 become zero).
    pub fn pack(&self, dst: &mut [u8]) {
        use weight_field as f;
        let dst = &mut dst[..WEIGHT_HEADER_LEN];
        dst.fill(0);
        put(dst, f::MAGIC, &WEIGHT_MAGIC);
        dst[f::VERSION] = LAYOUT_VERSION;
        dst[f::FROZEN] = self.frozen as u8;
        put(dst, f::SECTION, &self.section.to_le_bytes());
        put(dst, f::LENGTH, &self.length.to_le_bytes());
        put(dst, f::MODEL, self.model.as_ref());
        put(dst, f::AUTHORITY, self.authority.as_ref());
    }

    /// Sets or clears the frozen byte of an initialized header in place.
    pub fn set_frozen(dst: &mut [u8], frozen: bool) {
        dst[weight_field::FROZEN] = frozen as u8;
    }
}

/// The model PDA and its bump: seeds [b"model", authority, weights hash].
pub fn model_address(
    program_id: &Pubkey,
    authority: &Pubkey,
    weights_hash: &[u8; 32],
) -> (Pubkey, u8) {
    Pubkey::find_program_address(&[MODEL_SEED, authority.as_ref(), weights_hash], program_id)
}

/// The seed of section `section`'s weight account: "curta-{section:02}-{hex of the model
/// address's first 10 bytes}", 29 characters (the system program allows 32).
pub fn weight_seed(model: &Pubkey, section: u8) -> String {
    let mut seed = String::with_capacity(29);
    // Writing into a String cannot fail.
    let _ = write!(seed, "curta-{section:02}-");
    for byte in &model.as_ref()[..10] {
        let _ = write!(seed, "{byte:02x}");
    }
    seed
}

/// The address of section `section`'s weight account: create_with_seed(authority, weight_seed,
/// program id).
pub fn weight_address(
    program_id: &Pubkey,
    authority: &Pubkey,
    model: &Pubkey,
    section: u8,
) -> Pubkey {
    // The seed is 29 bytes and the owner is a program id, so derivation cannot fail.
    Pubkey::create_with_seed(authority, &weight_seed(model, section), program_id)
        .unwrap_or_default()
}
