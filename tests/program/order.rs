//! Order-free steps and seals: a Step advances the run from wherever it stands and a Seal
//! hashes the chunk at the cursor, so steps in flight together, in reverse or shuffled order,
//! duplicated, or interleaved with a stranger's random budgets end in the bytes of the in-order
//! run; the seals of a section in any order reach the independent SHA-256 chain.

use crate::fixtures::planted;
use crate::harness::{custom, seal_chunk, Bank, Published, PROGRAM};
use crate::runs::{offline, read_run, sealed, start, with_limit, OnChain};
use curta_client::run::onchain::expected::Shadow;
use curta_core::infer::{Model, Settings};
use curta_program::error::CurtaError;
use curta_program::instruction::{self as ix, OwnedPrompt};
use curta_program::run::MAX_STEP_BUDGET;
use curta_program::state::ModelState;
use solana_sdk::signature::{Keypair, Signer};
use solana_sdk::transaction::{Transaction, TransactionError};

const SAMPLED: Settings = Settings {
    temperature: 52_429,
    top_p: 58_982,
    seed: 7,
};

/// A small xorshift for the tests' budgets and orders (fixed seeds: the same cases every run).
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }

    fn shuffle<T>(&mut self, items: &mut [T]) {
        for i in (1..items.len()).rev() {
            items.swap(i, self.below(i as u64 + 1) as usize);
        }
    }
}

/// How a scenario sends its steps.
#[derive(Clone, Copy, Debug)]
enum Order {
    /// Budgets b1..bn, sent last to first, one transaction at a time.
    Reverse,
    /// The same budgets in a shuffled order.
    Shuffled,
    /// Every step sent twice (the second by another fee payer: another transaction).
    Duplicated,
    /// The runner's full-budget steps with a stranger's random budgets (1 included) between.
    Stranger,
    /// Eight steps in flight at once, landing in whatever order the bank takes them.
    InFlight,
}

fn step_tx(
    bank: &Bank,
    p: &Published,
    r: &OnChain,
    payer: &Keypair,
    ticket: u32,
    budget: u32,
) -> Transaction {
    let step = ix::step(&PROGRAM, &r.run, &p.model, &p.weights, ticket, budget);
    Transaction::new_signed_with_payer(
        &with_limit(vec![step]),
        Some(&payer.pubkey()),
        &[payer],
        bank.ctx.last_blockhash,
    )
}

/// Sends `txs` together (concurrently to the bank) and returns each one's result.
async fn process_together(
    bank: &Bank,
    txs: Vec<Transaction>,
) -> Vec<Result<(), solana_program_test::BanksClientError>> {
    let client = bank.ctx.banks_client.clone();
    futures::future::join_all(txs.into_iter().map(|tx| {
        let client = client.clone();
        async move { client.process_transaction(tx).await }
    }))
    .await
}

/// A new fee payer holding 1 SOL from the context's payer; the blockhash refreshed after it.
async fn funded_payer(bank: &mut Bank) -> Keypair {
    let payer = Keypair::new();
    bank.send(
        &[solana_system_interface::instruction::transfer(
            &bank.ctx.payer.pubkey(),
            &payer.pubkey(),
            1_000_000_000,
        )],
        &[],
    )
    .await
    .unwrap();
    bank.ctx.last_blockhash = bank.ctx.banks_client.get_latest_blockhash().await.unwrap();
    payer
}

/// Sends `txs` together (concurrently to the bank): each lands, or is refused as RunEnded.
async fn land_together(bank: &mut Bank, txs: Vec<Transaction>) -> (usize, usize) {
    let results = process_together(bank, txs).await;
    let (mut ok, mut ended) = (0, 0);
    for result in results {
        match result {
            Ok(()) => ok += 1,
            Err(e) => {
                let e: TransactionError = e.unwrap();
                assert_eq!(
                    e,
                    TransactionError::InstructionError(1, custom(CurtaError::RunEnded)),
                    "a step refused for another reason than the run's end"
                );
                ended += 1;
            }
        }
    }
    (ok, ended)
}

/// Every scenario ends with the bytes, tokens and text of the in-order run (curta-core off
/// chain with the full budget), and after every step the state is curta-core's at the point
/// of progress the chain reached.
#[tokio::test]
async fn steps_in_any_order_end_in_the_state_of_the_in_order_run() {
    let mut bank = Bank::start().await;
    let artifact = curta_tests::stories260k_artifact();
    let p = sealed(&mut bank, &artifact).await;
    let decoded = curta_core::decode(&artifact).unwrap();
    let model = Model::from_artifact(&decoded).unwrap();
    let prompt = vec![1, 306, 261, 300];
    let steps = 12;
    let expected = offline(&artifact, &prompt, steps, SAMPLED, MAX_STEP_BUDGET);
    let final_state = expected.steps.last().unwrap().clone();
    let stranger = Keypair::new();
    bank.send(
        &[solana_system_interface::instruction::transfer(
            &bank.ctx.payer.pubkey(),
            &stranger.pubkey(),
            10_000_000_000,
        )],
        &[],
    )
    .await
    .unwrap();
    let scenarios = [
        Order::Reverse,
        Order::Shuffled,
        Order::Duplicated,
        Order::Stranger,
        Order::InFlight,
    ];
    for (nonce, order) in scenarios.into_iter().enumerate() {
        let mut rng = Rng(0x9e37_79b9_7f4a_7c15 ^ nonce as u64);
        let r = start(
            &mut bank,
            &p,
            &artifact,
            nonce as u32,
            steps,
            SAMPLED,
            OwnedPrompt::Tokens(prompt.clone()),
        )
        .await;
        let mut start_state = read_run(&mut bank, &r.run).await.state;
        let mut shadow = Shadow::new(&model, std::mem::take(&mut start_state));
        // Budgets from 100,000 to the most: more steps than the in-order run's.
        let mut budgets: Vec<u32> = (0..4 * expected.steps.len())
            .map(|_| 100_000 + rng.below((MAX_STEP_BUDGET - 100_000) as u64) as u32)
            .collect();
        match order {
            Order::Reverse => budgets.reverse(),
            Order::Shuffled => rng.shuffle(&mut budgets),
            _ => {}
        }
        let (mut landed, mut ended, mut ticket) = (0usize, 0usize, 0u32);
        let mut budgets = budgets.into_iter();
        loop {
            let header = read_run(&mut bank, &r.run).await;
            shadow
                .follow(&header.state)
                .unwrap_or_else(|e| panic!("{order:?}, after {landed} steps: {e}"));
            if curta_core::le::u32_at(&header.state, 20) != 0 {
                break;
            }
            bank.ctx.last_blockhash = bank.ctx.banks_client.get_latest_blockhash().await.unwrap();
            let payer = bank.ctx.payer.insecure_clone();
            let txs: Vec<Transaction> = match order {
                Order::Reverse | Order::Shuffled => {
                    ticket += 1;
                    let budget = budgets.next().unwrap_or(MAX_STEP_BUDGET);
                    vec![step_tx(&bank, &p, &r, &payer, ticket, budget)]
                }
                Order::Duplicated => {
                    ticket += 1;
                    let budget = budgets.next().unwrap_or(MAX_STEP_BUDGET);
                    vec![
                        step_tx(&bank, &p, &r, &payer, ticket, budget),
                        step_tx(&bank, &p, &r, &stranger, ticket, budget),
                    ]
                }
                Order::Stranger => {
                    ticket += 1;
                    let theirs = match rng.below(3) {
                        0 => 1,
                        _ => 1 + rng.below(MAX_STEP_BUDGET as u64) as u32,
                    };
                    vec![
                        step_tx(&bank, &p, &r, &payer, ticket, MAX_STEP_BUDGET),
                        step_tx(&bank, &p, &r, &stranger, ticket, theirs),
                    ]
                }
                Order::InFlight => (0..8)
                    .map(|_| {
                        ticket += 1;
                        let budget = budgets.next().unwrap_or(MAX_STEP_BUDGET);
                        step_tx(&bank, &p, &r, &payer, ticket, budget)
                    })
                    .collect(),
            };
            // The duplicated and the stranger's pairs go one after the other; the in-flight
            // batch together.
            let (ok, late) = match order {
                Order::InFlight => land_together(&mut bank, txs).await,
                _ => {
                    let (mut ok, mut late) = (0, 0);
                    for tx in txs {
                        let (o, l) = land_together(&mut bank, vec![tx]).await;
                        ok += o;
                        late += l;
                    }
                    (ok, late)
                }
            };
            landed += ok;
            ended += late;
        }
        let header = read_run(&mut bank, &r.run).await;
        assert!(
            header.state == final_state,
            "{order:?}: the final state differs"
        );
        assert_eq!(header.text, expected.text, "{order:?}: text");
        assert_eq!(
            header.steps_landed as usize, landed,
            "{order:?}: steps landed"
        );
        assert!(
            landed > expected.steps.len(),
            "{order:?}: {landed} steps, the in-order run {}",
            expected.steps.len()
        );
        println!(
            "{order:?}: {landed} steps landed ({} in order), {ended} after the end",
            expected.steps.len()
        );
    }
}

/// The seals of one section sent together in a shuffled order (and from two fee payers) all
/// land and the model seals to the independent hash; a seal naming a chunk outside the
/// cursor's section, a later chunk before the pass began, or a second start are refused.
#[tokio::test]
async fn seals_of_a_section_land_in_any_order() {
    let mut bank = Bank::start().await;
    let artifact = curta_tests::stories260k_artifact();
    let p = planted(&mut bank, curta_tests::split_sections(&artifact)).await;
    let chunks = p.chunks();
    let zero = chunks.iter().filter(|(s, _)| *s == 0).count() as u32;
    let total = chunks.len() as u32;
    assert!(total - zero >= 4, "section 1 has {} chunks", total - zero);
    let seal = |chunk: u32, section: usize| {
        ix::seal(
            &PROGRAM,
            &p.model,
            &p.weights[section],
            p.creation,
            0,
            chunk,
        )
    };

    // Before the pass begins (the model Open), no later chunk.
    assert_eq!(
        bank.send(&[seal(1, 0)], &[]).await,
        Err(TransactionError::InstructionError(
            0,
            custom(CurtaError::WrongState)
        ))
    );
    seal_chunk(&mut bank, &p, 0, 0).await.unwrap();
    // A second start of the same pass (the model Sealing).
    assert_eq!(
        seal_chunk(&mut bank, &p, 0, 0).await,
        Err(TransactionError::InstructionError(
            0,
            custom(CurtaError::WrongState)
        ))
    );
    // Section zero's remaining chunks, in reverse.
    for chunk in (1..zero).rev() {
        bank.send(&[seal(chunk, 0)], &[]).await.unwrap();
    }
    assert_eq!(bank.model(&p.model).await.seal_cursor, zero);
    // The cursor is in section 1: a chunk number of section zero, or past the model, is
    // refused even with section 1's weight account.
    for chunk in [zero - 1, total, u32::MAX] {
        assert_eq!(
            bank.send(&[seal(chunk, 1)], &[]).await,
            Err(TransactionError::InstructionError(
                0,
                custom(CurtaError::UnexpectedChunk)
            )),
            "chunk {chunk}"
        );
    }
    // Section 1's seals, shuffled, in flight together.
    let mut order: Vec<u32> = (zero..total).collect();
    Rng(42).shuffle(&mut order);
    let other = funded_payer(&mut bank).await;
    let txs: Vec<Transaction> = order
        .iter()
        .enumerate()
        .map(|(i, &chunk)| {
            let payer = if i % 2 == 0 { &bank.ctx.payer } else { &other };
            Transaction::new_signed_with_payer(
                &[seal(chunk, 1)],
                Some(&payer.pubkey()),
                &[payer],
                bank.ctx.last_blockhash,
            )
        })
        .collect();
    let results = process_together(&bank, txs).await;
    assert!(results.iter().all(|r| r.is_ok()), "{results:?}");
    let model = bank.model(&p.model).await;
    assert_eq!(model.state, ModelState::Sealed);
    assert_eq!(model.running_hash, p.declared);
    assert_eq!(
        p.declared,
        curta_tests::sha256_chain(p.sections.iter().map(|s| s.as_slice()))
    );
    // A late seal of the section: the model is sealed. (Chunk numbers the batch used went out
    // past the harness's record of sent transactions, so the same bytes could be
    // AlreadyProcessed: this one went through `send`, which signs anew after a duplicate.)
    assert_eq!(
        bank.send(&[seal(u32::MAX, 1)], &[]).await,
        Err(TransactionError::InstructionError(
            0,
            custom(CurtaError::ModelSealed)
        ))
    );
}

/// Seals carrying every section's weight account: the whole pass in flight at once (the
/// shuffled seals of all 18 sections, half by another fee payer, with three extra cranks)
/// crosses every section boundary and reaches the independent SHA-256 chain; exactly the
/// chunks after 0 land, the extra cranks are refused once the model is Sealed. Before that,
/// the form's own refusals change nothing.
#[tokio::test]
async fn seals_carrying_every_section_land_in_any_order() {
    let mut bank = Bank::start().await;
    let p = planted(&mut bank, crate::fixtures::eighteen_sections()).await;
    let total = p.chunks().len() as u32;
    let every = |weights: &[solana_pubkey::Pubkey], chunk: u32| {
        ix::seal_every_section(&PROGRAM, &p.model, weights, p.creation, 0, chunk)
    };
    let mut watch = p.weights.clone();
    watch.push(p.model);
    let err = |e| TransactionError::InstructionError(0, custom(e));

    // Before the pass begins (the model Open).
    assert_eq!(
        bank.send(&[every(&p.weights, 1)], &[]).await,
        Err(err(CurtaError::WrongState))
    );
    seal_chunk(&mut bank, &p, 0, 0).await.unwrap();
    let cursor = bank.model(&p.model).await.seal_cursor;
    // One weight account short; the first two swapped (the cursor's section, 0 or 1, then
    // holds another section's account); a chunk number past the model.
    let refusals = [
        (p.weights[..17].to_vec(), 1, CurtaError::WrongAccountCount),
        (
            {
                let mut w = p.weights.clone();
                w.swap(0, 1);
                w
            },
            1,
            CurtaError::WrongSection,
        ),
        (p.weights.clone(), total, CurtaError::UnexpectedChunk),
    ];
    for (weights, chunk, expected) in refusals {
        bank.refused(&[every(&weights, chunk)], &[], 0, custom(expected), &watch)
            .await;
    }
    assert_eq!(bank.model(&p.model).await.seal_cursor, cursor);

    // Two other fee payers: the second sends the extra cranks, so that no two transactions
    // are the same bytes.
    let other = funded_payer(&mut bank).await;
    let third = funded_payer(&mut bank).await;
    // Every chunk number after the cursor, shuffled, and three more by the third payer.
    let mut tickets: Vec<(u32, bool)> = (cursor..total).map(|c| (c, false)).collect();
    tickets.extend([(1, true), (total / 2, true), (total - 1, true)]);
    Rng(18).shuffle(&mut tickets);
    let txs: Vec<Transaction> = tickets
        .iter()
        .enumerate()
        .map(|(i, &(chunk, extra))| {
            let payer = match (extra, i % 2) {
                (true, _) => &third,
                (false, 1) => &other,
                _ => &bank.ctx.payer,
            };
            let limit =
                solana_compute_budget_interface::ComputeBudgetInstruction::set_compute_unit_limit(
                    60_000,
                );
            Transaction::new_signed_with_payer(
                &[limit, every(&p.weights, chunk)],
                Some(&payer.pubkey()),
                &[payer],
                bank.ctx.last_blockhash,
            )
        })
        .collect();
    let results = process_together(&bank, txs).await;
    let landed = results.iter().filter(|r| r.is_ok()).count() as u32;
    assert_eq!(landed, total - cursor, "{results:?}");
    for result in results.into_iter().filter_map(Result::err) {
        assert_eq!(
            result.unwrap(),
            TransactionError::InstructionError(1, custom(CurtaError::ModelSealed))
        );
    }
    let model = bank.model(&p.model).await;
    assert_eq!(
        (model.state, model.seal_cursor),
        (ModelState::Sealed, total)
    );
    assert_eq!(
        model.running_hash,
        curta_tests::sha256_chain(p.sections.iter().map(|s| s.as_slice()))
    );
    for w in &p.weights {
        assert!(bank.header(w).await.frozen, "{w} frozen");
    }
}

/// CloseRun of an account at a run address whose header StartRun never wrote (a client made it
/// with a size that fits no run): closed by its runner naming the model and nonce, every
/// lamport back; without the names, with another nonce, another runner's key or no signature,
/// refused with nothing changed. A started run named with another nonce is refused too.
#[tokio::test]
async fn close_run_of_an_unstarted_account() {
    let mut bank = Bank::start().await;
    let artifact = curta_tests::stories260k_artifact();
    let p = sealed(&mut bank, &artifact).await;
    let runner = bank.mallory.insecure_clone();
    let stranger = bank.authority.insecure_clone();
    let me = runner.pubkey();
    let nonce = 77;
    let address = curta_program::run::run_address(&PROGRAM, &me, &p.model, nonce);
    let lamports = bank.rent.minimum_balance(100);
    let create = solana_system_interface::instruction::create_account_with_seed(
        &me,
        &address,
        &me,
        &curta_program::run::run_seed(&p.model, nonce),
        lamports,
        100,
        &PROGRAM,
    );
    bank.send(&[create], &[&runner]).await.unwrap();
    let watch = [address, me];
    let named = |nonce: u32, runner: &solana_sdk::pubkey::Pubkey| {
        ix::close_run_at(&PROGRAM, &address, runner, &p.model, nonce)
    };
    // No names: nothing says which run address this is.
    bank.refused(
        &[ix::close_run(&PROGRAM, &address, &me)],
        &[&runner],
        0,
        custom(CurtaError::NotARun),
        &watch,
    )
    .await;
    // Another nonce: another address.
    bank.refused(
        &[named(nonce + 1, &me)],
        &[&runner],
        0,
        custom(CurtaError::RunAddressMismatch),
        &watch,
    )
    .await;
    // A stranger naming the right model and nonce: the address derives from the runner.
    bank.refused(
        &[named(nonce, &stranger.pubkey())],
        &[&stranger],
        0,
        custom(CurtaError::RunAddressMismatch),
        &watch,
    )
    .await;
    // The runner's key without its signature.
    let mut unsigned = named(nonce, &me);
    unsigned.accounts[1].is_signer = false;
    bank.refused(
        &[unsigned],
        &[],
        0,
        solana_instruction::error::InstructionError::MissingRequiredSignature,
        &watch,
    )
    .await;
    let before = bank.lamports(&me).await;
    bank.send(&[named(nonce, &me)], &[&runner]).await.unwrap();
    assert_eq!(bank.lamports(&me).await, before + lamports);
    assert!(bank.account(&address).await.is_none());

    // A started run named with another nonce or model is refused; with its own, closed.
    let r = start(
        &mut bank,
        &p,
        &artifact,
        5,
        2,
        Settings::greedy(),
        OwnedPrompt::Tokens(vec![1]),
    )
    .await;
    let other = ix::close_run_at(&PROGRAM, &r.run, &me, &p.model, 6);
    bank.refused(
        &[other],
        &[&runner],
        0,
        custom(CurtaError::RunAddressMismatch),
        &[r.run, me],
    )
    .await;
    let rent = bank.lamports(&r.run).await;
    let before = bank.lamports(&me).await;
    bank.send(
        &[ix::close_run_at(&PROGRAM, &r.run, &me, &p.model, 5)],
        &[&runner],
    )
    .await
    .unwrap();
    assert_eq!(bank.lamports(&me).await, before + rent);
}
