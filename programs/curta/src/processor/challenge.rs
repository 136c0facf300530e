//! Challenge (docs/program.md, "11 Challenge"): within an answered claim's window, the
//! challenger posts the claim's bond and starts the dispute run, the claim's model, prompt,
//! settings and seed, in the run account it created; only Resolve closes that run.

use curta_core::infer::Settings;
use pinocchio::account_info::AccountInfo;
use pinocchio::pubkey::Pubkey;
use pinocchio::ProgramResult;

use super::shared::claim::put_bytes;
use super::shared::{
    current_slot, from_code, owned_data, signer, system, writable, SYSTEM_PROGRAM,
};
use super::start_run::{begin_run, Begin};
use crate::claim::{claim_field as f, ClaimState, ClaimView};
use crate::error::CurtaError;
use crate::run::SeedSource;
use crate::state::same_address;

/// Its own stack frame, as StartRun's (the run's start is `begin_run`'s): the error code out.
#[inline(never)]
pub(super) fn process_challenge(program_id: &Pubkey, accounts: &[AccountInfo], nonce: u32) -> u64 {
    super::shared::error_code(challenge(program_id, accounts, nonce))
}

#[inline(always)]
fn challenge(program_id: &Pubkey, accounts: &[AccountInfo], nonce: u32) -> ProgramResult {
    let [claim_info, challenger, run_info, model_info, zero_info, system_program] = accounts else {
        return Err(CurtaError::WrongAccountCount.into());
    };
    writable(claim_info)?;
    writable(challenger)?;
    signer(challenger)?;
    if !same_address(system_program.key(), &SYSTEM_PROGRAM) {
        return Err(pinocchio::program_error::ProgramError::IncorrectProgramId);
    }
    let bond = {
        let data = owned_data(claim_info, program_id)?;
        let claim = ClaimView::new(&data)?;
        if claim.state() != ClaimState::Answered {
            return Err(CurtaError::NotAnswered.into());
        }
        if current_slot()? > claim.window_end() {
            return Err(CurtaError::WindowClosed.into());
        }
        if !same_address(model_info.key(), claim.model()) {
            return Err(CurtaError::WrongModel.into());
        }
        let preset = match claim.seed_source() {
            SeedSource::Drawn => Some((claim.open_slot(), *claim.slot_hash(), claim.seed())),
            SeedSource::None | SeedSource::Chosen => None,
        };
        let prompt = claim.prompt().ok_or(CurtaError::NotAClaim)?;
        from_code(begin_run(&Begin {
            program_id,
            run_info,
            runner: challenger.key(),
            model_info,
            zero_info,
            nonce,
            steps: claim.steps(),
            settings: Settings {
                temperature: claim.temperature(),
                top_p: claim.top_p(),
                seed: claim.claimer_seed(),
            },
            source: claim.seed_source(),
            prompt,
            preset,
            dispute: true,
        }))?;
        claim.bond()
    };
    system::transfer(challenger, claim_info, bond).invoke(&[])?;
    let mut data = owned_data(claim_info, program_id)?;
    put_bytes(&mut data, f::CHALLENGER, challenger.key());
    put_bytes(&mut data, f::DISPUTE_RUN, run_info.key());
    data[f::STATE] = ClaimState::Challenged as u8;
    Ok(())
}
