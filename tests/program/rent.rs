//! Rent: every account the publishing creates is rent-exempt, and Close returns every lamport.

use crate::harness::*;
use curta_program::instruction as ix;
use curta_program::state::{MODEL_LEN, WEIGHT_HEADER_LEN};
use curta_tests::tiny_sections;
use solana_pubkey::Pubkey;
use solana_sdk::signature::Signer;

#[tokio::test]
async fn rent_exempt_and_close_returns_every_lamport() {
    let mut bank = Bank::start().await;
    let a = bank.authority.insecure_clone();
    let me = a.pubkey();

    // Rent, from the spec of the bank: (128 + length) x 6,960 lamports.
    assert_eq!(bank.rent.minimum_balance(MODEL_LEN), (128 + 808) * 6_960);
    let before = bank.lamports(&me).await;
    let p = written(&mut bank, tiny_sections(100_000, 21)).await;
    let model_rent = bank.lamports(&p.model).await;
    assert_eq!(model_rent, (128 + MODEL_LEN as u64) * 6_960);
    let mut total = model_rent;
    for (s, w) in p.weights.iter().enumerate() {
        let account = bank.account(w).await.unwrap();
        let len = WEIGHT_HEADER_LEN + p.sections[s].len();
        assert_eq!(account.data.len(), len);
        assert_eq!(
            account.lamports,
            (128 + len as u64) * 6_960,
            "section {s}'s weight account"
        );
        assert!(bank.rent.is_exempt(account.lamports, len));
        total += account.lamports;
    }
    // The authority (never the fee payer) paid exactly the rent of every account.
    assert_eq!(before - bank.lamports(&me).await, total);

    // Close into a fresh address: it gains exactly the sum; every account is gone.
    let dest = Pubkey::new_unique();
    let payer_before = bank.lamports(&bank.ctx.payer.pubkey()).await;
    bank.send(
        &[ix::close(&PROGRAM, &p.model, &me, &dest, &p.weights)],
        &[&a],
    )
    .await
    .unwrap();
    assert_eq!(bank.lamports(&dest).await, total);
    assert_eq!(
        bank.lamports(&me).await,
        before - total,
        "the authority neither pays nor gains"
    );
    assert_eq!(
        payer_before - bank.lamports(&bank.ctx.payer.pubkey()).await,
        10_000,
        "two signatures' fee"
    );
    for x in p.accounts() {
        assert_eq!(bank.account(&x).await, None);
    }
}

#[tokio::test]
async fn close_of_a_partly_created_model() {
    let mut bank = Bank::start().await;
    let a = bank.authority.insecure_clone();
    let me = a.pubkey();
    let p = create(&mut bank, tiny_sections(20_000, 22), None).await;
    // Section zero: created, not initialized. Section one: never created.
    bank.send(&[create_weight(&bank, &p, 0)], &[&a])
        .await
        .unwrap();
    let sum = bank.lamports(&p.model).await + bank.lamports(&p.weights[0]).await;
    assert_eq!(bank.account(&p.weights[1]).await, None);
    let before = bank.lamports(&me).await;
    // The authority itself as destination.
    bank.send(
        &[ix::close(&PROGRAM, &p.model, &me, &me, &p.weights)],
        &[&a],
    )
    .await
    .unwrap();
    assert_eq!(bank.lamports(&me).await, before + sum);
    for x in p.accounts() {
        assert_eq!(bank.account(&x).await, None);
    }
}
