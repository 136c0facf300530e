//! AnswerClaim (docs/program.md, "10 AnswerClaim"): the claimer posts its answer's token count
//! and hash; a drawn seed is drawn now, from the open slot's hash.

use pinocchio::account_info::AccountInfo;
use pinocchio::pubkey::Pubkey;
use pinocchio::sysvars::slot_hashes::SLOTHASHES_ID;
use pinocchio::ProgramResult;

use super::shared::claim::{put_bytes, put_u32, put_u64};
use super::shared::{authority_signs, current_slot, owned_data, sha256, writable};
use crate::claim::{claim_field as f, ClaimState, ClaimView};
use crate::error::CurtaError;
use crate::run::{find_slot_hash, seed_from_digest, seed_preimage, SeedSource, SlotHashLookup};
use crate::state::same_address;

#[inline(always)]
pub(super) fn process_answer_claim(
    program_id: &Pubkey,
    accounts: &[AccountInfo],
    token_count: u32,
    answer_hash: &[u8; 32],
) -> ProgramResult {
    let [claim_info, claimer, slot_hashes] = accounts else {
        return Err(CurtaError::WrongAccountCount.into());
    };
    writable(claim_info)?;
    let mut data = owned_data(claim_info, program_id)?;
    let claim = ClaimView::new(&data)?;
    authority_signs(claim.claimer(), claimer)?;
    if claim.state() != ClaimState::Open {
        return Err(CurtaError::AlreadyAnswered.into());
    }
    if token_count == 0 || token_count > claim.steps() {
        return Err(CurtaError::InvalidAnswer.into());
    }
    if !same_address(slot_hashes.key(), &SLOTHASHES_ID) {
        return Err(CurtaError::NotSlotHashes.into());
    }
    let drawn = match claim.seed_source() {
        SeedSource::Drawn => {
            // SAFETY: read-only; the sysvar's address was checked, so it is not the claim.
            let hashes = unsafe { slot_hashes.borrow_data_unchecked() };
            let open_slot = claim.open_slot();
            let hash = match find_slot_hash(hashes, open_slot) {
                SlotHashLookup::Found(hash) => hash,
                SlotHashLookup::NotYet => return Err(CurtaError::SeedNotReady.into()),
                SlotHashLookup::Gone => return Err(CurtaError::SeedExpired.into()),
            };
            let preimage = seed_preimage(claim.claimer_seed(), claim_info.key(), open_slot, &hash);
            Some((hash, seed_from_digest(&sha256(&preimage))))
        }
        SeedSource::None | SeedSource::Chosen => None,
    };
    if let Some((hash, seed)) = drawn {
        put_bytes(&mut data, f::SLOT_HASH, &hash);
        put_u64(&mut data, f::SEED, seed);
    }
    put_u64(&mut data, f::ANSWER_SLOT, current_slot()?);
    put_u32(&mut data, f::TOKEN_COUNT, token_count);
    put_bytes(&mut data, f::ANSWER_HASH, answer_hash);
    data[f::STATE] = ClaimState::Answered as u8;
    Ok(())
}
