//! The load test of claims (issue 40) at a small size on the bank running the SBF binary: 40
//! claims of stories260K (16 tokens; greedy, drawn and chosen; text and id prompts) by 4
//! claimers, 4 of them answered wrongly in different ways, 2 watchers racing to verify and
//! challenge, one killed during a dispute and started again. Every wrong claim is overturned,
//! no honest one, and every lamport of the claimers and watchers is accounted for by the fees
//! of the transactions they paid for and the bonds won and lost. The driver is
//! `curta_tests::claims_load`, which `client/examples/bench_claims.rs` runs at full size (1,000
//! claims of 64 tokens) on the bank or a validator.

use super::*;
use curta_tests::claims_load::{run, LoadOptions, ModelSource};
use std::time::Duration;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_load_of_claims_a_tenth_wrong_two_watchers_racing_one_killed_mid_dispute() {
    quiet();
    let funder = Keypair::new();
    let bank = BankTransport::start(&[(funder.pubkey(), 100_000 * SOL)]).await;
    let options = LoadOptions {
        claims: 40,
        claimers: 4,
        wrong_percent: 10.0,
        watchers: 2,
        tokens: 16,
        batch: 10,
        // 9 steps in flight (the bank's limit, 40M units, would send a dispute of 16 tokens
        // at once): the killed watcher leaves most of its dispute's steps to its next start.
        account_limit: Some(4_000_000),
        // Two disputes stepped at a time: the others wait their turn, and the killed watcher
        // leaves those too.
        max_disputes: Some(2),
        timeout: Duration::from_secs(300),
        ..LoadOptions::default()
    };
    let artifact = curta_tests::stories260k_artifact();
    let log = |line: &str| println!("{line}");
    let report = run(
        &bank,
        &funder,
        ModelSource::Publish(artifact),
        &options,
        &log,
    )
    .await
    .unwrap();
    println!("{report}");
    println!("{}", serde_json::to_string(&report).unwrap());
    assert!(report.failures.is_empty(), "{report}");
    assert_eq!((report.claims, report.wrong), (40, 4));
    // Four kinds of wrong answers (one may fall back to an id changed, where its forgery gave
    // the answer: a seed that samples the same ids).
    assert_eq!(report.forgeries.values().sum::<u64>(), 4);
    assert!(report.forgeries.len() >= 3, "{:?}", report.forgeries);
    let o = &report.outcome;
    assert_eq!((o.wrong_overturned, o.wrong_not_overturned), (4, 0));
    assert_eq!(o.honest_settled + o.honest_upheld, 36);
    assert_eq!((o.honest_overturned, o.honest_other), (0, 0));
    assert_eq!(
        (report.disputes.disputes, report.disputes.overturned),
        (4, 4)
    );
    let kill = report
        .kill
        .as_ref()
        .expect("a watcher killed during a dispute");
    assert!(kill.left_on_chain && kill.resumed && kill.steps_after_restart > 0);
    assert_eq!(kill.outcome.as_deref(), Some("overturned"));
    assert_eq!(
        report.watcher_runs.len(),
        3,
        "two watchers, one started again"
    );
    assert_eq!(report.lamports.unaccounted, 0);
    assert_eq!(report.lamports.bonds_lost, 0);
    let landed = |name: &str| report.transactions.get(name).copied().unwrap_or_default();
    assert_eq!(landed("open claim"), (40, 0));
    assert_eq!(landed("answer claim"), (40, 0));
    assert_eq!(landed("close claim"), (40, 0));
    assert_eq!(landed("resolve").0, 4);
    assert_eq!(landed("challenge").0, 4);
}
