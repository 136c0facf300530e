//! OpenClaim (docs/program.md, "9 OpenClaim"): binds the claim account the claimer created,
//! holding its rent and the bond, to a claim of a Sealed model.

use curta_core::infer::Settings;
use pinocchio::account_info::AccountInfo;
use pinocchio::pubkey::{self, Pubkey};
use pinocchio::ProgramResult;

use super::encoding::engine_settings;
use super::shared::claim::{put_bytes, put_u32, put_u64};
use super::shared::{
    current_slot, error_code, log_run_error, minimum_balance, owned_data, sealed_model, signer,
    writable,
};
use crate::claim::{
    claim_field as f, claim_len, claim_seed_bytes, ClaimState, CLAIM_HEADER_LEN, CLAIM_MAGIC,
    CLAIM_VERSION, MAX_WINDOW, MIN_WINDOW,
};
use crate::error::CurtaError;
use crate::instruction::{CurtaInstruction, Prompt};
use crate::run::SeedSource;
use crate::state::{all_zero, same_address};
use curta_interface::cost::{claim_bond, prompt_tokens_bound, MAX_PRIORITY_PRICE};

/// Its own stack frame, as StartRun's: the raw instruction data in, the error code out.
#[inline(never)]
pub(super) fn process_open_claim(
    program_id: &Pubkey,
    accounts: &[AccountInfo],
    data: &[u8],
) -> u64 {
    let Some(CurtaInstruction::OpenClaim {
        nonce,
        steps,
        temperature,
        top_p,
        seed,
        seed_source,
        window,
        priority_price,
        bond,
        prompt,
    }) = CurtaInstruction::parse(data)
    else {
        return error_code(Err(
            pinocchio::program_error::ProgramError::InvalidInstructionData,
        ));
    };
    let terms = Terms {
        nonce,
        steps,
        settings: Settings {
            temperature,
            top_p,
            seed,
        },
        source: seed_source,
        window,
        priority_price,
        bond,
    };
    error_code(open_claim(program_id, accounts, &terms, prompt))
}

struct Terms {
    nonce: u32,
    steps: u32,
    settings: Settings,
    source: SeedSource,
    window: u32,
    priority_price: u64,
    bond: u64,
}

#[inline(always)]
fn open_claim(
    program_id: &Pubkey,
    accounts: &[AccountInfo],
    t: &Terms,
    prompt: Prompt,
) -> ProgramResult {
    let [claim_info, claimer, model_info] = accounts else {
        return Err(CurtaError::WrongAccountCount.into());
    };
    writable(claim_info)?;
    signer(claimer)?;
    let (config, _) = sealed_model(model_info, program_id)?;
    let seed = claim_seed_bytes(model_info.key(), t.nonce);
    let expected = pubkey::create_with_seed(claimer.key(), &seed, program_id)?;
    if !same_address(claim_info.key(), &expected) {
        return Err(CurtaError::ClaimAddressMismatch.into());
    }
    let prompt_len = 1
        + 4
        + match prompt {
            Prompt::Text(text) => text.len(),
            Prompt::Tokens(ids) => 4 * ids.len(),
        };
    let mut data = owned_data(claim_info, program_id)?;
    if data.len() != claim_len(prompt_len) {
        return Err(CurtaError::ClaimSizeMismatch.into());
    }
    if !all_zero(&data[..CLAIM_HEADER_LEN]) {
        return Err(CurtaError::AlreadyInitialized.into());
    }
    if !(MIN_WINDOW..=MAX_WINDOW).contains(&t.window) {
        return Err(CurtaError::InvalidWindow.into());
    }
    dispute_can_run(&config, t, prompt)?;
    if t.priority_price > MAX_PRIORITY_PRICE {
        return Err(CurtaError::InvalidPriorityPrice.into());
    }
    let least = least_bond(
        &config,
        &prompt,
        t.steps,
        t.settings.temperature,
        t.priority_price,
    );
    let rent = minimum_balance(data.len())?;
    if t.bond < least || claim_info.lamports() < rent.saturating_add(t.bond) {
        pinocchio::log::sol_log_64(least, t.bond, rent, claim_info.lamports(), 0);
        return Err(CurtaError::BondTooLow.into());
    }

    let open_slot = current_slot()?;
    write_claim(
        &mut data,
        t,
        model_info.key(),
        claimer.key(),
        open_slot,
        prompt,
    );
    Ok(())
}

/// The run a dispute would start is one StartRun starts (`InvalidRun`, the reason logged): the
/// settings, the ids, the context (a text counted as its bytes + 2, so that its encoding
/// always fits) and a text's encoding within the state buffer (`PromptTooLongToEncode`).
#[inline(always)]
fn dispute_can_run(config: &curta_core::Config, t: &Terms, prompt: Prompt) -> ProgramResult {
    if (t.settings.temperature == 0) != (t.source == SeedSource::None) {
        pinocchio::log::sol_log("claim: seed source 0 is for greedy claims (temperature 0) only");
        return Err(CurtaError::InvalidRun.into());
    }
    engine_settings(t.settings, t.source)
        .validate()
        .map_err(log_run_error)?;
    // A text the dispute run's state buffer cannot hold the encoding of (StartRun's
    // `PromptTooLongToEncode`) would make the claim one no dispute could check.
    if let Prompt::Text(text) = prompt {
        let state_len = curta_core::infer::state_len(config);
        if curta_core::infer::encode_scratch_len(text.len()) > state_len {
            return Err(CurtaError::PromptTooLongToEncode.into());
        }
    }
    if let Prompt::Tokens(ids) = prompt {
        if ids.is_empty() || ids.iter().any(|id| id >= config.vocab_size) {
            pinocchio::log::sol_log(
                "claim: prompt ids must be 1 or more, each below the vocabulary",
            );
            return Err(CurtaError::InvalidRun.into());
        }
    }
    let positions = prompt_tokens_bound(&prompt) as u64 + t.steps as u64;
    if t.steps == 0 || positions - 1 > config.context_length as u64 {
        pinocchio::log::sol_log(
            "claim: the prompt (a text: its bytes + 2) and the steps run past the context",
        );
        return Err(CurtaError::InvalidRun.into());
    }
    Ok(())
}

/// Writes the open claim's header and its prompt's wire bytes.
#[inline(always)]
fn write_claim(
    data: &mut [u8],
    t: &Terms,
    model: &Pubkey,
    claimer: &Pubkey,
    open_slot: u64,
    prompt: Prompt,
) {
    let (kind, count) = match prompt {
        Prompt::Text(text) => (0u8, text.len()),
        Prompt::Tokens(ids) => (1u8, ids.len()),
    };
    data[f::MAGIC..f::MAGIC + 8].copy_from_slice(&CLAIM_MAGIC);
    data[f::VERSION] = CLAIM_VERSION;
    data[f::STATE] = ClaimState::Open as u8;
    data[f::SEED_SOURCE] = t.source as u8;
    put_u32(data, f::NONCE, t.nonce);
    put_bytes(data, f::MODEL, model);
    put_bytes(data, f::CLAIMER, claimer);
    put_u32(data, f::STEPS, t.steps);
    put_u32(data, f::TEMPERATURE, t.settings.temperature);
    put_u32(data, f::TOP_P, t.settings.top_p);
    put_u32(data, f::WINDOW, t.window);
    put_u64(data, f::CLAIMER_SEED, t.settings.seed);
    put_u64(data, f::OPEN_SLOT, open_slot);
    if t.source == SeedSource::Chosen {
        put_u64(data, f::SEED, t.settings.seed);
    }
    put_u64(data, f::BOND, t.bond);
    put_u64(data, f::PRIORITY_PRICE, t.priority_price);
    put_u32(data, f::PROMPT_LEN, (data.len() - CLAIM_HEADER_LEN) as u32);
    let rest = &mut data[CLAIM_HEADER_LEN..];
    rest[0] = kind;
    rest[1..5].copy_from_slice(&(count as u32).to_le_bytes());
    match prompt {
        Prompt::Text(text) => rest[5..].copy_from_slice(text),
        Prompt::Tokens(ids) => {
            for (i, id) in ids.iter().enumerate() {
                put_u32(rest, 5 + 4 * i, id);
            }
        }
    }
}

/// [`claim_bond`] in a frame of its own, `u64::MAX` above the highest priority price (checked
/// before: `InvalidPriorityPrice`).
#[inline(never)]
fn least_bond(
    config: &curta_core::Config,
    prompt: &Prompt,
    steps: u32,
    temperature: u32,
    price: u64,
) -> u64 {
    claim_bond(config, prompt, steps, temperature, price).unwrap_or(u64::MAX)
}
