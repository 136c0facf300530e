//! Resolve (docs/program.md, "12 Resolve"): decides a challenged claim by its finished dispute
//! run. Upheld when the run's generated ids and text hash to the claim's answer (the
//! challenger's bond to the claimer), overturned otherwise (both bonds to the challenger);
//! the dispute run closes, every lamport to its runner, the challenger. Anyone may send it.

use pinocchio::account_info::AccountInfo;
use pinocchio::pubkey::Pubkey;
use pinocchio::ProgramResult;

use super::shared::{drain, owned_data, sha256_of, writable};
use crate::claim::{claim_field as f, ClaimState, ClaimView};
use crate::error::CurtaError;
use crate::state::same_address;
use curta_interface::trust::read_run;

#[inline(always)]
pub(super) fn process_resolve(program_id: &Pubkey, accounts: &[AccountInfo]) -> ProgramResult {
    let [claim_info, run_info, claimer, challenger] = accounts else {
        return Err(CurtaError::WrongAccountCount.into());
    };
    for account in [claim_info, run_info, claimer, challenger] {
        writable(account)?;
    }
    let mut data = owned_data(claim_info, program_id)?;
    let claim = ClaimView::new(&data)?;
    if claim.state() != ClaimState::Challenged {
        return Err(CurtaError::NotChallenged.into());
    }
    if !same_address(run_info.key(), claim.dispute_run()) {
        return Err(CurtaError::WrongDisputeRun.into());
    }
    if !same_address(claimer.key(), claim.claimer())
        || !same_address(challenger.key(), claim.challenger())
    {
        return Err(CurtaError::InvalidDestination.into());
    }
    let agrees = {
        let run_data = owned_data(run_info, program_id)?;
        let run = read_run(program_id, run_info.key(), run_info.owner(), &run_data)
            .map_err(|_| CurtaError::NotARun)?;
        if !matches!(run.status(), 1 | 2) {
            return Err(CurtaError::DisputeNotFinished.into());
        }
        run.generated_len() as u64 == claim.token_count() as u64
            && sha256_of(&[run.generated_bytes(), run.text()]) == *claim.answer_hash()
    };
    let bond = claim.bond();
    let (winner, amount, state) = match agrees {
        true => (claimer, bond, ClaimState::Upheld),
        false => (
            challenger,
            bond.checked_mul(2).ok_or(CurtaError::Overflow)?,
            ClaimState::Overturned,
        ),
    };
    data[f::STATE] = state as u8;
    drop(data);
    let left = claim_info
        .lamports()
        .checked_sub(amount)
        .ok_or(CurtaError::Overflow)?;
    let paid = winner
        .lamports()
        .checked_add(amount)
        .ok_or(CurtaError::Overflow)?;
    *claim_info.try_borrow_mut_lamports()? = left;
    *winner.try_borrow_mut_lamports()? = paid;
    drain(run_info, challenger)
}
