//! Seal (docs/program.md, "3 Seal").

use pinocchio::account_info::AccountInfo;
use pinocchio::program_error::ProgramError;
use pinocchio::pubkey::Pubkey;
use pinocchio::ProgramResult;

use super::shared::{authority_signs, chain_in_place, log_hashes, owned, writable};
use crate::error::CurtaError;
use crate::state::{
    all_zero, same_address, set_frozen, ModelAccount, ModelState, WeightFields, MAX_SECTIONS,
    WEIGHT_HEADER_LEN,
};

/// Seal: check the chunk against the model's pass and the cursor's section, begin the pass at
/// chunk 0 (the header check, every section frozen), then hash the chunk at the cursor.
#[inline(always)]
pub(super) fn process_seal(
    program_id: &Pubkey,
    accounts: &[AccountInfo],
    creation: u64,
    pass: u32,
    chunk: u32,
) -> ProgramResult {
    // Chunk 0 starts a pass and freezes every section: the authority must sign it, and it
    // takes every section's weight account (section zero's before the authority, the others
    // after). A later chunk takes the model and either the cursor's section's weight account
    // or every section's, in section order, read only; anyone may send it.
    let (model_info, weight_info, weights, authority) = match (accounts, chunk) {
        ([_, _], 0) => return Err(CurtaError::SealStartNeedsAuthority.into()),
        ([model_info, weight_info, authority, later @ ..], 0) => {
            (model_info, weight_info, later, Some(authority))
        }
        ([model_info, weight_info], _) => (model_info, weight_info, &[][..], None),
        ([model_info, first, ..], 1..) => (model_info, first, &accounts[1..], None),
        _ => return Err(CurtaError::WrongAccountCount.into()),
    };
    writable(model_info)?;
    owned(model_info, program_id)?;
    // SAFETY: the first borrow of the model's data in this instruction, and the only one.
    let mut model = ModelAccount::new(unsafe { model_info.borrow_mut_data_unchecked() })?;
    // A Seal signed for an earlier model at this address (closed, then created again) names
    // that model's creation: it is refused before it can start or move a pass of this one.
    if creation != model.creation() {
        return Err(CurtaError::StaleCreation.into());
    }
    check_pass(&model, authority, weights, pass)?;
    // Seals are order-free: the chunk hashed is always the one at the cursor. `chunk` makes
    // the transaction unique: one of the cursor's section's chunks when the seal carries that
    // section alone; any chunk of the model when it carries every section (the cursor's
    // section is always among them: its range check is then the cursor's own).
    let cursor = model.seal_cursor();
    let every = authority.is_none() && !weights.is_empty();
    let ticket = if every {
        if weights.len() != model.section_count() {
            return Err(CurtaError::WrongAccountCount.into());
        }
        if chunk >= model.total_chunks() {
            return Err(CurtaError::UnexpectedChunk.into());
        }
        cursor
    } else {
        chunk
    };
    let (section, declared_length, chunk_in_section) = model
        .locate_seal(cursor, ticket)
        .ok_or(CurtaError::UnexpectedChunk)?;
    let weight_info = if every {
        // Below the section count, which is the slice's length.
        &weights[section.min(weights.len() - 1)]
    } else {
        weight_info
    };
    // SAFETY: the one weight account this seal borrows before `freeze_later`, which borrows
    // only accounts at other sections' recorded addresses.
    let data = unsafe { section_data(program_id, &model, model_info, weight_info, section)? };

    if authority.is_some() {
        // Every section frozen before its first chunk is hashed: no hashed byte can change
        // afterwards, and no later seal writes a weight account (they take them read only).
        writable(weight_info)?;
        freeze_later(&model, weights)?;
        begin_pass(&mut model, &data[WEIGHT_HEADER_LEN..])?;
        set_frozen(data, true);
    }
    let start = chunk_in_section as usize * curta_core::CHUNK_LEN;
    let end = (start + curta_core::CHUNK_LEN).min(declared_length as usize);
    hash_chunk(
        &mut model,
        &data[WEIGHT_HEADER_LEN + start..WEIGHT_HEADER_LEN + end],
    );
    // The cursor moved past its section's last chunk: into the next section, if any.
    let cursor = cursor + 1;
    if end == declared_length as usize && cursor < model.total_chunks() {
        model.set_seal_section(section + 1, cursor);
    }
    Ok(())
}

/// Chunk 0 begins a pass of an Open model (its cursor is 0); every later chunk moves the pass of
/// a Sealing one (its cursor past 0): a start seal during a pass, or a crank before one began, is
/// WrongState. Either way the seal names the model's current pass.
#[inline(always)]
fn check_pass(
    model: &ModelAccount,
    authority: Option<&AccountInfo>,
    weights: &[AccountInfo],
    pass: u32,
) -> ProgramResult {
    if let Some(authority) = authority {
        authority_signs(model.authority(), authority)?;
        model.state().require(&[ModelState::Open])?;
        // Sealing is reached only by a chunk 0 that found every account bound, and no
        // account is bound outside Open: only an Open model can lack one. Section zero's is
        // checked here, the others' as they are frozen (`freeze_later`).
        if all_zero(model.weight_account(0)) {
            return Err(CurtaError::WeightAccountsMissing.into());
        }
        if weights.len() + 1 != model.section_count() {
            return Err(CurtaError::WrongAccountCount.into());
        }
    } else {
        model.state().require(&[ModelState::Sealing])?;
    }
    if pass != model.seal_pass() {
        return Err(CurtaError::StalePass.into());
    }
    Ok(())
}

/// The data of `weight_info`, which must be section `section`'s weight account of the model.
/// The account the model recorded for the section was bound by InitWeightAccount, which wrote
/// its header (this model, this section, the declared length), and nothing changes that header
/// or the account's size afterwards: at that address the header is not read again. Any other
/// account is checked in full, for the reason it is refused.
///
/// # Safety
/// No other borrow of `weight_info`'s data may exist (the model's, the only other one, is
/// told apart by address here).
#[inline(always)]
#[allow(clippy::mut_from_ref)] // the data lives in the runtime's input, as pinocchio's own
unsafe fn section_data<'a>(
    program_id: &Pubkey,
    model: &ModelAccount,
    model_info: &AccountInfo,
    weight_info: &'a AccountInfo,
    section: usize,
) -> Result<&'a mut [u8], ProgramError> {
    // The model's own data (borrowed) holds no weight header. The runtime serializes an
    // account once and a repeated one is the same entry: the same key means the same key's
    // address, compared instead of the 32 bytes.
    if core::ptr::eq(weight_info.key(), model_info.key()) {
        return Err(CurtaError::NotInitialized.into());
    }
    owned(weight_info, program_id)?;
    // SAFETY: the weight account is not the model (above), and the caller holds no other
    // borrow of it: the only borrow of these bytes.
    let data = unsafe { weight_info.borrow_mut_data_unchecked() };
    let declared_length = model.section_length(section);
    if !same_address(model.weight_account(section), weight_info.key())
        || data.len() != WEIGHT_HEADER_LEN + declared_length as usize
    {
        let header = WeightFields::parse(data)?;
        header.belongs_to(
            model_info.key(),
            section,
            declared_length,
            model.weight_account(section),
            weight_info.key(),
        )?;
    }
    Ok(data)
}

/// Chunk 0 freezes sections 1 on through `later`, their weight accounts in section order: each
/// writable (`NotWritable`) and at the address the model recorded for its section
/// (`WeightAddressMismatch`). A recorded address is an account InitWeightAccount initialized
/// for that section, which only the program can change (the runtime refuses a write to an
/// account the program does not own); the sections' addresses differ by their seeds, so an
/// account given twice is refused before its data is borrowed a second time.
#[inline(always)]
fn freeze_later(model: &ModelAccount, later: &[AccountInfo]) -> ProgramResult {
    for (i, weight_info) in later.iter().enumerate() {
        writable(weight_info)?;
        let recorded = model.weight_account((i + 1).min(MAX_SECTIONS - 1));
        if !same_address(recorded, weight_info.key()) {
            return Err(match all_zero(recorded) {
                true => CurtaError::WeightAccountsMissing,
                false => CurtaError::WeightAddressMismatch,
            }
            .into());
        }
        // SAFETY: a recorded weight address is neither the model's nor another section's, so
        // no other borrow of these bytes exists.
        let data = unsafe { weight_info.borrow_mut_data_unchecked() };
        if data.len() < WEIGHT_HEADER_LEN {
            return Err(CurtaError::NotInitialized.into());
        }
        set_frozen(data, true);
    }
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
