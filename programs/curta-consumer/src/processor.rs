//! Ask, Bind, Record, Release and Close (BindClaim and RecordClaim: `claims`). Every account's owner, size, signer, writability and
//! state is checked before anything is written.

use curta_interface::instruction::U32s;
use curta_interface::run::SeedSource;
use curta_interface::trust::{read_run, trusted_run, Distrust, RunPin, RunRule, SeedRule};
use pinocchio::account_info::{AccountInfo, RefMut};
use pinocchio::program_error::ProgramError;
use pinocchio::pubkey::Pubkey;
use pinocchio::sysvars::{clock::Clock, Sysvar};
use pinocchio::ProgramResult;

use crate::error::ConsumerError;
use crate::instruction::ConsumerInstruction;
use crate::state::{
    field, prompt_ids, put, u32_at, u64_at, QuestionState, BOUND_CLAIM, BOUND_RUN, MAGIC,
    MAX_ANSWER, MAX_EXPIRY, MAX_PROMPT, MAX_TEMPERATURE, MAX_TOP_P, MIN_EXPIRY, QUESTION_LEN,
};

/// The Curta program whose runs are read: the interface's id.
pub(crate) const CURTA: Pubkey = curta_interface::PROGRAM_ID;
/// The system program (all zero), which a closed question is given back to.
const SYSTEM_PROGRAM: Pubkey = [0; 32];

#[inline(always)]
pub fn process_instruction(
    program_id: &Pubkey,
    accounts: &[AccountInfo],
    data: &[u8],
) -> ProgramResult {
    match ConsumerInstruction::parse(data).ok_or(ProgramError::InvalidInstructionData)? {
        ConsumerInstruction::Ask {
            model,
            temperature,
            top_p,
            expiry,
            prompt,
        } => ask(
            program_id,
            accounts,
            model,
            (temperature, top_p, expiry),
            prompt,
        ),
        ConsumerInstruction::Bind => bind(program_id, accounts),
        ConsumerInstruction::Record => record(program_id, accounts),
        ConsumerInstruction::Release => release(program_id, accounts),
        ConsumerInstruction::Close => close(program_id, accounts),
        ConsumerInstruction::BindClaim => crate::claims::bind_claim(program_id, accounts),
        ConsumerInstruction::RecordClaim { ids, text } => {
            crate::claims::record_claim(program_id, accounts, ids, text)
        }
    }
}

/// The question account: this program's (`WrongOwner`), writable (`NotWritable`),
/// QUESTION_LEN bytes (`NotAQuestion`), in one of `states` (`WrongState`; `AlreadyAsked` for
/// Ask), with its magic unless empty (`NotAQuestion`).
#[inline(always)]
pub(crate) fn question<'a>(
    program_id: &Pubkey,
    account: &'a AccountInfo,
    states: &[QuestionState],
) -> Result<RefMut<'a, [u8]>, ProgramError> {
    if account.owner() != program_id {
        return Err(ConsumerError::WrongOwner.into());
    }
    if !account.is_writable() {
        return Err(ConsumerError::NotWritable.into());
    }
    let data = account.try_borrow_mut_data()?;
    if data.len() != QUESTION_LEN {
        return Err(ConsumerError::NotAQuestion.into());
    }
    let now = data[field::STATE];
    if !states.iter().any(|&state| now == state as u8) {
        return Err(match states {
            [QuestionState::Empty] => ConsumerError::AlreadyAsked,
            _ => ConsumerError::WrongState,
        }
        .into());
    }
    if now != QuestionState::Empty as u8 && data[field::MAGIC..field::MAGIC + 8] != MAGIC {
        return Err(ConsumerError::NotAQuestion.into());
    }
    Ok(data)
}

/// Ask: fills a zeroed question with its asker, model, settings, expiry and prompt.
#[inline(always)]
fn ask(
    program_id: &Pubkey,
    accounts: &[AccountInfo],
    model: &[u8; 32],
    (temperature, top_p, expiry): (u32, u32, u32),
    prompt: U32s,
) -> ProgramResult {
    let [question_info, asker] = accounts else {
        return Err(ProgramError::NotEnoughAccountKeys);
    };
    if !asker.is_signer() {
        return Err(ConsumerError::Unauthorized.into());
    }
    let mut q = question(program_id, question_info, &[QuestionState::Empty])?;
    if q.iter().any(|&b| b != 0) {
        return Err(ConsumerError::AlreadyAsked.into());
    }
    let count = prompt.len();
    if count == 0
        || count > MAX_PROMPT
        || !(1..=MAX_TEMPERATURE).contains(&temperature)
        || !(1..=MAX_TOP_P).contains(&top_p)
        || !(MIN_EXPIRY..=MAX_EXPIRY).contains(&expiry)
    {
        return Err(ConsumerError::InvalidQuestion.into());
    }
    put(&mut q, field::MAGIC, &MAGIC);
    q[field::STATE] = QuestionState::Asked as u8;
    put(&mut q, field::PROMPT_LEN, &(count as u32).to_le_bytes());
    put(&mut q, field::ASKER, asker.key());
    put(&mut q, field::MODEL, model);
    put(&mut q, field::TEMPERATURE, &temperature.to_le_bytes());
    put(&mut q, field::TOP_P, &top_p.to_le_bytes());
    put(&mut q, field::EXPIRY, &expiry.to_le_bytes());
    for (i, id) in prompt.iter().enumerate() {
        put(&mut q, field::PROMPT + 4 * i, &id.to_le_bytes());
    }
    Ok(())
}

/// The question's model, prompt, settings and drawn seed as a rule, pinned to `pin`.
#[inline(always)]
fn rule<'q>(
    q: &[u8],
    model: &'q [u8; 32],
    ids: &'q [u32; MAX_PROMPT],
    pin: Option<RunPin>,
) -> RunRule<'q> {
    let n = (u32_at(q, field::PROMPT_LEN) as usize).min(MAX_PROMPT);
    RunRule {
        model,
        prompt: Some(&ids[..n]),
        settings: Some((u32_at(q, field::TEMPERATURE), u32_at(q, field::TOP_P))),
        seed: SeedRule::Drawn,
        pin,
    }
}

/// The pin Bind recorded: the bound run's start slot, token count and runner seed.
#[inline(always)]
fn recorded_pin(q: &[u8]) -> RunPin {
    RunPin {
        start_slot: u64_at(q, field::START_SLOT),
        steps: u32_at(q, field::STEPS),
        runner_seed: u64_at(q, field::RUNNER_SEED),
    }
}

#[inline(always)]
pub(crate) fn model_of(q: &[u8]) -> Result<[u8; 32], ConsumerError> {
    q[field::MODEL..field::MODEL + 32]
        .try_into()
        .map_err(|_| ConsumerError::NotAQuestion)
}

/// Binds the question to a run of its model, prompt and settings whose seed is drawn from
/// the chain, in the run's start slot: the slot's hash, hence the seed, does not exist yet.
/// Records the run's address and its pin (start slot, token count, runner seed).
#[inline(always)]
fn bind(program_id: &Pubkey, accounts: &[AccountInfo]) -> ProgramResult {
    let [question_info, asker, run_info] = accounts else {
        return Err(ProgramError::NotEnoughAccountKeys);
    };
    let mut q = question(program_id, question_info, &[QuestionState::Asked])?;
    if !asker.is_signer() || asker.key() != &q[field::ASKER..field::ASKER + 32] {
        return Err(ConsumerError::Unauthorized.into());
    }
    let data = run_info.try_borrow_data()?;
    let run =
        read_run(&CURTA, run_info.key(), run_info.owner(), &data).map_err(ConsumerError::from)?;
    let model = model_of(&q)?;
    let mut ids = [0u32; MAX_PROMPT];
    let n = prompt_ids(&q, &mut ids);
    // The run's fixed inputs must be the question's; its tokens are not known to anyone yet.
    let rule = rule(&q, &model, &ids, None);
    if run.model() != rule.model {
        return Err(ConsumerError::Run(Distrust::WrongModel).into());
    }
    if run.prompt_len() != n || (0..n).any(|i| run.token(i) != ids[i]) {
        return Err(ConsumerError::Run(Distrust::WrongPrompt).into());
    }
    if Some((run.temperature(), run.top_p())) != rule.settings {
        return Err(ConsumerError::Run(Distrust::WrongSettings).into());
    }
    if run.seed_source() != SeedSource::Drawn {
        return Err(ConsumerError::NotDrawn.into());
    }
    if run.seed() != 0 || Clock::get()?.slot != run.start_slot() {
        return Err(ConsumerError::TooLate.into());
    }
    let pin = RunPin::of(&run);
    put(&mut q, field::RUN, run_info.key());
    put(&mut q, field::START_SLOT, &pin.start_slot.to_le_bytes());
    put(&mut q, field::STEPS, &pin.steps.to_le_bytes());
    put(&mut q, field::RUNNER_SEED, &pin.runner_seed.to_le_bytes());
    q[field::STATE] = QuestionState::Bound as u8;
    Ok(())
}

/// Records the bound run's answer once `trusted_run` holds for the question: the run bound
/// (`WrongRun`), the question's model, prompt and settings, a drawn seed, and the pin recorded
/// at Bind (a run closed and created again at the address has another start slot, or, in the
/// same slot, may have another token count or runner seed).
#[inline(always)]
fn record(program_id: &Pubkey, accounts: &[AccountInfo]) -> ProgramResult {
    let [question_info, run_info] = accounts else {
        return Err(ProgramError::NotEnoughAccountKeys);
    };
    let mut q = question(program_id, question_info, &[QuestionState::Bound])?;
    if q[field::BOUND_KIND] != BOUND_RUN || run_info.key() != &q[field::RUN..field::RUN + 32] {
        return Err(ConsumerError::WrongRun.into());
    }
    let data = run_info.try_borrow_data()?;
    let model = model_of(&q)?;
    let mut ids = [0u32; MAX_PROMPT];
    prompt_ids(&q, &mut ids);
    let rule = rule(&q, &model, &ids, Some(recorded_pin(&q)));
    let run = trusted_run(&CURTA, run_info.key(), run_info.owner(), &data, &rule)
        .map_err(ConsumerError::from)?;
    let count = run.generated_len().min(MAX_ANSWER);
    for i in 0..count {
        put(
            &mut q,
            field::ANSWER + 4 * i,
            &run.generated(i).to_le_bytes(),
        );
    }
    put(&mut q, field::ANSWER_LEN, &(count as u32).to_le_bytes());
    q[field::STATE] = QuestionState::Answered as u8;
    Ok(())
}

/// Releases a bound question (anyone): from the bound run's start slot plus the question's
/// expiry on (`NotExpired`), unless the account at the bound address (`WrongRun`) still holds
/// the bound run finished and trusted (`RunAnswered`: Record it instead). The question is
/// asked again (the run's address and pin zeroed) and counts the release; its asker may bind
/// it to a new run.
#[inline(always)]
fn release(program_id: &Pubkey, accounts: &[AccountInfo]) -> ProgramResult {
    let [question_info, run_info] = accounts else {
        return Err(ProgramError::NotEnoughAccountKeys);
    };
    let mut q = question(program_id, question_info, &[QuestionState::Bound])?;
    if run_info.key() != &q[field::RUN..field::RUN + 32] {
        return Err(ConsumerError::WrongRun.into());
    }
    let expires = u64_at(&q, field::START_SLOT).saturating_add(u32_at(&q, field::EXPIRY) as u64);
    if Clock::get()?.slot < expires {
        return Err(ConsumerError::NotExpired.into());
    }
    let answered = match q[field::BOUND_KIND] {
        BOUND_CLAIM => crate::claims::claim_answered(&q, run_info)?,
        _ => {
            let data = run_info.try_borrow_data()?;
            let model = model_of(&q)?;
            let mut ids = [0u32; MAX_PROMPT];
            prompt_ids(&q, &mut ids);
            let rule = rule(&q, &model, &ids, Some(recorded_pin(&q)));
            trusted_run(&CURTA, run_info.key(), run_info.owner(), &data, &rule).is_ok()
        }
    };
    if answered {
        return Err(ConsumerError::RunAnswered.into());
    }
    q[field::BOUND_KIND] = BOUND_RUN;
    q[field::RUN..field::RUNNER_SEED + 8].fill(0);
    let releases = u32_at(&q, field::RELEASES).saturating_add(1);
    put(&mut q, field::RELEASES, &releases.to_le_bytes());
    q[field::STATE] = QuestionState::Asked as u8;
    Ok(())
}

/// Closes an asked or answered question (a bound one is released first): the asker signs
/// (`Unauthorized`) and receives every lamport (`NotWritable` otherwise); the data is shrunk
/// to nothing and the account given back to the system program.
#[inline(always)]
fn close(program_id: &Pubkey, accounts: &[AccountInfo]) -> ProgramResult {
    let [question_info, asker] = accounts else {
        return Err(ProgramError::NotEnoughAccountKeys);
    };
    {
        let q = question(
            program_id,
            question_info,
            &[QuestionState::Asked, QuestionState::Answered],
        )?;
        if !asker.is_signer() || asker.key() != &q[field::ASKER..field::ASKER + 32] {
            return Err(ConsumerError::Unauthorized.into());
        }
        if !asker.is_writable() {
            return Err(ConsumerError::NotWritable.into());
        }
    }
    let total = asker
        .lamports()
        .checked_add(question_info.lamports())
        .ok_or(ProgramError::ArithmeticOverflow)?;
    *asker.try_borrow_mut_lamports()? = total;
    *question_info.try_borrow_mut_lamports()? = 0;
    question_info.resize(0)?;
    // SAFETY: no reference to the question's owner is alive.
    unsafe { question_info.assign(&SYSTEM_PROGRAM) };
    Ok(())
}
