//! The decoded accounts and the address derivations, for the client and the tests.

use super::*;
use alloc::string::String;
use solana_program_error::ProgramError;
use solana_pubkey::Pubkey;

/// The model account, decoded.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Model {
    pub state: ModelState,
    pub bump: u8,
    pub section_count: u8,
    pub seal_pass: u32,
    /// The slot of the CreateModel that made the model (every Seal names it).
    pub creation: u64,
    pub authority: Pubkey,
    pub weights_hash: [u8; 32],
    pub running_hash: [u8; 32],
    pub seal_cursor: u32,
    pub total_chunks: u32,
    pub config: Config,
    pub section_lengths: [u32; MAX_SECTIONS],
    pub weight_accounts: [Pubkey; MAX_SECTIONS],
}

impl Model {
    /// Decodes a model account's data ([`check_model`]: anything else is `NotAModel`).
    pub fn unpack(data: &[u8]) -> Result<Model, ProgramError> {
        use model_field as f;
        let state = check_model(data)?;
        let address = |offset| Pubkey::new_from_array(*array_at(data, offset));
        Ok(Model {
            state,
            bump: data[f::BUMP],
            section_count: data[f::SECTION_COUNT],
            seal_pass: u32_at(data, f::SEAL_PASS),
            creation: curta_core::le::u64_at(data, f::CREATION),
            authority: address(f::AUTHORITY),
            weights_hash: *array_at(data, f::WEIGHTS_HASH),
            running_hash: *array_at(data, f::RUNNING_HASH),
            seal_cursor: u32_at(data, f::SEAL_CURSOR),
            total_chunks: u32_at(data, f::TOTAL_CHUNKS),
            config: Config::from_fields(core::array::from_fn(|i| u32_at(data, f::CONFIG + 4 * i))),
            section_lengths: core::array::from_fn(|i| u32_at(data, f::SECTION_LENGTHS + 4 * i)),
            weight_accounts: core::array::from_fn(|i| address(f::WEIGHT_ACCOUNTS + 32 * i)),
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
        // The cursor's section, derived as the program keeps it (bytes 148 and 150).
        if let Some((section, in_section)) =
            locate_chunk(self.sections().iter().copied(), self.seal_cursor)
        {
            let first = (self.seal_cursor - in_section) as u16;
            put(dst, f::SEAL_SECTION_FIRST, &first.to_le_bytes());
            dst[f::SEAL_SECTION] = section as u8;
        } else if let Some(last) = self.sections().len().checked_sub(1) {
            let first = self.sections()[..last]
                .iter()
                .map(|&length| curta_core::chunk_count(length as u64) as u32)
                .sum::<u32>() as u16;
            put(dst, f::SEAL_SECTION_FIRST, &first.to_le_bytes());
            dst[f::SEAL_SECTION] = last as u8;
        }
        put(dst, f::CREATION, &self.creation.to_le_bytes());
        for (i, value) in self.config.fields().iter().enumerate() {
            put(dst, f::CONFIG + 4 * i, &value.to_le_bytes());
        }
        for i in 0..MAX_SECTIONS {
            let length = self.section_lengths[i].to_le_bytes();
            put(dst, f::SECTION_LENGTHS + 4 * i, &length);
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
        locate_chunk(self.sections().iter().copied(), cursor)
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
    /// Decodes an initialized weight account's data ([`WeightFields::parse`]).
    pub fn unpack(data: &[u8]) -> Result<Self, ProgramError> {
        let fields = WeightFields::parse(data)?;
        Ok(WeightHeader {
            frozen: fields.frozen,
            section: fields.section,
            length: fields.length,
            model: Pubkey::new_from_array(*fields.model),
            authority: Pubkey::new_from_array(*fields.authority),
        })
    }

    /// Writes the header into `dst[..2048]` (bytes 80..2048 become zero).
    pub fn pack(&self, dst: &mut [u8]) {
        write_weight_header(
            dst,
            self.section,
            self.length,
            &self.model.to_bytes(),
            &self.authority.to_bytes(),
        );
        set_frozen(dst, self.frozen);
    }

    /// Sets or clears the frozen byte of an initialized header in place.
    pub fn set_frozen(dst: &mut [u8], frozen: bool) {
        set_frozen(dst, frozen);
    }

    /// Whether the account at `key` with this header is section `section` of `model` at
    /// `model_address`: the program's rule ([`WeightFields::belongs_to`]).
    pub fn belongs_to(
        &self,
        model: &Model,
        model_address: &Pubkey,
        section: usize,
        key: &Pubkey,
    ) -> Result<(), CurtaError> {
        let fields = WeightFields {
            frozen: self.frozen,
            section: self.section,
            length: self.length,
            model: &self.model.to_bytes(),
            authority: &self.authority.to_bytes(),
        };
        fields.belongs_to(
            &model_address.to_bytes(),
            section,
            model.section_lengths.get(section).copied().unwrap_or(0),
            &model
                .weight_accounts
                .get(section)
                .copied()
                .unwrap_or_default()
                .to_bytes(),
            &key.to_bytes(),
        )
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

/// The seed of section `section`'s weight account ([`weight_seed_bytes`]).
pub fn weight_seed(model: &Pubkey, section: u8) -> String {
    let seed = weight_seed_bytes(&model.to_bytes(), section);
    // The seed is ASCII.
    seed.iter().map(|&b| b as char).collect()
}

/// The address of section `section`'s weight account: create_with_seed(authority,
/// weight_seed, program id).
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
