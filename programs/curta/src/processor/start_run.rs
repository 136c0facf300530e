//! StartRun (docs/program.md, "6 StartRun"): binds the run account the runner created and
//! starts the run of a Sealed model in it.

use curta_core::infer::{Encoding, Model, Settings};
use curta_core::Metadata;
use pinocchio::account_info::AccountInfo;
use pinocchio::program_error::ProgramError;
use pinocchio::pubkey::{self, Pubkey};
use pinocchio::ProgramResult;

use super::encoding::{continue_encoding, engine_settings, start_engine};
use super::shared::{
    current_slot, error_code, from_code, log_run_error, minimum_balance, owned, owned_data,
    prompt_buffer, sealed_model, signer, weight_account, writable,
};
use crate::error::CurtaError;
use crate::instruction::{CurtaInstruction, Prompt};
use crate::run::{
    run_len, run_seed_bytes, RunAccount, RunStart, SeedSource, RUN_HEADER_LEN, TEXT_PER_STEP,
};
use crate::state::{all_zero, same_address, WeightFields, WEIGHT_HEADER_LEN};
use curta_interface::cost::START_ENCODE_BUDGET;

/// Its own stack frame (a run's locals and curta-core's inlined into the entrypoint's would
/// pass SBF's 4 KiB), so at most five registers in and one out: the raw instruction data in,
/// the error code out (0 for success).
#[inline(never)]
pub(super) fn process_start_run(program_id: &Pubkey, accounts: &[AccountInfo], data: &[u8]) -> u64 {
    let Some(CurtaInstruction::StartRun {
        nonce,
        steps,
        temperature,
        top_p,
        seed,
        seed_source: source,
        prompt,
    }) = CurtaInstruction::parse(data)
    else {
        return error_code(Err(ProgramError::InvalidInstructionData));
    };
    let settings = Settings {
        temperature,
        top_p,
        seed,
    };
    error_code(start_run(
        program_id, accounts, nonce, steps, settings, source, prompt,
    ))
}

#[allow(clippy::too_many_arguments)]
#[inline(always)]
fn start_run(
    program_id: &Pubkey,
    accounts: &[AccountInfo],
    nonce: u32,
    steps: u32,
    settings: Settings,
    source: SeedSource,
    prompt: Prompt,
) -> ProgramResult {
    let [run_info, runner, model_info, zero_info] = accounts else {
        return Err(CurtaError::WrongAccountCount.into());
    };
    writable(run_info)?;
    signer(runner)?;
    from_code(begin_run(&Begin {
        program_id,
        run_info,
        runner: runner.key(),
        model_info,
        zero_info,
        nonce,
        steps,
        settings,
        source,
        prompt,
        preset: None,
        dispute: false,
    }))
}

/// A run to begin: StartRun's, or a claim's dispute run (Challenge), whose drawn seed is the
/// claim's (`preset`: the open slot, its hash and the seed) and which only Resolve closes.
pub(super) struct Begin<'a, 'p> {
    pub program_id: &'a Pubkey,
    pub run_info: &'a AccountInfo,
    pub runner: &'a Pubkey,
    pub model_info: &'a AccountInfo,
    pub zero_info: &'a AccountInfo,
    pub nonce: u32,
    pub steps: u32,
    pub settings: Settings,
    pub source: SeedSource,
    pub prompt: Prompt<'p>,
    pub preset: Option<(u64, [u8; 32], u64)>,
    /// A claim's dispute run: CloseRun refuses it.
    pub dispute: bool,
}

/// Checks the run account the runner created and starts the run in it: its own frame (one
/// register in, the error code out, 0 for success), shared by StartRun and Challenge.
#[inline(never)]
pub(super) fn begin_run(b: &Begin) -> u64 {
    error_code(begin(b))
}

#[inline(always)]
fn begin(b: &Begin) -> ProgramResult {
    let (program_id, run_info, model_info) = (b.program_id, b.run_info, b.model_info);
    let (steps, settings, source, prompt) = (b.steps, b.settings, b.source, b.prompt);
    writable(run_info)?;
    let (config, model_data) = sealed_model(model_info, program_id)?;
    let zero = section_zero(program_id, model_info, model_data, b.zero_info)?;

    owned(run_info, program_id)?;
    let seed = run_seed_bytes(model_info.key(), b.nonce);
    let expected = pubkey::create_with_seed(b.runner, &seed, program_id)?;
    if !same_address(run_info.key(), &expected) {
        return Err(CurtaError::RunAddressMismatch.into());
    }
    if steps == 0 || run_info.data_len() as u64 != run_len(&config, steps) {
        return Err(CurtaError::RunSizeMismatch.into());
    }
    if run_info.lamports() < minimum_balance(run_info.data_len())? {
        return Err(CurtaError::NotRentExempt.into());
    }
    let mut data = owned_data(run_info, program_id)?;
    if !all_zero(&data[..RUN_HEADER_LEN]) {
        return Err(CurtaError::AlreadyInitialized.into());
    }

    // Greedy runs have no seed; a sampled run's seed is drawn or chosen, said so.
    if (settings.temperature == 0) != (source == SeedSource::None) {
        pinocchio::log::sol_log("run: seed source 0 is for greedy runs (temperature 0) only");
        return Err(CurtaError::InvalidRun.into());
    }
    let meta = Metadata::sealed(&zero[WEIGHT_HEADER_LEN..]).ok_or(CurtaError::InvalidRun)?;
    let model = Model::new(meta, &[]).map_err(log_run_error)?;
    let state_len = curta_core::infer::state_len(&config);
    let start = RunStart {
        nonce: b.nonce,
        model: model_info.key(),
        runner: b.runner,
        state_len: state_len as u32,
        text_capacity: TEXT_PER_STEP as u32 * steps,
        temperature: settings.temperature,
        top_p: settings.top_p,
        runner_seed: settings.seed,
        source,
        start_slot: current_slot()?,
    };
    let mut run = RunAccount::create(&mut data, &start);
    if let Some((slot, hash, seed)) = b.preset {
        run.preset_seed(slot, &hash, seed);
    }
    if b.dispute {
        run.set_dispute();
    }
    if let Prompt::Text(text) = prompt {
        // A long text's ids exist only once Steps end its encoding, where `Run::start` checks
        // them: what can be checked before is checked here (the settings; the steps against
        // the context, a non-empty text being at least two tokens), so that only a text too
        // long for the context with these steps fails then (the runner closes that run).
        let least_tokens = 1 + !text.is_empty() as u64;
        if least_tokens + steps as u64 - 1 > config.context_length as u64 {
            pinocchio::log::sol_log("run: the steps after the prompt run past the context");
            return Err(CurtaError::InvalidRun.into());
        }
        engine_settings(settings, source)
            .validate()
            .map_err(log_run_error)?;
    }
    match prompt {
        // The state's bytes, zeroed by `Run::start` at the encoding's end, hold the encoding's
        // working state (8-byte aligned at byte 192 of the account): every state holds the
        // 16,388-byte histogram, room for the encoding of 1,300 bytes of text, more than a
        // transaction carries. StartRun does what fits its units; the first Steps the rest.
        Prompt::Text(text) => {
            let (state, _) = run.state_and_text();
            Encoding::begin(state, text).map_err(|_| CurtaError::PromptTooLongToEncode)?;
            from_code(continue_encoding(&mut run, &model, START_ENCODE_BUDGET))
        }
        Prompt::Tokens(ids) => {
            let tokens = prompt_buffer();
            let count = ids.len();
            if count > tokens.len() {
                return Err(CurtaError::InvalidRun.into());
            }
            for (slot, id) in tokens.iter_mut().zip(ids.iter()) {
                *slot = id;
            }
            from_code(start_engine(&mut run, &model, &tokens[..count]))
        }
    }
}

/// The data of the model's section zero weight account, checked to be the one the model
/// recorded, owned by the program and bound to the model.
#[inline(always)]
fn section_zero<'z>(
    program_id: &Pubkey,
    model_info: &AccountInfo,
    model_data: &[u8],
    zero_info: &'z AccountInfo,
) -> Result<&'z [u8], ProgramError> {
    if !same_address(zero_info.key(), weight_account(model_data, 0)) {
        return Err(CurtaError::WeightAddressMismatch.into());
    }
    owned(zero_info, program_id)?;
    // SAFETY: read-only for the whole instruction; no mutable borrow of it exists (its
    // address is the model's section zero account, neither the run nor the model).
    let zero = unsafe { zero_info.borrow_data_unchecked() };
    let header = WeightFields::parse(zero)?;
    header.belongs_to(
        model_info.key(),
        0,
        header.length,
        weight_account(model_data, 0),
        zero_info.key(),
    )?;
    Ok(zero)
}
