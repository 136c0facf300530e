//! A corrupted on-chain byte: seal reports the mismatch; seal with the artifact repairs it.

use super::*;
use curta_client::artifact::hex;
use curta_client::{publish, seal, verify, Error};
use curta_tests::{sha256_chain, split_sections, stories260k_artifact, Rng};
use solana_transaction::Transaction;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn corrupted_byte_is_reported_then_repaired() {
    let artifact = stories260k_artifact();
    let sections = split_sections(&artifact);
    let hash = sha256_chain(sections.iter().map(Vec::as_slice));
    let (bank, authority) = bank(100 * SOL).await;
    let report = publish(&bank, &authority, &artifact, false, &options())
        .await
        .unwrap();

    // The authority may write while the model is open: flip one byte of section 1.
    let offset = Rng::new(7).below(sections[1].len() as u64) as usize;
    let program = curta_program::id();
    let weight =
        curta_program::state::weight_address(&program, &authority.pubkey(), &report.model, 1);
    let flipped = sections[1][offset] ^ 0xff;
    let write = curta_program::instruction::write(
        &program,
        &weight,
        &authority.pubkey(),
        offset as u32,
        &[flipped],
    );
    let client = bank.banks_client();
    let blockhash = bank.latest_blockhash().await.unwrap().0;
    let tx = Transaction::new_signed_with_payer(
        &[write],
        Some(&authority.pubkey()),
        &[&authority],
        blockhash,
    );
    client.process_transaction(tx).await.unwrap();
    let mut corrupted = sections.clone();
    corrupted[1][offset] = flipped;
    let computed = sha256_chain(corrupted.iter().map(Vec::as_slice));

    let err = seal(&bank, &authority, &report.model, None, &options())
        .await
        .unwrap_err();
    match &err {
        Error::Mismatch {
            model,
            computed: c,
            declared,
        } => {
            assert_eq!(*model, report.model);
            assert_eq!(c, &hex(&computed));
            assert_eq!(declared, &hex(&hash));
        }
        other => panic!("expected a mismatch, got {other}"),
    }
    assert!(err.to_string().contains("--artifact"), "{err}");
    let v = verify(&bank, &report.model, &artifact).await.unwrap();
    assert!(!v.ok());
    assert_eq!(v.sections[1].differing_bytes, 1);
    assert_eq!(v.sections[1].first_difference, Some(offset));
    assert_eq!(v.onchain_hash, Some(computed));

    // Without the artifact a mismatched model stays as it is.
    let before = bank.balance(&authority.pubkey()).await.unwrap();
    assert!(matches!(
        seal(&bank, &authority, &report.model, None, &options()).await,
        Err(Error::Mismatch { .. })
    ));
    assert_eq!(bank.balance(&authority.pubkey()).await.unwrap(), before);

    let repaired = seal(
        &bank,
        &authority,
        &report.model,
        Some(&artifact),
        &options(),
    )
    .await
    .unwrap();
    assert_eq!(repaired.state, "Sealed");
    assert_eq!(repaired.counts.other, 1, "one Reopen");
    assert_eq!(
        (repaired.counts.write, repaired.counts.bytes_written),
        (1, 1),
        "one Write of the one differing byte"
    );
    assert_eq!(repaired.counts.seal, total_chunks(&sections));
    assert!(verify(&bank, &report.model, &artifact).await.unwrap().ok());
    let after = bank.balance(&authority.pubkey()).await.unwrap();
    assert_eq!(before - after, repaired.counts.fees);
    assert_eq!(
        repaired.counts.fees,
        curta_tests::client::FEE * repaired.transactions()
    );
}
