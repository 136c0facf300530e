//! The run refusals the suite lacked (issue 26): StartRun with a run account of another owner,
//! a runner that does not sign, a read-only run account; CloseRun by a runner that does not
//! sign or is read-only. Each is refused with its exact error and changes nothing (the run
//! address, the runner, the model). And a run re-created after CloseRun at the same address
//! (start, close, create again, start again) is a fresh run: its bytes are those of a run
//! started there for the first time, and it runs to the end as curta-core runs it.

use crate::harness::*;
use crate::runs::{config_of, run_and_compare, sealed, start_instructions, with_limit};
use curta_core::infer::{state_len, Model, Run, Settings};
use curta_program::error::CurtaError::*;
use curta_program::instruction::{self as ix, OwnedPrompt};
use curta_program::run::{run_len, RunHeader};
use solana_instruction::error::InstructionError;
use solana_instruction::{AccountMeta, Instruction};
use solana_sdk::account::Account;
use solana_sdk::signature::{Keypair, Signer};

/// `instruction` with account `index` made read-only, or not a signer.
fn with_meta(
    mut instruction: Instruction,
    index: usize,
    signer: bool,
    writable: bool,
) -> Instruction {
    let key = instruction.accounts[index].pubkey;
    instruction.accounts[index] = match writable {
        true => AccountMeta::new(key, signer),
        false => AccountMeta::new_readonly(key, signer),
    };
    instruction
}

/// A runner funded by the authority (the context's payer pays every fee, so the runner's
/// balance moves only by what the instructions move).
async fn runner(bank: &mut Bank) -> Keypair {
    let runner = Keypair::new();
    let a = bank.authority.insecure_clone();
    bank.send(
        &[solana_system_interface::instruction::transfer(
            &a.pubkey(),
            &runner.pubkey(),
            50 * SOL,
        )],
        &[&a],
    )
    .await
    .unwrap();
    runner
}

#[tokio::test]
async fn start_run_refuses_a_foreign_run_account_an_unsigned_runner_and_a_read_only_run() {
    let artifact = curta_tests::stories260k_artifact();
    let config = config_of(&artifact);
    let mut bank = Bank::start().await;
    let p = sealed(&mut bank, &artifact).await;
    let runner = runner(&mut bank).await;
    let settings = Settings::greedy();
    let prompt = || OwnedPrompt::Tokens(vec![1]);

    // A run account of another owner at the run address: the system program's, of the run's
    // size and rent-exempt (planted: no instruction of the runner's makes one at a seed
    // address derived for the program).
    let (run, instructions) =
        start_instructions(&p, &config, &runner.pubkey(), 0, 4, &settings, prompt());
    let len = run_len(&config, 4) as usize;
    bank.plant(
        &run,
        Account {
            lamports: bank.rent.minimum_balance(len),
            data: vec![0; len],
            owner: solana_system_interface::program::ID,
            executable: false,
            rent_epoch: 0,
        },
    );
    let start = instructions[1].clone();
    let watch = [run, runner.pubkey(), p.model, p.weights[0]];
    bank.refused(
        &with_limit(vec![start]),
        &[&runner],
        1,
        custom(WrongOwner),
        &watch,
    )
    .await;

    // The run account created as a client creates it; StartRun with the runner not signing
    // (sent alone, signed by the fee payer only), then with the run account read-only.
    let (run, instructions) =
        start_instructions(&p, &config, &runner.pubkey(), 1, 4, &settings, prompt());
    bank.send(&[instructions[0].clone()], &[&runner])
        .await
        .unwrap();
    let watch = [run, runner.pubkey(), p.model, p.weights[0]];
    let unsigned = with_meta(instructions[1].clone(), 1, false, false);
    bank.refused(
        &with_limit(vec![unsigned]),
        &[],
        1,
        InstructionError::MissingRequiredSignature,
        &watch,
    )
    .await;
    let read_only = with_meta(instructions[1].clone(), 0, false, false);
    bank.refused(
        &with_limit(vec![read_only]),
        &[&runner],
        1,
        custom(NotWritable),
        &watch,
    )
    .await;
    // The run's header is still zero: the same StartRun, as sent by a client, starts it.
    assert!(bank.account(&run).await.unwrap().data[..128]
        .iter()
        .all(|&b| b == 0));
    bank.send(&with_limit(vec![instructions[1].clone()]), &[&runner])
        .await
        .unwrap();
    let header = RunHeader::unpack(&bank.account(&run).await.unwrap().data).unwrap();
    assert_eq!(header.runner, runner.pubkey());
}

#[tokio::test]
async fn close_run_refuses_a_runner_that_does_not_sign_or_is_read_only() {
    let artifact = curta_tests::stories260k_artifact();
    let config = config_of(&artifact);
    let mut bank = Bank::start().await;
    let p = sealed(&mut bank, &artifact).await;
    let runner = runner(&mut bank).await;
    let (run, instructions) = start_instructions(
        &p,
        &config,
        &runner.pubkey(),
        0,
        4,
        &Settings::greedy(),
        OwnedPrompt::Tokens(vec![1]),
    );
    bank.send(&with_limit(instructions), &[&runner])
        .await
        .unwrap();
    let watch = [run, runner.pubkey()];
    let close = ix::close_run(&PROGRAM, &run, &runner.pubkey());
    // Not signing (signed by the fee payer only).
    bank.refused(
        &[with_meta(close.clone(), 1, false, true)],
        &[],
        0,
        InstructionError::MissingRequiredSignature,
        &watch,
    )
    .await;
    // Signing, but read-only: it could not receive the lamports.
    bank.refused(
        &[with_meta(close.clone(), 1, true, false)],
        &[&runner],
        0,
        custom(NotWritable),
        &watch,
    )
    .await;
    // As a client sends it: closed, every lamport to the runner.
    let (before, rent) = (
        bank.lamports(&runner.pubkey()).await,
        bank.lamports(&run).await,
    );
    bank.send(&[close], &[&runner]).await.unwrap();
    assert_eq!(bank.lamports(&runner.pubkey()).await, before + rent);
    assert_eq!(bank.account(&run).await, None);
}

/// Start, close, create again at the same address, start again: the second run is fresh. Its
/// account after StartRun holds exactly what the first run's held after its StartRun with the
/// same prompt (header with no step landed, the started state, no text), and then runs to its end as
/// curta-core runs it (and is closed, every lamport back), twice more at the same address.
#[tokio::test]
async fn a_run_created_again_after_close_run_is_a_fresh_run() {
    let artifact = curta_tests::stories260k_artifact();
    let config = config_of(&artifact);
    let mut bank = Bank::start().await;
    let p = sealed(&mut bank, &artifact).await;
    let runner = bank.mallory.insecure_clone();
    let prompt = vec![1, 306, 470];
    let start = || {
        start_instructions(
            &p,
            &config,
            &runner.pubkey(),
            7,
            6,
            &Settings::greedy(),
            OwnedPrompt::Tokens(prompt.clone()),
        )
    };
    let (run, instructions) = start();
    bank.send(&with_limit(instructions), &[&runner])
        .await
        .unwrap();
    let first = bank.account(&run).await.unwrap();
    // curta-core's started state is the state buffer after the 128-byte header.
    let decoded = curta_core::decode(&artifact).unwrap();
    let model = Model::from_artifact(&decoded).unwrap();
    let mut state = vec![0u8; state_len(&config)];
    Run::start(&mut state, &model, &prompt, 6, Settings::greedy()).unwrap();
    let header = RunHeader::unpack(&first.data).unwrap();
    assert_eq!(
        (header.steps_landed, header.state.clone()),
        (0, state.clone())
    );
    assert!(header.text.is_empty());

    // One step, so that the run's bytes differ from a fresh start's, then CloseRun.
    let step = ix::step(&PROGRAM, &run, &p.model, &p.weights, 0, 300_000);
    bank.send(&with_limit(vec![step]), &[]).await.unwrap();
    assert_ne!(bank.account(&run).await.unwrap().data, first.data);
    bank.send(
        &[ix::close_run(&PROGRAM, &run, &runner.pubkey())],
        &[&runner],
    )
    .await
    .unwrap();
    assert_eq!(bank.account(&run).await, None);

    // Created again at the same address and started with the same prompt: the same bytes as
    // the first start.
    let (again, instructions) = start();
    assert_eq!(again, run);
    bank.send(&with_limit(instructions), &[&runner])
        .await
        .unwrap();
    assert_eq!(bank.account(&run).await.unwrap(), first);
    bank.send(
        &[ix::close_run(&PROGRAM, &run, &runner.pubkey())],
        &[&runner],
    )
    .await
    .unwrap();

    // And at that address runs go to their end as curta-core's, closed each time.
    for prompt in [vec![1, 306, 470], vec![1]] {
        run_and_compare(
            &mut bank,
            &p,
            &artifact,
            OwnedPrompt::Tokens(prompt),
            6,
            Settings::greedy(),
            7,
        )
        .await;
    }
}
