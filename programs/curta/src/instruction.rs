//! Instructions. The wire format is borsh: a u8 variant tag, then the fields in order (u32 and
//! array fields little-endian, a Vec as a u32 length then its elements). docs/program.md lists
//! every instruction's bytes and accounts.

use alloc::vec::Vec;
use borsh::{BorshDeserialize, BorshSerialize};
use solana_instruction::{AccountMeta, Instruction};
use solana_program_error::ProgramError;
use solana_pubkey::Pubkey;

use crate::state::model_address;

/// Most section bytes one Write carries in a 1,232-byte transaction with one signer, three
/// account keys (authority, weight account, program) and no compute-budget instruction:
/// 213 bytes of transaction and instruction framing + 1,019 = 1,232.
pub const MAX_WRITE_BYTES: usize = 1019;

#[derive(BorshSerialize, BorshDeserialize, Debug, Clone, PartialEq, Eq)]
pub enum CurtaInstruction {
    /// Creates the model account, declaring the weights hash and the section lengths.
    ///
    /// 0. `[signer, writable]` authority (pays the model's rent)
    /// 1. `[writable]` model PDA: ["model", authority, weights_hash]
    /// 2. `[]` system program
    CreateModel {
        weights_hash: [u8; 32],
        section_lengths: Vec<u32>,
    },

    /// Binds a weight account the authority created (create_account_with_seed, owner = this
    /// program) to (model, section, length) and writes its header.
    ///
    /// 0. `[writable]` model
    /// 1. `[writable]` weight account of `section`
    /// 2. `[signer]` authority
    InitWeightAccount { section: u8 },

    /// Writes `bytes` at `offset` within the section (data offset 2,048 + offset).
    ///
    /// 0. `[writable]` weight account
    /// 1. `[signer]` authority
    Write { offset: u32, bytes: Vec<u8> },

    /// Hashes chunk `chunk` of seal pass `pass` (both must equal the model's). Chunk 0 starts
    /// the pass and needs the authority; anyone may send the later chunks.
    ///
    /// 0. `[writable]` model
    /// 1. `[writable]` weight account of the section the seal cursor is in
    /// 2. `[signer]` authority: only when `chunk` is 0 (no third account otherwise)
    Seal { pass: u32, chunk: u32 },

    /// Returns a Sealing or Mismatch model to Open: unfreezes every section, starts a new pass.
    ///
    /// 0. `[writable]` model
    /// 1. `[signer]` authority
    /// 2. and on: `[writable]` every section's weight account, in section order
    Reopen,

    /// Closes an unsealed model and every weight account of it, draining their lamports.
    ///
    /// 0. `[writable]` model
    /// 1. `[signer]` authority
    /// 2. `[writable]` destination of the lamports
    /// 3. and on: `[writable]` every section's seed-derived weight address, in order
    ///    (initialized or not)
    Close,
}

impl CurtaInstruction {
    /// Decodes instruction data; a truncated, over-long or unknown instruction is
    /// `InvalidInstructionData`.
    pub fn unpack(data: &[u8]) -> Result<Self, ProgramError> {
        // try_from_slice refuses trailing bytes; the Vec decoders never preallocate more than
        // the input can hold, so a huge declared length fails without a huge allocation.
        CurtaInstruction::try_from_slice(data).map_err(|_| ProgramError::InvalidInstructionData)
    }

    /// The instruction's wire bytes.
    pub fn pack(&self) -> Vec<u8> {
        // Serializing into a Vec cannot fail.
        borsh::to_vec(self).unwrap_or_default()
    }
}

fn instruction(
    program_id: &Pubkey,
    accounts: Vec<AccountMeta>,
    data: &CurtaInstruction,
) -> Instruction {
    Instruction {
        program_id: *program_id,
        accounts,
        data: data.pack(),
    }
}

pub fn create_model(
    program_id: &Pubkey,
    authority: &Pubkey,
    weights_hash: [u8; 32],
    section_lengths: &[u32],
) -> Instruction {
    let (model, _) = model_address(program_id, authority, &weights_hash);
    instruction(
        program_id,
        alloc::vec![
            AccountMeta::new(*authority, true),
            AccountMeta::new(model, false),
            AccountMeta::new_readonly(solana_system_interface::program::ID, false),
        ],
        &CurtaInstruction::CreateModel {
            weights_hash,
            section_lengths: section_lengths.to_vec(),
        },
    )
}

pub fn init_weight_account(
    program_id: &Pubkey,
    model: &Pubkey,
    weight: &Pubkey,
    authority: &Pubkey,
    section: u8,
) -> Instruction {
    instruction(
        program_id,
        alloc::vec![
            AccountMeta::new(*model, false),
            AccountMeta::new(*weight, false),
            AccountMeta::new_readonly(*authority, true),
        ],
        &CurtaInstruction::InitWeightAccount { section },
    )
}

pub fn write(
    program_id: &Pubkey,
    weight: &Pubkey,
    authority: &Pubkey,
    offset: u32,
    bytes: &[u8],
) -> Instruction {
    instruction(
        program_id,
        alloc::vec![
            AccountMeta::new(*weight, false),
            AccountMeta::new_readonly(*authority, true)
        ],
        &CurtaInstruction::Write {
            offset,
            bytes: bytes.to_vec(),
        },
    )
}

/// The Seal of chunk `chunk` in its two-account form: model and weight account, no signer.
/// For chunk 0, which starts a pass, use `start_seal` (the program refuses this form there
/// with `SealStartNeedsAuthority`).
pub fn seal(
    program_id: &Pubkey,
    model: &Pubkey,
    weight: &Pubkey,
    pass: u32,
    chunk: u32,
) -> Instruction {
    instruction(
        program_id,
        alloc::vec![
            AccountMeta::new(*model, false),
            AccountMeta::new(*weight, false)
        ],
        &CurtaInstruction::Seal { pass, chunk },
    )
}

/// The Seal of chunk 0 of pass `pass`, which starts the pass: only the model's authority may
/// send it (third account, signer). Later chunks are `seal`, which anyone may send.
pub fn start_seal(
    program_id: &Pubkey,
    model: &Pubkey,
    weight: &Pubkey,
    authority: &Pubkey,
    pass: u32,
) -> Instruction {
    instruction(
        program_id,
        alloc::vec![
            AccountMeta::new(*model, false),
            AccountMeta::new(*weight, false),
            AccountMeta::new_readonly(*authority, true),
        ],
        &CurtaInstruction::Seal { pass, chunk: 0 },
    )
}

pub fn reopen(
    program_id: &Pubkey,
    model: &Pubkey,
    authority: &Pubkey,
    weights: &[Pubkey],
) -> Instruction {
    let mut accounts = alloc::vec![
        AccountMeta::new(*model, false),
        AccountMeta::new_readonly(*authority, true)
    ];
    accounts.extend(weights.iter().map(|w| AccountMeta::new(*w, false)));
    instruction(program_id, accounts, &CurtaInstruction::Reopen)
}

pub fn close(
    program_id: &Pubkey,
    model: &Pubkey,
    authority: &Pubkey,
    destination: &Pubkey,
    weights: &[Pubkey],
) -> Instruction {
    let mut accounts = alloc::vec![
        AccountMeta::new(*model, false),
        AccountMeta::new_readonly(*authority, true),
        AccountMeta::new(*destination, false),
    ];
    accounts.extend(weights.iter().map(|w| AccountMeta::new(*w, false)));
    instruction(program_id, accounts, &CurtaInstruction::Close)
}
