//! Step (docs/program.md, "7 Step"): advances a run by a bounded piece of work, reading the
//! sealed model's weight accounts; a completed token is appended with its text.

use curta_core::infer::{decode, Model, Progress, Run};
use curta_core::{Metadata, MAX_SECTIONS};
use pinocchio::account_info::AccountInfo;
use pinocchio::pubkey::Pubkey;
use pinocchio::ProgramResult;

use super::encoding::continue_encoding;
use super::shared::{
    error_code, from_code, log_run_error, owned, owned_data, sealed_model, sha256, weight_account,
    writable,
};
use crate::error::CurtaError;
use crate::run::{
    find_slot_hash, seed_from_digest, seed_preimage, RunAccount, SlotHashLookup, MAX_STEP_BUDGET,
};
use crate::state::{same_address, WeightFields, WEIGHT_HEADER_LEN};
use curta_interface::cost::step_costs;
use pinocchio::sysvars::slot_hashes::SLOTHASHES_ID;

/// Its own stack frame, as StartRun's: the error code out (0 for success).
#[inline(never)]
pub(super) fn process_step(program_id: &Pubkey, accounts: &[AccountInfo], budget: u32) -> u64 {
    error_code(step(program_id, accounts, budget))
}

/// The step does not read its ticket: any number of steps may be in flight and land in any
/// order, each advancing the run from wherever it stands (the ticket only makes the
/// transaction unique).
#[inline(always)]
fn step(program_id: &Pubkey, accounts: &[AccountInfo], budget: u32) -> ProgramResult {
    let [run_info, model_info, slot_hashes, weight_infos @ ..] = accounts else {
        return Err(CurtaError::WrongAccountCount.into());
    };
    writable(run_info)?;
    let mut data = owned_data(run_info, program_id)?;
    let mut run = RunAccount::new(&mut data)?;
    if !run.belongs_to_model(model_info.key()) {
        return Err(CurtaError::WrongModel.into());
    }
    // A step that lands after the run ended (pipelined steps sent for its last token) is
    // refused before any weight account is read.
    // While the text prompt is encoding the state buffer holds the encoding, not a run's state.
    let encoding = run.encoding();
    if !encoding && !run.running() {
        return Err(CurtaError::RunEnded.into());
    }
    if !same_address(slot_hashes.key(), &SLOTHASHES_ID) {
        return Err(CurtaError::NotSlotHashes.into());
    }
    // A drawn seed is drawn once the run has started: nothing is sampled before (the encoding
    // needs no seed, and the step that ends it only starts the run).
    if let Some((runner_seed, start_slot)) = run.seed_to_draw().filter(|_| !encoding) {
        from_code(draw_seed(
            &mut run,
            run_info.key(),
            slot_hashes,
            runner_seed,
            start_slot,
        ))?;
    }
    let (config, model_data) = sealed_model(model_info, program_id)?;
    let count = config.section_count();
    if weight_infos.is_empty() || weight_infos.len() > count {
        return Err(CurtaError::WrongAccountCount.into());
    }
    // Section zero's account, then the model's accounts of any later sections in section
    // order: the step's items stop before the first one that reads a section it does not
    // carry. Each account is found among the model's recorded addresses before its data is
    // read (the run, borrowed mutably above, is never one of them).
    let mut sections = [&[][..]; MAX_SECTIONS];
    let mut lowest = 0;
    for info in weight_infos {
        let mut candidates = if lowest == 0 { 0..1 } else { lowest..count };
        let Some(section) =
            candidates.find(|&s| same_address(info.key(), weight_account(model_data, s)))
        else {
            return Err(CurtaError::WeightAddressMismatch.into());
        };
        owned(info, program_id)?;
        // SAFETY: read-only for the whole instruction; the address is the model's recorded
        // weight account, so it is neither the run (borrowed mutably) nor the model.
        let bytes = unsafe { info.borrow_data_unchecked() };
        let header = WeightFields::parse(bytes)?;
        header.belongs_to(
            model_info.key(),
            section,
            header.length,
            weight_account(model_data, section),
            info.key(),
        )?;
        sections[section] = &bytes[WEIGHT_HEADER_LEN..];
        lowest = section + 1;
    }
    if budget == 0 || budget > MAX_STEP_BUDGET {
        return Err(CurtaError::InvalidStepBudget.into());
    }
    let meta = Metadata::sealed(sections[0]).ok_or(CurtaError::InvalidRun)?;
    let model = Model::new(meta, &sections[..count]).map_err(log_run_error)?;
    // While encoding, the budget counts the encoding's items (`cost::encode_cost`); the step
    // that ends it starts the run and does no more.
    if encoding {
        from_code(continue_encoding(&mut run, &model, budget as u64))?;
        run.count_step();
        return Ok(());
    }
    let (state, _) = run.state_and_text();
    let temperature = curta_core::le::u32_at(state, curta_core::infer::state::field::TEMPERATURE);
    let mut engine = Run::resume(state, &model).map_err(log_run_error)?;
    if engine.status() != curta_core::infer::Status::Running {
        return Err(CurtaError::RunEnded.into());
    }
    let (progress, _) = engine
        .advance_by(&model, budget as u64, step_costs(temperature))
        .map_err(step_error)?;
    let piece = match progress {
        Progress::Token { pos, id } => {
            let previous = engine.token(pos - 1);
            Some(decode(&meta, previous, id).map_err(log_run_error)?)
        }
        _ => None,
    };
    if let Some(piece) = piece {
        run.append_text(piece.bytes());
    }
    run.count_step();
    Ok(())
}

/// A step's refusal by curta-core: `SectionNotLoaded` (the section logged) when its next
/// item reads a section whose weight account the step does not carry, else as any run's.
#[inline(never)]
fn step_error(error: curta_core::infer::RunError) -> CurtaError {
    if let curta_core::infer::RunError::SectionMissing { section, .. } = error {
        pinocchio::log::sol_log("step: the next item reads a section the step does not carry");
        pinocchio::log::sol_log_64(section as u64, 0, 0, 0, 0);
        return CurtaError::SectionNotLoaded;
    }
    log_run_error(error)
}

/// Draws a run's seed from the start slot's hash (docs/program.md, "The seed"): refused in
/// the start slot itself (its hash is made when the slot ends) and once the hash has left
/// SlotHashes. Its own frame (SBF returns one register: the error code, 0 for success).
#[inline(never)]
fn draw_seed(
    run: &mut RunAccount,
    address: &Pubkey,
    slot_hashes: &AccountInfo,
    runner_seed: u64,
    start_slot: u64,
) -> u64 {
    error_code(draw(run, address, slot_hashes, runner_seed, start_slot))
}

#[inline(always)]
fn draw(
    run: &mut RunAccount,
    address: &Pubkey,
    slot_hashes: &AccountInfo,
    runner_seed: u64,
    start_slot: u64,
) -> ProgramResult {
    // SAFETY: read-only; the sysvar's address was checked, so it is neither the run (borrowed
    // mutably) nor any other account this instruction writes.
    let hashes = unsafe { slot_hashes.borrow_data_unchecked() };
    let hash = match find_slot_hash(hashes, start_slot) {
        SlotHashLookup::Found(hash) => hash,
        SlotHashLookup::NotYet => return Err(CurtaError::SeedNotReady.into()),
        SlotHashLookup::Gone => return Err(CurtaError::SeedExpired.into()),
    };
    let preimage = seed_preimage(runner_seed, address, start_slot, &hash);
    run.record_seed(start_slot, &hash, seed_from_digest(&sha256(&preimage)));
    Ok(())
}
