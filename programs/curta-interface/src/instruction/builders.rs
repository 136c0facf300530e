//! The instruction builders, for clients and tests: each instruction's accounts in the order
//! [`super::CurtaInstruction::DESCRIPTION`] lists them, and its data packed.

use super::{CurtaInstruction, Prompt, RunSeeds, SeedSource, U32s};
use alloc::vec::Vec;
use solana_instruction::{AccountMeta, Instruction};
use solana_pubkey::Pubkey;

use crate::state::model_address;

/// The system program's id (all zeros).
pub(super) const SYSTEM_PROGRAM: Pubkey = Pubkey::new_from_array([0; 32]);

/// A run's prompt owned by the caller, for [`start_run`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum OwnedPrompt {
    Text(Vec<u8>),
    Tokens(Vec<u32>),
}

impl OwnedPrompt {
    /// The prompt as the wire holds it, borrowed.
    pub fn as_wire(&self) -> Prompt<'_> {
        match self {
            OwnedPrompt::Text(text) => Prompt::Text(text),
            OwnedPrompt::Tokens(ids) => Prompt::Tokens(U32s::Values(ids)),
        }
    }
}

pub(super) fn instruction(
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
            weights_hash: &weights_hash,
            section_lengths: U32s::Values(section_lengths),
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
        &CurtaInstruction::Write { offset, bytes },
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
    instruction(program_id, accounts, &CurtaInstruction::Reopen {})
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
    instruction(program_id, accounts, &CurtaInstruction::Close {})
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
            seed_source: source,
            prompt: prompt.as_wire(),
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
        &CurtaInstruction::CloseRun {
            run_seeds: named.as_ref().map(|(model, nonce)| RunSeeds {
                model,
                nonce: *nonce,
            }),
        },
    )
}
