//! `client run --on-chain` when a stranger steps the run at the worst moments (issue 40's first
//! review item): the step that draws a drawn run's seed, the steps that continue a text prompt's
//! encoding, and the whole run, sent by someone else just before the client's own. Each
//! refusal that means "someone else did it" (`RunEnded`, `SeedNotReady` while the stranger's
//! encoding ended in the start slot) makes the client re-read the run and carry on: the run
//! succeeds with the tokens and text the run account holds, equal to the off-chain run with
//! the drawn seed, is closed, and every lamport of the runner and the stranger is accounted
//! for. A refusal that does not mean that (`SeedExpired`) still fails, naming the run account
//! and the refusal, and the rent comes back.

use super::long_prompt::encoding_steps;
use super::onchain_run::{fee_per_transaction, off_chain, step_count};
use super::*;
use curta_client::run::onchain::account::{read_run, Found};
use curta_client::run::onchain::{replay, run_on_chain, RunOnChainError, RunRequest};
use curta_client::run::Prompt;
use curta_client::{publish, Error, Simulation, TxStatus};
use curta_core::infer::Settings;
use curta_program::error::CurtaError;
use curta_program::instruction as ix;
use curta_program::run::{run_address, SeedSource, MAX_STEP_BUDGET};
use solana_account::Account;
use solana_hash::Hash;
use solana_instruction::error::InstructionError;
use solana_message::VersionedMessage;
use solana_signature::Signature;
use solana_transaction::versioned::VersionedTransaction;
use solana_transaction_error::TransactionError;

const SAMPLED: Settings = Settings {
    temperature: 52_429,
    top_p: 58_982,
    seed: 40,
};

/// When the stranger acts: right after the client moved the bank past the start slot (the
/// client's next transaction is the step that draws the seed), or just before the client's
/// first Step is handed to the bank.
#[derive(Clone, Copy, PartialEq, Debug)]
enum When {
    PassSlot,
    FirstStep,
}

/// What the stranger does then: the rest of the prompt's encoding, the whole run, or (no
/// stranger at all) move the bank 512 slots on, past the start slot's life in SlotHashes.
#[derive(Clone, Copy, PartialEq, Debug)]
enum Act {
    Encode,
    Finish,
    Expire,
}

/// What the stranger did, and the run account as it left it (`client run --from-run`).
struct Acted {
    landed: u32,
    refused: u32,
    chain_tokens: Vec<u32>,
    chain_text: Vec<u8>,
    seed: u64,
}

/// The bank, with a stranger who steps the run once, at `when`, before the client goes on.
struct Strangers<'a> {
    bank: &'a BankTransport,
    stranger: &'a Keypair,
    run: Pubkey,
    model: Pubkey,
    weights: Vec<Pubkey>,
    when: When,
    act: Act,
    acted: tokio::sync::Mutex<Option<Acted>>,
}

impl Strangers<'_> {
    async fn act_once(&self) {
        let mut acted = self.acted.lock().await;
        if acted.is_some() {
            return;
        }
        let (mut landed, mut refused) = (0, 0);
        let header = |found: Found| match found {
            Found::Run(header, _, _) => header,
            other => panic!("the stranger finds no run: {other:?}"),
        };
        if self.act == Act::Expire {
            let client = self.bank.banks_client();
            for _ in 0..512 {
                let clock: solana_sdk::clock::Clock = client.get_sysvar().await.unwrap();
                self.bank.pass_slot(clock.slot).await.unwrap();
            }
        } else {
            for ticket in 0..10_000 {
                let h = header(read_run(self.bank, &self.run).await.unwrap());
                if !h.encoding && self.act == Act::Encode {
                    break;
                }
                if !h.encoding && h.seed_source == SeedSource::Drawn && h.seed == 0 {
                    // The stranger's own step in the start slot would be refused.
                    self.bank.pass_slot(h.start_slot).await.unwrap();
                }
                let step = ix::step(
                    &curta_program::id(),
                    &self.run,
                    &self.model,
                    &self.weights,
                    1_000_000 + ticket,
                    MAX_STEP_BUDGET,
                );
                match send_limited(self.bank, self.stranger, &[step]).await {
                    Ok(()) => landed += 1,
                    Err(error) => {
                        assert_eq!(
                            error,
                            TransactionError::InstructionError(
                                1,
                                InstructionError::Custom(CurtaError::RunEnded as u32)
                            )
                        );
                        refused += 1;
                        break;
                    }
                }
            }
        }
        let (chain_tokens, chain_text, seed) = match self.act {
            Act::Expire => (vec![], vec![], 0),
            _ => {
                let replay = replay(self.bank, &self.run).await.unwrap();
                (replay.chain_tokens, replay.chain_text, replay.seed)
            }
        };
        *acted = Some(Acted {
            landed,
            refused,
            chain_tokens,
            chain_text,
            seed,
        });
    }

    /// Whether a transaction carries a Step of this program (tag 7).
    fn is_step(tx: &VersionedTransaction) -> bool {
        let keys = tx.message.static_account_keys();
        tx.message.instructions().iter().any(|i| {
            keys[i.program_id_index as usize] == curta_program::id() && i.data.first() == Some(&7)
        })
    }
}

impl Transport for Strangers<'_> {
    fn describe(&self) -> String {
        self.bank.describe()
    }
    fn profile(&self) -> curta_client::Profile {
        self.bank.profile()
    }
    fn program_id(&self) -> Pubkey {
        self.bank.program_id()
    }
    async fn get_accounts(&self, a: &[Pubkey]) -> Result<Vec<Option<Account>>, Error> {
        self.bank.get_accounts(a).await
    }
    async fn balance(&self, a: &Pubkey) -> Result<u64, Error> {
        self.bank.balance(a).await
    }
    async fn rent_minimum(&self, len: usize) -> Result<u64, Error> {
        self.bank.rent_minimum(len).await
    }
    async fn fee_for_message(&self, m: &VersionedMessage) -> Result<u64, Error> {
        self.bank.fee_for_message(m).await
    }
    async fn latest_blockhash(&self) -> Result<(Hash, u64), Error> {
        self.bank.latest_blockhash().await
    }
    async fn blockhash_expired(&self, h: &Hash, last_valid: u64) -> Result<bool, Error> {
        self.bank.blockhash_expired(h, last_valid).await
    }
    async fn send(&self, txs: &[VersionedTransaction]) -> Result<(), Error> {
        if self.when == When::FirstStep && txs.iter().any(Self::is_step) {
            self.act_once().await;
        }
        self.bank.send(txs).await
    }
    async fn statuses(&self, s: &[Signature]) -> Result<Vec<TxStatus>, Error> {
        self.bank.statuses(s).await
    }
    async fn finalized(&self, s: &[Signature]) -> Result<Vec<bool>, Error> {
        self.bank.finalized(s).await
    }
    fn ledger(&self) -> &curta_client::Ledger {
        self.bank.ledger()
    }
    async fn simulate(&self, tx: &VersionedTransaction) -> Result<Simulation, Error> {
        self.bank.simulate(tx).await
    }
    async fn pass_slot(&self, slot: u64) -> Result<(), Error> {
        self.bank.pass_slot(slot).await?;
        if self.when == When::PassSlot {
            self.act_once().await;
        }
        Ok(())
    }
    async fn wait_for_progress(&self) {
        self.bank.wait_for_progress().await
    }
}

struct Setup {
    bank: BankTransport,
    runner: Keypair,
    stranger: Keypair,
    artifact: Vec<u8>,
    model: Pubkey,
    weights: Vec<Pubkey>,
    fee: u64,
}

async fn setup(artifact: Vec<u8>) -> Setup {
    quiet();
    let (runner, stranger) = (Keypair::new(), Keypair::new());
    let bank =
        BankTransport::start(&[(runner.pubkey(), 100 * SOL), (stranger.pubkey(), 10 * SOL)]).await;
    publish(&bank, &runner, &artifact, true, &options())
        .await
        .unwrap();
    let model = model_of(&runner.pubkey(), &artifact);
    let weights = weights_of(&bank, &model).await;
    let fee = fee_per_transaction(&bank, &runner.pubkey()).await;
    Setup {
        bank,
        runner,
        stranger,
        artifact,
        model,
        weights,
        fee,
    }
}

/// What one run with a stranger gave: the client's report (or error), what the stranger did,
/// and the runner's and the stranger's balances before.
struct Outcome {
    run: Result<curta_client::run::onchain::OnChainRun, RunOnChainError>,
    acted: Acted,
    address: Pubkey,
    runner_before: u64,
    stranger_before: u64,
}

impl Setup {
    async fn run(&self, nonce: u32, prompt: &Prompt, steps: u32, when: When, act: Act) -> Outcome {
        let address = run_address(
            &curta_program::id(),
            &self.runner.pubkey(),
            &self.model,
            nonce,
        );
        let strangers = Strangers {
            bank: &self.bank,
            stranger: &self.stranger,
            run: address,
            model: self.model,
            weights: self.weights.clone(),
            when,
            act,
            acted: tokio::sync::Mutex::new(None),
        };
        self.bank.settle().await;
        let runner_before = self.bank.balance(&self.runner.pubkey()).await.unwrap();
        let stranger_before = self.bank.balance(&self.stranger.pubkey()).await.unwrap();
        let mut request = RunRequest::new(prompt.clone(), Some(steps), SAMPLED);
        request.nonce = nonce;
        request.source = SeedSource::Drawn;
        let run = run_on_chain(&strangers, &self.runner, &self.model, &request, |_, _| {}).await;
        let acted = strangers
            .acted
            .into_inner()
            .unwrap_or_else(|| panic!("the stranger never acted ({when:?}, {act:?})"));
        Outcome {
            run,
            acted,
            address,
            runner_before,
            stranger_before,
        }
    }

    /// The client's run succeeded with what the run account held when the stranger was done,
    /// equal to `client run` off chain with the drawn seed; the run is closed, the runner paid
    /// exactly the fees of its `transactions` (the rent came back) and the stranger exactly
    /// its steps' fees.
    async fn check(
        &self,
        o: Outcome,
        prompt: &Prompt,
        steps: u32,
        transactions: u64,
    ) -> curta_client::run::onchain::OnChainRun {
        let run = o.run.unwrap_or_else(|e| panic!("{e}"));
        let acted = &o.acted;
        let (tokens, text) = off_chain(
            &self.artifact,
            prompt,
            steps,
            Settings {
                seed: run.seed,
                ..SAMPLED
            },
        );
        assert_eq!((run.seed_source, run.runner_seed), ("drawn", SAMPLED.seed));
        assert_ne!(run.seed, SAMPLED.seed);
        assert_eq!(run.seed_slot, run.start_slot);
        assert_eq!(run.tokens, tokens);
        assert_eq!(run.text_bytes, text);
        assert_eq!(run.text, String::from_utf8_lossy(&text));
        if acted.seed != 0 {
            // The stranger drew the seed and finished the run: the client reports its run.
            assert_eq!(acted.seed, run.seed);
            assert_eq!(acted.chain_tokens, run.tokens);
            assert_eq!(acted.chain_text, run.text_bytes);
        }
        assert!(run.closed);
        assert_eq!(run.rent_held, 0);
        assert!(matches!(
            read_run(&self.bank, &o.address).await.unwrap(),
            Found::Nothing
        ));
        assert_eq!(run.transactions, transactions, "the client's transactions");
        assert_eq!(run.fees, self.fee * transactions);
        self.bank.settle().await;
        assert_eq!(
            self.bank.balance(&self.runner.pubkey()).await.unwrap(),
            o.runner_before - run.fees,
            "the runner: the rent came back, only the fees are spent"
        );
        assert_eq!(
            self.bank.balance(&self.stranger.pubkey()).await.unwrap(),
            o.stranger_before - self.fee * (acted.landed + acted.refused) as u64,
            "the stranger: the fees of its steps"
        );
        // Every step that landed is the client's or the stranger's, and they are the steps of
        // the encoding and of the run, counted here from curta-core.
        let encoding = match prompt {
            Prompt::Text(text) => encoding_steps(&self.artifact, text),
            Prompt::Tokens(_) => 0,
        };
        let forward = step_count(
            &self.artifact,
            prompt,
            steps,
            Settings {
                seed: run.seed,
                ..SAMPLED
            },
        );
        assert_eq!(run.steps_landed, encoding + forward);
        assert_eq!(run.steps_landed, run.steps_sent + acted.landed);
        assert_eq!(run.steps_by_others, acted.landed);
        run
    }
}

/// Issue 40's reproduction: a one-token drawn run whose first step (the one that draws the
/// seed, and here ends the run) a stranger sends just before the client's. The client's step
/// is refused with RunEnded; the client reads the run again, finds it finished, reports the
/// stranger's draw and tokens, and closes it. Then a four-token run the stranger steps to its
/// end the same way.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_drawn_run_a_stranger_drew_and_finished_first_is_reported() {
    let s = setup(curta_tests::stories260k_artifact()).await;
    let prompt = Prompt::Tokens(vec![1, 306, 261]);
    for (nonce, steps) in [(0, 1), (1, 4)] {
        let o = s
            .run(nonce, &prompt, steps, When::PassSlot, Act::Finish)
            .await;
        // The stranger's steps landed, then one was refused after the end.
        assert!(o.acted.landed >= 1);
        assert_eq!(o.acted.refused, 1);
        // The client: StartRun, its drawing step (refused: RunEnded) and CloseRun.
        let run = s.check(o, &prompt, steps, 3).await;
        assert_eq!(run.tokens.len(), steps as usize);
        assert_eq!(run.steps_sent, 0);
        assert_eq!(
            (
                run.steps_after_end,
                run.steps_out_of_reach,
                run.steps_before_seed
            ),
            (1, 0, 0)
        );
        assert_eq!(run.failed_transactions, 1);
    }
}

/// A text prompt of the 32,000-token tokenizer that StartRun cannot finish tokenizing: a
/// stranger sends the encoding steps just before the client's, which then land after the
/// encoding ended, in the start slot of a drawn run (SeedNotReady: the step that ended the
/// encoding started the run, and the next one must draw). The client reads the run again and
/// goes on: draws the seed, steps, equals `client run`. Then a stranger tokenizes and runs the
/// whole run before the client's first step (RunEnded).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_text_prompt_a_stranger_tokenized_or_finished_first_goes_on() {
    let s = setup(curta_tests::tokenizer_bin_artifact()).await;
    let text = curta_tests::STORY[..400].to_vec();
    let encoding = encoding_steps(&s.artifact, &text);
    assert!(encoding >= 2, "400 bytes fit StartRun's share");
    let prompt = Prompt::Text(text);
    let steps = 2;

    let o = s.run(0, &prompt, steps, When::FirstStep, Act::Encode).await;
    assert_eq!((o.acted.landed, o.acted.refused), (encoding, 0));
    let seed = o.run.as_ref().unwrap_or_else(|e| panic!("{e}")).seed;
    let forward = step_count(&s.artifact, &prompt, steps, Settings { seed, ..SAMPLED });
    // StartRun, the client's encoding steps (refused: SeedNotReady), the steps of the run
    // (the first draws the seed) and CloseRun.
    let run = s
        .check(o, &prompt, steps, 1 + encoding as u64 + forward as u64 + 1)
        .await;
    assert_eq!(run.prompt_sent_as, Some("text"));
    assert_eq!(run.encoding_steps, 0);
    assert_eq!(run.steps_sent, forward);
    assert_eq!(
        (
            run.steps_after_end,
            run.steps_out_of_reach,
            run.steps_before_seed
        ),
        (0, 0, encoding)
    );
    assert_eq!(run.failed_transactions, encoding as u64);

    let o = s.run(1, &prompt, steps, When::FirstStep, Act::Finish).await;
    assert_eq!(o.acted.refused, 1);
    // StartRun, the client's encoding steps (refused: RunEnded) and CloseRun.
    let run = s.check(o, &prompt, steps, 1 + encoding as u64 + 1).await;
    assert_eq!((run.steps_sent, run.encoding_steps), (0, 0));
    assert_eq!(
        (
            run.steps_after_end,
            run.steps_out_of_reach,
            run.steps_before_seed
        ),
        (encoding, 0, 0)
    );
    assert_eq!(run.failed_transactions, encoding as u64);
}

/// A refusal nobody else caused still stops the run: the start slot left SlotHashes before
/// the client's drawing step landed (SeedExpired), so no step can ever draw. The error names
/// the run account and the refusal, the run is closed and its rent is back: the runner paid
/// the fees of StartRun, the refused step and CloseRun.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refusal_nobody_else_caused_still_fails_and_returns_the_rent() {
    let s = setup(curta_tests::stories260k_artifact()).await;
    let prompt = Prompt::Tokens(vec![1, 306, 261]);
    let o = s.run(0, &prompt, 2, When::PassSlot, Act::Expire).await;
    let err = o.run.unwrap_err();
    match &err {
        RunOnChainError::StepRefused {
            address,
            error,
            after,
            ..
        } => {
            assert_eq!(*address, o.address);
            assert!(error.contains("SeedExpired"), "{error}");
            assert_eq!(
                after.as_deref(),
                Some(
                    format!(
                        "the run account {} was closed and its rent returned to {}",
                        o.address,
                        s.runner.pubkey()
                    )
                    .as_str()
                )
            );
        }
        other => panic!("expected StepRefused, got {other}"),
    }
    assert!(err.to_string().contains(&o.address.to_string()), "{err}");
    assert!(matches!(
        read_run(&s.bank, &o.address).await.unwrap(),
        Found::Nothing
    ));
    s.bank.settle().await;
    assert_eq!(
        s.bank.balance(&s.runner.pubkey()).await.unwrap(),
        o.runner_before - 3 * s.fee
    );
}
