//! A run's seed (docs/program.md, "The seed"): drawn on chain by the first step after the start
//! slot from the runner's seed, the run's address, the start slot and its hash in SlotHashes;
//! or chosen by the runner, recorded as such; none for a greedy run.
//!
//! The expected seeds are computed here from the documented preimage, byte by byte, with the
//! `sha2` crate (not the program crate's `seed_preimage`).

use crate::harness::{custom, Bank, Published, PROGRAM};
use crate::runs::{
    config_of, offline, read_run, sealed, start_instructions_of, with_limit, OnChain,
};
use curta_core::infer::state::field;
use curta_core::infer::Settings;
use curta_program::error::CurtaError;
use curta_program::instruction::{self as ix, OwnedPrompt};
use curta_program::run::{SeedSource, MAX_STEP_BUDGET};
use sha2::{Digest, Sha256};
use solana_instruction::error::InstructionError;
use solana_instruction::Instruction;
use solana_pubkey::Pubkey;
use solana_sdk::clock::Clock;
use solana_sdk::hash::Hash;
use solana_sdk::signature::Signer;
use solana_sdk::slot_hashes::SlotHashes;
use solana_sdk::transaction::TransactionError;

pub const SAMPLED: Settings = Settings {
    temperature: 52_429,
    top_p: 58_982,
    seed: 7,
};
pub const PROMPT: [u32; 3] = [1, 40, 300];
pub const STEPS: u32 = 8;

/// The documented seed: the first 8 bytes, little-endian, of SHA-256("curta-seed" ‖ runner
/// seed u64 LE ‖ run address ‖ slot u64 LE ‖ slot hash), 1 where they are 0.
fn expected_seed(runner_seed: u64, run: &Pubkey, slot: u64, hash: &[u8; 32]) -> u64 {
    let mut hasher = Sha256::new();
    hasher.update(b"curta-seed");
    hasher.update(runner_seed.to_le_bytes());
    hasher.update(run.to_bytes());
    hasher.update(slot.to_le_bytes());
    hasher.update(hash);
    let digest = hasher.finalize();
    match u64::from_le_bytes(digest[..8].try_into().unwrap()) {
        0 => 1,
        seed => seed,
    }
}

pub async fn slot(bank: &mut Bank) -> u64 {
    bank.ctx
        .banks_client
        .get_sysvar::<Clock>()
        .await
        .unwrap()
        .slot
}

/// Creates the run account and starts a run of `source` (by mallory).
pub async fn start(
    bank: &mut Bank,
    p: &Published,
    artifact: &[u8],
    nonce: u32,
    settings: Settings,
    source: SeedSource,
) -> Result<OnChain, TransactionError> {
    let runner = bank.mallory.insecure_clone();
    let (run, instructions) =
        start_instructions(p, artifact, &runner.pubkey(), nonce, settings, source);
    bank.send(&with_limit(instructions), &[&runner]).await?;
    Ok(OnChain { run, runner })
}

pub fn start_instructions(
    p: &Published,
    artifact: &[u8],
    runner: &Pubkey,
    nonce: u32,
    settings: Settings,
    source: SeedSource,
) -> (Pubkey, Vec<Instruction>) {
    let prompt = OwnedPrompt::Tokens(PROMPT.to_vec());
    let config = config_of(artifact);
    start_instructions_of(p, &config, runner, nonce, STEPS, &settings, source, prompt)
}

pub fn step(p: &Published, run: &Pubkey, ticket: u32) -> Vec<Instruction> {
    with_limit(vec![ix::step(
        &PROGRAM,
        run,
        &p.model,
        &p.weights,
        ticket,
        MAX_STEP_BUDGET,
    )])
}

/// Moves the bank to the next slot as programs see it (Clock one slot on, the slot's entry in
/// SlotHashes: `next_slot_sysvars`; a warp races program-test's blockhash task).
pub async fn next_slot(bank: &mut Bank) {
    let (clock, hashes) = curta_client::send::transport::next_slot_sysvars(&bank.ctx.banks_client)
        .await
        .unwrap();
    bank.ctx.set_sysvar(&hashes);
    bank.ctx.set_sysvar(&clock);
}

fn rng(state: &[u8]) -> u64 {
    curta_core::le::u64_at(state, field::RNG)
}

async fn refused(bank: &mut Bank, run: &Pubkey, instructions: Vec<Instruction>, error: CurtaError) {
    let before = bank.account(run).await;
    assert_eq!(
        bank.send(&instructions, &[]).await.unwrap_err(),
        TransactionError::InstructionError(1, custom(error))
    );
    assert_eq!(bank.account(run).await, before, "the run changed");
}

#[tokio::test]
async fn a_drawn_seed_is_the_hash_of_the_start_slot_and_follows_its_hash() {
    let artifact = curta_tests::stories260k_artifact();
    let mut bank = Bank::start().await;
    let p = sealed(&mut bank, &artifact).await;
    let start_slot = slot(&mut bank).await;
    let a = start(&mut bank, &p, &artifact, 0, SAMPLED, SeedSource::Drawn)
        .await
        .unwrap();
    let b = start(&mut bank, &p, &artifact, 1, SAMPLED, SeedSource::Drawn)
        .await
        .unwrap();

    // Started: the runner's seed and the slot recorded, no seed in force, the generator at 0.
    let header = read_run(&mut bank, &a.run).await;
    assert_eq!(header.seed_source, SeedSource::Drawn);
    assert_eq!(
        (
            header.runner_seed,
            header.start_slot,
            header.seed_slot,
            header.seed
        ),
        (7, start_slot, 0, 0)
    );
    assert_eq!((header.temperature, header.top_p), (52_429, 58_982));
    assert_eq!(header.slot_hash, [0; 32]);
    assert_eq!(rng(&header.state), 0);

    // In the start slot its hash does not exist yet: refused, nothing changed.
    refused(
        &mut bank,
        &a.run,
        step(&p, &a.run, 1),
        CurtaError::SeedNotReady,
    )
    .await;

    // A slot later, SlotHashes holds the start slot's hash: the first step draws the seed.
    next_slot(&mut bank).await;
    let real = bank
        .ctx
        .banks_client
        .get_sysvar::<SlotHashes>()
        .await
        .unwrap();
    let real_hash = real
        .get(&start_slot)
        .expect("the start slot in SlotHashes")
        .to_bytes();
    bank.send(&step(&p, &a.run, 2), &[]).await.unwrap();
    let header = read_run(&mut bank, &a.run).await;
    let seed_a = expected_seed(7, &a.run, start_slot, &real_hash);
    assert_eq!(
        (header.seed_slot, header.seed, header.slot_hash),
        (start_slot, seed_a, real_hash)
    );
    assert_eq!(header.steps_landed, 1);

    // The same runner seed and slot with another slot hash (what a runner would have to
    // choose) gives another seed: run b draws after SlotHashes is made to say so.
    let forged = [0x5a; 32];
    bank.ctx.set_sysvar(&SlotHashes::new(&[(
        start_slot,
        Hash::new_from_array(forged),
    )]));
    bank.send(&step(&p, &b.run, 3), &[]).await.unwrap();
    let header_b = read_run(&mut bank, &b.run).await;
    let seed_b = expected_seed(7, &b.run, start_slot, &forged);
    assert_eq!((header_b.seed, header_b.slot_hash), (seed_b, forged));
    assert_ne!(seed_b, expected_seed(7, &b.run, start_slot, &real_hash));
    assert_ne!(seed_a, seed_b);

    // Run a goes on to its end as curta-core runs it with the drawn seed (steps in another
    // cut than the offline run's are compared by tokens and text).
    let off = offline(
        &artifact,
        &PROMPT,
        STEPS,
        Settings {
            seed: seed_a,
            ..SAMPLED
        },
        MAX_STEP_BUDGET,
    );
    for ticket in 10.. {
        let header = read_run(&mut bank, &a.run).await;
        if curta_core::le::u32_at(&header.state, field::STATUS) != 0 {
            break;
        }
        bank.send(&step(&p, &a.run, ticket), &[]).await.unwrap();
    }
    let header = read_run(&mut bank, &a.run).await;
    assert_eq!(header.state, *off.steps.last().unwrap(), "the final state");
    assert_eq!(header.text, off.text);
    assert_eq!(header.seed, seed_a, "the seed in force stays in the header");

    // Closed and created again at the same address in a later slot, with the same runner
    // seed: another start slot, another seed.
    bank.send(
        &[ix::close_run(&PROGRAM, &a.run, &a.runner.pubkey())],
        &[&a.runner],
    )
    .await
    .unwrap();
    next_slot(&mut bank).await;
    let again_slot = slot(&mut bank).await;
    let again = start(&mut bank, &p, &artifact, 0, SAMPLED, SeedSource::Drawn)
        .await
        .unwrap();
    assert_eq!(again.run, a.run);
    next_slot(&mut bank).await;
    let hashes = bank
        .ctx
        .banks_client
        .get_sysvar::<SlotHashes>()
        .await
        .unwrap();
    let again_hash = hashes.get(&again_slot).unwrap().to_bytes();
    bank.send(&step(&p, &again.run, 4), &[]).await.unwrap();
    let header = read_run(&mut bank, &again.run).await;
    assert_eq!(header.start_slot, again_slot);
    assert_ne!(again_slot, start_slot);
    assert_eq!(
        header.seed,
        expected_seed(7, &a.run, again_slot, &again_hash)
    );
    assert_ne!(header.seed, seed_a);
}

#[tokio::test]
async fn a_seed_whose_slot_left_slot_hashes_expires_and_the_run_still_closes() {
    let artifact = curta_tests::stories260k_artifact();
    let mut bank = Bank::start().await;
    let p = sealed(&mut bank, &artifact).await;
    let start_slot = slot(&mut bank).await;
    let r = start(&mut bank, &p, &artifact, 0, SAMPLED, SeedSource::Drawn)
        .await
        .unwrap();
    next_slot(&mut bank).await;

    // Account 2 must be SlotHashes itself.
    let mut wrong = ix::step(&PROGRAM, &r.run, &p.model, &p.weights, 1, MAX_STEP_BUDGET);
    wrong.accounts[2].pubkey = solana_sdk::sysvar::clock::ID;
    refused(
        &mut bank,
        &r.run,
        with_limit(vec![wrong]),
        CurtaError::NotSlotHashes,
    )
    .await;

    // Every entry newer than the start slot: its hash has left the sysvar (512 slots later).
    let newer: Vec<(u64, Hash)> = (0..512)
        .map(|i| (start_slot + 600 + i, Hash::new_from_array([i as u8; 32])))
        .collect();
    bank.ctx.set_sysvar(&SlotHashes::new(&newer));
    refused(
        &mut bank,
        &r.run,
        step(&p, &r.run, 2),
        CurtaError::SeedExpired,
    )
    .await;

    // The run can still be closed: every lamport back to the runner.
    let before = bank.lamports(&r.runner.pubkey()).await;
    let rent = bank.lamports(&r.run).await;
    bank.send(
        &[ix::close_run(&PROGRAM, &r.run, &r.runner.pubkey())],
        &[&r.runner],
    )
    .await
    .unwrap();
    assert_eq!(bank.lamports(&r.runner.pubkey()).await, before + rent);
}

#[tokio::test]
async fn chosen_and_greedy_runs_say_so_and_the_source_must_fit_the_temperature() {
    let artifact = curta_tests::stories260k_artifact();
    let mut bank = Bank::start().await;
    let p = sealed(&mut bank, &artifact).await;
    let start_slot = slot(&mut bank).await;

    // Chosen: the runner's seed is in force from StartRun, the generator's state with it.
    let chosen = start(&mut bank, &p, &artifact, 0, SAMPLED, SeedSource::Chosen)
        .await
        .unwrap();
    let header = read_run(&mut bank, &chosen.run).await;
    assert_eq!(header.seed_source, SeedSource::Chosen);
    assert_eq!(
        (
            header.runner_seed,
            header.seed,
            header.start_slot,
            header.seed_slot
        ),
        (7, 7, start_slot, 0)
    );
    assert_eq!(rng(&header.state), 7);
    // It steps in its start slot: nothing is drawn.
    bank.send(&step(&p, &chosen.run, 1), &[]).await.unwrap();
    assert_eq!(read_run(&mut bank, &chosen.run).await.seed, 7);

    // Greedy: source none, no seed in force.
    let greedy = Settings {
        temperature: 0,
        ..SAMPLED
    };
    let none = start(&mut bank, &p, &artifact, 1, greedy, SeedSource::None)
        .await
        .unwrap();
    let header = read_run(&mut bank, &none.run).await;
    assert_eq!(header.seed_source, SeedSource::None);
    assert_eq!((header.runner_seed, header.seed), (7, 0));

    // A sampled run with source none, a greedy run with a drawn or chosen seed: InvalidRun.
    for (nonce, settings, source) in [
        (2, SAMPLED, SeedSource::None),
        (3, greedy, SeedSource::Drawn),
        (4, greedy, SeedSource::Chosen),
    ] {
        let result = start(&mut bank, &p, &artifact, nonce, settings, source).await;
        assert_eq!(
            result.err(),
            Some(TransactionError::InstructionError(
                2,
                custom(CurtaError::InvalidRun)
            )),
            "{source:?} at temperature {}",
            settings.temperature
        );
    }

    // A source byte other than 0 to 2: InvalidInstructionData.
    let runner = bank.mallory.insecure_clone();
    let (_, mut instructions) = start_instructions(
        &p,
        &artifact,
        &runner.pubkey(),
        5,
        SAMPLED,
        SeedSource::Drawn,
    );
    instructions[1].data[25] = 3;
    assert_eq!(
        bank.send(&with_limit(instructions), &[&runner])
            .await
            .unwrap_err(),
        TransactionError::InstructionError(2, InstructionError::InvalidInstructionData)
    );
}

/// What drawing costs a step: the same one-item step (budget 1: the embedding of the first
/// prompt token) of a chosen run and of a drawn run, a slot after both started; the difference
/// is the draw (SlotHashes lookup, SHA-256 of 90 bytes, the header written).
#[tokio::test]
async fn the_draw_costs_a_step_a_few_hundred_units() {
    let artifact = curta_tests::stories260k_artifact();
    let mut bank = Bank::start().await;
    let p = sealed(&mut bank, &artifact).await;
    let chosen = start(&mut bank, &p, &artifact, 0, SAMPLED, SeedSource::Chosen)
        .await
        .unwrap();
    let drawn = start(&mut bank, &p, &artifact, 1, SAMPLED, SeedSource::Drawn)
        .await
        .unwrap();
    next_slot(&mut bank).await;
    let one_item =
        |run: &Pubkey| with_limit(vec![ix::step(&PROGRAM, run, &p.model, &p.weights, 1, 1)]);
    let (result, _, plain) = bank.send_metered(&one_item(&chosen.run), &[]).await;
    result.unwrap();
    let (result, _, drawing) = bank.send_metered(&one_item(&drawn.run), &[]).await;
    result.unwrap();
    assert_ne!(read_run(&mut bank, &drawn.run).await.seed, 0);
    let draw = drawing - plain;
    println!("one-item step: {plain} units; with the draw: {drawing} ({draw} for the draw)");
    assert!(draw < 1_500, "the draw: {draw} units");
}
