//! A long text prompt through `client run --on-chain` (issue 26): StartRun tokenizes what fits
//! its compute units and the client's first Steps continue the encoding (order-free, like every
//! step), then the run goes on as any other. On a model of llama2.c's 32,000-token tokenizer
//! (which merges much, so a few hundred bytes of English take several steps): the tokens and
//! text equal the off-chain `client run`, the encoding steps are the count curta-core's
//! `Encoding` gives when cut as the program cuts it, a drawn seed is drawn once the run has
//! started, and a run interrupted while encoding is listed, recomputed and resumed.

use super::onchain_run::{fee_per_transaction, off_chain, step_count};
use super::*;
use curta_client::publish;
use curta_client::run::onchain::{run_on_chain, runs, RunOnChainError, RunRequest};
use curta_client::run::Prompt;
use curta_core::infer::{state_len, Encoding, Settings};
use curta_program::instruction as ix;
use curta_program::run::{encode_costs, SeedSource, MAX_STEP_BUDGET, START_ENCODE_BUDGET};

/// The most English text the client's StartRun carries as text on this model (the transaction
/// also carries the account's creation and a compute-unit limit): larger prompts go as ids.
const TEXT_LEN: usize = 600;

/// Steps that continue the encoding of `text` after StartRun: curta-core's `Encoding` advanced
/// by StartRun's share, then a step's budget at a time, with the program's cost per item.
pub(crate) fn encoding_steps(artifact: &[u8], text: &[u8]) -> u32 {
    let decoded = curta_core::decode(artifact).unwrap();
    let meta = decoded.metadata();
    let mut state = vec![0u8; state_len(&meta.config())];
    let mut encoding = Encoding::begin(&mut state, text).unwrap();
    let mut budget = START_ENCODE_BUDGET;
    let mut steps = 0;
    loop {
        encoding.advance(meta, budget, encode_costs()).unwrap();
        if encoding.done() {
            return steps;
        }
        steps += 1;
        budget = MAX_STEP_BUDGET as u64;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_long_text_prompt_is_tokenized_over_the_first_steps_and_resumes() {
    let artifact = curta_tests::tokenizer_bin_artifact();
    quiet();
    let (runner, stranger) = (Keypair::new(), Keypair::new());
    let bank =
        BankTransport::start(&[(runner.pubkey(), 1_000 * SOL), (stranger.pubkey(), SOL)]).await;
    publish(&bank, &runner, &artifact, true, &options())
        .await
        .unwrap();
    let model = model_of(&runner.pubkey(), &artifact);
    let me = runner.pubkey();
    let text = curta_tests::STORY[..TEXT_LEN].to_vec();
    let prompt = Prompt::Text(text.clone());
    let encoding = encoding_steps(&artifact, &text);
    assert!(
        encoding >= 2,
        "{TEXT_LEN} bytes fit StartRun's share: no test of the steps"
    );
    let fee = fee_per_transaction(&bank, &me).await;
    let steps = 3;

    // Greedy, then sampled with a seed drawn once the run has started.
    let sampled = Settings {
        temperature: 52_429,
        top_p: 58_982,
        seed: 2626,
    };
    for (nonce, settings, source) in [
        (0, Settings::greedy(), SeedSource::None),
        (1, sampled, SeedSource::Drawn),
    ] {
        let before = bank.balance(&me).await.unwrap();
        let mut request = RunRequest::new(prompt.clone(), Some(steps), settings);
        request.nonce = nonce;
        request.source = source;
        let mut streamed = Vec::new();
        let run = run_on_chain(&bank, &runner, &model, &request, |id, _| streamed.push(id))
            .await
            .unwrap_or_else(|e| panic!("{source:?}: {e}"));
        let in_force = Settings {
            seed: run.seed,
            ..settings
        };
        if source == SeedSource::Drawn {
            assert_eq!(run.seed_slot, run.start_slot);
            assert_ne!(run.seed, sampled.seed);
        }
        let (tokens, text_out) = off_chain(&artifact, &prompt, steps, in_force);
        let forward = step_count(&artifact, &prompt, steps, in_force);
        assert_eq!(run.tokens, tokens, "{source:?}");
        assert_eq!(run.text_bytes, text_out);
        assert_eq!(streamed, tokens);
        assert_eq!(run.prompt_sent_as, Some("text"));
        assert_eq!(run.encoding_steps, encoding, "{source:?}: encoding steps");
        assert_eq!(run.steps_sent, encoding + forward);
        assert_eq!(run.steps_landed, encoding + forward);
        assert_eq!((run.steps_by_others, run.steps_after_end), (0, 0));
        // StartRun, the steps and CloseRun: one signature each; the rent came back.
        let transactions = 1 + (encoding + forward) as u64 + 1;
        assert_eq!(run.transactions, transactions);
        assert_eq!(run.fees, fee * transactions);
        assert!(run.closed);
        assert_eq!(bank.balance(&me).await.unwrap(), before - run.fees);
        println!(
            "{TEXT_LEN} bytes, {source:?}: {} prompt tokens, StartRun {:?} CU, {} encoding steps, {} steps in all",
            run.prompt_tokens.len(),
            run.start_units,
            run.encoding_steps,
            run.steps_landed
        );
    }

    // Interrupted while encoding: StartRun by hand, one encoding step by a stranger.
    let nonce = 7;
    let settings = Settings::greedy();
    let hand = start_run_by_hand(
        &bank,
        &runner,
        &artifact,
        &model,
        nonce,
        steps,
        &settings,
        ix::OwnedPrompt::Text(text.clone()),
    )
    .await;
    let step = ix::step(
        &curta_program::id(),
        &hand.address,
        &model,
        &hand.weights,
        1,
        MAX_STEP_BUDGET,
    );
    send_limited(&bank, &stranger, &[step]).await.unwrap();
    let listed = runs(&bank, &me, &model, nonce..nonce + 1).await.unwrap();
    assert_eq!(listed.len(), 1);
    let l = &listed[0];
    assert_eq!(
        (l.status, l.steps_landed, l.position, l.tokens, l.steps),
        ("tokenizing its prompt", 1, 0, 0, steps)
    );
    // `client run --from-run`: the encoding recomputed to the point the chain reached.
    let replay = curta_client::run::onchain::replay(&bank, &hand.address)
        .await
        .unwrap();
    assert_eq!(replay.status, "tokenizing its prompt");
    assert!(replay.agrees(), "{replay:?}");
    let decoded = curta_core::decode(&artifact).unwrap();
    assert_eq!(replay.prompt_tokens, prompt.tokens(&decoded).unwrap());

    // Another text at the same nonce: refused, nothing sent.
    let before = bank.balance(&me).await.unwrap();
    let mut other = RunRequest::new(
        Prompt::Text(curta_tests::STORY[1..TEXT_LEN].to_vec()),
        Some(steps),
        settings,
    );
    other.nonce = nonce;
    let err = run_on_chain(&bank, &runner, &model, &other, |_, _| {})
        .await
        .unwrap_err();
    assert!(
        matches!(&err, RunOnChainError::RunAccount { address, .. } if *address == hand.address),
        "{err}"
    );
    assert!(
        err.to_string()
            .contains("is tokenizing another prompt than this one"),
        "{err}"
    );
    assert_eq!(bank.balance(&me).await.unwrap(), before);

    // The same command resumes the encoding, then runs and closes.
    let mut request = RunRequest::new(prompt.clone(), Some(steps), settings);
    request.nonce = nonce;
    let run = run_on_chain(&bank, &runner, &model, &request, |_, _| {})
        .await
        .unwrap();
    let (tokens, _) = off_chain(&artifact, &prompt, steps, settings);
    let forward = step_count(&artifact, &prompt, steps, settings);
    assert_eq!(run.resumed_from, Some(1));
    assert_eq!(run.tokens, tokens);
    assert_eq!(run.encoding_steps, encoding - 1);
    assert_eq!(run.steps_landed, encoding + forward);
    assert_eq!(run.transactions, (encoding - 1 + forward) as u64 + 1);
    assert_eq!(
        bank.balance(&me).await.unwrap(),
        before + hand.rent - run.fees
    );
}
