//! Close (docs/program.md, "5 Close").

use pinocchio::account_info::AccountInfo;
use pinocchio::pubkey::Pubkey;
use pinocchio::ProgramResult;

use super::shared::{authority_signs, drain, owned_data, weight_address, writable};
use crate::error::CurtaError;
use crate::state::{
    all_zero, header_is_zero, same_address, ModelAccount, ModelState, WeightFields,
};

#[inline(always)]
pub(super) fn process_close(program_id: &Pubkey, accounts: &[AccountInfo]) -> ProgramResult {
    let [model_info, authority, destination, weights @ ..] = accounts else {
        return Err(CurtaError::WrongAccountCount.into());
    };
    writable(model_info)?;
    writable(destination)?;
    {
        let mut model_data = owned_data(model_info, program_id)?;
        let model = ModelAccount::new(&mut model_data)?;
        authority_signs(model.authority(), authority)?;
        model
            .state()
            .require(&[ModelState::Open, ModelState::Sealing, ModelState::Mismatch])?;
        if weights.len() != model.section_count() {
            return Err(CurtaError::WrongAccountCount.into());
        }
        if same_address(destination.key(), model_info.key())
            || weights
                .iter()
                .any(|w| same_address(w.key(), destination.key()))
        {
            return Err(CurtaError::InvalidDestination.into());
        }
        for (section, weight_info) in weights.iter().enumerate() {
            let expected =
                weight_address(program_id, authority.key(), model_info.key(), section as u8)?;
            if !same_address(weight_info.key(), &expected) {
                return Err(CurtaError::WeightAddressMismatch.into());
            }
            writable(weight_info)?;
            // A seed address with this program as owner can only be owned by the system
            // program (not created, or created elsewise) or by this program.
            if same_address(weight_info.owner(), program_id) {
                closable_weight(&model, model_info.key(), section, weight_info)?;
            } else if !all_zero(weight_info.owner()) {
                return Err(CurtaError::WrongOwner.into());
            }
        }
    }
    for weight_info in weights {
        if same_address(weight_info.owner(), program_id) {
            drain(weight_info, destination)?;
        }
    }
    drain(model_info, destination)
}

/// Checks that the program-owned account at section `section`'s seed address belongs to the
/// model being closed. The seed holds only 10 bytes of the model address, so two models of one
/// authority can share weight addresses: the address alone does not prove it. A header of
/// zeros (created, never initialized) is closable; anything else must be a valid weight header
/// that belongs to the model at this section.
#[inline(always)]
fn closable_weight(
    model: &ModelAccount,
    model_key: &Pubkey,
    section: usize,
    weight_info: &AccountInfo,
) -> ProgramResult {
    let data = weight_info.try_borrow_data()?;
    if header_is_zero(&data) {
        return Ok(());
    }
    let header = WeightFields::parse(&data).map_err(|_| CurtaError::UnrecognizedWeightAccount)?;
    header.belongs_to(
        model_key,
        section,
        header.length,
        model.weight_account(section),
        weight_info.key(),
    )?;
    Ok(())
}
