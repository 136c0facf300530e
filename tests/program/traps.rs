//! Models that would trap their runs (issue 26), in the bank running the SBF binary. A section
//! zero the forward pass cannot rely on (an exponential table other than the spec's, a table
//! block at an offset that is not a multiple of 4) is refused at the seal of chunk 0, and nothing
//! changes; a tokenizer entry over 128 bytes or outside section zero, and tables and row scales
//! at their extremes, seal and run to their end on chain with the tokens, the state bytes and
//! the text curta-core gives off chain. And a run of a model whose accounts and run are more
//! than one transaction may load starts, and steps carrying the sections their items read.

use crate::fixtures::planted;
use crate::harness::*;
use crate::runs::{offline, run_and_compare, sealed, with_limit};
use curta_core::infer::Settings;
use curta_core::Config;
use curta_program::error::CurtaError::*;
use curta_program::instruction::{self as ix, OwnedPrompt};
use curta_program::run::{run_address, run_len, run_seed, MAX_STEP_BUDGET};
use curta_program::state::{self, ModelState, MAX_MODEL_BYTES};
use curta_tests::{split_sections, stories260k_artifact, traps};
use solana_pubkey::Pubkey;
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
        (
            traps::sorted_id_past_vocab(&artifact, 0),
            "sorted token id past the vocabulary",
        ),
        (
            traps::sorted_id_past_vocab(&artifact, 256),
            "sorted token id past the vocabulary",
        ),
        (
            traps::sorted_id_past_vocab(&artifact, 511),
            "sorted token id past the vocabulary",
        ),
    ];
    for (trap, reason) in cases {
        let p = planted(&mut bank, split_sections(&trap)).await;
        let mut watch = p.accounts();
        watch.push(p.authority);
        let before = bank.snapshot(&watch).await;
        let start = ix::start_seal(&PROGRAM, &p.model, &p.weights, &p.authority, p.creation, 0);
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

/// What the seal's tokenizer refusal spares a model's runs: off chain, curta-core reads the
/// trap (its reader checks no sorted id) and every text prompt fails to encode.
#[test]
fn a_sorted_id_past_the_vocabulary_fails_every_text_prompt_off_chain() {
    use curta_core::infer::{tokenizer, RunError};
    use curta_core::FormatError;
    let artifact = stories260k_artifact();
    let mut out = [0u32; 16];
    // Index 256 of 512: every lookup's first probe.
    let past = traps::sorted_id_past_vocab(&artifact, 256);
    let decoded = curta_core::decode(&past).unwrap();
    assert!(matches!(
        tokenizer::encode(decoded.metadata(), b"Lily", &mut out),
        Err(RunError::Format(FormatError::SortedIdOutOfRange {
            index: 256,
            id: 512,
            ..
        }))
    ));
}

/// A vocabulary without " " (its token given no bytes) seals, and a text prompt's space prefix
/// is the byte token of " " (0x20 + 3 = 35), as for any character without a token of its own
/// (the SDK's encoder did so already; curta-core refused the prompt before): on chain as off
/// chain.
#[tokio::test]
async fn a_vocabulary_without_a_space_token_seals_and_its_text_prompts_run() {
    let artifact = traps::no_space_token(&stories260k_artifact());
    let decoded = curta_core::decode(&artifact).unwrap();
    let mut out = [0u32; 16];
    let n = curta_core::infer::tokenizer::encode(decoded.metadata(), b"Lily", &mut out).unwrap();
    assert_eq!(out[..2], [1, 35], "{:?}", &out[..n]);
    let mut bank = Bank::start().await;
    let p = sealed(&mut bank, &artifact).await;
    assert_eq!(bank.model(&p.model).await.state, ModelState::Sealed);
    let prompt = OwnedPrompt::Text(b"Lily".to_vec());
    run_and_compare(&mut bank, &p, &artifact, prompt, 8, Settings::greedy(), 0).await;
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

/// The shape (`curta_tests::large_shape`) with the given context.
fn large(context: u32) -> Config {
    curta_tests::large_shape(context)
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
/// section table, every matrix descriptor), zeros after it: what a step's first items (the
/// embedding, a norm, layer 0's query) read.
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
    // Every descriptor: the embedding's section one, layer l's section 2 + l in the spec's
    // order (query, key, value, output, gate, down, up), each matrix after the one before.
    let mut shapes: Vec<(u32, u32, u32)> = vec![(1, 512, 8192)];
    for l in 0..config.layers {
        for (columns, rows) in [(512, 512), (512, 512), (512, 512), (512, 512)] {
            shapes.push((2 + l, columns, rows));
        }
        shapes.extend([(2 + l, 512, 2048), (2 + l, 2048, 512), (2 + l, 512, 2048)]);
    }
    // The classifier, tied: a copy of the embedding's descriptor, second.
    shapes.insert(1, shapes[0]);
    let mut offsets = vec![0u64; lengths.len()];
    for (i, &(section, columns, rows)) in shapes.iter().enumerate() {
        let row_bytes = (columns + 8).next_multiple_of(8);
        let at = 512 + 24 * i;
        for (k, v) in [section, columns, rows, row_bytes].into_iter().enumerate() {
            put(&mut z, at + 4 * k, v);
        }
        let offset = if i == 1 { 0 } else { offsets[section as usize] };
        z[at + 16..at + 24].copy_from_slice(&offset.to_le_bytes());
        if i != 1 {
            offsets[section as usize] += rows as u64 * row_bytes as u64;
        }
    }
    assert_eq!(offsets[1], lengths[1] as u64);
    assert_eq!(offsets[2], lengths[2] as u64);
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
    let mut sections: Vec<Vec<u8>> = lengths.iter().map(|&l| vec![0; l as usize]).collect();
    sections[0].copy_from_slice(zero);
    let rent = bank.rent.clone();
    let (model, accounts) = curta_tests::sealed_model_accounts(
        &PROGRAM,
        authority,
        declared,
        config,
        sections,
        |len| rent.minimum_balance(len),
    );
    let weights = accounts[1..].iter().map(|(address, _)| *address).collect();
    for (address, account) in accounts {
        bank.plant(&address, account);
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
/// its accounts 64.1 MB, which CreateModel accepts and a seal would seal) with a run of about
/// 7.4 MB: together over 66,060,288 bytes, so a Step carrying every section cannot be loaded
/// (MaxLoadedAccountsDataSizeExceeded, nothing changes). StartRun starts it, and a step
/// carrying section zero and section one (the embedding, the first item's) runs; the next
/// item (a norm, section zero) and the next (layer 0's query, section 2): a step carrying
/// zero and one stops before it, one carrying zero alone is refused (SectionNotLoaded) and one
/// carrying zero and two goes on. The same run with section zero sized so that the model
/// fills what CreateModel accepts, and its largest run: the least a step loads stays far under
/// the limit (`LEAST_STEP_BYTES`).
#[tokio::test]
async fn a_run_of_a_model_too_large_for_one_step_steps_with_the_sections_it_reads() {
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
    bank.send(&start, &[&runner]).await.unwrap();
    let before = bank.account(&run).await;
    let every = ix::step(&PROGRAM, &run, &model, &weights, 0, MAX_STEP_BUDGET);
    assert_eq!(
        bank.send(&with_limit(vec![every]), &[]).await.unwrap_err(),
        TransactionError::MaxLoadedAccountsDataSizeExceeded
    );
    assert_eq!(bank.account(&run).await, before, "the run changed");

    // Budget 1: one item, the embedding (section one).
    let carrying = |sections: &[usize], ticket: u32, budget: u32| {
        let w: Vec<Pubkey> = sections.iter().map(|&s| weights[s]).collect();
        with_limit(vec![ix::step(&PROGRAM, &run, &model, &w, ticket, budget)])
    };
    bank.send(&carrying(&[0, 1], 1, 1), &[]).await.unwrap();
    let point = |state: &[u8]| {
        use curta_core::infer::state::field;
        use curta_core::le::u32_at;
        (
            u32_at(state, field::POSITION),
            u32_at(state, field::STAGE),
            u32_at(state, field::ITEM),
        )
    };
    let header = crate::runs::read_run(&mut bank, &run).await;
    assert_eq!((header.steps_landed, point(&header.state)), (1, (0, 1, 0)));
    // The whole budget with sections zero and one: the attention norm (one item, section
    // zero), then it stops before the query (section 2).
    bank.send(&carrying(&[0, 1], 2, MAX_STEP_BUDGET), &[])
        .await
        .unwrap();
    let header = crate::runs::read_run(&mut bank, &run).await;
    assert_eq!((header.steps_landed, point(&header.state)), (2, (0, 2, 0)));
    let before = bank.account(&run).await;
    assert_eq!(
        bank.send(&carrying(&[0], 3, MAX_STEP_BUDGET), &[])
            .await
            .unwrap_err(),
        TransactionError::InstructionError(1, custom(SectionNotLoaded))
    );
    assert_eq!(bank.account(&run).await, before, "the run changed");
    bank.send(&carrying(&[0, 2], 4, 100_000), &[])
        .await
        .unwrap();
    let header = crate::runs::read_run(&mut bank, &run).await;
    assert_eq!(header.steps_landed, 3);
    let (position, stage, item) = point(&header.state);
    assert!(
        (position, stage) == (0, 2) && item > 0,
        "{position} {stage} {item}"
    );

    // The largest: the model at what CreateModel accepts, the largest run of it (context 16),
    // and section zero as large as the rest allows.
    let config = large(16);
    let steps = 8;
    let rest = state::model_bytes(large_lengths(0).into_iter());
    let lengths = large_lengths((MAX_MODEL_BYTES - rest) as u32);
    assert_eq!(state::model_bytes(lengths.iter().copied()), MAX_MODEL_BYTES);
    let zero = large_zero(&config, &lengths);
    let (model, weights) =
        plant_sealed(&mut bank, &a.pubkey(), [0x27; 32], config, &lengths, &zero).await;
    let (run, start) = start_run(
        &model,
        &weights[0],
        &config,
        &runner.pubkey(),
        1,
        steps,
        &rent,
    );
    bank.send(&start, &[&runner]).await.unwrap();
    let step = ix::step(&PROGRAM, &run, &model, &weights[..2], 0, 1);
    let (result, logs) = bank.send_logged(&with_limit(vec![step]), &[]).await;
    result.unwrap_or_else(|e| panic!("the step of the largest model: {e:?}\n{}", logs.join("\n")));
    let header = crate::runs::read_run(&mut bank, &run).await;
    assert_eq!(header.steps_landed, 1);
}
