//! A model whose accounts and run are more than one transaction may load (issue 29, "a step
//! loads only what it reads"): dimension 512, hidden 2,048, 14 layers, vocabulary 8,192, its
//! accounts 64.1 MB (CreateModel's limit is 66,060,288 bytes with the model account), with a
//! run of 7.4 MB. Every Step carries section zero and the sections its items read, so `client
//! run --on-chain` runs it (two tokens greedy, two with a drawn seed) with the tokens and text
//! of the off-chain `client run`. The sealed model is planted (publishing 64 MB takes minutes; the
//! seal is tested on the models that are published).

use super::onchain_run::{run_and_compare, SAMPLED};
use super::*;
use curta_client::run::Prompt;
use curta_core::infer::Settings;
use curta_program::run::{run_len, SeedSource};
use curta_program::state::{model_bytes, MAX_MODEL_BYTES};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_model_too_large_for_one_step_runs_on_chain_as_client_run() {
    use curta_core::convert::synth;
    // The shape, context 128.
    let large = curta_tests::large_shape(128);
    let checkpoint = synth::checkpoint(&large, true, 29);
    let artifact =
        curta_core::convert::convert(&checkpoint, &synth::tokenizer(large.vocab_size, 29)).unwrap();
    drop(checkpoint);
    let sections = curta_tests::split_sections(&artifact);
    assert_eq!(sections.len(), 16);
    let lengths = sections.iter().map(|s| s.len() as u32);
    let model_len = model_bytes(lengths);
    assert!(model_len <= MAX_MODEL_BYTES, "CreateModel accepts it");
    let steps = 2;
    assert!(
        model_len + run_len(&large, steps) > MAX_MODEL_BYTES,
        "a step carrying every section could not load"
    );

    quiet();
    let (authority, runner) = (Keypair::new(), Keypair::new());
    let bank = BankTransport::start(&[(runner.pubkey(), 100 * SOL)]).await;
    let hash = curta_tests::sha256_chain(sections.iter().map(Vec::as_slice));
    let (model, accounts) = curta_tests::sealed_model_accounts(
        &bank.program_id(),
        &authority.pubkey(),
        hash,
        large,
        sections,
        curta_tests::client::rent,
    );
    for (address, account) in accounts {
        bank.set_account(&address, account);
    }
    let greedy = Settings::greedy();
    for (nonce, (settings, source)) in [(greedy, SeedSource::None), (SAMPLED, SeedSource::Drawn)]
        .into_iter()
        .enumerate()
    {
        run_and_compare(
            &bank,
            &runner,
            &model,
            &artifact,
            Prompt::Tokens(vec![1]),
            steps,
            settings,
            source,
            nonce as u32,
        )
        .await;
    }
}
