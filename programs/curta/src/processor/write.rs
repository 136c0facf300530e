//! Write (docs/program.md, "2 Write").

use pinocchio::account_info::AccountInfo;
use pinocchio::pubkey::Pubkey;
use pinocchio::ProgramResult;

use super::shared::{authority_signs, owned_data, writable};
use crate::error::CurtaError;
use crate::state::{WeightFields, WEIGHT_HEADER_LEN};

#[inline(always)]
pub(super) fn process_write(
    program_id: &Pubkey,
    accounts: &[AccountInfo],
    offset: u32,
    bytes: &[u8],
) -> ProgramResult {
    let [weight_info, authority] = accounts else {
        return Err(CurtaError::WrongAccountCount.into());
    };
    writable(weight_info)?;
    let mut data = owned_data(weight_info, program_id)?;
    let header = WeightFields::parse(&data)?;
    authority_signs(header.authority, authority)?;
    if header.frozen {
        return Err(CurtaError::SectionFrozen.into());
    }
    if bytes.is_empty() {
        return Err(CurtaError::EmptyWrite.into());
    }
    let end = (offset as usize)
        .checked_add(bytes.len())
        .filter(|&end| end <= header.length as usize)
        .ok_or(CurtaError::WriteOutOfBounds)?;
    data[WEIGHT_HEADER_LEN + offset as usize..WEIGHT_HEADER_LEN + end].copy_from_slice(bytes);
    Ok(())
}
