//! Instruction processing: one function per instruction. Every account's owner, signer,
//! writability, size and address is checked before anything is written, and every check comes
//! before the first write, so a failed instruction changes nothing (the runtime also rolls back).
//! Nothing is allocated: accounts and instruction data are read and written in place.
//!
//! The functions returning `ProgramResult` are `#[inline(always)]`: the SBF route's LLVM 19
//! BPF backend cannot return a two-register value (scripts/build-sbf), and the entrypoint is
//! one function either way.
//!
//! Off chain this module compiles (type checks, clippy) but is not run: pinocchio's CPI and
//! syscalls do nothing there. Every test runs the SBF binary in the VM.

mod answer_claim;
mod challenge;
mod close;
mod close_claim;
mod close_run;
mod create_model;
mod encoding;
mod init_weight_account;
mod open_claim;
mod reopen;
mod resolve;
mod seal;
pub(crate) mod shared;
mod start_run;
mod step;
mod write;

use pinocchio::account_info::AccountInfo;
use pinocchio::program_error::ProgramError;
use pinocchio::pubkey::Pubkey;
use pinocchio::ProgramResult;

use crate::instruction::{CurtaInstruction as I, RunSeeds};
use shared::{aligned_copy, from_code};

#[inline(always)]
pub fn process_instruction(
    program_id: &Pubkey,
    accounts: &[AccountInfo],
    data: &[u8],
) -> ProgramResult {
    // The runtime places the program id after the instruction data, at any alignment: an
    // aligned copy makes every owner check a word-wise `same_address`.
    let mut place = core::mem::MaybeUninit::uninit();
    let program_id = aligned_copy(program_id, &mut place);
    match I::parse(data).ok_or(ProgramError::InvalidInstructionData)? {
        I::CreateModel {
            weights_hash,
            section_lengths,
        } => {
            create_model::process_create_model(program_id, accounts, weights_hash, section_lengths)
        }
        I::InitWeightAccount { section } => {
            init_weight_account::process_init_weight_account(program_id, accounts, section)
        }
        I::Write { offset, bytes } => write::process_write(program_id, accounts, offset, bytes),
        I::Seal {
            pass,
            chunk,
            creation,
        } => seal::process_seal(program_id, accounts, creation, pass, chunk),
        I::Reopen {} => reopen::process_reopen(program_id, accounts),
        I::Close {} => close::process_close(program_id, accounts),
        I::StartRun { .. } => from_code(start_run::process_start_run(program_id, accounts, data)),
        I::Step { budget, .. } => from_code(step::process_step(program_id, accounts, budget)),
        I::CloseRun { run_seeds } => close_run::process_close_run(
            program_id,
            accounts,
            run_seeds.map(|RunSeeds { model, nonce }| (model, nonce)),
        ),
        I::OpenClaim { .. } => {
            from_code(open_claim::process_open_claim(program_id, accounts, data))
        }
        I::AnswerClaim {
            token_count,
            answer_hash,
        } => answer_claim::process_answer_claim(program_id, accounts, token_count, answer_hash),
        I::Challenge { nonce } => {
            from_code(challenge::process_challenge(program_id, accounts, nonce))
        }
        I::Resolve {} => resolve::process_resolve(program_id, accounts),
        I::CloseClaim {} => close_claim::process_close_claim(program_id, accounts),
    }
}
