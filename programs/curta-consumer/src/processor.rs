//! Ask, Bind and Record. Every account's owner, size, signer and state is checked before
//! anything is written.

use curta_interface::run::SeedSource;
use curta_interface::trust::{read_run, trusted_run, RunRule, SeedRule};
use pinocchio::account_info::AccountInfo;
use pinocchio::program_error::ProgramError;
use pinocchio::pubkey::Pubkey;
use pinocchio::sysvars::{clock::Clock, Sysvar};
use pinocchio::ProgramResult;

use crate::error::ConsumerError;
use crate::instruction::ConsumerInstruction;
use crate::state::{
    field, prompt_ids, put, u32_at, u64_at, QuestionState, MAGIC, MAX_ANSWER, MAX_PROMPT,
    QUESTION_LEN,
};

/// The Curta program whose runs are read: the interface's id.
const CURTA: Pubkey = curta_interface::PROGRAM_ID;

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
            prompt,
        } => ask(program_id, accounts, model, temperature, top_p, prompt),
        ConsumerInstruction::Bind => bind(program_id, accounts),
        ConsumerInstruction::Record => record(program_id, accounts),
    }
}

/// The question account: this program's (`WrongOwner`), writable, QUESTION_LEN bytes
/// (`NotAQuestion`), in `state` (`WrongState`; `AlreadyAsked` for Ask).
#[inline(always)]
fn question<'a>(
    program_id: &Pubkey,
    account: &'a AccountInfo,
    state: QuestionState,
) -> Result<pinocchio::account_info::RefMut<'a, [u8]>, ProgramError> {
    if account.owner() != program_id {
        return Err(ConsumerError::WrongOwner.into());
    }
    if !account.is_writable() {
        return Err(ProgramError::InvalidAccountData);
    }
    let data = account.try_borrow_mut_data()?;
    if data.len() != QUESTION_LEN {
        return Err(ConsumerError::NotAQuestion.into());
    }
    let now = data[field::STATE];
    let magic_ok = data[..8] == MAGIC || state == QuestionState::Empty;
    if now != state as u8 || !magic_ok {
        return Err(match state {
            QuestionState::Empty => ConsumerError::AlreadyAsked,
            _ => ConsumerError::WrongState,
        }
        .into());
    }
    Ok(data)
}

#[inline(always)]
fn ask(
    program_id: &Pubkey,
    accounts: &[AccountInfo],
    model: &[u8; 32],
    temperature: u32,
    top_p: u32,
    prompt: &[u8],
) -> ProgramResult {
    let [question_info, asker] = accounts else {
        return Err(ProgramError::NotEnoughAccountKeys);
    };
    if !asker.is_signer() {
        return Err(ConsumerError::Unauthorized.into());
    }
    let mut q = question(program_id, question_info, QuestionState::Empty)?;
    if q.iter().any(|&b| b != 0) {
        return Err(ConsumerError::AlreadyAsked.into());
    }
    let count = prompt.len() / 4;
    if count == 0 || count > MAX_PROMPT || temperature == 0 {
        return Err(ConsumerError::InvalidQuestion.into());
    }
    put(&mut q, field::MAGIC, &MAGIC);
    q[field::STATE] = QuestionState::Asked as u8;
    put(&mut q, field::PROMPT_LEN, &(count as u32).to_le_bytes());
    put(&mut q, field::ASKER, asker.key());
    put(&mut q, field::MODEL, model);
    put(&mut q, field::TEMPERATURE, &temperature.to_le_bytes());
    put(&mut q, field::TOP_P, &top_p.to_le_bytes());
    put(&mut q, field::PROMPT, prompt);
    Ok(())
}

/// Binds the question to a run of its model, prompt and settings whose seed is drawn from
/// the chain, in the run's start slot: the slot's hash, hence the seed, does not exist yet.
#[inline(always)]
fn bind(program_id: &Pubkey, accounts: &[AccountInfo]) -> ProgramResult {
    let [question_info, asker, run_info] = accounts else {
        return Err(ProgramError::NotEnoughAccountKeys);
    };
    let mut q = question(program_id, question_info, QuestionState::Asked)?;
    if !asker.is_signer() || asker.key() != &q[field::ASKER..field::ASKER + 32] {
        return Err(ConsumerError::Unauthorized.into());
    }
    let data = run_info.try_borrow_data()?;
    let run =
        read_run(&CURTA, run_info.key(), run_info.owner(), &data).map_err(ConsumerError::from)?;
    let model: &[u8; 32] = q[field::MODEL..field::MODEL + 32]
        .try_into()
        .map_err(|_| ConsumerError::NotAQuestion)?;
    let mut ids = [0u32; MAX_PROMPT];
    let n = prompt_ids(&q, &mut ids);
    // The run's fixed inputs must be the question's; its tokens are not known to anyone yet.
    let rule = RunRule {
        model,
        prompt: Some(&ids[..n]),
        settings: Some((u32_at(&q, field::TEMPERATURE), u32_at(&q, field::TOP_P))),
        seed: SeedRule::Drawn,
        start_slot: None,
    };
    if run.model() != rule.model {
        return Err(ConsumerError::Run(curta_interface::trust::Distrust::WrongModel).into());
    }
    if run.prompt_len() != n || (0..n).any(|i| run.token(i) != ids[i]) {
        return Err(ConsumerError::Run(curta_interface::trust::Distrust::WrongPrompt).into());
    }
    if Some((run.temperature(), run.top_p())) != rule.settings {
        return Err(ConsumerError::Run(curta_interface::trust::Distrust::WrongSettings).into());
    }
    if run.seed_source() != SeedSource::Drawn {
        return Err(ConsumerError::NotDrawn.into());
    }
    if run.seed() != 0 || Clock::get()?.slot != run.start_slot() {
        return Err(ConsumerError::TooLate.into());
    }
    put(&mut q, field::RUN, run_info.key());
    put(&mut q, field::START_SLOT, &run.start_slot().to_le_bytes());
    q[field::STATE] = QuestionState::Bound as u8;
    Ok(())
}

/// Records the bound run's answer once `trusted_run` holds for the question: the run bound
/// (`WrongRun`), the question's model, prompt and settings, a drawn seed, and the start slot
/// recorded at Bind (a run closed and created again at the address has another).
#[inline(always)]
fn record(program_id: &Pubkey, accounts: &[AccountInfo]) -> ProgramResult {
    let [question_info, run_info] = accounts else {
        return Err(ProgramError::NotEnoughAccountKeys);
    };
    let mut q = question(program_id, question_info, QuestionState::Bound)?;
    if run_info.key() != &q[field::RUN..field::RUN + 32] {
        return Err(ConsumerError::WrongRun.into());
    }
    let data = run_info.try_borrow_data()?;
    let model: [u8; 32] = q[field::MODEL..field::MODEL + 32]
        .try_into()
        .map_err(|_| ConsumerError::NotAQuestion)?;
    let mut ids = [0u32; MAX_PROMPT];
    let n = prompt_ids(&q, &mut ids);
    let rule = RunRule {
        model: &model,
        prompt: Some(&ids[..n]),
        settings: Some((u32_at(&q, field::TEMPERATURE), u32_at(&q, field::TOP_P))),
        seed: SeedRule::Drawn,
        start_slot: Some(u64_at(&q, field::START_SLOT)),
    };
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
