//! InitWeightAccount (docs/program.md, "1 InitWeightAccount").

use pinocchio::account_info::AccountInfo;
use pinocchio::pubkey::Pubkey;
use pinocchio::ProgramResult;

use super::shared::{
    authority_signs, minimum_balance, owned, owned_data, weight_address, writable,
};
use crate::error::CurtaError;
use crate::state::{
    all_zero, header_is_zero, same_address, write_weight_header, ModelAccount, ModelState,
    WEIGHT_HEADER_LEN,
};

#[inline(always)]
pub(super) fn process_init_weight_account(
    program_id: &Pubkey,
    accounts: &[AccountInfo],
    section: u8,
) -> ProgramResult {
    let [model_info, weight_info, authority] = accounts else {
        return Err(CurtaError::WrongAccountCount.into());
    };
    writable(model_info)?;
    writable(weight_info)?;
    let mut model_data = owned_data(model_info, program_id)?;
    let mut model = ModelAccount::new(&mut model_data)?;
    authority_signs(model.authority(), authority)?;
    model.state().require(&[ModelState::Open])?;
    let index = section as usize;
    if index >= model.section_count() {
        return Err(CurtaError::SectionOutOfRange.into());
    }
    if !all_zero(model.weight_account(index)) {
        return Err(CurtaError::AlreadyInitialized.into());
    }
    owned(weight_info, program_id)?;
    let expected = weight_address(program_id, authority.key(), model_info.key(), section)?;
    if !same_address(weight_info.key(), &expected) {
        return Err(CurtaError::WeightAddressMismatch.into());
    }
    let length = model.section_length(index);
    if weight_info.data_len() != WEIGHT_HEADER_LEN + length as usize {
        return Err(CurtaError::WeightSizeMismatch.into());
    }
    if weight_info.lamports() < minimum_balance(weight_info.data_len())? {
        return Err(CurtaError::NotRentExempt.into());
    }
    let mut data = weight_info.try_borrow_mut_data()?;
    if !header_is_zero(&data) {
        return Err(CurtaError::AlreadyInitialized.into());
    }
    write_weight_header(
        &mut data,
        section as u16,
        length,
        model_info.key(),
        authority.key(),
    );
    model.set_weight_account(index, weight_info.key());
    Ok(())
}
