//! CloseRun (docs/program.md, "8 CloseRun"): the run account closed, every lamport to its
//! runner.

use pinocchio::account_info::AccountInfo;
use pinocchio::pubkey::Pubkey;
use pinocchio::ProgramResult;

use super::shared::{authority_signs, drain, owned_data, writable};
use crate::error::CurtaError;
use crate::run::RunAccount;

#[inline(always)]
pub(super) fn process_close_run(program_id: &Pubkey, accounts: &[AccountInfo]) -> ProgramResult {
    let [run_info, runner] = accounts else {
        return Err(CurtaError::WrongAccountCount.into());
    };
    writable(run_info)?;
    writable(runner)?;
    {
        let mut data = owned_data(run_info, program_id)?;
        let run = RunAccount::new(&mut data)?;
        authority_signs(run.runner(), runner)?;
    }
    drain(run_info, runner)
}
