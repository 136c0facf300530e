//! Instructions. The wire format is borsh's: a u8 variant tag, then the fields in order (u32 and
//! array fields little-endian, a byte or u32 list as a u32 count then its items).
//! docs/program.md lists every instruction's bytes and accounts.
//!
//! The program parses instruction data in place ([`InstructionData::parse`]): nothing is copied
//! or allocated, and a count larger than the bytes present is refused before anything else.

use curta_core::le::u32_at;

pub use crate::run::SeedSource;

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
    /// Chunk 0 (it freezes every section):
    /// 0. `[writable]` model
    /// 1. `[writable]` section zero's weight account
    /// 2. `[signer]` authority
    /// 3. and on: `[writable]` the other sections' weight accounts, in section order
    ///
    /// A later chunk:
    /// 0. `[writable]` model
    /// 1. weight account of the section the seal cursor is in, or 1 and on: every section's
    ///    weight account, in section order (the chunk at the cursor is hashed whichever section
    ///    it is in, so every seal of the pass may be in flight at once)
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

    /// Starts run `nonce` of a Sealed model in the run account the runner created at
    /// `run_address(runner, model, nonce)`: the prompt (text, tokenized on chain from section
    /// zero, or token ids), up to `steps` tokens, the sampling settings (16 fractional bits),
    /// the runner's seed and where the seed in force comes from (`source`).
    ///
    /// 0. `[writable]` run account
    /// 1. `[signer]` runner
    /// 2. `[]` model (Sealed)
    /// 3. `[]` weight account of section zero
    StartRun {
        nonce: u32,
        steps: u32,
        temperature: u32,
        top_p: u32,
        seed: u64,
        /// [`SeedSource`]'s byte (checked by StartRun and by [`CurtaInstruction::unpack`]).
        source: u8,
        prompt: Prompt<'a>,
    },

    /// Advances the run from wherever it stands by whole items of at most `budget` estimated
    /// compute units (stopping at a generated token). `ticket` is not read: it only makes
    /// the transaction unique, so that many steps may be in flight and land in any order.
    ///
    /// 0. `[writable]` run account
    /// 1. `[]` model
    /// 2. `[]` the SlotHashes sysvar (a drawn seed is drawn from it)
    /// 3. and on: `[]` every section's weight account, in section order
    Step { ticket: u32, budget: u32 },

    /// Closes a run: every lamport to the runner. `run` names the run's model address and
    /// nonce: required to close an account at a run address whose header is still zero
    /// (StartRun never ran), checked against the header otherwise.
    ///
    /// 0. `[writable]` run account
    /// 1. `[signer, writable]` runner
    CloseRun { run: Option<(&'a [u8; 32], u32)> },
}

/// A run's prompt on the wire: text (kind 0, a u32 count then the bytes) or token ids (kind 1,
/// a u32 count then the ids, u32 each).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Prompt<'a> {
    Text(&'a [u8]),
    /// The ids' bytes, 4 per id, little-endian.
    Tokens(&'a [u8]),
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
                let bytes = rest.get(8..)?;
                // offset at data byte 1, n at byte 5 (past `word(data, 0)`'s last byte, 7).
                let w0 = word(data, 0);
                let n = (w0 >> 40) as u32 | (data[8] as u32) << 24;
                (bytes.len() as u64 == n as u64).then_some(())?;
                Some(InstructionData::Write {
                    offset: (w0 >> 8) as u32,
                    bytes,
                })
            }
            3 => {
                exact(16)?;
                // pass at data byte 1, chunk at 5, creation at 9 (to byte 16).
                let (w0, w1) = (word(data, 0), word(data, 1));
                Some(InstructionData::Seal {
                    pass: (w0 >> 8) as u32,
                    chunk: (w0 >> 40 | w1 << 24) as u32,
                    creation: w1 >> 8 | (data[16] as u64) << 56,
                })
            }
            4 => exact(0).map(|_| InstructionData::Reopen),
            5 => exact(0).map(|_| InstructionData::Close),
            6 => {
                let (head, body) = rest.split_at_checked(30)?;
                let count = u32_at(head, 26) as u64;
                let prompt = match head[25] {
                    0 => (body.len() as u64 == count).then_some(Prompt::Text(body))?,
                    1 => (body.len() as u64 == 4 * count).then_some(Prompt::Tokens(body))?,
                    _ => return None,
                };
                Some(InstructionData::StartRun {
                    nonce: u32_at(head, 0),
                    steps: u32_at(head, 4),
                    temperature: u32_at(head, 8),
                    top_p: u32_at(head, 12),
                    seed: curta_core::le::u64_at(head, 16),
                    source: head[24],
                    prompt,
                })
            }
            7 => {
                exact(8)?;
                Some(InstructionData::Step {
                    ticket: u32_at(rest, 0),
                    budget: u32_at(rest, 4),
                })
            }
            8 => match rest.len() {
                0 => Some(InstructionData::CloseRun { run: None }),
                36 => {
                    let (model, nonce) = rest.split_first_chunk::<32>()?;
                    Some(InstructionData::CloseRun {
                        run: Some((model, u32_at(nonce, 0))),
                    })
                }
                _ => None,
            },
            _ => None,
        }
    }
}

/// The little-endian u64 at data byte 8 × `i` (the caller checked that the data holds it).
///
/// The runtime places instruction data at an 8-byte aligned address (right after its u64
/// length), but its fields follow the one-byte tag, at odd offsets: LLVM's BPF backend reads
/// such a field as a byte load and a shift per byte. Read as aligned words and shifted into
/// place, Seal's three fields take three loads instead of sixteen (data at any other alignment,
/// off chain, is read byte-wise). The aligned load is volatile: a plain one LLVM merges with
/// the byte-wise branch into one unaligned load, which is byte loads again.
#[inline(always)]
fn word(data: &[u8], i: usize) -> u64 {
    let bytes: &[u8; 8] = data[8 * i..8 * i + 8]
        .try_into()
        .expect("eight bytes the caller checked");
    if bytes.as_ptr() as usize & 7 == 0 {
        // SAFETY: 8 readable bytes at an 8-byte aligned address.
        u64::from_le(unsafe { (bytes.as_ptr() as *const u64).read_volatile() })
    } else {
        u64::from_le_bytes(*bytes)
    }
}

#[cfg(not(target_os = "solana"))]
pub use host::*;

/// The owned instruction and the instruction builders, for the client and the tests.
#[cfg(not(target_os = "solana"))]
mod host {
    use super::{InstructionData, Prompt, SeedSource};
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
        StartRun {
            nonce: u32,
            steps: u32,
            temperature: u32,
            top_p: u32,
            seed: u64,
            source: SeedSource,
            prompt: OwnedPrompt,
        },
        Step {
            ticket: u32,
            budget: u32,
        },
        CloseRun {
            /// The run's model address and nonce (see [`InstructionData::CloseRun`]).
            run: Option<([u8; 32], u32)>,
        },
    }

    /// A run's prompt, owned.
    #[derive(Debug, Clone, PartialEq, Eq)]
    pub enum OwnedPrompt {
        Text(Vec<u8>),
        Tokens(Vec<u32>),
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
                    D::StartRun {
                        nonce,
                        steps,
                        temperature,
                        top_p,
                        seed,
                        source,
                        prompt,
                    } => CurtaInstruction::StartRun {
                        nonce,
                        steps,
                        temperature,
                        top_p,
                        seed,
                        source: SeedSource::from_u8(source)
                            .ok_or(ProgramError::InvalidInstructionData)?,
                        prompt: match prompt {
                            Prompt::Text(text) => OwnedPrompt::Text(text.to_vec()),
                            Prompt::Tokens(ids) => OwnedPrompt::Tokens(
                                ids.chunks_exact(4)
                                    .map(|w| curta_core::le::u32_at(w, 0))
                                    .collect(),
                            ),
                        },
                    },
                    D::Step { ticket, budget } => CurtaInstruction::Step { ticket, budget },
                    D::CloseRun { run } => CurtaInstruction::CloseRun {
                        run: run.map(|(model, nonce)| (*model, nonce)),
                    },
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
                CurtaInstruction::StartRun {
                    nonce,
                    steps,
                    temperature,
                    top_p,
                    seed,
                    source,
                    prompt,
                } => {
                    out.push(6);
                    for field in [nonce, steps, temperature, top_p] {
                        out.extend_from_slice(&field.to_le_bytes());
                    }
                    out.extend_from_slice(&seed.to_le_bytes());
                    out.push(*source as u8);
                    match prompt {
                        OwnedPrompt::Text(text) => {
                            out.push(0);
                            out.extend_from_slice(&count(text.len()));
                            out.extend_from_slice(text);
                        }
                        OwnedPrompt::Tokens(ids) => {
                            out.push(1);
                            out.extend_from_slice(&count(ids.len()));
                            ids.iter()
                                .for_each(|id| out.extend_from_slice(&id.to_le_bytes()));
                        }
                    }
                }
                CurtaInstruction::Step { ticket, budget } => {
                    out.push(7);
                    out.extend_from_slice(&ticket.to_le_bytes());
                    out.extend_from_slice(&budget.to_le_bytes());
                }
                CurtaInstruction::CloseRun { run } => {
                    out.push(8);
                    if let Some((model, nonce)) = run {
                        out.extend_from_slice(model);
                        out.extend_from_slice(&nonce.to_le_bytes());
                    }
                }
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

    /// The Seal of chunk `chunk` in its two-account form: model and the cursor's section's
    /// weight account (read only), no signer.
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
                AccountMeta::new_readonly(*weight, false)
            ],
            &CurtaInstruction::Seal {
                pass,
                chunk,
                creation,
            },
        )
    }

    /// The Seal of chunk `chunk` (not 0) carrying every section's weight account (`weights`,
    /// in section order): it hashes the chunk at the cursor in whichever section that is, so
    /// the seals of a whole pass may be in flight together and land in any order.
    pub fn seal_every_section(
        program_id: &Pubkey,
        model: &Pubkey,
        weights: &[Pubkey],
        creation: u64,
        pass: u32,
        chunk: u32,
    ) -> Instruction {
        let mut accounts = alloc::vec![AccountMeta::new(*model, false)];
        accounts.extend(
            weights
                .iter()
                .map(|weight| AccountMeta::new_readonly(*weight, false)),
        );
        instruction(
            program_id,
            accounts,
            &CurtaInstruction::Seal {
                pass,
                chunk,
                creation,
            },
        )
    }

    /// The Seal of chunk 0 of pass `pass` of creation `creation`, which starts the pass and
    /// freezes every section: only the model's authority may send it (third account, signer),
    /// with every section's weight account (`weights`, in section order: section zero's second,
    /// the others after the authority). Later chunks are `seal` or `seal_every_section`, which
    /// anyone may send.
    pub fn start_seal(
        program_id: &Pubkey,
        model: &Pubkey,
        weights: &[Pubkey],
        authority: &Pubkey,
        creation: u64,
        pass: u32,
    ) -> Instruction {
        let mut accounts = alloc::vec![AccountMeta::new(*model, false)];
        accounts.extend(weights.first().map(|zero| AccountMeta::new(*zero, false)));
        accounts.push(AccountMeta::new_readonly(*authority, true));
        accounts.extend(
            weights
                .iter()
                .skip(1)
                .map(|weight| AccountMeta::new(*weight, false)),
        );
        instruction(
            program_id,
            accounts,
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

    /// StartRun: the run account (created by the runner at `run_address(runner, model,
    /// nonce)`), the runner, the model and its section zero's weight account.
    #[allow(clippy::too_many_arguments)]
    pub fn start_run(
        program_id: &Pubkey,
        run: &Pubkey,
        runner: &Pubkey,
        model: &Pubkey,
        section_zero: &Pubkey,
        nonce: u32,
        steps: u32,
        settings: &curta_core::infer::Settings,
        source: SeedSource,
        prompt: OwnedPrompt,
    ) -> Instruction {
        instruction(
            program_id,
            alloc::vec![
                AccountMeta::new(*run, false),
                AccountMeta::new_readonly(*runner, true),
                AccountMeta::new_readonly(*model, false),
                AccountMeta::new_readonly(*section_zero, false),
            ],
            &CurtaInstruction::StartRun {
                nonce,
                steps,
                temperature: settings.temperature,
                top_p: settings.top_p,
                seed: settings.seed,
                source,
                prompt,
            },
        )
    }

    /// The SlotHashes sysvar (a Step's account 2).
    pub const SLOT_HASHES: Pubkey =
        solana_pubkey::pubkey!("SysvarS1otHashes111111111111111111111111111");

    /// A Step of a run with `budget` estimated compute units; `weights` are the model's
    /// weight accounts in section order (read-only); `ticket` any number that makes the
    /// transaction unique (the program does not read it). No signer: anyone may step a run.
    pub fn step(
        program_id: &Pubkey,
        run: &Pubkey,
        model: &Pubkey,
        weights: &[Pubkey],
        ticket: u32,
        budget: u32,
    ) -> Instruction {
        let mut accounts = alloc::vec![
            AccountMeta::new(*run, false),
            AccountMeta::new_readonly(*model, false),
            AccountMeta::new_readonly(SLOT_HASHES, false),
        ];
        accounts.extend(weights.iter().map(|w| AccountMeta::new_readonly(*w, false)));
        instruction(
            program_id,
            accounts,
            &CurtaInstruction::Step { ticket, budget },
        )
    }

    /// CloseRun: every lamport of the run to its runner.
    pub fn close_run(program_id: &Pubkey, run: &Pubkey, runner: &Pubkey) -> Instruction {
        close_run_account(program_id, run, runner, None)
    }

    /// CloseRun naming the run's model and nonce: closes an account at the run address of
    /// (runner, model, nonce) whose header is zero (StartRun never ran there) as well as a run.
    pub fn close_run_at(
        program_id: &Pubkey,
        run: &Pubkey,
        runner: &Pubkey,
        model: &Pubkey,
        nonce: u32,
    ) -> Instruction {
        close_run_account(program_id, run, runner, Some((model.to_bytes(), nonce)))
    }

    fn close_run_account(
        program_id: &Pubkey,
        run: &Pubkey,
        runner: &Pubkey,
        named: Option<([u8; 32], u32)>,
    ) -> Instruction {
        instruction(
            program_id,
            alloc::vec![
                AccountMeta::new(*run, false),
                AccountMeta::new(*runner, true)
            ],
            &CurtaInstruction::CloseRun { run: named },
        )
    }
}
