//! `client run --on-chain` on the bank running the SBF binary: the tokens read back from the
//! run account equal the off-chain `client run` (curta-core driven directly) token for token
//! and its text byte for byte; the runner pays exactly the fees (the rent comes back at close);
//! a runner too poor for the price is refused before anything is sent; an interrupted run
//! resumes from the chain. A sampled run's seed is drawn on chain (the off-chain run then uses
//! the drawn seed) or chosen (`client run --seed`'s tokens); `client run --from-run`
//! recomputes every run here byte for byte before it is closed.

use super::*;
use curta_client::run::onchain::{close_run, run_on_chain, RunOnChainError, RunRef, RunRequest};
use curta_client::run::{detokenize, generate, Prompt};
use curta_client::{publish, Error};
use curta_core::infer::{state_len, Model, Run, Settings, Status};
use curta_program::instruction as ix;
use curta_program::run::{
    run_address, run_len, step_costs, SeedSource, MAX_STEP_BUDGET, RUN_HEADER_LEN,
};
use solana_compute_budget_interface::ComputeBudgetInstruction;
use solana_message::Message;

/// The synthetic grouped-query model (8 sections, 8 heads over 2 key/value heads, untied
/// classifier), as tests/program/runs.rs builds it.
fn gqa_artifact() -> Vec<u8> {
    use curta_core::convert::synth;
    let checkpoint = synth::checkpoint(&synth::GQA, false, 11);
    let tokenizer = synth::tokenizer(synth::GQA.vocab_size, 11);
    curta_core::convert::convert(&checkpoint, &tokenizer).unwrap()
}

/// What `client run` prints off chain: the tokens and the text bytes.
pub(crate) fn off_chain(
    artifact: &[u8],
    prompt: &Prompt,
    steps: u32,
    settings: Settings,
) -> (Vec<u32>, Vec<u8>) {
    let artifact = curta_core::decode(artifact).unwrap();
    let ids = prompt.tokens(&artifact).unwrap();
    let g = generate(&artifact, &ids, steps, settings, 1, |_, _| {}).unwrap();
    let text = detokenize(&artifact, *ids.last().unwrap(), &g.tokens).unwrap();
    assert_eq!(g.text, String::from_utf8_lossy(&text));
    (g.tokens, text)
}

/// The number of Step transactions of a run: curta-core advanced with the program's budget
/// and cost, counted here independently of the client.
pub(crate) fn step_count(artifact: &[u8], prompt: &Prompt, steps: u32, settings: Settings) -> u32 {
    let artifact = curta_core::decode(artifact).unwrap();
    let ids = prompt.tokens(&artifact).unwrap();
    let model = Model::from_artifact(&artifact).unwrap();
    let mut state = vec![0u8; state_len(&model.config())];
    let mut run = Run::start(&mut state, &model, &ids, steps, settings).unwrap();
    let mut count = 0;
    while run.status() == Status::Running {
        run.advance_by(
            &model,
            MAX_STEP_BUDGET as u64,
            step_costs(settings.temperature),
        )
        .unwrap();
        count += 1;
    }
    count
}

/// The fee of a transaction with one signature (what every run transaction carries).
pub(crate) async fn fee_per_transaction(bank: &BankTransport, payer: &Pubkey) -> u64 {
    let (blockhash, _) = bank.latest_blockhash().await.unwrap();
    let message = Message::new_with_blockhash(
        &[ComputeBudgetInstruction::set_compute_unit_limit(1_400_000)],
        Some(payer),
        &blockhash,
    );
    bank.fee_for_message(&solana_message::VersionedMessage::Legacy(message))
        .await
        .unwrap()
}

pub(crate) const SAMPLED: Settings = Settings {
    temperature: 52_429,
    top_p: 58_982,
    seed: 7,
};

/// Runs `prompt` on chain and checks everything against the off-chain run: tokens, text,
/// streamed pieces, the steps, the transactions, the lamports; then `--from-run`'s
/// recomputation of the kept run, and its close.
#[allow(clippy::too_many_arguments)]
pub(crate) async fn run_and_compare(
    bank: &BankTransport,
    runner: &Keypair,
    model: &Pubkey,
    artifact: &[u8],
    prompt: Prompt,
    steps: u32,
    settings: Settings,
    source: SeedSource,
    nonce: u32,
) {
    let fee = fee_per_transaction(bank, &runner.pubkey()).await;
    let before = bank.balance(&runner.pubkey()).await.unwrap();
    let mut request = RunRequest::new(prompt.clone(), Some(steps), settings);
    request.source = source;
    request.nonce = nonce;
    request.keep = true;
    let mut streamed: Vec<(u32, Vec<u8>)> = Vec::new();
    let run = run_on_chain(bank, runner, model, &request, |id, piece| {
        streamed.push((id, piece.to_vec()))
    })
    .await
    .unwrap_or_else(|e| panic!("{prompt:?} {settings:?}: {e}"));
    let context = format!("{prompt:?}, {steps} steps, {settings:?}, {source:?}");
    // The seed in force: drawn (another seed than the runner's, from the start slot), chosen
    // (the runner's), none (greedy).
    let in_force = match source {
        SeedSource::Drawn => {
            assert_eq!(run.seed_source, "drawn");
            assert_eq!(run.runner_seed, settings.seed);
            assert_eq!(run.seed_slot, run.start_slot);
            assert_ne!(run.seed, settings.seed, "{context}: the drawn seed");
            Settings {
                seed: run.seed,
                ..settings
            }
        }
        SeedSource::Chosen => {
            assert_eq!((run.seed_source, run.seed), ("chosen", settings.seed));
            settings
        }
        SeedSource::None => {
            assert_eq!((run.seed_source, run.seed), ("none", 0));
            settings
        }
    };
    let (tokens, text) = off_chain(artifact, &prompt, steps, in_force);
    let expected_steps = step_count(artifact, &prompt, steps, in_force);
    assert_eq!(run.tokens, tokens, "{context}: tokens");
    assert_eq!(run.text_bytes, text, "{context}: text");
    assert_eq!(run.text, String::from_utf8_lossy(&text), "{context}");
    assert!(!tokens.is_empty());
    assert_eq!(
        streamed.iter().map(|(id, _)| *id).collect::<Vec<_>>(),
        tokens,
        "{context}: streamed ids"
    );
    assert_eq!(
        streamed
            .iter()
            .flat_map(|(_, p)| p.clone())
            .collect::<Vec<_>>(),
        text,
        "{context}: streamed text"
    );
    assert_eq!(run.steps, expected_steps, "{context}: steps");
    // Nobody else stepped: every step is the client's, none landed after the end.
    assert_eq!(run.steps_sent, expected_steps, "{context}: steps sent");
    assert_eq!(run.steps_landed, expected_steps, "{context}: steps landed");
    assert_eq!(
        (
            run.steps_after_end,
            run.steps_by_others,
            run.steps_out_of_reach
        ),
        (0, 0, 0)
    );
    assert_eq!(run.transactions, expected_steps as u64 + 1, "{context}");
    assert_eq!(run.failed_transactions, 0);
    assert_eq!(
        run.fees,
        fee * (expected_steps as u64 + 1),
        "{context}: fees"
    );
    assert_eq!(run.resumed_from, None);
    match &prompt {
        Prompt::Tokens(_) => assert_eq!(run.prompt_sent_as, Some("tokens")),
        Prompt::Text(_) => assert!(run.prompt_sent_as.is_some()),
    }
    assert!(!run.closed);
    let address = run_address(&curta_program::id(), &runner.pubkey(), model, nonce);
    assert_eq!(run.run, address.to_string());
    let rent = bank.balance(&address).await.unwrap();
    assert_eq!(run.rent_held, rent);

    // `client run --from-run`: the kept run recomputed from its own fields agrees.
    let replay = curta_client::run::onchain::replay(bank, &address)
        .await
        .unwrap();
    assert!(replay.agrees(), "{context}: {replay:?}");
    assert_eq!(replay.chain_tokens, tokens, "{context}: replayed tokens");
    assert_eq!(replay.offline_tokens, tokens);
    assert_eq!(replay.chain_text, text);
    assert_eq!(
        replay.seed,
        in_force.seed * (source != SeedSource::None) as u64
    );
    assert_eq!(
        replay.seed_derivation_agrees,
        (source == SeedSource::Drawn).then_some(true)
    );
    assert_eq!(
        replay.slot_hash_agrees,
        (source == SeedSource::Drawn).then_some(true)
    );

    // Closed: exactly the fees spent, the rent back.
    let closed = close_run(bank, runner, RunRef::Address(address), None)
        .await
        .unwrap();
    assert_eq!(closed.returned, rent);
    let after = bank.balance(&runner.pubkey()).await.unwrap();
    assert_eq!(
        after,
        before - run.fees - closed.fee,
        "{context}: runner's balance"
    );
    assert_eq!(run.balance_before, before);
    assert!(bank.get_accounts(&[address]).await.unwrap()[0].is_none());
    println!(
        "{context}: {} tokens, {} steps ({} in flight), start {:?} CU (prompt as {:?}), fees {}",
        run.tokens.len(),
        run.steps,
        run.window,
        run.start_units,
        run.prompt_sent_as,
        run.fees
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stories260k_on_chain_equals_client_run() {
    let artifact = curta_tests::stories260k_artifact();
    let (bank, runner) = bank(100 * SOL).await;
    publish(&bank, &runner, &artifact, true, &options())
        .await
        .unwrap();
    let model = model_of(&runner.pubkey(), &artifact);
    let cases: [(Prompt, u32, Settings, SeedSource); 5] = [
        (
            Prompt::Text(b"Once upon a time".to_vec()),
            12,
            Settings::greedy(),
            SeedSource::None,
        ),
        (Prompt::Tokens(vec![1]), 10, SAMPLED, SeedSource::Drawn),
        (Prompt::Tokens(vec![1]), 10, SAMPLED, SeedSource::Chosen),
        (
            Prompt::Tokens(vec![1, 306, 470]),
            10,
            Settings {
                seed: 42,
                ..SAMPLED
            },
            SeedSource::Chosen,
        ),
        (
            Prompt::Text(b"Lily".to_vec()),
            8,
            Settings {
                seed: 9,
                temperature: 65_536,
                top_p: 65_536,
            },
            SeedSource::Drawn,
        ),
    ];
    for (nonce, (prompt, steps, settings, source)) in cases.into_iter().enumerate() {
        run_and_compare(
            &bank,
            &runner,
            &model,
            &artifact,
            prompt,
            steps,
            settings,
            source,
            nonce as u32,
        )
        .await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn grouped_query_model_on_chain_equals_client_run() {
    let artifact = gqa_artifact();
    let (bank, runner) = bank(100 * SOL).await;
    publish(&bank, &runner, &artifact, true, &options())
        .await
        .unwrap();
    let model = model_of(&runner.pubkey(), &artifact);
    let cases = [
        (
            Prompt::Tokens(vec![1, 5, 77]),
            Settings::greedy(),
            SeedSource::None,
        ),
        (
            Prompt::Text(b"ab".to_vec()),
            Settings { seed: 3, ..SAMPLED },
            SeedSource::Drawn,
        ),
        (
            Prompt::Text(b"ab".to_vec()),
            Settings { seed: 3, ..SAMPLED },
            SeedSource::Chosen,
        ),
    ];
    for (nonce, (prompt, settings, source)) in cases.into_iter().enumerate() {
        run_and_compare(
            &bank,
            &runner,
            &model,
            &artifact,
            prompt,
            10,
            settings,
            source,
            nonce as u32,
        )
        .await;
    }
}

/// A runner whose balance does not cover the rent, the fees and its own reserve is refused
/// with those numbers, and nothing is sent.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_runner_too_poor_is_refused_before_anything_is_sent() {
    quiet();
    let artifact = curta_tests::stories260k_artifact();
    let (publisher, poor) = (Keypair::new(), Keypair::new());
    let bank = BankTransport::start(&[(publisher.pubkey(), 100 * SOL), (poor.pubkey(), SOL)]).await;
    publish(&bank, &publisher, &artifact, true, &options())
        .await
        .unwrap();
    let model = model_of(&publisher.pubkey(), &artifact);
    let prompt = Prompt::Tokens(vec![1]);
    let request = RunRequest::new(prompt.clone(), Some(8), Settings::greedy());
    let steps = step_count(&artifact, &prompt, 8, Settings::greedy()) as u64;
    let config = curta_core::decode(&artifact).unwrap().config();
    let rent = bank
        .rent_minimum(run_len(&config, 8) as usize)
        .await
        .unwrap();
    let reserve = bank.rent_minimum(0).await.unwrap();
    let fees = fee_per_transaction(&bank, &poor.pubkey()).await * (steps + 2);
    let err = run_on_chain(&bank, &poor, &model, &request, |_, _| panic!("no token"))
        .await
        .unwrap_err();
    match &err {
        RunOnChainError::Client(Error::InsufficientFunds {
            payer,
            balance,
            needed,
            rent: r,
            fees: f,
            reserve: v,
        }) => {
            assert_eq!(*payer, poor.pubkey());
            assert_eq!(*balance, SOL);
            assert_eq!((*r, *f, *v), (rent, fees, reserve));
            assert_eq!(*needed, rent + fees + reserve);
        }
        other => panic!("expected InsufficientFunds, got {other}"),
    }
    assert!(
        rent > SOL,
        "stories260K's run account costs more than 1 SOL of rent"
    );
    let address = run_address(&curta_program::id(), &poor.pubkey(), &model, 0);
    assert!(bank.get_accounts(&[address]).await.unwrap()[0].is_none());
    bank.settle().await;
    assert_eq!(bank.balance(&poor.pubkey()).await.unwrap(), SOL);
}

/// A run started and stepped three times by hand (as a client interrupted after its third
/// step leaves it) is resumed from the chain: the same tokens and text as the off-chain run,
/// only the remaining steps and the close paid, the rent returned. A run of other settings at
/// the address is refused without a transaction.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_interrupted_run_resumes_from_the_chain() {
    let artifact = curta_tests::stories260k_artifact();
    let (bank, runner) = bank(100 * SOL).await;
    publish(&bank, &runner, &artifact, true, &options())
        .await
        .unwrap();
    let model = model_of(&runner.pubkey(), &artifact);
    let (program, me) = (curta_program::id(), runner.pubkey());
    let (steps, nonce, settings) = (
        10u32,
        5u32,
        Settings {
            seed: 11,
            ..SAMPLED
        },
    );
    let prompt = Prompt::Text(b"Once upon a time".to_vec());
    let HandRun {
        address,
        rent,
        weights,
    } = start_run_by_hand(
        &bank,
        &runner,
        &artifact,
        &model,
        nonce,
        steps,
        &settings,
        ix::OwnedPrompt::Text(b"Once upon a time".to_vec()),
    )
    .await;
    for ticket in 0..3 {
        let step = ix::step(
            &program,
            &address,
            &model,
            &weights,
            ticket,
            MAX_STEP_BUDGET,
        );
        send_limited(&bank, &runner, &[step]).await.unwrap();
    }

    // Other settings at the same nonce: refused, nothing sent. The message names the point of
    // progress the chain's run reached (state bytes 28, 32, 36 after the 192-byte header).
    let data = bank.get_accounts(&[address]).await.unwrap()[0]
        .clone()
        .unwrap()
        .data;
    let field = |at: usize| {
        u32::from_le_bytes(
            data[RUN_HEADER_LEN + at..RUN_HEADER_LEN + at + 4]
                .try_into()
                .unwrap(),
        )
    };
    let (position, stage, item) = (field(28), field(32), field(36));
    let before = bank.balance(&me).await.unwrap();
    let mut other = RunRequest::new(
        prompt.clone(),
        Some(steps),
        Settings {
            seed: 12,
            ..settings
        },
    );
    other.nonce = nonce;
    other.source = SeedSource::Chosen;
    let err = run_on_chain(&bank, &runner, &model, &other, |_, _| {})
        .await
        .unwrap_err();
    assert!(
        matches!(&err, RunOnChainError::RunAccount { address: a, .. } if *a == address),
        "{err}"
    );
    assert_eq!(
        err.to_string(),
        format!("run account {address}: at position {position}, stage {stage}, item {item} holds another run than this prompt and these settings (prompt, --temperature, --top-p and --seed must be the ones it was started with): run the same command as started it; `client close-run --model {model} --nonce {nonce}` closes it and returns its lamports, or pass another --nonce")
    );
    // Another token count: refused by the account's length.
    other = RunRequest::new(prompt.clone(), Some(steps + 1), settings);
    other.nonce = nonce;
    other.source = SeedSource::Chosen;
    let err = run_on_chain(&bank, &runner, &model, &other, |_, _| {})
        .await
        .unwrap_err();
    assert!(
        err.to_string()
            .contains("was started with another token count"),
        "{err}"
    );
    assert_eq!(bank.balance(&me).await.unwrap(), before);

    // The same command resumes at step 3.
    let (tokens, text) = off_chain(&artifact, &prompt, steps, settings);
    let total = step_count(&artifact, &prompt, steps, settings);
    let fee = fee_per_transaction(&bank, &me).await;
    let mut request = RunRequest::new(prompt.clone(), Some(steps), settings);
    request.nonce = nonce;
    request.source = SeedSource::Chosen;
    let mut streamed = Vec::new();
    let run = run_on_chain(&bank, &runner, &model, &request, |id, _| streamed.push(id))
        .await
        .unwrap();
    assert_eq!(run.resumed_from, Some(3));
    assert_eq!(run.tokens, tokens);
    assert_eq!(run.text_bytes, text);
    assert_eq!(streamed, tokens);
    assert_eq!(run.steps, total);
    assert_eq!(run.steps_sent, total - 3);
    assert_eq!(run.steps_landed, total);
    assert_eq!(run.start_units, None);
    assert_eq!(run.transactions, (total - 3) as u64 + 1);
    assert_eq!(run.fees, fee * ((total - 3) as u64 + 1));
    assert_eq!(run.rent, 0);
    // The rent the run held comes back with the close; the remaining fees are all it cost.
    assert_eq!(bank.balance(&me).await.unwrap(), before + rent - run.fees);
    assert!(bank.get_accounts(&[address]).await.unwrap()[0].is_none());

    // With --keep, the run stays; the same command again finds it finished and closes it.
    let mut keep = RunRequest::new(prompt.clone(), Some(steps), settings);
    keep.nonce = nonce + 1;
    keep.source = SeedSource::Chosen;
    keep.keep = true;
    let kept = run_on_chain(&bank, &runner, &model, &keep, |_, _| {})
        .await
        .unwrap();
    assert_eq!(kept.tokens, tokens);
    assert!(!kept.closed);
    let kept_address = run_address(&program, &me, &model, nonce + 1);
    assert_eq!(kept.rent_held, rent);
    assert_eq!(kept.balance_after, kept.balance_before - rent - kept.fees);
    keep.keep = false;
    let closed = run_on_chain(&bank, &runner, &model, &keep, |_, _| {})
        .await
        .unwrap();
    assert_eq!(closed.resumed_from, Some(total));
    assert_eq!(closed.tokens, tokens);
    assert_eq!(closed.transactions, 1);
    assert_eq!(closed.balance_after, closed.balance_before + rent - fee);
    assert!(bank.get_accounts(&[kept_address]).await.unwrap()[0].is_none());
}

/// The same run over RPC (solana-client's RpcClient against the JSON-RPC node of
/// tests/support/rpc_shim.rs, which runs the program on a bank), with a compute-unit price:
/// the tokens and text of the off-chain run, every step carrying the 1,250,000 limit (so
/// paying 5,000 + 1,250 lamports at 1,000 micro-lamports per unit), exact lamports on the bank.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn over_rpc_with_a_price_the_run_equals_client_run() {
    use curta_client::RpcTransport;
    use curta_tests::rpc_shim::RpcShim;
    quiet();
    let artifact = curta_tests::stories260k_artifact();
    let runner = Keypair::new();
    let shim = RpcShim::start(&[(runner.pubkey(), 100 * SOL)]).await;
    let rpc = RpcTransport::new(
        &shim.url(),
        solana_commitment_config::CommitmentConfig::confirmed(),
    );
    publish(&rpc, &runner, &artifact, true, &options())
        .await
        .unwrap();
    let model = model_of(&runner.pubkey(), &artifact);
    let prompt = Prompt::Tokens(vec![1, 306]);
    let settings = Settings { seed: 5, ..SAMPLED };
    let (tokens, text) = off_chain(&artifact, &prompt, 8, settings);
    let steps = step_count(&artifact, &prompt, 8, settings) as u64;
    let before = shim.banks().get_balance(runner.pubkey()).await.unwrap();
    let mut request = RunRequest::new(prompt, Some(8), settings);
    // The test node's slot does not move (tests/support/rpc_shim.rs), so no seed can be drawn
    // there: the runner's seed, chosen.
    request.source = SeedSource::Chosen;
    request.compute_unit_price = Some(1_000);
    let run = run_on_chain(&rpc, &runner, &model, &request, |_, _| {})
        .await
        .unwrap();
    assert_eq!(run.tokens, tokens);
    assert_eq!(run.text_bytes, text);
    assert_eq!(run.steps as u64, steps);
    assert_eq!(run.transactions, steps + 2);
    // Each step carries 1,250,000; the start the most a transaction may, 1,400,000 (its
    // units depend on the prompt's form: the ids it is priced with, or the text the program
    // tokenizes, up to a million units); the close the fixed 50,000 (priced before the run
    // account exists, so not measurable).
    let priced = |limit: u64| 5_000 + (1_000 * limit).div_ceil(1_000_000);
    let expected = steps * priced(1_250_000) + priced(1_400_000) + priced(50_000);
    assert_eq!(run.fees, expected);
    let after = shim.banks().get_balance(runner.pubkey()).await.unwrap();
    assert_eq!(after, before - run.fees);
}

/// A run account whose state no run of these inputs reaches (here its status set to 7 in the
/// bank after three steps) is refused without a transaction, naming the command that frees the
/// nonce; `client close-run` then returns every lamport it held to the runner.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_the_client_refuses_to_resume_is_closed_by_close_run() {
    let artifact = curta_tests::stories260k_artifact();
    let (bank, runner) = bank(100 * SOL).await;
    publish(&bank, &runner, &artifact, true, &options())
        .await
        .unwrap();
    let model = model_of(&runner.pubkey(), &artifact);
    let (program, me, nonce, steps) = (curta_program::id(), runner.pubkey(), 3u32, 8u32);
    let HandRun {
        address,
        rent,
        weights,
    } = start_run_by_hand(
        &bank,
        &runner,
        &artifact,
        &model,
        nonce,
        steps,
        &Settings::greedy(),
        ix::OwnedPrompt::Tokens(vec![1]),
    )
    .await;
    for ticket in 0..3 {
        let step = ix::step(
            &program,
            &address,
            &model,
            &weights,
            ticket,
            MAX_STEP_BUDGET,
        );
        send_limited(&bank, &runner, &[step]).await.unwrap();
    }
    let mut account = bank
        .get_accounts(&[address])
        .await
        .unwrap()
        .remove(0)
        .unwrap();
    let at = RUN_HEADER_LEN + curta_core::infer::state::field::STATUS;
    account.data[at..at + 4].copy_from_slice(&7u32.to_le_bytes());
    bank.set_account(&address, account);
    bank.settle().await;

    let before = bank.balance(&me).await.unwrap();
    let mut request = RunRequest::new(Prompt::Tokens(vec![1]), Some(steps), Settings::greedy());
    request.nonce = nonce;
    let err = run_on_chain(&bank, &runner, &model, &request, |_, _| panic!("no token"))
        .await
        .unwrap_err();
    let message = err.to_string();
    assert!(
        matches!(&err, RunOnChainError::RunAccount { address: a, .. } if *a == address),
        "{err}"
    );
    assert!(
        message.contains(&format!(
            "`client close-run --model {model} --nonce {nonce}` closes it and returns its lamports"
        )),
        "{message}"
    );
    assert_eq!(bank.balance(&me).await.unwrap(), before);

    let fee = fee_per_transaction(&bank, &me).await;
    let closed = close_run(&bank, &runner, RunRef::Address(address), None)
        .await
        .unwrap();
    assert_eq!(closed.returned, rent);
    assert_eq!(closed.fee, fee);
    assert_eq!(closed.balance_after, before + rent - fee);
    assert_eq!(bank.balance(&me).await.unwrap(), before + rent - fee);
    assert!(bank.get_accounts(&[address]).await.unwrap()[0].is_none());
}
