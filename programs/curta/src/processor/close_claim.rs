//! CloseClaim (docs/program.md, "13 CloseClaim"): every lamport of a claim to its claimer, the
//! rent and what is left of the bond: an open (unanswered) claim, a settled one or a resolved
//! one; never one a challenge may still reach or a dispute still decides.

use pinocchio::account_info::AccountInfo;
use pinocchio::pubkey::Pubkey;
use pinocchio::ProgramResult;

use super::shared::{authority_signs, current_slot, drain, owned_data, writable};
use crate::claim::{ClaimState, ClaimView};
use crate::error::CurtaError;

#[inline(always)]
pub(super) fn process_close_claim(program_id: &Pubkey, accounts: &[AccountInfo]) -> ProgramResult {
    let [claim_info, claimer] = accounts else {
        return Err(CurtaError::WrongAccountCount.into());
    };
    writable(claim_info)?;
    writable(claimer)?;
    {
        let data = owned_data(claim_info, program_id)?;
        let claim = ClaimView::new(&data)?;
        authority_signs(claim.claimer(), claimer)?;
        let closable = match claim.state() {
            ClaimState::Open | ClaimState::Upheld | ClaimState::Overturned => true,
            ClaimState::Answered => current_slot()? > claim.window_end(),
            ClaimState::Challenged => false,
        };
        if !closable {
            return Err(CurtaError::ClaimNotClosable.into());
        }
    }
    drain(claim_info, claimer)
}
