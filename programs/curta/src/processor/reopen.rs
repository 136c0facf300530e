//! Reopen (docs/program.md, "4 Reopen").

use pinocchio::account_info::AccountInfo;
use pinocchio::pubkey::Pubkey;
use pinocchio::ProgramResult;

use super::shared::{authority_signs, owned_data, writable};
use crate::error::CurtaError;
use crate::state::{same_address, set_frozen, ModelAccount, ModelState, WeightFields};

#[inline(always)]
pub(super) fn process_reopen(program_id: &Pubkey, accounts: &[AccountInfo]) -> ProgramResult {
    let [model_info, authority, weights @ ..] = accounts else {
        return Err(CurtaError::WrongAccountCount.into());
    };
    writable(model_info)?;
    let mut model_data = owned_data(model_info, program_id)?;
    let mut model = ModelAccount::new(&mut model_data)?;
    authority_signs(model.authority(), authority)?;
    model
        .state()
        .require(&[ModelState::Sealing, ModelState::Mismatch])?;
    if weights.len() != model.section_count() {
        return Err(CurtaError::WrongAccountCount.into());
    }
    // Sealing started, so every section's weight account is bound.
    for (section, weight_info) in weights.iter().enumerate() {
        if !same_address(weight_info.key(), model.weight_account(section)) {
            return Err(CurtaError::WeightAddressMismatch.into());
        }
        writable(weight_info)?;
        let data = owned_data(weight_info, program_id)?;
        WeightFields::parse(&data)?.belongs_to(
            model_info.key(),
            section,
            model.section_length(section),
            model.weight_account(section),
            weight_info.key(),
        )?;
    }
    for weight_info in weights {
        set_frozen(&mut weight_info.try_borrow_mut_data()?, false);
    }
    model.start_over()?;
    Ok(())
}
