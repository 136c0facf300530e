//! The example consumer (programs/curta-consumer) in the VM beside the Curta program: a
//! question records a run's answer when, and only when, curta-interface's `trusted_run` holds
//! for the question's model, prompt and settings, a seed drawn from the chain, and the run bound
//! to the question in the slot it started in. Every attack a consumer faces is refused with its
//! code and leaves the question as it was.

use crate::fixtures::rent_of;
use crate::harness::{Bank, Published, PROGRAM};
use crate::runs::{
    config_of, gqa_artifact, offline, read_run, sealed, start_instructions_of, with_limit,
};
use crate::seed::{next_slot, step, PROMPT, SAMPLED, STEPS};
use curta_consumer::instruction as cix;
use curta_consumer::state::{field, MAX_EXPIRY, MIN_EXPIRY, QUESTION_LEN};
use curta_core::infer::state::field as state_field;
use curta_core::infer::Settings;
use curta_program::instruction::{self as ix, OwnedPrompt};
use curta_program::run::{SeedSource, MAX_STEP_BUDGET};
use solana_instruction::error::InstructionError;
use solana_instruction::Instruction;
use solana_pubkey::Pubkey;
use solana_sdk::account::Account;
use solana_sdk::clock::Clock;
use solana_sdk::signature::{Keypair, Signer};
use solana_sdk::transaction::TransactionError;
use solana_system_interface::instruction as system_instruction;

pub const CONSUMER: Pubkey = Pubkey::new_from_array(curta_consumer::ID);
/// The questions' expiry: the least a question may ask.
const EXPIRY: u32 = MIN_EXPIRY;

/// A bank with the Curta program and the consumer (target/deploy/curta_consumer.so, built by
/// scripts/build-sbf).
pub async fn bank() -> Bank {
    let path =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../target/deploy/curta_consumer.so");
    let so = curta_client::send::transport::ProgramSo::find_in(&[path]).unwrap_or_else(|e| {
        panic!("{e} (scripts/build-sbf builds the consumer beside the program)")
    });
    Bank::start_with(|test| so.add_to(test, CONSUMER)).await
}

/// The consumer's code for an error: its own below 16, a distrusted run's from 16.
pub fn code(c: u32) -> InstructionError {
    InstructionError::Custom(c)
}

/// Asks a question of `model` with the run's prompt and settings; returns its account.
pub async fn ask(bank: &mut Bank, model: &Pubkey, settings: Settings) -> Keypair {
    let question = Keypair::new();
    let asker = bank.mallory.insecure_clone();
    let create = system_instruction::create_account(
        &asker.pubkey(),
        &question.pubkey(),
        rent_of(QUESTION_LEN),
        QUESTION_LEN as u64,
        &CONSUMER,
    );
    let ask = cix::ask(
        &CONSUMER,
        &question.pubkey(),
        &asker.pubkey(),
        model,
        settings.temperature,
        settings.top_p,
        EXPIRY,
        &PROMPT,
    );
    bank.send(&[create, ask], &[&asker, &question])
        .await
        .unwrap();
    question
}

/// Starts a run of `p` by mallory (nonce, settings, source) in the current slot.
async fn start(
    bank: &mut Bank,
    p: &Published,
    artifact: &[u8],
    nonce: u32,
    settings: Settings,
    source: SeedSource,
) -> Pubkey {
    let started = crate::seed::start(bank, p, artifact, nonce, settings, source);
    started.await.unwrap().run
}

fn bind(asker: &Pubkey, question: &Keypair, run: &Pubkey) -> Instruction {
    cix::bind(&CONSUMER, &question.pubkey(), asker, run)
}

/// Steps a run to its end (a slot after its start, so that its seed is drawn).
async fn finish(bank: &mut Bank, p: &Published, run: &Pubkey) {
    next_slot(bank).await;
    for ticket in 0.. {
        let header = read_run(bank, run).await;
        if curta_core::le::u32_at(&header.state, state_field::STATUS) != 0 {
            return;
        }
        bank.send(&step(p, run, ticket), &[]).await.unwrap();
    }
}

/// Sends `instructions` (signed by mallory where asked) and expects the consumer's `error` at
/// instruction `index`, the question unchanged.
pub async fn refused(
    bank: &mut Bank,
    question: &Pubkey,
    instructions: &[Instruction],
    index: u8,
    error: InstructionError,
) {
    let before = bank.account(question).await;
    let mallory = bank.mallory.insecure_clone();
    let signers: Vec<&Keypair> = match instructions.iter().any(|i| {
        i.accounts
            .iter()
            .any(|a| a.is_signer && a.pubkey == mallory.pubkey())
    }) {
        true => vec![&mallory],
        false => vec![],
    };
    assert_eq!(
        bank.send(instructions, &signers).await.unwrap_err(),
        TransactionError::InstructionError(index, error)
    );
    assert_eq!(bank.account(question).await, before, "the question changed");
}

pub fn state(q: &Account) -> u8 {
    q.data[field::STATE]
}

#[tokio::test]
async fn the_consumer_records_a_trusted_run_and_refuses_every_attack() {
    let artifact = curta_tests::stories260k_artifact();
    let mut bank = bank().await;
    let p = sealed(&mut bank, &artifact).await;
    let other = sealed(&mut bank, &gqa_artifact()).await;
    let m = bank.mallory.pubkey();

    // Asked: the question holds its model, settings and prompt.
    let q = ask(&mut bank, &p.model, SAMPLED).await;
    let account = bank.account(&q.pubkey()).await.unwrap();
    assert_eq!(state(&account), 1);
    assert_eq!(
        &account.data[field::MODEL..field::MODEL + 32],
        p.model.as_ref()
    );

    // A run of another model, a runner-chosen seed, a greedy run: not bindable.
    let wrong_model = start(
        &mut bank,
        &other,
        &gqa_artifact(),
        0,
        SAMPLED,
        SeedSource::Drawn,
    )
    .await;
    refused(
        &mut bank,
        &q.pubkey(),
        &[bind(&m, &q, &wrong_model)],
        0,
        code(16 + 3),
    )
    .await;
    let chosen = start(&mut bank, &p, &artifact, 1, SAMPLED, SeedSource::Chosen).await;
    refused(&mut bank, &q.pubkey(), &[bind(&m, &q, &chosen)], 0, code(7)).await;
    // Other settings than the question's.
    let hotter = Settings {
        temperature: 65_536,
        ..SAMPLED
    };
    let other_settings = start(&mut bank, &p, &artifact, 2, hotter, SeedSource::Drawn).await;
    refused(
        &mut bank,
        &q.pubkey(),
        &[bind(&m, &q, &other_settings)],
        0,
        code(16 + 6),
    )
    .await;

    // A fake run: a genuine run's bytes in an account another program owns.
    let genuine = start(&mut bank, &p, &artifact, 3, SAMPLED, SeedSource::Drawn).await;
    let mut fake = bank.account(&genuine).await.unwrap();
    fake.owner = Pubkey::new_unique();
    let fake_address = Pubkey::new_unique();
    bank.plant(&fake_address, fake);
    refused(
        &mut bank,
        &q.pubkey(),
        &[bind(&m, &q, &fake_address)],
        0,
        code(16),
    )
    .await;

    // The genuine run, bound in its start slot; a stranger cannot bind (not the asker).
    let stranger = Keypair::new();
    let by_stranger = cix::bind(&CONSUMER, &q.pubkey(), &stranger.pubkey(), &genuine);
    let before = bank.account(&q.pubkey()).await;
    assert_eq!(
        bank.send(&[by_stranger], &[&stranger]).await.unwrap_err(),
        TransactionError::InstructionError(0, code(4))
    );
    assert_eq!(bank.account(&q.pubkey()).await, before);
    let mallory = bank.mallory.insecure_clone();
    bank.send(&[bind(&m, &q, &genuine)], &[&mallory])
        .await
        .unwrap();
    let account = bank.account(&q.pubkey()).await.unwrap();
    assert_eq!(state(&account), 2);
    assert_eq!(&account.data[field::RUN..field::RUN + 32], genuine.as_ref());

    // Unfinished: refused; a run not bound: refused.
    let record = cix::record(&CONSUMER, &q.pubkey(), &genuine);
    refused(
        &mut bank,
        &q.pubkey(),
        std::slice::from_ref(&record),
        0,
        code(16 + 4),
    )
    .await;
    let unbound = cix::record(&CONSUMER, &q.pubkey(), &chosen);
    refused(&mut bank, &q.pubkey(), &[unbound], 0, code(8)).await;

    // Finished: recorded, the answer is the run's tokens, which curta-core computes with the
    // seed drawn from the start slot's hash.
    finish(&mut bank, &p, &genuine).await;
    let header = read_run(&mut bank, &genuine).await;
    let off = offline(
        &artifact,
        &PROMPT,
        STEPS,
        Settings {
            seed: header.seed,
            ..SAMPLED
        },
        MAX_STEP_BUDGET,
    );
    bank.send(std::slice::from_ref(&record), &[]).await.unwrap();
    let account = bank.account(&q.pubkey()).await.unwrap();
    assert_eq!(state(&account), 3);
    let answer_len = curta_core::le::u32_at(&account.data, field::ANSWER_LEN) as usize;
    let answer: Vec<u32> = (0..answer_len)
        .map(|i| curta_core::le::u32_at(&account.data, field::ANSWER + 4 * i))
        .collect();
    assert_eq!(answer, off.tokens);
    // Recorded once.
    refused(&mut bank, &q.pubkey(), &[record], 0, code(3)).await;
}

#[tokio::test]
async fn a_run_bound_late_or_created_again_at_its_address_is_refused() {
    let artifact = curta_tests::stories260k_artifact();
    let mut bank = bank().await;
    let p = sealed(&mut bank, &artifact).await;
    let mallory = bank.mallory.insecure_clone();
    let m = mallory.pubkey();

    // Bound a slot after the run started: its start slot's hash, hence its seed, is known.
    let q = ask(&mut bank, &p.model, SAMPLED).await;
    let late = start(&mut bank, &p, &artifact, 0, SAMPLED, SeedSource::Drawn).await;
    next_slot(&mut bank).await;
    refused(&mut bank, &q.pubkey(), &[bind(&m, &q, &late)], 0, code(6)).await;

    // Bound in its start slot, then closed by its runner and created again at the same
    // address in a later slot (a seed the runner may have liked better): refused at Record.
    let q = ask(&mut bank, &p.model, SAMPLED).await;
    let run = start(&mut bank, &p, &artifact, 1, SAMPLED, SeedSource::Drawn).await;
    bank.send(&[bind(&m, &q, &run)], &[&mallory]).await.unwrap();
    let bound_slot = read_run(&mut bank, &run).await.start_slot;
    bank.send(
        &[ix::close_run(&PROGRAM, &run, &mallory.pubkey())],
        &[&mallory],
    )
    .await
    .unwrap();
    next_slot(&mut bank).await;
    let again = start(&mut bank, &p, &artifact, 1, SAMPLED, SeedSource::Drawn).await;
    assert_eq!(again, run);
    finish(&mut bank, &p, &again).await;
    assert_ne!(read_run(&mut bank, &again).await.start_slot, bound_slot);
    let record = cix::record(&CONSUMER, &q.pubkey(), &again);
    refused(&mut bank, &q.pubkey(), &[record], 0, code(16 + 9)).await;

    // A question needs a sampled run: temperature 0 is refused at Ask.
    let question = Keypair::new();
    let create = system_instruction::create_account(
        &mallory.pubkey(),
        &question.pubkey(),
        rent_of(QUESTION_LEN),
        QUESTION_LEN as u64,
        &CONSUMER,
    );
    let greedy = cix::ask(
        &CONSUMER,
        &question.pubkey(),
        &mallory.pubkey(),
        &p.model,
        0,
        65_536,
        EXPIRY,
        &PROMPT,
    );
    assert_eq!(
        bank.send(&[create, greedy], &[&mallory, &question])
            .await
            .unwrap_err(),
        TransactionError::InstructionError(1, code(5))
    );
}

/// Starts a run of `p` by mallory of `steps` tokens (the question's prompt, a drawn seed).
async fn start_steps(
    bank: &mut Bank,
    p: &Published,
    artifact: &[u8],
    nonce: u32,
    steps: u32,
    settings: Settings,
) -> Pubkey {
    let runner = bank.mallory.insecure_clone();
    let (run, instructions) = start_instructions_of(
        p,
        &config_of(artifact),
        &runner.pubkey(),
        nonce,
        steps,
        &settings,
        SeedSource::Drawn,
        OwnedPrompt::Tokens(PROMPT.to_vec()),
    );
    bank.send(&with_limit(instructions), &[&runner])
        .await
        .unwrap();
    run
}

/// Binds a question to an 8-step run, closes the run and starts it again at the same address
/// *in the same slot* (so the start slot pinned at Bind is the same) as `again` describes;
/// returns the question and the re-created run, finished.
async fn replaced_in_its_start_slot(
    bank: &mut Bank,
    p: &Published,
    artifact: &[u8],
    nonce: u32,
    steps: u32,
    settings: Settings,
) -> (Keypair, Pubkey) {
    let mallory = bank.mallory.insecure_clone();
    let q = ask(bank, &p.model, SAMPLED).await;
    let run = start_steps(bank, p, artifact, nonce, STEPS, SAMPLED).await;
    bank.send(&[bind(&mallory.pubkey(), &q, &run)], &[&mallory])
        .await
        .unwrap();
    let bound = read_run(bank, &run).await;
    bank.send(
        &[ix::close_run(&PROGRAM, &run, &mallory.pubkey())],
        &[&mallory],
    )
    .await
    .unwrap();
    let again = start_steps(bank, p, artifact, nonce, steps, settings).await;
    assert_eq!(again, run);
    let header = read_run(bank, &again).await;
    assert_eq!(header.start_slot, bound.start_slot, "not the same slot");
    assert_eq!(
        (header.steps, header.runner_seed),
        (steps, settings.seed),
        "the run was not replaced"
    );
    finish(bank, p, &again).await;
    (q, again)
}

#[tokio::test]
async fn a_run_replaced_in_its_start_slot_with_fewer_steps_is_refused() {
    let artifact = curta_tests::stories260k_artifact();
    let mut bank = bank().await;
    let p = sealed(&mut bank, &artifact).await;

    // The bound 8-step run replaced by a 1-step one in the same slot: same model, prompt,
    // settings, drawn seed and start slot, hence the same seed, but an answer cut to a token.
    let (q, run) = replaced_in_its_start_slot(&mut bank, &p, &artifact, 0, 1, SAMPLED).await;
    let record = cix::record(&CONSUMER, &q.pubkey(), &run);
    refused(&mut bank, &q.pubkey(), &[record], 0, code(16 + 11)).await;
}

#[tokio::test]
async fn a_run_replaced_in_its_start_slot_with_another_runner_seed_is_refused() {
    let artifact = curta_tests::stories260k_artifact();
    let mut bank = bank().await;
    let p = sealed(&mut bank, &artifact).await;

    // Replaced by a run of the same steps and another runner seed: another drawn seed.
    let other_seed = Settings { seed: 8, ..SAMPLED };
    let (q, run) = replaced_in_its_start_slot(&mut bank, &p, &artifact, 0, STEPS, other_seed).await;
    let record = cix::record(&CONSUMER, &q.pubkey(), &run);
    refused(&mut bank, &q.pubkey(), &[record], 0, code(16 + 12)).await;
}

/// Sets the Clock sysvar's slot to `slot` (Release reads Clock alone; StartRun and Bind read
/// the same Clock, and `next_slot` adds the slot's hash to SlotHashes for the draw).
pub async fn warp_to(bank: &mut Bank, slot: u64) {
    let mut clock: Clock = bank.ctx.banks_client.get_sysvar().await.unwrap();
    clock.slot = slot;
    bank.ctx.set_sysvar(&clock);
}

/// The question's (state, run, start slot, steps, runner seed, releases).
fn binding(q: &Account) -> (u8, Pubkey, u64, u32, u64, u32) {
    let d = &q.data;
    let run = Pubkey::try_from(&d[field::RUN..field::RUN + 32]).unwrap();
    (
        d[field::STATE],
        run,
        curta_core::le::u64_at(d, field::START_SLOT),
        curta_core::le::u32_at(d, field::STEPS),
        curta_core::le::u64_at(d, field::RUNNER_SEED),
        curta_core::le::u32_at(d, field::RELEASES),
    )
}

#[tokio::test]
async fn an_abandoned_question_is_released_after_its_expiry_rebound_and_closed() {
    let artifact = curta_tests::stories260k_artifact();
    let mut bank = bank().await;
    let p = sealed(&mut bank, &artifact).await;
    let mallory = bank.mallory.insecure_clone();
    let m = mallory.pubkey();

    // Bound in its start slot, pinned (start slot, steps, runner seed); then the runner walks
    // away from the run (closes it) and nobody can answer the question.
    let q = ask(&mut bank, &p.model, SAMPLED).await;
    let asked = bank.account(&q.pubkey()).await.unwrap();
    assert_eq!(curta_core::le::u32_at(&asked.data, field::EXPIRY), EXPIRY);
    let run = start(&mut bank, &p, &artifact, 0, SAMPLED, SeedSource::Drawn).await;
    let release = cix::release(&CONSUMER, &q.pubkey(), &run);
    // Not bound yet: nothing to release.
    refused(
        &mut bank,
        &q.pubkey(),
        std::slice::from_ref(&release),
        0,
        code(3),
    )
    .await;
    bank.send(&[bind(&m, &q, &run)], &[&mallory]).await.unwrap();
    let s = read_run(&mut bank, &run).await.start_slot;
    let bound = bank.account(&q.pubkey()).await.unwrap();
    assert_eq!(binding(&bound), (2, run, s, STEPS, SAMPLED.seed, 0));
    bank.send(
        &[ix::close_run(&PROGRAM, &run, &mallory.pubkey())],
        &[&mallory],
    )
    .await
    .unwrap();

    // Released by anyone (no signer but the fee payer), not before the start slot plus the
    // expiry, and only with the bound address.
    warp_to(&mut bank, s + EXPIRY as u64 - 1).await;
    refused(
        &mut bank,
        &q.pubkey(),
        std::slice::from_ref(&release),
        0,
        code(9),
    )
    .await;
    warp_to(&mut bank, s + EXPIRY as u64).await;
    let elsewhere = cix::release(&CONSUMER, &q.pubkey(), &Pubkey::new_unique());
    refused(&mut bank, &q.pubkey(), &[elsewhere], 0, code(8)).await;
    bank.send(std::slice::from_ref(&release), &[])
        .await
        .unwrap();
    let released = bank.account(&q.pubkey()).await.unwrap();
    assert_eq!(binding(&released), (1, Pubkey::default(), 0, 0, 0, 1));
    // Everything but the binding is as asked: the magic, asker, model, settings, expiry,
    // prompt and the (empty) answer.
    let mut expected = asked.data.clone();
    expected[field::RELEASES..field::RELEASES + 4].copy_from_slice(&1u32.to_le_bytes());
    assert_eq!(released.data, expected);
    assert_eq!(released.lamports, asked.lamports);
    // Released once: a second Release finds it asked.
    refused(&mut bank, &q.pubkey(), &[release], 0, code(3)).await;

    // Asked again, it binds to a new run (in that run's start slot) and records its answer.
    let again = start(&mut bank, &p, &artifact, 1, SAMPLED, SeedSource::Drawn).await;
    bank.send(&[bind(&m, &q, &again)], &[&mallory])
        .await
        .unwrap();
    let s2 = read_run(&mut bank, &again).await.start_slot;
    assert_eq!(s2, s + EXPIRY as u64);
    let rebound = bank.account(&q.pubkey()).await.unwrap();
    assert_eq!(binding(&rebound), (2, again, s2, STEPS, SAMPLED.seed, 1));
    finish(&mut bank, &p, &again).await;
    // Its run finished and trusted: after the expiry, Release refuses (Record it instead).
    warp_to(&mut bank, s2 + EXPIRY as u64).await;
    let release_again = cix::release(&CONSUMER, &q.pubkey(), &again);
    refused(&mut bank, &q.pubkey(), &[release_again], 0, code(10)).await;
    let record = cix::record(&CONSUMER, &q.pubkey(), &again);
    bank.send(&[record], &[]).await.unwrap();
    let answered = bank.account(&q.pubkey()).await.unwrap();
    assert_eq!(state(&answered), 3);
    assert!(curta_core::le::u32_at(&answered.data, field::ANSWER_LEN) > 0);

    // Closed by its asker alone: every lamport of the question to the asker (the fee payer
    // pays the fee), the account gone.
    let stranger = Keypair::new();
    let by_stranger = cix::close(&CONSUMER, &q.pubkey(), &stranger.pubkey());
    let before = bank.account(&q.pubkey()).await;
    assert_eq!(
        bank.send(&[by_stranger], &[&stranger]).await.unwrap_err(),
        TransactionError::InstructionError(0, code(4))
    );
    assert_eq!(bank.account(&q.pubkey()).await, before);
    let asker_before = bank.lamports(&m).await;
    let rent = answered.lamports;
    assert_eq!(rent, rent_of(QUESTION_LEN));
    bank.send(&[cix::close(&CONSUMER, &q.pubkey(), &m)], &[&mallory])
        .await
        .unwrap();
    assert_eq!(bank.lamports(&m).await, asker_before + rent);
    assert_eq!(bank.account(&q.pubkey()).await, None);
}

#[tokio::test]
async fn a_bound_question_cannot_be_closed_and_the_expiry_is_bounded() {
    let artifact = curta_tests::stories260k_artifact();
    let mut bank = bank().await;
    let p = sealed(&mut bank, &artifact).await;
    let mallory = bank.mallory.insecure_clone();
    let m = mallory.pubkey();

    // Bound: Close is refused (release it first), before and after its expiry.
    let q = ask(&mut bank, &p.model, SAMPLED).await;
    let run = start(&mut bank, &p, &artifact, 0, SAMPLED, SeedSource::Drawn).await;
    bank.send(&[bind(&m, &q, &run)], &[&mallory]).await.unwrap();
    let close = cix::close(&CONSUMER, &q.pubkey(), &m);
    refused(
        &mut bank,
        &q.pubkey(),
        std::slice::from_ref(&close),
        0,
        code(3),
    )
    .await;
    let s = read_run(&mut bank, &run).await.start_slot;
    warp_to(&mut bank, s + EXPIRY as u64).await;
    refused(
        &mut bank,
        &q.pubkey(),
        std::slice::from_ref(&close),
        0,
        code(3),
    )
    .await;
    // The run never stepped (its start slot left SlotHashes long ago): released, then closed.
    bank.send(&[cix::release(&CONSUMER, &q.pubkey(), &run)], &[])
        .await
        .unwrap();
    // The asker must be writable to receive the lamports.
    let mut readonly = close.clone();
    readonly.accounts[1].is_writable = false;
    refused(&mut bank, &q.pubkey(), &[readonly], 0, code(11)).await;
    let (rent, before) = (bank.lamports(&q.pubkey()).await, bank.lamports(&m).await);
    bank.send(&[close], &[&mallory]).await.unwrap();
    assert_eq!(bank.lamports(&m).await, before + rent);
    assert_eq!(bank.account(&q.pubkey()).await, None);

    // The expiry: MIN_EXPIRY to MAX_EXPIRY slots; the settings: curta-core's ranges (a
    // temperature above 0 and at most 16, a top-p above 0 and at most 1); anything else
    // `InvalidQuestion`.
    let (t, top) = (SAMPLED.temperature, SAMPLED.top_p);
    for (expiry, temperature, top_p, result) in [
        (MIN_EXPIRY - 1, t, top, Err(code(5))),
        (MAX_EXPIRY + 1, t, top, Err(code(5))),
        (0, t, top, Err(code(5))),
        (MIN_EXPIRY, (16 << 16) + 1, top, Err(code(5))),
        (MIN_EXPIRY, t, 0, Err(code(5))),
        (MIN_EXPIRY, t, (1 << 16) + 1, Err(code(5))),
        (MIN_EXPIRY, t, top, Ok(())),
        (MAX_EXPIRY, 16 << 16, 1 << 16, Ok(())),
    ] {
        let question = Keypair::new();
        let create = system_instruction::create_account(
            &m,
            &question.pubkey(),
            rent_of(QUESTION_LEN),
            QUESTION_LEN as u64,
            &CONSUMER,
        );
        let ask = cix::ask(
            &CONSUMER,
            &question.pubkey(),
            &m,
            &p.model,
            temperature,
            top_p,
            expiry,
            &PROMPT,
        );
        let sent = bank.send(&[create, ask], &[&mallory, &question]).await;
        assert_eq!(
            sent.map_err(|e| match e {
                TransactionError::InstructionError(1, e) => e,
                e => panic!("{e:?}"),
            }),
            result,
            "expiry {expiry}, temperature {temperature}, top-p {top_p}"
        );
    }
}
