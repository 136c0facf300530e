//! CreateModel (docs/program.md, "0 CreateModel").

use pinocchio::account_info::AccountInfo;
use pinocchio::instruction::{Seed, Signer};
use pinocchio::program_error::ProgramError;
use pinocchio::pubkey::{self, Pubkey};
use pinocchio::ProgramResult;

use super::shared::{creation_slot, minimum_balance, signer, system, writable};
use crate::error::CurtaError;
use crate::instruction::U32s;
use crate::state::{
    all_zero, same_address, ModelAccount, MAX_SECTIONS, MIN_SECTIONS, MODEL_LEN, MODEL_SEED,
};

#[inline(always)]
pub(super) fn process_create_model(
    program_id: &Pubkey,
    accounts: &[AccountInfo],
    weights_hash: &[u8; 32],
    section_lengths: U32s,
) -> ProgramResult {
    let [authority, model_info, system] = accounts else {
        return Err(CurtaError::WrongAccountCount.into());
    };
    signer(authority)?;
    writable(authority)?;
    writable(model_info)?;
    if !all_zero(system.key()) {
        return Err(ProgramError::IncorrectProgramId);
    }
    let count = section_lengths.len();
    if !(MIN_SECTIONS..=MAX_SECTIONS).contains(&count) {
        return Err(CurtaError::InvalidSectionCount.into());
    }
    let mut declared = [0u32; MAX_SECTIONS];
    for (length, declared_length) in declared.iter_mut().zip(section_lengths.iter()) {
        *length = declared_length;
    }
    let lengths = &declared[..count];
    if lengths
        .iter()
        .any(|&length| length == 0 || length as usize > curta_core::MAX_SECTION_LEN)
    {
        return Err(CurtaError::InvalidSectionLength.into());
    }
    // Section zero holds the header the seal of chunk 0 checks: shorter, it could never seal.
    if (lengths[0] as usize) < curta_core::HEADER_LEN {
        return Err(CurtaError::SectionZeroTooShort.into());
    }
    // Reopen and Close load every account of the model in one transaction: a model whose
    // accounts exceed what a transaction may load could be uploaded but never recovered.
    if crate::state::model_bytes(lengths.iter().copied()) > crate::state::MAX_MODEL_BYTES {
        return Err(CurtaError::ModelTooLarge.into());
    }
    let total_chunks = curta_core::total_chunks(lengths);
    let (address, bump) =
        pubkey::try_find_program_address(&[MODEL_SEED, authority.key(), weights_hash], program_id)
            .ok_or(CurtaError::ModelAddressMismatch)?;
    if !same_address(model_info.key(), &address) {
        return Err(CurtaError::ModelAddressMismatch.into());
    }
    if same_address(model_info.owner(), program_id) {
        return Err(CurtaError::AlreadyInitialized.into());
    }
    if !all_zero(model_info.owner()) || !model_info.data_is_empty() {
        return Err(CurtaError::WrongOwner.into());
    }

    let lamports = minimum_balance(MODEL_LEN)?;
    let bump_seed = [bump];
    let seeds = [
        Seed::from(MODEL_SEED),
        Seed::from(authority.key()),
        Seed::from(weights_hash),
        Seed::from(&bump_seed),
    ];
    let model_signer = [Signer::from(&seeds)];
    // Transfer the rent (or its shortfall, if someone sent lamports to the address first),
    // then allocate and assign: one path whether the address was funded or not.
    let shortfall = lamports.saturating_sub(model_info.lamports());
    let calls = [
        system::transfer(authority, model_info, shortfall),
        system::allocate(model_info, authority, MODEL_LEN),
        system::assign(model_info, authority, program_id),
    ];
    // One CPI site for the three (the model's signature is harmless to the transfer).
    for call in &calls[if shortfall > 0 { 0 } else { 1 }..] {
        call.invoke(&model_signer)?;
    }
    ModelAccount::create(
        &mut model_info.try_borrow_mut_data()?,
        creation_slot()?,
        bump,
        authority.key(),
        weights_hash,
        lengths,
        total_chunks,
    )?;
    Ok(())
}
