//! The happy path, with exact lamport accounting.

use super::*;
use curta_client::{close, publish, status, verify, Error};
use curta_tests::client::{model_rent, FEE};
use curta_tests::{sha256_chain, split_sections, stories260k_artifact};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn publish_and_seal_stories260k_with_exact_lamports() {
    let artifact = stories260k_artifact();
    let sections = split_sections(&artifact);
    let hash = sha256_chain(sections.iter().map(Vec::as_slice));
    let (bank, authority) = bank(100 * SOL).await;
    let before = bank.balance(&authority.pubkey()).await.unwrap();

    let report = publish(&bank, &authority, &artifact, true, &options())
        .await
        .unwrap();
    let after = bank.balance(&authority.pubkey()).await.unwrap();

    assert_eq!(report.state, "Sealed");
    assert_eq!(report.weights_hash, hash);
    let model = bank
        .get_accounts(&[report.model])
        .await
        .unwrap()
        .pop()
        .flatten()
        .unwrap();
    assert_eq!(model.data[9], 4, "model state byte is Sealed");
    assert_eq!(&model.data[48..80], &hash, "declared hash");
    assert_eq!(
        &model.data[80..112],
        &hash,
        "running hash equals the declared one"
    );

    let t = &report.counts;
    assert_eq!(
        t.create, 1,
        "two sections of 357 KB fit one create transaction"
    );
    assert_eq!(t.seal, total_chunks(&sections));
    assert_eq!(t.failed, 0);
    assert_eq!(
        t.write_bytes_max, 1019,
        "no compute-budget instructions: the most bytes per write"
    );
    assert!(t.write_bytes_min.unwrap() >= 1);
    assert!(t.bytes_written <= artifact.len() as u64);
    // Every Write carries at most 1,019 bytes, so there are at least bytes/1019 of them.
    assert!(t.write >= t.bytes_written.div_ceil(1019));

    assert_eq!(report.rent, model_rent(&lengths(&sections)));
    assert_eq!(t.fees, FEE * report.transactions());
    assert_eq!(before - after, report.rent + t.fees);
    assert_eq!(
        (report.balance_before, report.balance_after),
        (before, after)
    );

    let v = verify(&bank, &report.model, &artifact).await.unwrap();
    assert!(v.ok());
    assert_eq!(v.onchain_hash, Some(hash));

    // Publishing again finds nothing to do and spends nothing.
    let again = publish(&bank, &authority, &artifact, true, &options())
        .await
        .unwrap();
    assert_eq!(again.transactions(), 0);
    assert_eq!(again.state, "Sealed");
    assert_eq!(bank.balance(&authority.pubkey()).await.unwrap(), after);

    // A sealed model is permanent: close refuses before sending anything.
    let err = close(&bank, &authority, &report.model, None, &options())
        .await
        .unwrap_err();
    assert!(
        matches!(err, Error::Sealed { model, .. } if model == report.model),
        "{err}"
    );
    assert_eq!(bank.balance(&authority.pubkey()).await.unwrap(), after);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn publish_status_close_recovers_all_rent() {
    let artifact = stories260k_artifact();
    let sections = split_sections(&artifact);
    let hash = sha256_chain(sections.iter().map(Vec::as_slice));
    let (bank, authority) = bank(100 * SOL).await;
    let before = bank.balance(&authority.pubkey()).await.unwrap();

    let report = publish(&bank, &authority, &artifact, false, &options())
        .await
        .unwrap();
    assert_eq!(report.state, "Open");
    assert_eq!(report.counts.seal, 0);
    assert_eq!(
        report.next.as_deref(),
        Some(format!("client seal {}", report.model).as_str())
    );

    let s = status(&bank, &report.model, Some(&artifact)).await.unwrap();
    assert_eq!(s.state, "Open");
    assert_eq!(s.weights_hash, hash);
    assert_eq!(s.rent_held, model_rent(&lengths(&sections)));
    assert_eq!(s.seal_cursor, 0);
    assert_eq!(s.total_chunks as u64, total_chunks(&sections));
    for (x, section) in s.sections.iter().zip(&sections) {
        assert!(x.created && !x.frozen);
        assert_eq!(x.length as usize, section.len());
        assert_eq!(x.differing_bytes, Some(0));
        assert_eq!(x.chunks_hashed, 0);
    }

    let closed = close(&bank, &authority, &report.model, None, &options())
        .await
        .unwrap();
    assert_eq!(closed.recovered, model_rent(&lengths(&sections)));
    assert_eq!(closed.fees, FEE);
    assert_eq!(closed.accounts_closed, 1 + sections.len());
    assert!(
        live_accounts(&bank, &authority.pubkey(), &hash, sections.len())
            .await
            .is_empty()
    );
    let after = bank.balance(&authority.pubkey()).await.unwrap();
    assert_eq!(
        before - after,
        FEE * (report.transactions() + 1),
        "only fees are lost"
    );
}
