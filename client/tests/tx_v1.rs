//! Version 1 transactions (SIMD-0296/SIMD-0385) on the in-process bank running the program's
//! SBF binary: program-test activates every feature, enable_tx_v1 included, so `auto` sends
//! v1 there; `BankTransport::start_without(.., &[FEATURE_TX_V1])` is a cluster without it.
//! Publish, seal, verify, close and an on-chain run in v1, with the Writes counted from the
//! artifact and the lamports from the balances; the fallback and the refusal without the
//! feature.

use curta_client::model::items::write_capacity_in;
use curta_client::rehearse::{STORIES260K, TOK512};
use curta_client::run::onchain::{run_on_chain, RunRequest};
use curta_client::run::Prompt;
use curta_client::send::format::{choose, FEATURE_TX_V1};
use curta_client::{
    close, publish, verify, BankTransport, Error, Format, Options, Transport, TxVersion,
};
use solana_keypair::Keypair;
use solana_signer::Signer;

const SOL: u64 = 1_000_000_000;
/// The bank's fee per signature (every transaction here has one signer, no priority fee).
const LAMPORTS_PER_SIGNATURE: u64 = 5_000;

fn quiet() {
    if std::env::var_os("RUST_LOG").is_none() {
        std::env::set_var("RUST_LOG", "error");
    }
}

fn stories260k() -> Vec<u8> {
    curta_core::convert::convert(STORIES260K, TOK512).unwrap()
}

fn options(tx_version: TxVersion) -> Options {
    Options {
        tx_version,
        ..Options::default()
    }
}

/// The Writes publish needs for `section` on a fresh account (all zeros), each at most
/// `capacity` bytes: from each byte that is not zero, one Write covering the next
/// `capacity` bytes. Counted here independently of the planner.
fn writes_for(section: &[u8], capacity: usize) -> u64 {
    let mut writes = 0;
    let mut i = 0;
    while i < section.len() {
        if section[i] == 0 {
            i += 1;
        } else {
            writes += 1;
            i += capacity;
        }
    }
    writes
}

fn sections(artifact: &[u8]) -> Vec<Vec<u8>> {
    curta_core::decode(artifact)
        .unwrap()
        .sections()
        .map(<[u8]>::to_vec)
        .collect()
}

#[tokio::test(flavor = "multi_thread")]
async fn publish_and_seal_in_v1_write_a_packet_per_transaction_and_verify() {
    quiet();
    let artifact = stories260k();
    let authority = Keypair::new();
    let bank = BankTransport::start(&[(authority.pubkey(), 100 * SOL)]).await;
    let before = bank.balance(&authority.pubkey()).await.unwrap();

    let report = publish(&bank, &authority, &artifact, true, &Options::default())
        .await
        .unwrap();
    assert_eq!(report.format, Format::V1);
    assert_eq!(report.format_note, None);
    assert_eq!(report.state, "Sealed");

    // 4,096 bytes less 225 of framing (client/src/txformat.rs counts them).
    let capacity = write_capacity_in(Format::V1, false);
    assert_eq!(capacity, 3_871);
    let sections = sections(&artifact);
    let expected: u64 = sections.iter().map(|s| writes_for(s, capacity)).sum();
    let at_most: u64 = sections
        .iter()
        .map(|s| s.len().div_ceil(capacity) as u64)
        .sum();
    assert!(expected <= at_most);
    let t = &report.counts;
    assert_eq!(t.write, expected, "{t:?}");
    assert_eq!(t.write_bytes_max, capacity);
    assert_eq!(t.failed, 0);
    assert_eq!(t.resigned, 0);
    // One seal per 65,536-byte chunk of the hash chain.
    let chunks: u64 = sections
        .iter()
        .map(|s| s.len().div_ceil(65_536) as u64)
        .sum();
    assert_eq!(t.seal, chunks);
    // The legacy count of the same artifact, more than three times as many Writes.
    let legacy: u64 = sections
        .iter()
        .map(|s| writes_for(s, write_capacity_in(Format::Legacy, false)))
        .sum();
    assert!(legacy >= 3 * expected, "legacy {legacy}, v1 {expected}");

    // Lamports: what the bank took is the rent the accounts hold plus one signature's fee
    // per transaction that landed, the fees the report counts.
    let after = bank.balance(&authority.pubkey()).await.unwrap();
    assert_eq!(report.balance_before, before);
    assert_eq!(report.balance_after, after);
    assert_eq!(t.fees, LAMPORTS_PER_SIGNATURE * t.landed());
    assert_eq!(before - after, report.rent + t.fees);
    assert_eq!(report.rent, report.rent_held);

    let json = report.to_json();
    assert_eq!(json["tx_version"], "v1");
    assert_eq!(json["tx_version_note"], serde_json::Value::Null);
    assert_eq!(json["write_bytes_per_tx"]["capacity"], capacity);
    assert_eq!(
        json["write_bytes_per_tx"]["capacity_with_compute_budget"],
        write_capacity_in(Format::V1, true)
    );
    assert!(report
        .to_text()
        .contains("tx version:     v1 (4,096 bytes)\n"));

    let verification = verify(&bank, &report.model, &artifact).await.unwrap();
    assert!(verification.ok(), "{}", verification.to_text());
}

#[tokio::test(flavor = "multi_thread")]
async fn close_in_v1_returns_the_rent_less_its_fee() {
    quiet();
    let artifact = stories260k();
    let authority = Keypair::new();
    let bank = BankTransport::start(&[(authority.pubkey(), 100 * SOL)]).await;
    let v1 = options(TxVersion::V1);
    let published = publish(&bank, &authority, &artifact, false, &v1)
        .await
        .unwrap();
    assert_eq!(published.format, Format::V1);
    assert_eq!(published.state, "Open");
    let before = bank.balance(&authority.pubkey()).await.unwrap();
    let closed = close(&bank, &authority, &published.model, None, &v1)
        .await
        .unwrap();
    assert_eq!(closed.format, Format::V1);
    assert_eq!(closed.fees, LAMPORTS_PER_SIGNATURE);
    assert_eq!(closed.recovered, published.rent_held);
    let after = bank.balance(&authority.pubkey()).await.unwrap();
    assert_eq!(after, before + closed.recovered - closed.fees);
    assert_eq!(closed.to_json()["tx_version"], "v1");
    assert!(bank
        .get_accounts(&[published.model])
        .await
        .unwrap()
        .remove(0)
        .is_none());
}

#[tokio::test(flavor = "multi_thread")]
async fn auto_without_the_feature_falls_back_to_legacy_and_says_so() {
    quiet();
    let artifact = stories260k();
    let authority = Keypair::new();
    let bank =
        BankTransport::start_without(&[(authority.pubkey(), 100 * SOL)], &[FEATURE_TX_V1]).await;
    let note = format!(
        "{} does not accept version 1 transactions (feature \
         txv1aq4pp281K9um3tnPgkfX8UqtFT6wcVW3hNezGLL is not active): sending legacy transactions",
        bank.describe()
    );
    let choice = choose(&bank, TxVersion::Auto).await.unwrap();
    assert_eq!(choice.format, Format::Legacy);
    assert_eq!(choice.note.as_deref(), Some(note.as_str()));
    // Legacy asked for: no note.
    assert_eq!(choose(&bank, TxVersion::Legacy).await.unwrap().note, None);

    let before = bank.balance(&authority.pubkey()).await.unwrap();
    let report = publish(&bank, &authority, &artifact, true, &Options::default())
        .await
        .unwrap();
    assert_eq!(report.format, Format::Legacy);
    assert_eq!(report.format_note.as_deref(), Some(note.as_str()));
    assert_eq!(report.state, "Sealed");
    let capacity = write_capacity_in(Format::Legacy, false);
    assert_eq!(capacity, 1_019);
    let t = &report.counts;
    assert_eq!(
        t.write,
        sections(&artifact)
            .iter()
            .map(|s| writes_for(s, capacity))
            .sum::<u64>()
    );
    assert_eq!(t.write_bytes_max, capacity);
    let after = bank.balance(&authority.pubkey()).await.unwrap();
    assert_eq!(t.fees, LAMPORTS_PER_SIGNATURE * t.landed());
    assert_eq!(before - after, report.rent + t.fees);
    let json = report.to_json();
    assert_eq!(json["tx_version"], "legacy");
    assert_eq!(json["tx_version_note"], note.as_str());
    assert!(verify(&bank, &report.model, &artifact).await.unwrap().ok());
}

#[tokio::test(flavor = "multi_thread")]
async fn v1_without_the_feature_is_refused_before_anything_is_sent() {
    quiet();
    let artifact = stories260k();
    let authority = Keypair::new();
    let bank =
        BankTransport::start_without(&[(authority.pubkey(), 100 * SOL)], &[FEATURE_TX_V1]).await;
    let before = bank.balance(&authority.pubkey()).await.unwrap();
    let err = publish(&bank, &authority, &artifact, true, &options(TxVersion::V1))
        .await
        .unwrap_err();
    assert!(matches!(err, Error::TxV1Unsupported { .. }), "{err:?}");
    assert_eq!(
        err.to_string(),
        format!(
            "{} does not accept version 1 transactions (its feature enable_tx_v1, \
             txv1aq4pp281K9um3tnPgkfX8UqtFT6wcVW3hNezGLL, is not active); nothing was sent: \
             use --tx-version legacy or auto",
            bank.describe()
        )
    );
    assert_eq!(bank.balance(&authority.pubkey()).await.unwrap(), before);
    let model = curta_client::artifact::LocalArtifact::decode(&artifact)
        .unwrap()
        .model_address(&bank.program_id(), &authority.pubkey());
    assert!(bank.get_accounts(&[model]).await.unwrap()[0].is_none());
    assert!(bank.ledger().pending().is_empty());
}

#[tokio::test(flavor = "multi_thread")]
async fn a_run_on_chain_in_v1_equals_the_run_of_the_file() {
    quiet();
    let artifact = stories260k();
    let runner = Keypair::new();
    let bank = BankTransport::start(&[(runner.pubkey(), 100 * SOL)]).await;
    let v1 = options(TxVersion::V1);
    let report = publish(&bank, &runner, &artifact, true, &v1).await.unwrap();
    assert_eq!(report.state, "Sealed");

    let steps = 5;
    let prompt = Prompt::Text(b"Once upon a time".to_vec());
    let greedy = curta_core::infer::Settings::greedy();
    let decoded = curta_core::decode(&artifact).unwrap();
    let offline = curta_client::run::generate(
        &decoded,
        &prompt.tokens(&decoded).unwrap(),
        steps,
        greedy,
        1,
        |_, _| {},
    )
    .unwrap();

    let mut request = RunRequest::new(prompt, Some(steps), greedy);
    request.tx_version = TxVersion::V1;
    let before = bank.balance(&runner.pubkey()).await.unwrap();
    let run = run_on_chain(&bank, &runner, &report.model, &request, |_, _| {})
        .await
        .unwrap();
    assert_eq!(run.tx_version, Format::V1);
    assert_eq!(run.tokens, offline.tokens);
    assert_eq!(run.text, offline.text);
    assert_eq!(run.prompt_tokens, offline.prompt_tokens);
    assert!(run.closed);
    assert_eq!(run.failed_transactions, 0);
    // Start, every step, close; one signature's fee each, the rent all back.
    assert_eq!(run.transactions, run.steps_sent as u64 + 2);
    assert_eq!(run.fees, LAMPORTS_PER_SIGNATURE * run.transactions);
    let after = bank.balance(&runner.pubkey()).await.unwrap();
    assert_eq!(before - after, run.fees);
    assert_eq!(run.lamports_spent(), run.fees as i128);
}

/// `status` counts what is left in the format publish would use: a section wiped on chain
/// needs, by an independent count from the artifact, 3,871-byte Writes in v1 and 1,019-byte
/// ones in legacy, each paying one signature, and the v1 repair sends exactly what it counted.
#[tokio::test(flavor = "multi_thread")]
async fn status_counts_what_is_left_in_the_format_publish_uses() {
    use curta_client::status_in;
    use curta_interface::state::WEIGHT_HEADER_LEN;
    quiet();
    let artifact = stories260k();
    let authority = Keypair::new();
    let bank = BankTransport::start(&[(authority.pubkey(), 100 * SOL)]).await;
    let report = publish(&bank, &authority, &artifact, false, &Options::default())
        .await
        .unwrap();
    let model = report.model;
    let sections = sections(&artifact);
    let before = status_in(&bank, &model, Some(&artifact), Format::V1)
        .await
        .unwrap();
    assert_eq!(before.needed.write, Some(0));
    // Section 1's bytes wiped on chain (its header kept).
    let weight = before.sections[1].address;
    let mut account = bank.get_accounts(&[weight]).await.unwrap()[0]
        .clone()
        .unwrap();
    account.data[WEIGHT_HEADER_LEN..].fill(0);
    bank.set_account(&weight, account);
    for format in [Format::Legacy, Format::V1] {
        let s = status_in(&bank, &model, Some(&artifact), format)
            .await
            .unwrap();
        let writes = writes_for(&sections[1], write_capacity_in(format, false));
        assert_eq!(s.tx_version, format);
        assert_eq!(s.needed.write, Some(writes), "{format}");
        assert_eq!(
            s.needed.fees,
            Some(LAMPORTS_PER_SIGNATURE * (writes + s.needed.seal)),
            "{format}"
        );
        assert_eq!(s.to_json()["tx_version"], format.name());
        assert!(s
            .to_text()
            .contains(&format!("reopen {format} transactions")));
    }
    let repaired = publish(&bank, &authority, &artifact, true, &Options::default())
        .await
        .unwrap();
    assert_eq!(repaired.format, Format::V1);
    assert_eq!(
        repaired.counts.write,
        writes_for(&sections[1], write_capacity_in(Format::V1, false))
    );
    assert_eq!(repaired.state, "Sealed");
}
