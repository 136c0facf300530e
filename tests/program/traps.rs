//! Models that would trap their runs (issue 26), in the bank running the SBF binary. A section
//! zero the forward pass cannot rely on (an exponential table other than the spec's, a table
//! block at an offset that is not a multiple of 4) is refused at the seal of chunk 0, and nothing
//! changes; a tokenizer entry over 128 bytes or outside section zero, and tables and row scales
//! at their extremes, seal and run to their end on chain with the tokens, the state bytes and
//! the text curta-core gives off chain. And StartRun refuses a run whose Step could never be
//! loaded (`RunTooLarge`), where one at the limit starts and steps.

use crate::fixtures::planted;
use crate::harness::*;
use crate::runs::{offline, run_and_compare, sealed, with_limit};
use curta_core::infer::Settings;
use curta_core::Config;
use curta_program::error::CurtaError::*;
use curta_program::instruction::{self as ix, OwnedPrompt};
use curta_program::run::{run_address, run_len, run_seed, MAX_STEP_BUDGET};
use curta_program::state::{
    self, Model, ModelState, WeightHeader, MAX_MODEL_BYTES, MAX_SECTIONS, MODEL_LEN,
    WEIGHT_HEADER_LEN,
};
use curta_tests::{split_sections, stories260k_artifact, traps};
use solana_pubkey::Pubkey;
use solana_sdk::account::Account;
use solana_sdk::signature::{Keypair, Signer};
use solana_sdk::transaction::TransactionError;
use solana_system_interface::instruction as system_instruction;

/// e^(-i/256) with 30 fractional bits, rounded half away from zero, computed here in f64.
fn spec_exp(i: usize) -> u32 {
    ((-(i as f64) / 256.0).exp() * (1u64 << 30) as f64).round() as u32
}

/// The seal of chunk 0 of each trap is refused with InvalidSectionZero and the reason logged;
/// the model, its weight accounts and the authority are as they were (the model Open, section
/// zero not frozen), so the authority can repair the upload or close it.
#[tokio::test]
async fn a_section_zero_that_would_trap_its_runs_is_refused_at_seal() {
    let artifact = stories260k_artifact();
    let mut bank = Bank::start().await;
    assert_eq!(spec_exp(0), 1 << 30);
    let cases = [
        (
            traps::misaligned_sorted_ids(&artifact),
            "block offset not a multiple of 4",
        ),
        (
            traps::exp_entry(&artifact, 0, 0),
            "exponential table entry differs",
        ),
        (
            traps::exp_entry(&artifact, 1, spec_exp(1) - 1),
            "exponential table entry differs",
        ),
        (
            traps::exp_entry(&artifact, 4096, spec_exp(4096) + 1),
            "exponential table entry differs",
        ),
    ];
    for (trap, reason) in cases {
        let p = planted(&mut bank, split_sections(&trap)).await;
        let mut watch = p.accounts();
        watch.push(p.authority);
        let before = bank.snapshot(&watch).await;
        let start = ix::start_seal(
            &PROGRAM,
            &p.model,
            &p.weights[0],
            &p.authority,
            p.creation,
            0,
        );
        let (result, logs) = bank.send_logged(&[start], &[&p.signer]).await;
        assert_eq!(
            result,
            Err(TransactionError::InstructionError(
                0,
                custom(InvalidSectionZero)
            )),
            "{reason}: {logs:#?}"
        );
        assert!(
            logs.iter().any(|l| l.contains(reason)),
            "{reason}: {logs:?}"
        );
        assert_eq!(bank.snapshot(&watch).await, before, "{reason}");
        let model = bank.model(&p.model).await;
        assert_eq!((model.state, model.seal_cursor), (ModelState::Open, 0));
        assert!(!bank.header(&p.weights[0]).await.frozen);
    }
    // The untouched artifact seals (the refusals are the changes').
    let p = sealed(&mut bank, &artifact).await;
    assert_eq!(bank.model(&p.model).await.state, ModelState::Sealed);
}

/// The greedy run of stories260K from token 1, 20 steps, off chain: its tokens and each
/// token's piece (curta-core's decode after the token before it).
fn pieces(artifact: &[u8], steps: u32) -> (Vec<u32>, Vec<Vec<u8>>) {
    use curta_core::infer::{decode, Model, Progress, Run, Status};
    let a = curta_core::decode(artifact).unwrap();
    let model = Model::from_artifact(&a).unwrap();
    let mut state = vec![0u8; curta_core::infer::state_len(&model.config())];
    let mut run = Run::start(&mut state, &model, &[1], steps, Settings::greedy()).unwrap();
    let (mut tokens, mut pieces) = (vec![], vec![]);
    loop {
        match run.advance(&model, u64::MAX).unwrap() {
            Progress::Token { pos, id } => {
                tokens.push(id);
                let piece = decode(a.metadata(), run.token(pos - 1), id).unwrap();
                pieces.push(piece.bytes().to_vec());
            }
            Progress::Finished(status) => {
                assert_ne!(status, Status::Running);
                break;
            }
            _ => {}
        }
    }
    (tokens, pieces)
}

const SAMPLED: Settings = Settings {
    temperature: 52_429,
    top_p: 58_982,
    seed: 26,
};

/// A token of the greedy run gets a tokenizer entry over 128 bytes, or one whose bytes end
/// past section zero: before, the model sealed and the step producing that token failed
/// forever. Now the model seals, and runs (greedy, sampled, and a text prompt holding the
/// token's text, tokenized on chain) end on chain as curta-core ends them off chain. The
/// greedy run's tokens are the unchanged artifact's, and its text is the unchanged text less
/// that token's pieces (the entry reads as no bytes, docs/format.md D13).
#[tokio::test]
async fn a_token_entry_too_long_or_outside_section_zero_seals_and_its_runs_end() {
    let artifact = stories260k_artifact();
    let (tokens, good) = pieces(&artifact, 20);
    let k = (1..tokens.len())
        .find(|&k| tokens[k] > 258 && !good[k].is_empty())
        .expect("a merged token with text");
    let id = tokens[k];
    let word = String::from_utf8(good[k].clone()).unwrap();
    let mut bank = Bank::start().await;
    for trap in [
        traps::token_too_long(&artifact, id),
        traps::token_outside(&artifact, id),
    ] {
        let p = sealed(&mut bank, &trap).await;
        assert_eq!(bank.model(&p.model).await.state, ModelState::Sealed);

        let off = offline(&trap, &[1], 20, Settings::greedy(), MAX_STEP_BUDGET);
        assert_eq!(off.tokens, tokens, "the tokens do not depend on the entry");
        let expected: Vec<u8> = tokens
            .iter()
            .zip(&good)
            .filter(|(t, _)| **t != id)
            .flat_map(|(_, piece)| piece.clone())
            .collect();
        assert_eq!(off.text, expected);

        let prompts = [
            (OwnedPrompt::Tokens(vec![1]), Settings::greedy()),
            (OwnedPrompt::Tokens(vec![1]), SAMPLED),
            (
                OwnedPrompt::Text(format!("Once{word} upon{word}").into_bytes()),
                Settings::greedy(),
            ),
        ];
        for (nonce, (prompt, settings)) in prompts.into_iter().enumerate() {
            run_and_compare(&mut bank, &p, &trap, prompt, 20, settings, nonce as u32).await;
        }
    }
}

/// Normalization, rotary and SiLU values at the ends of i32 and every other row of the
/// matrices with scale u32::MAX: the seal accepts them (the spec fixes no range for them), and
/// every run ends, on chain as off chain (where curta-core runs with overflow checks on).
#[tokio::test]
async fn tables_and_scales_at_their_extremes_seal_and_their_runs_end() {
    let artifact = traps::wild_tables(&stories260k_artifact());
    let mut bank = Bank::start().await;
    let p = sealed(&mut bank, &artifact).await;
    assert_eq!(bank.model(&p.model).await.state, ModelState::Sealed);
    let cases = [
        (OwnedPrompt::Tokens(vec![1]), Settings::greedy()),
        (OwnedPrompt::Tokens(vec![1, 306, 470]), SAMPLED),
        (
            OwnedPrompt::Text(b"Lily".to_vec()),
            Settings { seed: 3, ..SAMPLED },
        ),
    ];
    for (nonce, (prompt, settings)) in cases.into_iter().enumerate() {
        run_and_compare(&mut bank, &p, &artifact, prompt, 12, settings, nonce as u32).await;
    }
}

/// The shape: dimension 512, hidden 2,048, 14 layers, 8 heads, vocabulary 8,192 (16
/// sections), with the given context.
fn large(context: u32) -> Config {
    Config {
        dim: 512,
        hidden_dim: 2048,
        layers: 14,
        heads: 8,
        kv_heads: 8,
        vocab_size: 8192,
        context_length: context,
    }
}

/// Section lengths of `large`, by hand: section one the embedding (tied), 8,192 rows of 520
/// bytes; each layer four 512-row matrices of 520-byte rows, gate and up 2,048 rows of 520
/// bytes, down 512 rows of 2,056 bytes.
fn large_lengths(zero: u32) -> Vec<u32> {
    let layer = 4 * 512 * 520 + 2 * 2048 * 520 + 512 * 2056;
    assert_eq!(layer, 4_247_552);
    let mut out = vec![zero, 8192 * 520];
    out.extend([layer; 14]);
    out
}

/// Section zero's header for `config` and `lengths` (tag, configuration, section count, the
/// section table, and descriptor 0, the embedding: section 1, 512 columns, 8,192 rows of 520
/// bytes at offset 0), zeros after it: what a step's first item (the embedding) reads.
fn large_zero(config: &Config, lengths: &[u32]) -> Vec<u8> {
    let mut z = vec![0u8; lengths[0] as usize];
    let put = |z: &mut [u8], at: usize, v: u32| z[at..at + 4].copy_from_slice(&v.to_le_bytes());
    z[..8].copy_from_slice(b"CURTAW01");
    for (i, f) in config.fields().into_iter().enumerate() {
        put(&mut z, 8 + 4 * i, f);
    }
    put(&mut z, 36, lengths.len() as u32);
    let mut offset = 0u64;
    for (i, &l) in lengths.iter().enumerate() {
        z[128 + 16 * i..136 + 16 * i].copy_from_slice(&offset.to_le_bytes());
        z[136 + 16 * i..144 + 16 * i].copy_from_slice(&(l as u64).to_le_bytes());
        offset += l as u64;
    }
    for (at, v) in [(512, 1), (516, 512), (520, 8192), (524, 520)] {
        put(&mut z, at, v);
    }
    z
}

/// A Sealed model of `lengths` planted at `authority`'s model address for `declared`: the
/// model account and every weight account (frozen headers; section zero `zero`, the others
/// zero bytes).
async fn plant_sealed(
    bank: &mut Bank,
    authority: &Pubkey,
    declared: [u8; 32],
    config: Config,
    lengths: &[u32],
    zero: &[u8],
) -> (Pubkey, Vec<Pubkey>) {
    let (model, bump) = state::model_address(&PROGRAM, authority, &declared);
    let weights: Vec<Pubkey> = (0..lengths.len())
        .map(|s| state::weight_address(&PROGRAM, authority, &model, s as u8))
        .collect();
    let total_chunks = lengths.iter().map(|&l| l.div_ceil(65_536)).sum();
    let mut section_lengths = [0; MAX_SECTIONS];
    section_lengths[..lengths.len()].copy_from_slice(lengths);
    let mut weight_accounts = [Pubkey::default(); MAX_SECTIONS];
    weight_accounts[..lengths.len()].copy_from_slice(&weights);
    let sealed = Model {
        state: ModelState::Sealed,
        bump,
        section_count: lengths.len() as u8,
        seal_pass: 0,
        creation: 1,
        authority: *authority,
        weights_hash: declared,
        running_hash: declared,
        seal_cursor: total_chunks,
        total_chunks,
        config,
        section_lengths,
        weight_accounts,
    };
    let mut data = vec![0; MODEL_LEN];
    sealed.pack(&mut data);
    let account = |data: Vec<u8>, rent: &solana_sdk::rent::Rent| Account {
        lamports: rent.minimum_balance(data.len()),
        data,
        owner: PROGRAM,
        executable: false,
        rent_epoch: 0,
    };
    let rent = bank.rent.clone();
    bank.plant(&model, account(data, &rent));
    for (s, &length) in lengths.iter().enumerate() {
        let mut data = vec![0u8; WEIGHT_HEADER_LEN + length as usize];
        WeightHeader {
            frozen: true,
            section: s as u16,
            length,
            model,
            authority: *authority,
        }
        .pack(&mut data);
        if s == 0 {
            data[WEIGHT_HEADER_LEN..].copy_from_slice(zero);
        }
        bank.plant(&weights[s], account(data, &rent));
    }
    (model, weights)
}

/// The runner's account creation and StartRun of a greedy run from token 1, in one transaction.
fn start_run(
    model: &Pubkey,
    zero: &Pubkey,
    config: &Config,
    runner: &Pubkey,
    nonce: u32,
    steps: u32,
    rent: &solana_sdk::rent::Rent,
) -> (Pubkey, Vec<solana_instruction::Instruction>) {
    let run = run_address(&PROGRAM, runner, model, nonce);
    let len = run_len(config, steps) as usize;
    let create = system_instruction::create_account_with_seed(
        runner,
        &run,
        runner,
        &run_seed(model, nonce),
        rent.minimum_balance(len),
        len as u64,
        &PROGRAM,
    );
    let start = ix::start_run(
        &PROGRAM,
        &run,
        runner,
        model,
        zero,
        nonce,
        steps,
        &Settings::greedy(),
        curta_program::run::SeedSource::None,
        OwnedPrompt::Tokens(vec![1]),
    );
    (run, with_limit(vec![create, start]))
}

/// The model (dimension 512, hidden 2,048, 14 layers, vocabulary 8,192; context 128,
/// its accounts 64.1 MB, which CreateModel accepts and a seal would seal) with a run of about 7.4 MB:
/// together over 66,060,288 bytes, so every Step would fail to load
/// (MaxLoadedAccountsDataSizeExceeded). StartRun refuses it (`RunTooLarge`) and nothing changes
/// (the runner keeps its lamports, the run address stays empty). A model and a run of exactly
/// 66,060,288 bytes (context 16, section zero sized to fill) start, and a Step of that run
/// loads and runs its first item; 8 bytes more in section zero, and the same run is refused.
#[tokio::test]
async fn a_run_no_step_could_load_is_refused_at_start() {
    let mut bank = Bank::start().await;
    let a = bank.authority.insecure_clone();
    let runner = Keypair::new();
    bank.send(
        &[system_instruction::transfer(
            &a.pubkey(),
            &runner.pubkey(),
            200 * SOL,
        )],
        &[&a],
    )
    .await
    .unwrap();
    let rent = bank.rent.clone();

    // The model: section zero as the converter would size it (header, norm, rotary,
    // tables, 8,192 entries and ids, 60,000 string bytes).
    let config = large(128);
    let zero_len = (4096 + 4 * 29 * 512 + 4 * 128 * 64 + 2 * 4 * 4097 + 20 * 8192 + 60_000) as u32;
    let lengths = large_lengths(zero_len.next_multiple_of(8));
    let model_bytes = state::model_bytes(lengths.iter().copied());
    assert!(model_bytes <= MAX_MODEL_BYTES, "CreateModel accepts it");
    let run_bytes = run_len(&config, 8);
    assert!(
        run_bytes <= 10 * 1024 * 1024,
        "the run account can be created"
    );
    assert!(model_bytes + run_bytes > MAX_MODEL_BYTES);
    let zero = large_zero(&config, &lengths);
    let (model, weights) =
        plant_sealed(&mut bank, &a.pubkey(), [0x26; 32], config, &lengths, &zero).await;
    let (run, start) = start_run(&model, &weights[0], &config, &runner.pubkey(), 0, 8, &rent);
    bank.refused(
        &start,
        &[&runner],
        2,
        custom(RunTooLarge),
        &[runner.pubkey(), run, model, weights[0]],
    )
    .await;
    assert_eq!(bank.account(&run).await, None);

    // At the limit: a model and a run of exactly MAX_MODEL_BYTES together.
    let config = large(16);
    let run_bytes = run_len(&config, 1);
    let rest = state::model_bytes(large_lengths(0).into_iter());
    let zero_len = (MAX_MODEL_BYTES - rest - run_bytes) as u32;
    let lengths = large_lengths(zero_len);
    assert_eq!(
        state::model_bytes(lengths.iter().copied()) + run_bytes,
        MAX_MODEL_BYTES
    );
    let zero = large_zero(&config, &lengths);
    let (model, weights) =
        plant_sealed(&mut bank, &a.pubkey(), [0x27; 32], config, &lengths, &zero).await;
    let (run, start) = start_run(&model, &weights[0], &config, &runner.pubkey(), 0, 1, &rent);
    bank.send(&start, &[&runner]).await.unwrap();
    let step = ix::step(&PROGRAM, &run, &model, &weights, 0, 1);
    let (result, logs) = bank.send_logged(&with_limit(vec![step]), &[]).await;
    result.unwrap_or_else(|e| panic!("the step at the limit: {e:?}\n{}", logs.join("\n")));
    let header = crate::runs::read_run(&mut bank, &run).await;
    assert_eq!(header.steps_landed, 1);

    // 8 bytes over: refused.
    let lengths = large_lengths(zero_len + 8);
    let zero = large_zero(&config, &lengths);
    let (model, weights) =
        plant_sealed(&mut bank, &a.pubkey(), [0x28; 32], config, &lengths, &zero).await;
    let (run, start) = start_run(&model, &weights[0], &config, &runner.pubkey(), 0, 1, &rent);
    bank.refused(
        &start,
        &[&runner],
        2,
        custom(RunTooLarge),
        &[runner.pubkey(), run, model],
    )
    .await;
}
