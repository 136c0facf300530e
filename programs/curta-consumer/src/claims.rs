//! BindClaim and RecordClaim: a question answered by a settled Curta claim instead of a run
//! (docs/program.md, "Trusting a claim"). The claim is bound in its open slot, before its seed
//! can be drawn, and pinned (open slot, token count, claimer seed); its answer is recorded once
//! `trusted_claim` holds and the answer carried in the instruction hashes to the claim's.

use curta_interface::claim::ClaimState;
use curta_interface::instruction::{Prompt, U32s};
use curta_interface::run::SeedSource;
use curta_interface::trust::{read_claim, trusted_claim, ClaimRule, Distrust, SeedRule};
use pinocchio::account_info::AccountInfo;
use pinocchio::program_error::ProgramError;
use pinocchio::pubkey::Pubkey;
use pinocchio::sysvars::{clock::Clock, Sysvar};
use pinocchio::ProgramResult;

use crate::error::ConsumerError;
use crate::processor::{model_of, question, CURTA};
use crate::state::{
    field, put, u32_at, u64_at, QuestionState, BOUND_CLAIM, MAX_ANSWER, MIN_CLAIM_WINDOW,
};

/// The question's model, prompt (ids), settings, a drawn seed and the consumer's window.
#[inline(always)]
fn claim_rule<'q>(q: &'q [u8], model: &'q [u8; 32]) -> ClaimRule<'q> {
    let n = (u32_at(q, field::PROMPT_LEN) as usize).min(crate::state::MAX_PROMPT);
    ClaimRule {
        model,
        prompt: Some(Prompt::Tokens(U32s::Wire(
            &q[field::PROMPT..field::PROMPT + 4 * n],
        ))),
        settings: Some((u32_at(q, field::TEMPERATURE), u32_at(q, field::TOP_P))),
        seed: SeedRule::Drawn,
        min_window: MIN_CLAIM_WINDOW,
    }
}

/// BindClaim: in the claim's open slot (its hash, hence its seed, does not exist yet), a claim
/// of the question's model, prompt and settings with a drawn seed; records its address and
/// pin.
#[inline(always)]
pub fn bind_claim(program_id: &Pubkey, accounts: &[AccountInfo]) -> ProgramResult {
    let [question_info, asker, claim_info] = accounts else {
        return Err(ProgramError::NotEnoughAccountKeys);
    };
    let mut q = question(program_id, question_info, &[QuestionState::Asked])?;
    if !asker.is_signer() || asker.key() != &q[field::ASKER..field::ASKER + 32] {
        return Err(ConsumerError::Unauthorized.into());
    }
    let data = claim_info.try_borrow_data()?;
    let claim = read_claim(&CURTA, claim_info.key(), claim_info.owner(), &data)
        .map_err(ConsumerError::from)?;
    let model = model_of(&q)?;
    let rule = claim_rule(&q, &model);
    if claim.model() != rule.model {
        return Err(ConsumerError::Run(Distrust::WrongModel).into());
    }
    if claim.prompt() != rule.prompt {
        return Err(ConsumerError::Run(Distrust::WrongPrompt).into());
    }
    if Some((claim.temperature(), claim.top_p())) != rule.settings {
        return Err(ConsumerError::Run(Distrust::WrongSettings).into());
    }
    if claim.seed_source() != SeedSource::Drawn {
        return Err(ConsumerError::NotDrawn.into());
    }
    if claim.state() != ClaimState::Open || Clock::get()?.slot != claim.open_slot() {
        return Err(ConsumerError::TooLate.into());
    }
    let (open_slot, steps, seed) = (claim.open_slot(), claim.steps(), claim.claimer_seed());
    put(&mut q, field::RUN, claim_info.key());
    put(&mut q, field::START_SLOT, &open_slot.to_le_bytes());
    put(&mut q, field::STEPS, &steps.to_le_bytes());
    put(&mut q, field::RUNNER_SEED, &seed.to_le_bytes());
    q[field::BOUND_KIND] = BOUND_CLAIM;
    q[field::STATE] = QuestionState::Bound as u8;
    Ok(())
}

/// RecordClaim: the bound claim (`WrongRun`), trusted for the question (settled, not
/// overturned, a window of at least MIN_CLAIM_WINDOW), pinned as bound (`WrongStartSlot`,
/// `WrongSteps`, `WrongRunnerSeed`), and the answer carried here its answer (`WrongAnswer`).
#[inline(always)]
pub fn record_claim(
    program_id: &Pubkey,
    accounts: &[AccountInfo],
    ids: U32s,
    text: &[u8],
) -> ProgramResult {
    let [question_info, claim_info] = accounts else {
        return Err(ProgramError::NotEnoughAccountKeys);
    };
    let mut q = question(program_id, question_info, &[QuestionState::Bound])?;
    if q[field::BOUND_KIND] != BOUND_CLAIM || claim_info.key() != &q[field::RUN..field::RUN + 32] {
        return Err(ConsumerError::WrongRun.into());
    }
    let data = claim_info.try_borrow_data()?;
    let model = model_of(&q)?;
    let slot = Clock::get()?.slot;
    let claim = trusted_claim(
        &CURTA,
        claim_info.key(),
        claim_info.owner(),
        &data,
        &claim_rule(&q, &model),
        slot,
    )
    .map_err(ConsumerError::from)?;
    let pinned = [
        (
            claim.open_slot() == u64_at(&q, field::START_SLOT),
            Distrust::WrongStartSlot,
        ),
        (
            claim.steps() == u32_at(&q, field::STEPS),
            Distrust::WrongSteps,
        ),
        (
            claim.claimer_seed() == u64_at(&q, field::RUNNER_SEED),
            Distrust::WrongRunnerSeed,
        ),
    ];
    if let Some((_, distrust)) = pinned.iter().find(|(same, _)| !same) {
        return Err(ConsumerError::Run(*distrust).into());
    }
    let id_bytes = ids
        .wire_bytes()
        .ok_or(ProgramError::InvalidInstructionData)?;
    if !claim.answer_is(ids.len() as u32, &sha256_of(&[id_bytes, text])) {
        return Err(ConsumerError::Run(Distrust::WrongAnswer).into());
    }
    let count = ids.len().min(MAX_ANSWER);
    for (i, id) in ids.iter().take(count).enumerate() {
        put(&mut q, field::ANSWER + 4 * i, &id.to_le_bytes());
    }
    put(&mut q, field::ANSWER_LEN, &(count as u32).to_le_bytes());
    q[field::STATE] = QuestionState::Answered as u8;
    Ok(())
}

/// Whether the bound claim is trusted now (Release refuses to unbind it then).
#[inline(always)]
pub fn claim_answered(q: &[u8], claim_info: &AccountInfo) -> Result<bool, ProgramError> {
    let data = claim_info.try_borrow_data()?;
    let model = model_of(q)?;
    let rule = claim_rule(q, &model);
    let slot = Clock::get()?.slot;
    Ok(trusted_claim(
        &CURTA,
        claim_info.key(),
        claim_info.owner(),
        &data,
        &rule,
        slot,
    )
    .is_ok())
}

/// SHA-256 of `parts` one after the other: the `sol_sha256` syscall on chain.
fn sha256_of(parts: &[&[u8]]) -> [u8; 32] {
    #[cfg(target_os = "solana")]
    {
        let mut out = [0u8; 32];
        // SAFETY: the syscall reads the (pointer, length) pairs and their bytes, then writes
        // 32 bytes at `out`.
        unsafe {
            pinocchio::syscalls::sol_sha256(
                parts.as_ptr() as *const u8,
                parts.len() as u64,
                out.as_mut_ptr(),
            );
        }
        out
    }
    #[cfg(not(target_os = "solana"))]
    {
        curta_interface::claim::sha256_of(parts)
    }
}
