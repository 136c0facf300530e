//! Seal (docs/program.md, "3 Seal").

use pinocchio::account_info::AccountInfo;
use pinocchio::pubkey::Pubkey;
use pinocchio::ProgramResult;

use super::shared::{authority_signs, chain_in_place, log_hashes, owned_data, writable};
use crate::error::CurtaError;
use crate::state::{
    same_address, set_frozen, ModelAccount, ModelState, WeightFields, MAX_SECTIONS,
    WEIGHT_HEADER_LEN,
};

/// Seal: check the chunk against the model's pass and the cursor's section, begin the pass at
/// chunk 0 (the header check), then hash the chunk at the cursor.
#[inline(always)]
pub(super) fn process_seal(
    program_id: &Pubkey,
    accounts: &[AccountInfo],
    creation: u64,
    pass: u32,
    chunk: u32,
) -> ProgramResult {
    // Chunk 0 starts a pass and freezes section zero: the authority must sign it. Every later
    // chunk takes exactly the model and the weight account, and anyone may send it.
    let (model_info, weight_info, authority) = match (accounts, chunk) {
        ([_, _], 0) => return Err(CurtaError::SealStartNeedsAuthority.into()),
        ([model_info, weight_info], _) => (model_info, weight_info, None),
        ([model_info, weight_info, authority], 0) => (model_info, weight_info, Some(authority)),
        _ => return Err(CurtaError::WrongAccountCount.into()),
    };
    writable(model_info)?;
    writable(weight_info)?;
    let mut model_data = owned_data(model_info, program_id)?;
    let mut model = ModelAccount::new(&mut model_data)?;
    // A Seal signed for an earlier model at this address (closed, then created again) names
    // that model's creation: it is refused before it can start or move a pass of this one.
    if creation != model.creation() {
        return Err(CurtaError::StaleCreation.into());
    }
    // Chunk 0 begins a pass of an Open model (its cursor is 0); every later chunk moves the
    // pass of a Sealing one (its cursor past 0): a start seal during a pass, or a crank before
    // one began, is WrongState.
    if let Some(authority) = authority {
        authority_signs(model.authority(), authority)?;
        model.state().require(&[ModelState::Open])?;
        // Sealing is reached only by a chunk 0 that found every account bound, and no
        // account is bound outside Open: only an Open model can lack one.
        if !model.all_weights_bound() {
            return Err(CurtaError::WeightAccountsMissing.into());
        }
    } else {
        model.state().require(&[ModelState::Sealing])?;
    }
    if pass != model.seal_pass() {
        return Err(CurtaError::StalePass.into());
    }
    // Seals are order-free within a section: the chunk hashed is always the one at the
    // cursor, and `chunk` names one of that section's chunks (it makes the transaction
    // unique).
    let (section, declared_length, chunk_in_section) = model
        .locate_seal(model.seal_cursor(), chunk)
        .ok_or(CurtaError::UnexpectedChunk)?;
    // The model's own data (borrowed above) holds no weight header. The runtime serializes an
    // account once and a repeated one is the same entry: the same key means the same key's
    // address, compared instead of the 32 bytes.
    if core::ptr::eq(weight_info.key(), model_info.key()) {
        return Err(CurtaError::NotInitialized.into());
    }
    let mut data = owned_data(weight_info, program_id)?;
    let header = WeightFields::parse(&data)?;
    header.belongs_to(
        model_info.key(),
        section,
        declared_length,
        model.weight_account(section),
        weight_info.key(),
    )?;
    let length = header.length as usize;

    if chunk_in_section == 0 {
        if section == 0 {
            begin_pass(&mut model, &data[WEIGHT_HEADER_LEN..])?;
        }
        // Frozen before its first chunk is hashed: no hashed byte can change afterwards.
        set_frozen(&mut data, true);
    }
    let start = chunk_in_section as usize * curta_core::CHUNK_LEN;
    let end = (start + curta_core::CHUNK_LEN).min(length);
    hash_chunk(
        &mut model,
        &data[WEIGHT_HEADER_LEN + start..WEIGHT_HEADER_LEN + end],
    );
    Ok(())
}

/// Chunk 0: section zero's header must be valid and its section table the declared lengths
/// (`section_zero::check`, the reason logged); its config is stored and the model is Sealing.
#[inline(always)]
fn begin_pass(model: &mut ModelAccount, section_zero: &[u8]) -> ProgramResult {
    let mut declared = [0u32; MAX_SECTIONS];
    let count = model.section_count();
    for (slot, length) in declared.iter_mut().zip(model.sections()) {
        *slot = length;
    }
    let config =
        crate::section_zero::check(section_zero, &declared[..count]).map_err(|refusal| {
            pinocchio::log::sol_log(refusal.reason);
            let [a, b, c, d] = refusal.values;
            pinocchio::log::sol_log_64(a, b, c, d, 0);
            refusal.error
        })?;
    model.set_config(&config);
    model.set_state(ModelState::Sealing);
    Ok(())
}

/// running = SHA-256(running || chunk), the cursor advances; after the last chunk the model is
/// Sealed (running = declared) or Mismatch.
#[inline(always)]
fn hash_chunk(model: &mut ModelAccount, chunk: &[u8]) {
    chain_in_place(model.running_hash_mut(), chunk);
    let cursor = model.seal_cursor() + 1;
    model.set_seal_cursor(cursor);
    if cursor == model.total_chunks() {
        if same_address(model.running_hash(), model.weights_hash()) {
            model.set_state(ModelState::Sealed);
            log_hashes(b"sealed: weights hash ", model.running_hash(), None);
        } else {
            model.set_state(ModelState::Mismatch);
            log_hashes(
                b"mismatch: declared weights hash ",
                model.weights_hash(),
                Some((b", computed ", model.running_hash())),
            );
        }
    }
}
