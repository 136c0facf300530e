//! Instructions. The wire format is borsh's: a u8 variant tag, then the fields in order (u32 and
//! array fields little-endian, a byte or u32 list as a u32 count then its items).
//! docs/program.md lists every instruction's bytes and accounts.
//!
//! The program parses instruction data in place ([`InstructionData::parse`]): nothing is copied
//! or allocated, and a count larger than the bytes present is refused before anything else.

use curta_core::le::u32_at;

/// Most section bytes one Write carries in a 1,232-byte transaction with one signer, three
/// account keys (authority, weight account, program) and no compute-budget instruction:
/// 213 bytes of transaction and instruction framing + 1,019 = 1,232.
pub const MAX_WRITE_BYTES: usize = 1019;

/// Instruction data, borrowed from the transaction.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum InstructionData<'a> {
    /// Creates the model account, declaring the weights hash and the section lengths.
    ///
    /// 0. `[signer, writable]` authority (pays the model's rent)
    /// 1. `[writable]` model PDA: ["model", authority, weights_hash]
    /// 2. `[]` system program
    CreateModel {
        weights_hash: &'a [u8; 32],
        /// The section lengths as the wire holds them: a u32 each, little-endian.
        section_lengths: &'a [u8],
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
    Write { offset: u32, bytes: &'a [u8] },

    /// Hashes chunk `chunk` of seal pass `pass` of the model's creation `creation` (all three
    /// must equal the model's). Chunk 0 starts the pass and needs the authority; anyone may
    /// send the later chunks.
    ///
    /// 0. `[writable]` model
    /// 1. `[writable]` weight account of the section the seal cursor is in
    /// 2. `[signer]` authority: only when `chunk` is 0 (no third account otherwise)
    Seal {
        pass: u32,
        chunk: u32,
        creation: u64,
    },

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

impl<'a> InstructionData<'a> {
    /// Parses instruction data exactly: a truncated or over-long instruction, an unknown tag or
    /// a count larger than the bytes that follow it is `None` (`InvalidInstructionData`).
    pub fn parse(data: &'a [u8]) -> Option<Self> {
        let (&tag, rest) = data.split_first()?;
        let exact = |len: usize| (rest.len() == len).then_some(());
        match tag {
            0 => {
                let (weights_hash, rest) = rest.split_first_chunk::<32>()?;
                let (count, lengths) = rest.split_first_chunk::<4>()?;
                // u64: a count up to u32::MAX times 4 cannot overflow.
                (lengths.len() as u64 == 4 * u32::from_le_bytes(*count) as u64).then_some(())?;
                Some(InstructionData::CreateModel {
                    weights_hash,
                    section_lengths: lengths,
                })
            }
            1 => {
                exact(1)?;
                Some(InstructionData::InitWeightAccount { section: rest[0] })
            }
            2 => {
                let (head, bytes) = rest.split_at_checked(8)?;
                (bytes.len() as u64 == u32_at(head, 4) as u64).then_some(())?;
                Some(InstructionData::Write {
                    offset: u32_at(head, 0),
                    bytes,
                })
            }
            3 => {
                exact(16)?;
                Some(InstructionData::Seal {
                    pass: u32_at(rest, 0),
                    chunk: u32_at(rest, 4),
                    creation: curta_core::le::u64_at(rest, 8),
                })
            }
            4 => exact(0).map(|_| InstructionData::Reopen),
            5 => exact(0).map(|_| InstructionData::Close),
            _ => None,
        }
    }
}

#[cfg(not(target_os = "solana"))]
pub use host::*;

/// The owned instruction and the instruction builders, for the client and the tests.
#[cfg(not(target_os = "solana"))]
mod host {
    use super::InstructionData;
    use alloc::vec::Vec;
    use solana_instruction::{AccountMeta, Instruction};
    use solana_program_error::ProgramError;
    use solana_pubkey::Pubkey;

    use crate::state::model_address;

    /// The system program's id (all zeros).
    const SYSTEM_PROGRAM: Pubkey = Pubkey::new_from_array([0; 32]);

    /// An instruction, owned ([`InstructionData`] borrowed).
    #[derive(Debug, Clone, PartialEq, Eq)]
    pub enum CurtaInstruction {
        CreateModel {
            weights_hash: [u8; 32],
            section_lengths: Vec<u32>,
        },
        InitWeightAccount {
            section: u8,
        },
        Write {
            offset: u32,
            bytes: Vec<u8>,
        },
        Seal {
            pass: u32,
            chunk: u32,
            creation: u64,
        },
        Reopen,
        Close,
    }

    impl CurtaInstruction {
        /// Decodes instruction data as the program does ([`InstructionData::parse`]).
        pub fn unpack(data: &[u8]) -> Result<Self, ProgramError> {
            use InstructionData as D;
            Ok(
                match D::parse(data).ok_or(ProgramError::InvalidInstructionData)? {
                    D::CreateModel {
                        weights_hash,
                        section_lengths,
                    } => CurtaInstruction::CreateModel {
                        weights_hash: *weights_hash,
                        section_lengths: section_lengths
                            .chunks_exact(4)
                            .map(|w| curta_core::le::u32_at(w, 0))
                            .collect(),
                    },
                    D::InitWeightAccount { section } => {
                        CurtaInstruction::InitWeightAccount { section }
                    }
                    D::Write { offset, bytes } => CurtaInstruction::Write {
                        offset,
                        bytes: bytes.to_vec(),
                    },
                    D::Seal {
                        pass,
                        chunk,
                        creation,
                    } => CurtaInstruction::Seal {
                        pass,
                        chunk,
                        creation,
                    },
                    D::Reopen => CurtaInstruction::Reopen,
                    D::Close => CurtaInstruction::Close,
                },
            )
        }

        /// The instruction's wire bytes.
        pub fn pack(&self) -> Vec<u8> {
            let count = |n: usize| (n as u32).to_le_bytes();
            let mut out = Vec::new();
            match self {
                CurtaInstruction::CreateModel {
                    weights_hash,
                    section_lengths,
                } => {
                    out.push(0);
                    out.extend_from_slice(weights_hash);
                    out.extend_from_slice(&count(section_lengths.len()));
                    section_lengths
                        .iter()
                        .for_each(|l| out.extend_from_slice(&l.to_le_bytes()));
                }
                CurtaInstruction::InitWeightAccount { section } => out.extend([1, *section]),
                CurtaInstruction::Write { offset, bytes } => {
                    out.push(2);
                    out.extend_from_slice(&offset.to_le_bytes());
                    out.extend_from_slice(&count(bytes.len()));
                    out.extend_from_slice(bytes);
                }
                CurtaInstruction::Seal {
                    pass,
                    chunk,
                    creation,
                } => {
                    out.push(3);
                    out.extend_from_slice(&pass.to_le_bytes());
                    out.extend_from_slice(&chunk.to_le_bytes());
                    out.extend_from_slice(&creation.to_le_bytes());
                }
                CurtaInstruction::Reopen => out.push(4),
                CurtaInstruction::Close => out.push(5),
            }
            out
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
                AccountMeta::new_readonly(SYSTEM_PROGRAM, false),
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
    /// `creation` and `pass` are the model's (`Model::creation`, `Model::seal_pass`). For
    /// chunk 0, which starts a pass, use `start_seal` (the program refuses this form there
    /// with `SealStartNeedsAuthority`).
    pub fn seal(
        program_id: &Pubkey,
        model: &Pubkey,
        weight: &Pubkey,
        creation: u64,
        pass: u32,
        chunk: u32,
    ) -> Instruction {
        instruction(
            program_id,
            alloc::vec![
                AccountMeta::new(*model, false),
                AccountMeta::new(*weight, false)
            ],
            &CurtaInstruction::Seal {
                pass,
                chunk,
                creation,
            },
        )
    }

    /// The Seal of chunk 0 of pass `pass` of creation `creation`, which starts the pass: only
    /// the model's authority may send it (third account, signer). Later chunks are `seal`,
    /// which anyone may send.
    pub fn start_seal(
        program_id: &Pubkey,
        model: &Pubkey,
        weight: &Pubkey,
        authority: &Pubkey,
        creation: u64,
        pass: u32,
    ) -> Instruction {
        instruction(
            program_id,
            alloc::vec![
                AccountMeta::new(*model, false),
                AccountMeta::new(*weight, false),
                AccountMeta::new_readonly(*authority, true),
            ],
            &CurtaInstruction::Seal {
                pass,
                chunk: 0,
                creation,
            },
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
}
