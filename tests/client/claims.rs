//! Optimistic claims through the client on the bank running the SBF binary (issue 40):
//! `client claim` of an honest greedy and an honest drawn claim settles at the end of its
//! window and `client close-claim` returns every lamport but the fees; `client claims` lists
//! them; a wrong claim (one id changed) is challenged by `client watch --challenge`, its
//! dispute run stepped and resolved, the claim overturned and both bonds and the run's rent
//! paid to the watcher; a watcher stopped mid-dispute and started again finishes it; bad input
//! is refused with the option named and nothing spent.

use super::onchain_run::{fee_per_transaction, off_chain};
use super::*;
use curta_client::claim::answer::{compute, Answer};
use curta_client::claim::open::{open, post_answer};
use curta_client::claim::plan::plan;
use curta_client::claim::{
    claim, claims, close_claim, watch, ClaimError, ClaimRequest, WatchEvent, WatchOptions,
};
use curta_client::model::fetch_sealed;
use curta_client::publish;
use curta_client::run::Prompt;
use curta_client::send::{Engine, Format, Progress};
use curta_client::TxVersion;
use curta_core::infer::Settings;
use curta_interface::claim::{claim_address, ClaimHeader, ClaimState};
use curta_program::run::{drawn_seed, SeedSource};
use std::ops::ControlFlow;

const SAMPLED: Settings = Settings {
    temperature: 52_429,
    top_p: 58_982,
    seed: 7,
};

/// A bank with stories260K published and sealed by a publisher of its own, a claimer and a
/// watcher holding 100 SOL each.
async fn setup() -> (BankTransport, Pubkey, Vec<u8>, Keypair, Keypair) {
    quiet();
    let artifact = curta_tests::stories260k_artifact();
    let (publisher, claimer, watcher) = (Keypair::new(), Keypair::new(), Keypair::new());
    let bank = BankTransport::start(&[
        (publisher.pubkey(), 100 * SOL),
        (claimer.pubkey(), 100 * SOL),
        (watcher.pubkey(), 100 * SOL),
    ])
    .await;
    publish(&bank, &publisher, &artifact, true, &options())
        .await
        .unwrap();
    let model = model_of(&publisher.pubkey(), &artifact);
    (bank, model, artifact, claimer, watcher)
}

async fn read_claim_header(bank: &BankTransport, address: &Pubkey) -> (ClaimHeader, u64) {
    let account = bank
        .get_accounts(&[*address])
        .await
        .unwrap()
        .remove(0)
        .unwrap();
    (
        ClaimHeader::unpack(&account.data).unwrap(),
        account.lamports,
    )
}

fn request(prompt: Prompt, steps: u32, settings: Settings, source: SeedSource) -> ClaimRequest {
    let mut request = ClaimRequest::new(prompt, Some(steps), settings);
    request.source = source;
    request.tx_version = TxVersion::Legacy;
    request
}

/// Claims `request` with `client claim` (waiting until settled), checks the answer against
/// the off-chain run with the seed in force, the report's slots and lamports, then closes the
/// claim: the claimer ends lower by exactly the fees of its three transactions.
async fn claim_settle_close(
    bank: &BankTransport,
    claimer: &Keypair,
    model: &Pubkey,
    artifact: &[u8],
    request: ClaimRequest,
) -> Pubkey {
    let me = claimer.pubkey();
    let fee = fee_per_transaction(bank, &me).await;
    let before = bank.balance(&me).await.unwrap();
    let mut stages = Vec::new();
    let report = claim(bank, claimer, model, &request, |s| stages.push(s))
        .await
        .unwrap_or_else(|e| panic!("{request:?}: {e}"));
    let address: Pubkey = report.claim.parse().unwrap();
    assert_eq!(stages.len(), 3, "opened, computed, answered: {stages:?}");
    let (header, lamports) = read_claim_header(bank, &address).await;
    assert_eq!(
        address,
        claim_address(&curta_program::id(), &me, model, header.nonce)
    );
    // The seed in force: none, the claimer's, or drawn from the open slot's hash with the
    // claim's address where a run's stands.
    let seed = match request.source {
        SeedSource::None => 0,
        SeedSource::Chosen => request.settings.seed,
        SeedSource::Drawn => {
            let drawn = drawn_seed(
                request.settings.seed,
                &address,
                header.open_slot,
                &header.slot_hash,
            );
            assert_ne!(header.slot_hash, [0; 32]);
            assert_ne!(drawn, request.settings.seed);
            drawn
        }
    };
    assert_eq!((report.seed, header.seed), (seed, seed));
    let (tokens, text) = off_chain(
        artifact,
        &request.prompt,
        request.steps.unwrap(),
        Settings {
            seed,
            ..request.settings
        },
    );
    assert_eq!(report.tokens, tokens);
    assert_eq!(report.text_bytes, text);
    assert_eq!(header.token_count as usize, tokens.len());
    assert_eq!(
        header.answer_hash,
        curta_interface::claim::answer_hash(&tokens, &text)
    );
    assert!(header.answer_slot > header.open_slot || request.source != SeedSource::Drawn);
    assert_eq!(report.state, "settled");
    assert!(report.settled && report.slot > header.answer_slot + header.window as u64);
    assert_eq!(header.state, ClaimState::Answered);
    // Open and answer: two transactions, the rent and the bond held in the claim.
    assert_eq!((report.transactions, report.failed_transactions), (2, 0));
    assert_eq!(report.fees, 2 * fee);
    assert_eq!(report.bond, report.minimum_bond);
    assert_eq!(lamports, report.rent + report.bond);
    assert_eq!(report.lamports_held, lamports);
    assert_eq!(report.balance_before, before);
    assert_eq!(
        before - bank.balance(&me).await.unwrap(),
        report.fees + lamports
    );

    let closed = close_claim(bank, claimer, &address, None, TxVersion::Legacy)
        .await
        .unwrap();
    assert_eq!(
        (closed.returned, closed.fee, closed.state),
        (lamports, fee, "settled")
    );
    assert!(bank.get_accounts(&[address]).await.unwrap()[0].is_none());
    assert_eq!(bank.balance(&me).await.unwrap(), before - 3 * fee);
    address
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn honest_greedy_and_drawn_claims_settle_and_close_with_every_lamport_back() {
    let (bank, model, artifact, claimer, _) = setup().await;
    let greedy = request(
        Prompt::Text(b"Once upon a time".to_vec()),
        16,
        Settings::greedy(),
        SeedSource::None,
    );
    claim_settle_close(&bank, &claimer, &model, &artifact, greedy).await;
    let mut drawn = request(Prompt::Tokens(vec![1]), 16, SAMPLED, SeedSource::Drawn);
    drawn.tx_version = TxVersion::Auto;
    claim_settle_close(&bank, &claimer, &model, &artifact, drawn).await;
    let chosen = request(Prompt::Tokens(vec![1, 306]), 8, SAMPLED, SeedSource::Chosen);
    claim_settle_close(&bank, &claimer, &model, &artifact, chosen).await;

    // `client claims`: an open claim (--no-wait) found by the program's accounts and at its
    // derived address.
    let mut waiting = request(
        Prompt::Tokens(vec![1]),
        4,
        Settings::greedy(),
        SeedSource::None,
    );
    waiting.wait = false;
    let report = claim(&bank, &claimer, &model, &waiting, |_| {})
        .await
        .unwrap();
    assert_eq!(report.state, "answered");
    for list in [
        claims(&bank, &model, None, 0..1).await.unwrap(),
        claims(&bank, &model, Some(&claimer.pubkey()), 0..8)
            .await
            .unwrap(),
    ] {
        assert_eq!(list.claims.len(), 1, "{list:?}");
        let listed = &list.claims[0];
        assert_eq!(listed.address, report.claim);
        assert_eq!((listed.state, listed.settled), ("answered", false));
        assert_eq!(listed.window_end, Some(report.window_end));
        assert_eq!(listed.bond, report.bond);
    }
    // Within its window it cannot be closed: nothing is sent.
    let before = bank.balance(&claimer.pubkey()).await.unwrap();
    let address: Pubkey = report.claim.parse().unwrap();
    let err = close_claim(&bank, &claimer, &address, None, TxVersion::Legacy)
        .await
        .unwrap_err();
    assert!(
        err.to_string()
            .contains("within its challenge window until slot"),
        "{err}"
    );
    assert_eq!(bank.balance(&claimer.pubkey()).await.unwrap(), before);
}

/// Opens a claim of `prompt` and answers it with one generated id changed (the text kept):
/// its address, the honest answer and the posted one.
async fn wrong_claim(
    bank: &BankTransport,
    claimer: &Keypair,
    model: &Pubkey,
    request: &ClaimRequest,
) -> (Pubkey, Answer, Answer) {
    let (file, _) = fetch_sealed(bank, model).await.unwrap();
    let artifact = curta_core::decode(&file).unwrap();
    let plan = plan(bank, &claimer.pubkey(), model, request, &artifact)
        .await
        .unwrap();
    let mut engine =
        Engine::new(bank, claimer, None, Some(1), Progress::hidden()).with_format(Format::Legacy);
    let header = open(&mut engine, &plan).await.unwrap();
    let seed = match request.source {
        SeedSource::Drawn => {
            bank.pass_slot(header.open_slot).await.unwrap();
            let hashes = bank
                .get_accounts(&[solana_sdk::sysvar::slot_hashes::ID])
                .await
                .unwrap()
                .remove(0)
                .unwrap();
            let curta_program::run::SlotHashLookup::Found(hash) =
                curta_program::run::find_slot_hash(&hashes.data, header.open_slot)
            else {
                panic!("the open slot's hash");
            };
            drawn_seed(
                request.settings.seed,
                &plan.address,
                header.open_slot,
                &hash,
            )
        }
        SeedSource::Chosen => request.settings.seed,
        SeedSource::None => 0,
    };
    let settings = Settings {
        seed,
        ..request.settings
    };
    let (honest, _) = compute(&artifact, &request.prompt, plan.terms.steps, settings, 1).unwrap();
    let mut ids = honest.ids.clone();
    ids[2] = if ids[2] == 100 { 101 } else { 100 };
    let wrong = Answer::new(honest.prompt_tokens.clone(), ids, honest.text.clone());
    post_answer(&mut engine, &plan.address, &header, &wrong)
        .await
        .unwrap();
    (plan.address, honest, wrong)
}

/// The dispute the watcher resolved (its last event but the summary).
fn resolved(events: &[WatchEvent]) -> curta_client::claim::Resolution {
    match &events[events.len() - 2..] {
        [WatchEvent::Resolved(resolution), WatchEvent::Stopped(summary)] => {
            assert_eq!(summary.disputes_left, Vec::<String>::new());
            resolution.clone()
        }
        _ => panic!("resolved, then stopped: {events:?}"),
    }
}

fn watching(model: &Pubkey) -> WatchOptions {
    WatchOptions {
        models: vec![*model],
        challenge: true,
        threads: 1,
        ..WatchOptions::default()
    }
}

/// Runs the watcher until `until` says stop, collecting its events.
async fn run_watcher(
    bank: &BankTransport,
    watcher: &Keypair,
    options: &WatchOptions,
    until: impl Fn(&WatchEvent) -> bool,
) -> Vec<WatchEvent> {
    let mut events = Vec::new();
    let summary = watch(
        bank,
        watcher,
        options,
        |e| {
            println!("{e}");
            events.push(e.clone());
            match until(e) {
                true => ControlFlow::Break(()),
                false => ControlFlow::Continue(()),
            }
        },
        std::future::pending(),
    )
    .await
    .unwrap();
    println!("{}", serde_json::to_string(&summary).unwrap());
    events
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_wrong_claim_is_challenged_by_the_watcher_and_overturned() {
    let (bank, model, _artifact, claimer, watcher) = setup().await;
    let (me, them) = (claimer.pubkey(), watcher.pubkey());
    let fee = fee_per_transaction(&bank, &me).await;
    // An honest claim, answered, that the watcher must leave alone.
    let mut honest = request(Prompt::Tokens(vec![1]), 12, SAMPLED, SeedSource::Drawn);
    honest.wait = false;
    let honest = claim(&bank, &claimer, &model, &honest, |_| {})
        .await
        .unwrap();
    let before = bank.balance(&me).await.unwrap();
    let wrong_request = request(
        Prompt::Text(b"Once upon a time".to_vec()),
        12,
        Settings::greedy(),
        SeedSource::None,
    );
    let (address, _, wrong) = wrong_claim(&bank, &claimer, &model, &wrong_request).await;
    let (header, held) = read_claim_header(&bank, &address).await;
    assert_eq!(header.answer_hash, wrong.hash);
    let rent = held - header.bond;
    assert_eq!(before - bank.balance(&me).await.unwrap(), held + 2 * fee);
    let watcher_before = bank.balance(&them).await.unwrap();

    let events = run_watcher(&bank, &watcher, &watching(&model), |e| {
        matches!(e, WatchEvent::Resolved(_))
    })
    .await;
    let verdicts: Vec<(String, &str)> = events
        .iter()
        .filter_map(|e| match e {
            WatchEvent::Verified(v) => Some((v.claim.clone(), v.verdict)),
            _ => None,
        })
        .collect();
    assert!(
        verdicts.contains(&(honest.claim.clone(), "agrees")),
        "{verdicts:?}"
    );
    assert!(
        verdicts.contains(&(address.to_string(), "disagrees")),
        "{verdicts:?}"
    );
    let challenged = events
        .iter()
        .find_map(|e| match e {
            WatchEvent::Challenged(c) => Some(c.clone()),
            _ => None,
        })
        .expect("a challenge");
    assert_eq!(challenged.claim, address.to_string());
    let resolution = resolved(&events);
    assert_eq!(resolution.outcome, "overturned");
    assert!(resolution.resolved_here);
    let run: Pubkey = challenged.run.parse().unwrap();
    assert!(
        bank.get_accounts(&[run]).await.unwrap()[0].is_none(),
        "the dispute run is closed"
    );

    // Both bonds to the watcher, the run's rent back: it gained the claimer's bond less the
    // fees of its challenge, its steps and Resolve.
    let (header, lamports) = read_claim_header(&bank, &address).await;
    assert_eq!(header.state, ClaimState::Overturned);
    assert_eq!(lamports, rent);
    let watcher_after = bank.balance(&them).await.unwrap();
    assert_eq!(challenged.fee, fee);
    assert_eq!(
        watcher_after as i64 - watcher_before as i64,
        header.bond as i64 - (fee * (1 + resolution.transactions)) as i64
    );
    assert_eq!(resolution.fees, fee * resolution.transactions);
    assert_eq!(resolution.gain, header.bond as i64 - resolution.fees as i64);
    // The claimer closes the overturned claim: its rent back, its bond lost.
    let closed = close_claim(&bank, &claimer, &address, None, TxVersion::Legacy)
        .await
        .unwrap();
    assert_eq!((closed.returned, closed.state), (rent, "overturned"));
    assert_eq!(
        before - bank.balance(&me).await.unwrap(),
        header.bond + 3 * fee
    );
    // The honest claim is untouched.
    let (honest_header, _) = read_claim_header(&bank, &honest.claim.parse().unwrap()).await;
    assert_eq!(honest_header.state, ClaimState::Answered);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_watcher_stopped_mid_dispute_finishes_it_when_started_again() {
    let (bank, model, _artifact, claimer, watcher) = setup().await;
    let them = watcher.pubkey();
    let fee = fee_per_transaction(&bank, &them).await;
    let request = request(Prompt::Tokens(vec![1, 306]), 10, SAMPLED, SeedSource::Drawn);
    let (address, _, _) = wrong_claim(&bank, &claimer, &model, &request).await;
    let (header, _) = read_claim_header(&bank, &address).await;
    let watcher_before = bank.balance(&them).await.unwrap();

    // The first watcher stops right after its challenge landed.
    let events = run_watcher(&bank, &watcher, &watching(&model), |e| {
        matches!(e, WatchEvent::Challenged(_))
    })
    .await;
    let Some(WatchEvent::Stopped(summary)) = events.last() else {
        panic!("{events:?}");
    };
    assert_eq!(summary.challenged, 1);
    assert_eq!(summary.disputes_left, Vec::<String>::new());
    let (challenged, _) = read_claim_header(&bank, &address).await;
    assert_eq!(
        (challenged.state, challenged.challenger),
        (ClaimState::Challenged, them)
    );
    // Someone steps the dispute run a little meanwhile.
    let model_account = bank
        .get_accounts(&[model])
        .await
        .unwrap()
        .remove(0)
        .unwrap();
    let sealed = curta_program::state::Model::unpack(&model_account.data).unwrap();
    let weights = sealed.weight_accounts[..sealed.sections().len()].to_vec();
    let stranger = bank.mint();
    for ticket in 0..2 {
        let step = curta_program::instruction::step(
            &curta_program::id(),
            &challenged.dispute_run,
            &model,
            &weights,
            ticket,
            curta_program::run::MAX_STEP_BUDGET,
        );
        send_limited(&bank, &stranger, &[step]).await.unwrap();
    }

    // Started again, it finds its dispute on the chain, steps it to the end and resolves it.
    let events = run_watcher(&bank, &watcher, &watching(&model), |e| {
        matches!(e, WatchEvent::Resolved(_))
    })
    .await;
    assert!(
        events.iter().any(
            |e| matches!(e, WatchEvent::Resumed { claim, .. } if *claim == address.to_string())
        ),
        "{events:?}"
    );
    assert!(
        !events.iter().any(|e| matches!(e, WatchEvent::Verified(_))),
        "{events:?}"
    );
    let resolution = resolved(&events);
    assert_eq!(resolution.outcome, "overturned");
    assert!(resolution.steps_landed >= resolution.steps_sent + 2);
    let (resolved, _) = read_claim_header(&bank, &address).await;
    assert_eq!(resolved.state, ClaimState::Overturned);
    assert!(bank.get_accounts(&[challenged.dispute_run]).await.unwrap()[0].is_none());
    let watcher_after = bank.balance(&them).await.unwrap();
    assert_eq!(
        watcher_after as i64 - watcher_before as i64,
        header.bond as i64 - (fee * (1 + resolution.transactions)) as i64
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_claim_input_is_refused_naming_the_option_and_nothing_is_spent() {
    let (bank, model, _artifact, claimer, _) = setup().await;
    let me = claimer.pubkey();
    let before = bank.balance(&me).await.unwrap();
    let base = || {
        request(
            Prompt::Tokens(vec![1]),
            8,
            Settings::greedy(),
            SeedSource::None,
        )
    };
    let mut cases: Vec<(ClaimRequest, &str, &str)> = Vec::new();
    let mut r = base();
    r.window = 10;
    cases.push((
        r,
        "--window",
        "10 slots is out of range: a challenge window is 150 to 432000 slots",
    ));
    let mut r = base();
    r.window = 432_001;
    cases.push((r, "--window", "432001 slots is out of range"));
    let mut r = base();
    r.source = SeedSource::Drawn;
    cases.push((r, "--seed-source", "drawn is for sampled claims"));
    let mut r = request(Prompt::Tokens(vec![1]), 8, SAMPLED, SeedSource::None);
    r.wait = true;
    cases.push((r, "--seed-source", "none is for greedy claims"));
    cases.push((
        request(
            Prompt::Tokens(vec![1, 512]),
            8,
            Settings::greedy(),
            SeedSource::None,
        ),
        "--prompt-tokens",
        "id 512 at index 1 is not below the model's vocabulary of 512 tokens",
    ));
    cases.push((
        request(Prompt::Tokens(vec![1]), 600, Settings::greedy(), SeedSource::None),
        "--steps",
        "600 tokens after 1 prompt ids do not fit the model's context of 512 positions: at most 512 steps",
    ));
    cases.push((
        request(
            Prompt::Text(vec![b'a'; 500]),
            20,
            Settings::greedy(),
            SeedSource::None,
        ),
        "--steps",
        "at most 11 steps",
    ));
    let mut r = base();
    r.bond = Some(1);
    cases.push((r, "--bond", "1 lamports is below the rule's minimum"));
    let mut r = base();
    r.priority_price = u64::MAX;
    cases.push((r, "--priority-price", "above the most a claim may record"));
    for (request, field, message) in cases {
        let err = claim(&bank, &claimer, &model, &request, |_| panic!("no stage"))
            .await
            .unwrap_err();
        match &err {
            ClaimError::Input { field: f, .. } => assert_eq!(*f, field, "{err}"),
            other => panic!("{field}: expected an input error, got {other}"),
        }
        assert!(err.to_string().contains(message), "{err}");
        assert!(err.to_string().ends_with("(nothing was sent)"), "{err}");
    }
    // A model that is not there, and a claimer too poor for rent, bond and fees.
    let nowhere = Pubkey::new_unique();
    let err = claim(&bank, &claimer, &nowhere, &base(), |_| {})
        .await
        .unwrap_err();
    assert!(err.to_string().contains(&nowhere.to_string()), "{err}");
    let poor = Keypair::new();
    let err = claim(&bank, &poor, &model, &base(), |_| {})
        .await
        .unwrap_err();
    assert!(
        matches!(&err, ClaimError::Client(curta_client::Error::InsufficientFunds { payer, .. }) if *payer == poor.pubkey()),
        "{err}"
    );
    // close-claim of an address without a claim, and of another claimer's claim.
    let err = close_claim(&bank, &claimer, &nowhere, None, TxVersion::Legacy)
        .await
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        format!("claim account {nowhere}: does not exist (closed, or never opened)")
    );
    let mut open = base();
    open.wait = false;
    let report = claim(&bank, &claimer, &model, &open, |_| {}).await.unwrap();
    let address: Pubkey = report.claim.parse().unwrap();
    let stranger = bank.mint();
    let err = close_claim(&bank, &stranger, &address, None, TxVersion::Legacy)
        .await
        .unwrap_err();
    assert!(
        err.to_string().contains("only its claimer may close it"),
        "{err}"
    );
    bank.settle().await;
    assert_eq!(
        bank.balance(&me).await.unwrap(),
        before - report.fees - report.lamports_held
    );
    // The same nonce with other terms is refused, naming the claim and what differs.
    let mut other = base();
    other.nonce = Some(report.nonce);
    other.steps = Some(9);
    let err = claim(&bank, &claimer, &model, &other, |_| {})
        .await
        .unwrap_err();
    assert!(err.to_string().contains("whose --steps differ"), "{err}");
}

/// An honest claim challenged anyway: the dispute run agrees with it, so it is upheld, the
/// challenger's bond goes to the claimer and the run's rent back to the challenger; a second
/// challenger, too late, is refused by the program (NotAnswered) and pays one fee only. The
/// claimer's `client claim`, run again, finds the claim upheld, and closing it returns its
/// rent and bond.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_honest_claim_challenged_anyway_is_upheld_and_the_challenger_pays() {
    use curta_client::claim::dispute::ChallengeRefused;
    use curta_client::claim::{challenge, finish_dispute, DisputeOptions};
    let (bank, model, artifact, claimer, watcher) = setup().await;
    let (me, them) = (claimer.pubkey(), watcher.pubkey());
    let fee = fee_per_transaction(&bank, &me).await;
    let mut honest = request(Prompt::Tokens(vec![1, 306]), 8, SAMPLED, SeedSource::Chosen);
    honest.wait = false;
    let report = claim(&bank, &claimer, &model, &honest, |_| {})
        .await
        .unwrap();
    let address: Pubkey = report.claim.parse().unwrap();
    let (header, held) = read_claim_header(&bank, &address).await;
    let config = curta_core::decode(&artifact).unwrap().config();
    let options = DisputeOptions {
        tx_version: TxVersion::Legacy,
        ..DisputeOptions::default()
    };
    let watcher_before = bank.balance(&them).await.unwrap();
    let challenged = challenge(&bank, &watcher, &address, &header, &config, &options)
        .await
        .unwrap();
    assert_eq!(challenged.bond, header.bond);
    // Too late: the claim is challenged already.
    let late = bank.mint();
    let late_before = bank.balance(&late.pubkey()).await.unwrap();
    let err = challenge(&bank, &late, &address, &header, &config, &options)
        .await
        .unwrap_err();
    assert!(
        matches!(&err, ChallengeRefused::Program(e) if e.contains("NotAnswered")),
        "{err}"
    );
    assert_eq!(
        bank.balance(&late.pubkey()).await.unwrap(),
        late_before - fee
    );

    let resolution = finish_dispute(&bank, &watcher, &address, &options)
        .await
        .unwrap();
    assert_eq!(resolution.outcome, "upheld");
    assert_eq!(resolution.tokens, report.tokens);
    assert_eq!(
        resolution.gain,
        -(header.bond as i64) - resolution.fees as i64
    );
    let run: Pubkey = challenged.run.parse().unwrap();
    assert!(bank.get_accounts(&[run]).await.unwrap()[0].is_none());
    assert_eq!(
        watcher_before - bank.balance(&them).await.unwrap(),
        header.bond + fee * (1 + resolution.transactions)
    );

    // The claimer's command again: upheld, settled; the claim still holds its rent and bond,
    // and the challenger's bond is the claimer's.
    let mut again = honest.clone();
    again.nonce = Some(header.nonce);
    again.wait = true;
    let resumed = claim(&bank, &claimer, &model, &again, |_| {})
        .await
        .unwrap();
    assert!(resumed.resumed);
    assert_eq!((resumed.state, resumed.settled), ("upheld", true));
    assert_eq!(resumed.transactions, 0);
    let closed = close_claim(&bank, &claimer, &address, None, TxVersion::Legacy)
        .await
        .unwrap();
    assert_eq!((closed.returned, closed.state), (held, "upheld"));
    assert_eq!(
        bank.balance(&me).await.unwrap(),
        report.balance_before - 3 * fee + header.bond
    );
}
