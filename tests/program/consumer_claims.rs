//! The example consumer answered by a claim (BindClaim, RecordClaim): a settled claim bound in
//! its open slot is recorded with the answer carried in the instruction; an unsettled, a
//! short-window, an overturned claim, a wrong answer, a late bind and a claim's bytes copied
//! into another program's account are refused, the question unchanged.

use crate::claims::{
    challenge_instructions, expected_answer_hash, least_bond, open_instructions, step_to_end,
    terms, true_answer, PROMPT, SAMPLED,
};
use crate::consumer::{ask, bank, code, refused, state, warp_to, CONSUMER};
use crate::harness::{Bank, Published, PROGRAM};
use crate::runs::sealed;
use crate::seed::{next_slot, slot};
use curta_consumer::instruction as cix;
use curta_consumer::state::{field, MIN_CLAIM_WINDOW};
use curta_interface::trust::Distrust;
use curta_program::instruction::{self as ix, OwnedPrompt};
use curta_program::run::SeedSource;
use solana_pubkey::Pubkey;
use solana_sdk::account::Account;
use solana_sdk::signature::{Keypair, Signer};

/// The consumer's code for a distrusted claim.
fn distrust(d: Distrust) -> solana_instruction::error::InstructionError {
    code(16 + d.index())
}

/// Mallory opens a drawn claim of the question's prompt and settings with `window`, in the
/// current slot.
async fn open(bank: &mut Bank, artifact: &[u8], p: &Published, nonce: u32, window: u32) -> Pubkey {
    let claimer = bank.mallory.insecure_clone();
    let prompt = OwnedPrompt::Tokens(PROMPT.to_vec());
    let mut t = terms(nonce, SAMPLED, SeedSource::Drawn, 0);
    t.window = window;
    t.bond = least_bond(artifact, &t, &prompt);
    let (claim, instructions) = open_instructions(p, &claimer.pubkey(), &t, &prompt, t.bond);
    bank.send(&instructions, &[&claimer]).await.unwrap();
    claim
}

/// Answers the claim (a slot later, its seed drawn) with its true answer changed by `wrong`;
/// returns the answer as it is true.
async fn answer(
    bank: &mut Bank,
    artifact: &[u8],
    claim: &Pubkey,
    wrong: impl FnOnce(&mut Vec<u32>),
) -> (Vec<u32>, Vec<u8>) {
    next_slot(bank).await;
    let (ids, text) = true_answer(bank, artifact, claim, &PROMPT).await;
    let mut posted = ids.clone();
    wrong(&mut posted);
    let hash = expected_answer_hash(&posted, &text);
    let claimer = bank.mallory.insecure_clone();
    let answer = ix::answer_claim(&PROGRAM, claim, &claimer.pubkey(), ids.len() as u32, &hash);
    bank.send(&[answer], &[&claimer]).await.unwrap();
    (ids, text)
}

async fn question_of(bank: &mut Bank, p: &Published) -> Keypair {
    ask(bank, &p.model, SAMPLED).await
}

fn bind(bank: &Bank, question: &Keypair, claim: &Pubkey) -> solana_instruction::Instruction {
    cix::bind_claim(&CONSUMER, &question.pubkey(), &bank.mallory.pubkey(), claim)
}

async fn answer_slot(bank: &mut Bank, claim: &Pubkey) -> u64 {
    crate::claims::read_claim(bank, claim).await.answer_slot
}

#[tokio::test]
async fn the_consumer_records_a_settled_claim_and_refuses_the_rest() {
    let artifact = curta_tests::stories260k_artifact();
    let mut bank = bank().await;
    let p = sealed(&mut bank, &artifact).await;
    let question = question_of(&mut bank, &p).await;
    let q = question.pubkey();
    let claim = open(&mut bank, &artifact, &p, 0, MIN_CLAIM_WINDOW).await;

    // A copy of the claim's bytes in another program's account is not a claim.
    let copy = Pubkey::new_unique();
    let mut account: Account = bank.account(&claim).await.unwrap();
    account.owner = Pubkey::new_unique();
    bank.plant(&copy, account);
    let bound = bind(&bank, &question, &copy);
    refused(&mut bank, &q, &[bound], 0, distrust(Distrust::WrongOwner)).await;

    let bound = bind(&bank, &question, &claim);
    bank.send(&[bound], &[&bank.mallory.insecure_clone()])
        .await
        .unwrap();
    let (ids, text) = answer(&mut bank, &artifact, &claim, |_| {}).await;
    let record = |ids: &[u32], text: &[u8]| cix::record_claim(&CONSUMER, &q, &claim, ids, text);
    // Within the window: not settled.
    refused(
        &mut bank,
        &q,
        &[record(&ids, &text)],
        0,
        distrust(Distrust::NotSettled),
    )
    .await;
    let end = answer_slot(&mut bank, &claim).await + MIN_CLAIM_WINDOW as u64;
    warp_to(&mut bank, end + 1).await;
    // The answer carried must be the claim's: one id changed, the text changed.
    let mut other = ids.clone();
    other[1] ^= 1;
    refused(
        &mut bank,
        &q,
        &[record(&other, &text)],
        0,
        distrust(Distrust::WrongAnswer),
    )
    .await;
    refused(
        &mut bank,
        &q,
        &[record(&ids, b"x")],
        0,
        distrust(Distrust::WrongAnswer),
    )
    .await;
    bank.send(&[record(&ids, &text)], &[]).await.unwrap();
    let data = bank.account(&q).await.unwrap();
    assert_eq!(state(&data), 3);
    let recorded: Vec<u32> = (0..ids.len())
        .map(|i| curta_core::le::u32_at(&data.data, field::ANSWER + 4 * i))
        .collect();
    assert_eq!(recorded, ids);
}

#[tokio::test]
async fn a_late_bind_a_short_window_and_an_overturned_claim_are_refused() {
    let artifact = curta_tests::stories260k_artifact();
    let mut bank = bank().await;
    let p = sealed(&mut bank, &artifact).await;
    let mallory = bank.mallory.insecure_clone();

    // Bound a slot after the open slot: its seed may be known.
    let late = question_of(&mut bank, &p).await;
    let claim = open(&mut bank, &artifact, &p, 0, MIN_CLAIM_WINDOW).await;
    next_slot(&mut bank).await;
    let bound = bind(&bank, &late, &claim);
    refused(&mut bank, &late.pubkey(), &[bound], 0, code(6)).await;

    // A window shorter than the consumer's.
    let short = question_of(&mut bank, &p).await;
    let claim = open(&mut bank, &artifact, &p, 1, MIN_CLAIM_WINDOW - 1).await;
    bank.send(&[bind(&bank, &short, &claim)], &[&mallory])
        .await
        .unwrap();
    let (ids, text) = answer(&mut bank, &artifact, &claim, |_| {}).await;
    let now = slot(&mut bank).await;
    warp_to(&mut bank, now + MIN_CLAIM_WINDOW as u64 + 1).await;
    let record = cix::record_claim(&CONSUMER, &short.pubkey(), &claim, &ids, &text);
    refused(
        &mut bank,
        &short.pubkey(),
        &[record],
        0,
        distrust(Distrust::WindowTooShort),
    )
    .await;

    // Overturned: its dispute run disagreed.
    let wrong = question_of(&mut bank, &p).await;
    let claim = open(&mut bank, &artifact, &p, 2, MIN_CLAIM_WINDOW).await;
    bank.send(&[bind(&bank, &wrong, &claim)], &[&mallory])
        .await
        .unwrap();
    let (ids, text) = answer(&mut bank, &artifact, &claim, |ids| ids[0] ^= 1).await;
    let challenger = crate::claims::funded_key(&mut bank).await;
    let (run, challenge) = challenge_instructions(&p, &artifact, &claim, &challenger.pubkey(), 0);
    bank.send(&challenge, &[&challenger]).await.unwrap();
    step_to_end(&mut bank, &p, &run).await;
    let resolve = ix::resolve(
        &PROGRAM,
        &claim,
        &run,
        &mallory.pubkey(),
        &challenger.pubkey(),
    );
    bank.send(&[resolve], &[]).await.unwrap();
    let mut posted = ids.clone();
    posted[0] ^= 1;
    let record = cix::record_claim(&CONSUMER, &wrong.pubkey(), &claim, &posted, &text);
    refused(
        &mut bank,
        &wrong.pubkey(),
        &[record],
        0,
        distrust(Distrust::Overturned),
    )
    .await;
}
