//! CloseRun (docs/program.md, "8 CloseRun"): the run account closed, every lamport to its
//! runner. Also an account at a run address that StartRun never initialized (its header still
//! zero: a size that fits no run, a model that never sealed), named by its model and nonce.

use pinocchio::account_info::AccountInfo;
use pinocchio::pubkey::{self, Pubkey};
use pinocchio::ProgramResult;

use super::shared::{authority_signs, drain, owned_data, signer, writable};
use crate::error::CurtaError;
use crate::run::{run_seed_bytes, RunAccount, RUN_HEADER_LEN};
use crate::state::same_address;

#[inline(always)]
pub(super) fn process_close_run(
    program_id: &Pubkey,
    accounts: &[AccountInfo],
    named: Option<(&[u8; 32], u32)>,
) -> ProgramResult {
    let [run_info, runner] = accounts else {
        return Err(CurtaError::WrongAccountCount.into());
    };
    writable(run_info)?;
    writable(runner)?;
    {
        let mut data = owned_data(run_info, program_id)?;
        let unstarted = data[..data.len().min(RUN_HEADER_LEN)]
            .iter()
            .all(|&b| b == 0);
        match (unstarted, named) {
            // Never started: the address must be the runner's run of the named model and
            // nonce, and the runner signs.
            (true, Some((model, nonce))) => {
                let seed = run_seed_bytes(model, nonce);
                let expected = pubkey::create_with_seed(runner.key(), &seed, program_id)?;
                if !same_address(run_info.key(), &expected) {
                    return Err(CurtaError::RunAddressMismatch.into());
                }
                signer(runner)?;
            }
            (true, None) => return Err(CurtaError::NotARun.into()),
            (false, named) => {
                let run = RunAccount::new(&mut data)?;
                if let Some((model, nonce)) = named {
                    if !run.belongs_to_model(model) || run.nonce() != nonce {
                        return Err(CurtaError::RunAddressMismatch.into());
                    }
                }
                authority_signs(run.runner(), runner)?;
                if run.dispute() {
                    return Err(CurtaError::DisputeRunLocked.into());
                }
            }
        }
    }
    drain(run_info, runner)
}
