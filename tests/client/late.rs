//! Transactions signed earlier that land late: before a Reopen, a Close or a start seal
//! (chunk 0) the client waits until everything sent through the transport is final (for a
//! start seal: landed) or past its blockhash's life (`Engine::settle`, the transport's ledger). Each test holds back a
//! transaction of an earlier run, delivers it right after the barrier it threatens, and
//! checks that it was refused as expired: without the wait it lands (its blockhash lives
//! about a second on the bank) and the end state differs.

use super::*;
use curta_client::{close, publish, seal, verify, Error, Sent};
use curta_tests::client::{landed, model_rent, Fault, Faulty, FEE};
use curta_tests::{sha256_chain, split_sections, stories260k_artifact};
use solana_transaction::versioned::VersionedTransaction;
use solana_transaction::Transaction;

/// The model account decoded.
async fn model_state(bank: &BankTransport, model: &Pubkey) -> curta_program::state::Model {
    let account = bank.get_accounts(&[*model]).await.unwrap().remove(0);
    curta_program::state::Model::unpack(&account.expect("the model exists").data).unwrap()
}

/// The ledger entry of `tx`: the engine records what it sends before sending it.
fn ledger_entry(bank: &BankTransport, tx: &VersionedTransaction) -> Sent {
    bank.ledger()
        .pending()
        .into_iter()
        .find(|s| s.signature == tx.signatures[0])
        .expect("the transaction the client sent is in the transport's ledger")
}

/// Whether the bank ever executed `tx` (successfully or not).
async fn executed(bank: &BankTransport, tx: &VersionedTransaction) -> bool {
    landed(bank, &tx.signatures[..1]).await == 1
}

/// A Reopen whose send failed (it may have gone out) cannot land after the next run's
/// Reopen and start seal: the pass that run starts is the only one (pass 1), sealed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_late_reopen_cannot_restart_the_pass_a_repair_started() {
    let artifact = stories260k_artifact();
    let sections = split_sections(&artifact);
    let (bank, authority) = bank(100 * SOL).await;
    let model = publish(&bank, &authority, &artifact, false, &options())
        .await
        .unwrap()
        .model;
    // One wrong byte on chain, sealed to a mismatch.
    let program = curta_program::id();
    let weight = curta_program::state::weight_address(&program, &authority.pubkey(), &model, 1);
    let write = curta_program::instruction::write(
        &program,
        &weight,
        &authority.pubkey(),
        100,
        &[sections[1][100] ^ 0xff],
    );
    let blockhash = bank.latest_blockhash().await.unwrap().0;
    bank.banks_client()
        .process_transaction(Transaction::new_signed_with_payer(
            &[write],
            Some(&authority.pubkey()),
            &[&authority],
            blockhash,
        ))
        .await
        .unwrap();
    assert!(matches!(
        seal(&bank, &authority, &model, None, &options()).await,
        Err(Error::Mismatch { .. })
    ));
    assert_eq!(model_state(&bank, &model).await.seal_pass, 0);
    let before = bank.balance(&authority.pubkey()).await.unwrap();

    // The repair's Reopen goes out and the connection breaks.
    let first = Faulty::new(&bank, Fault::HoldFirst { tag: 4 }, 1);
    match seal(&first, &authority, &model, Some(&artifact), &options()).await {
        Err(Error::Transport(message)) => assert!(message.contains("injected"), "{message}"),
        other => panic!("expected the injected transport error, got {other:?}"),
    }
    let late = first.held().expect("the Reopen was sent");
    let entry = ledger_entry(&bank, &late);

    // The repair again; the first Reopen arrives right after the start seal.
    let second = Faulty::new(
        &bank,
        Fault::LateBefore {
            late: Box::new(late.clone()),
            last_valid: entry.last_valid,
            tag: 3,
            skip: 1,
        },
        2,
    );
    let repaired = seal(&second, &authority, &model, Some(&artifact), &options())
        .await
        .unwrap();
    assert_eq!(repaired.state, "Sealed");
    assert_eq!(
        second.late_landed(),
        Some(false),
        "the earlier Reopen reached the bank after the start seal, expired"
    );
    assert!(!executed(&bank, &late).await);
    let m = model_state(&bank, &model).await;
    assert_eq!(m.seal_pass, 1, "one Reopen landed: one pass");
    assert_eq!(
        (
            repaired.counts.other,
            repaired.counts.write,
            repaired.counts.seal
        ),
        (1, 1, total_chunks(&sections)),
        "one Reopen, one Write, one seal per chunk"
    );
    assert!(verify(&bank, &model, &artifact).await.unwrap().ok());
    let mut forwarded = first.forwarded();
    forwarded.extend(second.forwarded());
    let landed = landed(&bank, &forwarded).await;
    assert_eq!(landed, repaired.transactions());
    assert_eq!(
        before - bank.balance(&authority.pubkey()).await.unwrap(),
        FEE * landed,
        "one fee per landed transaction, nothing else"
    );
}

/// A Close whose send failed cannot land on the model published again at the same address
/// after the next Close: that Close waits until the first can no longer land.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_late_close_cannot_close_the_model_published_again() {
    let artifact = stories260k_artifact();
    let sections = split_sections(&artifact);
    let hash = sha256_chain(sections.iter().map(Vec::as_slice));
    let (bank, authority) = bank(100 * SOL).await;
    let model = publish(&bank, &authority, &artifact, false, &options())
        .await
        .unwrap()
        .model;
    let before = bank.balance(&authority.pubkey()).await.unwrap();

    let first = Faulty::new(&bank, Fault::HoldFirst { tag: 5 }, 1);
    match close(&first, &authority, &model, None, &options()).await {
        Err(Error::Transport(message)) => assert!(message.contains("injected"), "{message}"),
        other => panic!("expected the injected transport error, got {other:?}"),
    }
    let late = first.held().expect("the Close was sent");
    let entry = ledger_entry(&bank, &late);

    let again = Faulty::new(&bank, Fault::None, 2);
    let closed = close(&again, &authority, &model, None, &options())
        .await
        .unwrap();
    assert_eq!(closed.accounts_closed, 1 + sections.len());
    assert_eq!(closed.recovered, model_rent(&lengths(&sections)));
    assert!(
        live_accounts(&bank, &authority.pubkey(), &hash, sections.len())
            .await
            .is_empty()
    );

    // Published again at the same address; the first Close arrives before its first Write.
    let third = Faulty::new(
        &bank,
        Fault::LateBefore {
            late: Box::new(late.clone()),
            last_valid: entry.last_valid,
            tag: 2,
            skip: 0,
        },
        3,
    );
    let report = publish(&third, &authority, &artifact, true, &options())
        .await
        .unwrap();
    assert_eq!(report.state, "Sealed");
    assert_eq!(
        third.late_landed(),
        Some(false),
        "the earlier Close reached the bank after the model was created again, expired"
    );
    assert!(!executed(&bank, &late).await);
    assert!(verify(&bank, &model, &artifact).await.unwrap().ok());
    assert_eq!(
        live_accounts(&bank, &authority.pubkey(), &hash, sections.len())
            .await
            .len(),
        1 + sections.len()
    );
    let mut forwarded = first.forwarded();
    forwarded.extend(again.forwarded());
    forwarded.extend(third.forwarded());
    let landed = landed(&bank, &forwarded).await;
    // The rent came back at the Close and went out again at the publish.
    assert_eq!(
        before - bank.balance(&authority.pubkey()).await.unwrap(),
        FEE * landed
    );
}

/// A Write sent earlier (recorded in the ledger as the engine records what it sends, here
/// one carrying a wrong byte) that has not landed holds the start seal back until it can no
/// longer land: delivered between chunks 0 and 1 it is refused, and the pass seals. (Landing
/// there it would be refused too, SectionFrozen: chunk 0 freezes every section. The start
/// seal waits for what was sent before it to land or expire, not for finality.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_start_seal_waits_for_a_write_sent_earlier() {
    let artifact = stories260k_artifact();
    let sections = split_sections(&artifact);
    let (bank, authority) = bank(100 * SOL).await;
    let model = publish(&bank, &authority, &artifact, false, &options())
        .await
        .unwrap()
        .model;
    let program = curta_program::id();
    let weight = curta_program::state::weight_address(&program, &authority.pubkey(), &model, 1);
    let offset = sections[1].len() - 1;
    let write = curta_program::instruction::write(
        &program,
        &weight,
        &authority.pubkey(),
        offset as u32,
        &[sections[1][offset] ^ 0xff],
    );
    let (blockhash, last_valid) = bank.latest_blockhash().await.unwrap();
    let late = VersionedTransaction::from(Transaction::new_signed_with_payer(
        &[write],
        Some(&authority.pubkey()),
        &[&authority],
        blockhash,
    ));
    bank.ledger().record(Sent {
        signature: late.signatures[0],
        blockhash,
        last_valid,
    });
    let before = bank.balance(&authority.pubkey()).await.unwrap();
    let sealing = Faulty::new(
        &bank,
        Fault::LateBefore {
            late: Box::new(late.clone()),
            last_valid,
            tag: 3,
            skip: 1,
        },
        1,
    );
    let report = seal(&sealing, &authority, &model, None, &options())
        .await
        .unwrap();
    assert_eq!(report.state, "Sealed");
    assert_eq!(sealing.late_landed(), Some(false));
    assert!(!executed(&bank, &late).await);
    assert!(
        !bank
            .ledger()
            .pending()
            .iter()
            .any(|s| s.signature == late.signatures[0]),
        "the start seal's wait settled the Write"
    );
    assert!(verify(&bank, &model, &artifact).await.unwrap().ok());
    assert_eq!(report.counts.seal, total_chunks(&sections));
    let landed = landed(&bank, &sealing.forwarded()).await;
    assert_eq!(landed, report.transactions());
    assert_eq!(
        before - bank.balance(&authority.pubkey()).await.unwrap(),
        FEE * landed
    );
}
