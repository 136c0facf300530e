//! `client run --on-chain` with steps in flight and strangers stepping: a run finishes, equal
//! to `client run`, whoever else stepped it; `client close-run` returns every lamport of a
//! finished and an unstarted run; `client runs` lists them; a run address someone funded still
//! takes a run.

use super::*;
use curta_client::run::onchain::{close_run, run_on_chain, runs, RunRef, RunRequest};
use curta_client::run::{generate, Prompt};
use curta_client::{publish, Error};
use curta_core::infer::Settings;
use curta_program::instruction as ix;
use curta_program::run::{run_address, run_len, run_seed, MAX_STEP_BUDGET};
use solana_instruction::Instruction;

const SAMPLED: Settings = Settings {
    temperature: 52_429,
    top_p: 58_982,
    seed: 5,
};

/// curta-core's tokens and text off chain (what `client run` prints).
fn off_chain(
    artifact: &[u8],
    prompt: &[u32],
    steps: u32,
    settings: Settings,
) -> (Vec<u32>, String) {
    let artifact = curta_core::decode(artifact).unwrap();
    let g = generate(&artifact, prompt, steps, settings, 1, |_, _| {}).unwrap();
    (g.tokens, g.text)
}

struct Setup {
    bank: BankTransport,
    runner: Keypair,
    stranger: Keypair,
    artifact: Vec<u8>,
    model: Pubkey,
    weights: Vec<Pubkey>,
}

async fn setup() -> Setup {
    quiet();
    let (runner, stranger) = (Keypair::new(), Keypair::new());
    let bank =
        BankTransport::start(&[(runner.pubkey(), 100 * SOL), (stranger.pubkey(), 10 * SOL)]).await;
    let artifact = curta_tests::stories260k_artifact();
    publish(&bank, &runner, &artifact, true, &options())
        .await
        .unwrap();
    let model = model_of(&runner.pubkey(), &artifact);
    let account = bank
        .get_accounts(&[model])
        .await
        .unwrap()
        .remove(0)
        .unwrap();
    let sealed = curta_program::state::Model::unpack(&account.data).unwrap();
    let weights = sealed.weight_accounts[..2].to_vec();
    Setup {
        bank,
        runner,
        stranger,
        artifact,
        model,
        weights,
    }
}

impl Setup {
    fn step(&self, nonce: u32, ticket: u32, budget: u32) -> Instruction {
        let address = run_address(
            &curta_program::id(),
            &self.runner.pubkey(),
            &self.model,
            nonce,
        );
        ix::step(
            &curta_program::id(),
            &address,
            &self.model,
            &self.weights,
            ticket,
            budget,
        )
    }

    /// The runner creates and starts run `nonce` by hand (as an interrupted client leaves it).
    async fn start_by_hand(
        &self,
        nonce: u32,
        steps: u32,
        settings: Settings,
        prompt: &[u32],
    ) -> u64 {
        let prompt = ix::OwnedPrompt::Tokens(prompt.to_vec());
        start_run_by_hand(
            &self.bank,
            &self.runner,
            &self.artifact,
            &self.model,
            nonce,
            steps,
            &settings,
            prompt,
        )
        .await
        .rent
    }
}

/// A stranger steps the run first with budgets of 1 and random budgets: the client treats those
/// steps as progress, finishes, equals `client run`, closes; and a run the stranger steps
/// while the client's steps are in flight ends the same.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_strangers_steps_are_progress() {
    let s = setup().await;
    let me = s.runner.pubkey();
    let prompt = vec![1, 306, 261];
    let (steps, settings) = (10, SAMPLED);
    let (tokens, text) = off_chain(&s.artifact, &prompt, steps, settings);
    let rent = s.start_by_hand(0, steps, settings, &prompt).await;
    for (ticket, budget) in [1, 1, 7_000, 1, 400_000, 1, MAX_STEP_BUDGET]
        .into_iter()
        .enumerate()
    {
        send_limited(&s.bank, &s.stranger, &[s.step(0, ticket as u32, budget)])
            .await
            .unwrap();
    }
    s.bank.settle().await;
    let before = s.bank.balance(&me).await.unwrap();
    let mut request = RunRequest::new(Prompt::Tokens(prompt.clone()), Some(steps), settings);
    request.nonce = 0;
    // Started by hand with the runner's seed (tests/client.rs): chosen.
    request.source = curta_program::run::SeedSource::Chosen;
    let mut streamed = vec![];
    let run = run_on_chain(&s.bank, &s.runner, &s.model, &request, |id, _| {
        streamed.push(id)
    })
    .await
    .unwrap();
    assert_eq!(run.tokens, tokens);
    assert_eq!(run.text, text);
    assert_eq!(streamed, tokens);
    assert_eq!(run.resumed_from, Some(7));
    assert!(run.closed);
    assert_eq!(run.steps_landed, 7 + run.steps_sent);
    assert_eq!(s.bank.balance(&me).await.unwrap(), before + rent - run.fees);

    // The stranger stepping alongside the client's steps in flight.
    let address = run_address(&curta_program::id(), &me, &s.model, 1);
    let mut request = RunRequest::new(Prompt::Tokens(prompt.clone()), Some(steps), settings);
    request.nonce = 1;
    let client = run_on_chain(&s.bank, &s.runner, &s.model, &request, |_, _| {});
    let stranger = async {
        let mut landed = 0;
        for ticket in 0..400u32 {
            let exists = s.bank.get_accounts(&[address]).await.unwrap()[0].is_some();
            if exists
                && send_limited(
                    &s.bank,
                    &s.stranger,
                    &[s.step(1, ticket, 1 + ticket * 997 % 300_000)],
                )
                .await
                .is_ok()
            {
                landed += 1;
            }
            if landed > 0 && !exists {
                break;
            }
            tokio::time::sleep(std::time::Duration::from_millis(2)).await;
        }
        landed
    };
    let (run, landed) = tokio::join!(client, stranger);
    let run = run.unwrap();
    // The client's run draws its seed (the stranger's steps in the start slot are refused,
    // and any of its later steps may be the one that draws): curta-core with that seed.
    assert_eq!((run.seed_source, run.runner_seed), ("drawn", settings.seed));
    let drawn = Settings {
        seed: run.seed,
        ..settings
    };
    let (tokens, text) = off_chain(&s.artifact, &prompt, steps, drawn);
    assert_eq!(run.tokens, tokens);
    assert_eq!(run.text, text);
    assert!(run.closed);
    assert_eq!(run.steps_by_others, landed);
    println!(
        "with a stranger alongside: {} steps sent, {} by the stranger, {} after the end",
        run.steps_sent, landed, run.steps_after_end
    );
}

/// `client close-run` returns every lamport of a finished run kept with --keep and of an
/// account at a run address whose header StartRun never wrote (named by model and nonce);
/// `client runs` lists both first; a run address someone funded still takes a run.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn close_run_and_runs_and_a_funded_address() {
    let s = setup().await;
    let (program, me) = (curta_program::id(), s.runner.pubkey());
    let prompt = vec![1];
    let (tokens, _) = off_chain(&s.artifact, &prompt, 6, Settings::greedy());

    // A finished run, kept.
    let mut request = RunRequest::new(Prompt::Tokens(prompt.clone()), Some(6), Settings::greedy());
    request.nonce = 2;
    request.keep = true;
    let kept = run_on_chain(&s.bank, &s.runner, &s.model, &request, |_, _| {})
        .await
        .unwrap();
    assert_eq!(kept.tokens, tokens);
    let kept_address = run_address(&program, &me, &s.model, 2);

    // An unstarted account at nonce 9: 100 bytes, which fits no run.
    let unstarted = run_address(&program, &me, &s.model, 9);
    let lamports = s.bank.rent_minimum(100).await.unwrap();
    let create = solana_system_interface::instruction::create_account_with_seed(
        &me,
        &unstarted,
        &me,
        &run_seed(&s.model, 9),
        lamports,
        100,
        &program,
    );
    send_limited(&s.bank, &s.runner, &[create]).await.unwrap();
    s.bank.settle().await;

    let listed = runs(&s.bank, &me, &s.model, 0..16).await.unwrap();
    let summary: Vec<(u32, &str, u32, u64)> = listed
        .iter()
        .map(|r| (r.nonce, r.status, r.tokens, r.rent))
        .collect();
    assert_eq!(
        summary,
        vec![
            (2, "steps done", 6, kept.rent_held),
            (9, "unstarted", 0, lamports)
        ]
    );

    // The unstarted account: by address alone the client cannot name it to the program.
    let err = close_run(&s.bank, &s.runner, RunRef::Address(unstarted), None)
        .await
        .unwrap_err();
    assert!(
        matches!(&err, Error::Refused(m) if m.contains("name it by --model and --nonce")),
        "{err}"
    );
    // A stranger naming the model and nonce derives its own address: nothing there.
    let err = close_run(
        &s.bank,
        &s.stranger,
        RunRef::Nonce {
            model: s.model,
            nonce: 9,
        },
        None,
    )
    .await
    .unwrap_err();
    assert!(err.to_string().contains("does not exist"), "{err}");
    let fee = 5_000;
    let before = s.bank.balance(&me).await.unwrap();
    let closed = close_run(
        &s.bank,
        &s.runner,
        RunRef::Nonce {
            model: s.model,
            nonce: 9,
        },
        None,
    )
    .await
    .unwrap();
    assert_eq!((closed.returned, closed.fee), (lamports, fee));
    assert_eq!(s.bank.balance(&me).await.unwrap(), before + lamports - fee);
    assert!(s.bank.get_accounts(&[unstarted]).await.unwrap()[0].is_none());

    // The kept run, by its address.
    let before = s.bank.balance(&me).await.unwrap();
    let closed = close_run(&s.bank, &s.runner, RunRef::Address(kept_address), None)
        .await
        .unwrap();
    assert_eq!(closed.returned, kept.rent_held);
    assert_eq!(
        s.bank.balance(&me).await.unwrap(),
        before + kept.rent_held - fee
    );
    assert!(runs(&s.bank, &me, &s.model, 0..16)
        .await
        .unwrap()
        .is_empty());

    // A stranger funds run address 4 with 890,880 lamports (a zero-byte account's rent):
    // create_account_with_seed would fail there; the client tops up, allocates and assigns,
    // and the close returns the stranger's lamports to the runner too.
    let funded_address = run_address(&program, &me, &s.model, 4);
    let gift = 890_880;
    send_limited(
        &s.bank,
        &s.stranger,
        &[solana_system_interface::instruction::transfer(
            &s.stranger.pubkey(),
            &funded_address,
            gift,
        )],
    )
    .await
    .unwrap();
    s.bank.settle().await;
    let before = s.bank.balance(&me).await.unwrap();
    let mut request = RunRequest::new(Prompt::Tokens(prompt.clone()), Some(6), Settings::greedy());
    request.nonce = 4;
    let run = run_on_chain(&s.bank, &s.runner, &s.model, &request, |_, _| {})
        .await
        .unwrap();
    assert_eq!(run.tokens, tokens);
    let config = curta_core::decode(&s.artifact).unwrap().config();
    let rent = s
        .bank
        .rent_minimum(run_len(&config, 6) as usize)
        .await
        .unwrap();
    assert_eq!(run.rent, rent - gift);
    assert_eq!(s.bank.balance(&me).await.unwrap(), before + gift - run.fees);
    assert!(s.bank.get_accounts(&[funded_address]).await.unwrap()[0].is_none());
}
