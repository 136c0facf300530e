//! Every refusal of the claim instructions, each with its exact error, and nothing watched
//! changed by it (the claim, the claimer, the challenger, the dispute run).

use crate::claims::*;
use crate::harness::*;
use crate::runs::config_of;
use crate::seed::next_slot;
use curta_core::infer::Settings;
use curta_interface::cost::MAX_PRIORITY_PRICE;
use curta_interface::trust::{trusted_claim, ClaimRule, Distrust, SeedRule};
use curta_program::claim::{ClaimState, MAX_WINDOW, MIN_WINDOW};
use curta_program::error::CurtaError::*;
use curta_program::instruction::{self as ix, OwnedPrompt};
use curta_program::run::SeedSource;
use solana_sdk::signature::Signer;

fn tokens() -> OwnedPrompt {
    OwnedPrompt::Tokens(PROMPT.to_vec())
}

#[tokio::test]
async fn open_claim_refuses_a_low_bond_a_bad_window_a_price_too_high_and_a_prompt_past_the_context()
{
    let (mut bank, artifact, p, claimer, _) = setup().await;
    let watch = |claim| [claim, claimer.pubkey()];
    let mut t = terms(0, SAMPLED, SeedSource::Drawn, 0);
    let least = least_bond(&artifact, &t, &tokens());
    assert!(least > 0);

    // The declared bond below the rule.
    t.bond = least - 1;
    let (claim, open) = open_instructions(&p, &claimer.pubkey(), &t, &tokens(), least);
    bank.refused(&open, &[&claimer], 1, custom(BondTooLow), &watch(claim))
        .await;
    // The declared bond right, the account holding less than its rent and the bond.
    t.bond = least;
    let (claim, open) = open_instructions(&p, &claimer.pubkey(), &t, &tokens(), least - 1);
    bank.refused(&open, &[&claimer], 1, custom(BondTooLow), &watch(claim))
        .await;

    for window in [MIN_WINDOW - 1, MAX_WINDOW + 1] {
        let t = ix::ClaimTerms { window, ..t };
        let (claim, open) = open_instructions(&p, &claimer.pubkey(), &t, &tokens(), least);
        bank.refused(&open, &[&claimer], 1, custom(InvalidWindow), &watch(claim))
            .await;
    }
    let high = ix::ClaimTerms {
        priority_price: MAX_PRIORITY_PRICE + 1,
        ..t
    };
    let (claim, open) = open_instructions(&p, &claimer.pubkey(), &high, &tokens(), least);
    bank.refused(
        &open,
        &[&claimer],
        1,
        custom(InvalidPriorityPrice),
        &watch(claim),
    )
    .await;

    // The prompt and the steps past the context (ids, and a text by its bytes + 2).
    let context = config_of(&artifact).context_length;
    let long = ix::ClaimTerms {
        steps: context - PROMPT.len() as u32 + 2,
        bond: u64::MAX / 4,
        ..t
    };
    let (claim, open) = open_instructions(&p, &claimer.pubkey(), &long, &tokens(), 0);
    bank.refused(&open, &[&claimer], 1, custom(InvalidRun), &watch(claim))
        .await;
    let text = OwnedPrompt::Text(vec![b'a'; (context - 2) as usize]);
    let short = ix::ClaimTerms { steps: 2, ..long };
    let (claim, open) = open_instructions(&p, &claimer.pubkey(), &short, &text, 0);
    bank.refused(&open, &[&claimer], 1, custom(InvalidRun), &watch(claim))
        .await;
    // An id past the vocabulary; a greedy claim with a seed source.
    let vocab = config_of(&artifact).vocab_size;
    let bad_id = OwnedPrompt::Tokens(vec![1, vocab]);
    let (claim, open) = open_instructions(&p, &claimer.pubkey(), &t, &bad_id, least);
    bank.refused(&open, &[&claimer], 1, custom(InvalidRun), &watch(claim))
        .await;
    let greedy_drawn = ix::ClaimTerms {
        settings: Settings::greedy(),
        ..t
    };
    let (claim, open) = open_instructions(&p, &claimer.pubkey(), &greedy_drawn, &tokens(), least);
    bank.refused(&open, &[&claimer], 1, custom(InvalidRun), &watch(claim))
        .await;

    // The account at another address than the claimer's claim of this model and nonce.
    let (_, mut open) = open_instructions(&p, &claimer.pubkey(), &t, &tokens(), least);
    let other = ix::ClaimTerms { nonce: 9, ..t };
    let (claim, other_open) = open_instructions(&p, &claimer.pubkey(), &other, &tokens(), least);
    open[0] = other_open[0].clone();
    open[1].accounts[0].pubkey = claim;
    bank.refused(
        &open,
        &[&claimer],
        1,
        custom(ClaimAddressMismatch),
        &watch(claim),
    )
    .await;
}

#[tokio::test]
async fn a_claim_of_an_unsealed_model_is_refused() {
    let artifact = curta_tests::stories260k_artifact();
    let mut bank = Bank::start().await;
    let p = crate::fixtures::planted(&mut bank, curta_tests::split_sections(&artifact)).await;
    let claimer = funded_key(&mut bank).await;
    let mut t = terms(0, SAMPLED, SeedSource::Drawn, 0);
    t.bond = least_bond(&artifact, &t, &tokens());
    let (claim, open) = open_instructions(&p, &claimer.pubkey(), &t, &tokens(), t.bond);
    bank.refused(
        &open,
        &[&claimer],
        1,
        custom(ModelNotSealed),
        &[claim, claimer.pubkey()],
    )
    .await;
}

#[tokio::test]
async fn answers_are_refused_before_the_seed_twice_by_another_and_with_a_bad_count() {
    let (mut bank, artifact, p, claimer, challenger) = setup().await;
    let mut t = terms(0, SAMPLED, SeedSource::Drawn, 0);
    t.bond = least_bond(&artifact, &t, &tokens());
    let (claim, open) = open_instructions(&p, &claimer.pubkey(), &t, &tokens(), t.bond);
    bank.send(&open, &[&claimer]).await.unwrap();
    let watch = [claim, claimer.pubkey()];
    let answer = |count| ix::answer_claim(&PROGRAM, &claim, &claimer.pubkey(), count, &[7; 32]);
    // In the open slot its hash does not exist yet.
    bank.refused(&[answer(1)], &[&claimer], 0, custom(SeedNotReady), &watch)
        .await;
    next_slot(&mut bank).await;
    for count in [0, STEPS + 1] {
        bank.refused(
            &[answer(count)],
            &[&claimer],
            0,
            custom(InvalidAnswer),
            &watch,
        )
        .await;
    }
    let by_other = ix::answer_claim(&PROGRAM, &claim, &challenger.pubkey(), 1, &[7; 32]);
    bank.refused(&[by_other], &[&challenger], 0, custom(Unauthorized), &watch)
        .await;
    // A challenge before the answer.
    let (_, challenge) = challenge_instructions(&p, &artifact, &claim, &challenger.pubkey(), 0);
    bank.refused(&challenge, &[&challenger], 2, custom(NotAnswered), &watch)
        .await;
    bank.send(&[answer(STEPS)], &[&claimer]).await.unwrap();
    bank.refused(
        &[answer(STEPS)],
        &[&claimer],
        0,
        custom(AlreadyAnswered),
        &watch,
    )
    .await;
}

#[tokio::test]
async fn challenges_after_the_window_and_resolves_of_another_run_are_refused() {
    let (mut bank, artifact, p, claimer, challenger) = setup().await;
    let (claim, _) = answered(&mut bank, &artifact, &p, &claimer, 0, |ids, _| ids[0] ^= 1).await;
    let (other, _) = answered(&mut bank, &artifact, &p, &claimer, 1, |ids, _| ids[0] ^= 1).await;
    // Resolve of a claim nobody challenged.
    let resolve = |claim, run| {
        ix::resolve(
            &PROGRAM,
            &claim,
            &run,
            &claimer.pubkey(),
            &challenger.pubkey(),
        )
    };
    bank.refused(
        &[resolve(claim, other)],
        &[],
        0,
        custom(NotChallenged),
        &[claim],
    )
    .await;
    let (run, challenge) = challenge_instructions(&p, &artifact, &claim, &challenger.pubkey(), 0);
    bank.send(&challenge, &[&challenger]).await.unwrap();
    let (other_run, challenge) =
        challenge_instructions(&p, &artifact, &other, &challenger.pubkey(), 1);
    bank.send(&challenge, &[&challenger]).await.unwrap();
    step_to_end(&mut bank, &p, &run).await;
    step_to_end(&mut bank, &p, &other_run).await;
    // Another claim's finished dispute run.
    bank.refused(
        &[resolve(claim, other_run)],
        &[],
        0,
        custom(WrongDisputeRun),
        &[claim, other_run],
    )
    .await;
    // The claimer's and the challenger's places swapped.
    let swapped = ix::resolve(
        &PROGRAM,
        &claim,
        &run,
        &challenger.pubkey(),
        &claimer.pubkey(),
    );
    bank.refused(
        &[swapped],
        &[],
        0,
        custom(InvalidDestination),
        &[claim, run],
    )
    .await;
    // Closing a challenged claim.
    let close = ix::close_claim(&PROGRAM, &claim, &claimer.pubkey());
    bank.refused(
        std::slice::from_ref(&close),
        &[&claimer],
        0,
        custom(ClaimNotClosable),
        &[claim],
    )
    .await;
    bank.send(&[resolve(claim, run)], &[]).await.unwrap();
    bank.send(std::slice::from_ref(&close), &[&claimer])
        .await
        .unwrap();
    // Closing twice: the account is the system program's, empty.
    bank.refused(
        &[close],
        &[&claimer],
        0,
        custom(WrongOwner),
        &[claim, claimer.pubkey()],
    )
    .await;

    // A third claim, its window passed: no challenge.
    let (late, _) = answered(&mut bank, &artifact, &p, &claimer, 2, |_, _| {}).await;
    let header = read_claim(&mut bank, &late).await;
    bank.ctx
        .warp_to_slot(header.answer_slot + WINDOW as u64 + 1)
        .unwrap();
    let (_, challenge) = challenge_instructions(&p, &artifact, &late, &challenger.pubkey(), 2);
    bank.refused(
        &challenge,
        &[&challenger],
        2,
        custom(WindowClosed),
        &[late, challenger.pubkey()],
    )
    .await;
}

/// The consumer's rule off chain: a settled claim is trusted; one inside its window, one
/// overturned, one with a shorter window than required, and a copy of a claim's bytes in an
/// account of another owner are not.
#[tokio::test]
async fn trusted_claim_requires_a_settled_claim_of_the_program_at_its_address() {
    let (mut bank, artifact, p, claimer, _) = setup().await;
    let (claim, _) = answered(&mut bank, &artifact, &p, &claimer, 0, |_, _| {}).await;
    let account = bank.account(&claim).await.unwrap();
    let header = read_claim(&mut bank, &claim).await;
    let model = p.model.to_bytes();
    let (prompt, other_prompt) = (tokens(), OwnedPrompt::Tokens(vec![1, 2]));
    let rule = ClaimRule {
        model: &model,
        prompt: Some(prompt.as_wire()),
        settings: Some((SAMPLED.temperature, SAMPLED.top_p)),
        seed: SeedRule::Drawn,
        min_window: WINDOW,
    };
    let check = |owner: &solana_pubkey::Pubkey, slot, rule: &ClaimRule| {
        trusted_claim(
            &PROGRAM.to_bytes(),
            &claim.to_bytes(),
            &owner.to_bytes(),
            &account.data,
            rule,
            slot,
        )
        .map(|_| ())
    };
    let end = header.answer_slot + WINDOW as u64;
    assert_eq!(check(&PROGRAM, end, &rule), Err(Distrust::NotSettled));
    assert_eq!(check(&PROGRAM, end + 1, &rule), Ok(()));
    let foreign = solana_pubkey::Pubkey::new_unique();
    assert_eq!(check(&foreign, end + 1, &rule), Err(Distrust::WrongOwner));
    let longer = ClaimRule {
        min_window: WINDOW + 1,
        ..rule
    };
    assert_eq!(
        check(&PROGRAM, end + 1, &longer),
        Err(Distrust::WindowTooShort)
    );
    let other = ClaimRule {
        prompt: Some(other_prompt.as_wire()),
        ..rule
    };
    assert_eq!(check(&PROGRAM, end + 1, &other), Err(Distrust::WrongPrompt));
    let view = trusted_claim(
        &PROGRAM.to_bytes(),
        &claim.to_bytes(),
        &PROGRAM.to_bytes(),
        &account.data,
        &rule,
        end + 1,
    )
    .unwrap();
    assert!(view.answer_is(header.token_count, &header.answer_hash));
    assert!(!view.answer_is(header.token_count - 1, &header.answer_hash));
    assert_eq!(header.state, ClaimState::Answered);
}
