//! Sealing is started by the authority (chunk 0 needs its signature) and may then be cranked
//! to the end by anyone, who pays only the fees of the chunks it sends.

use super::*;
use curta_client::{publish, seal, Error};
use curta_tests::{sha256_chain, split_sections, stories260k_artifact};
use solana_transaction::Transaction;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn anyone_may_crank_a_seal_the_authority_started() {
    quiet();
    let artifact = stories260k_artifact();
    let sections = split_sections(&artifact);
    let (authority, cranker) = (Keypair::new(), Keypair::new());
    let bank =
        BankTransport::start(&[(authority.pubkey(), 100 * SOL), (cranker.pubkey(), SOL)]).await;
    let report = publish(&bank, &authority, &artifact, false, &options())
        .await
        .unwrap();
    let model = report.model;

    // Not started yet: a third party cannot start the pass, and nothing is sent.
    let cranker_before = bank.balance(&cranker.pubkey()).await.unwrap();
    match seal(&bank, &cranker, &model, None, &options()).await {
        Err(Error::NotAuthority {
            model: m,
            signer,
            authority: a,
        }) => {
            assert_eq!(
                (m, signer, a),
                (model, cranker.pubkey(), authority.pubkey())
            );
        }
        other => panic!("expected NotAuthority, got {other:?}"),
    }
    assert_eq!(
        bank.balance(&cranker.pubkey()).await.unwrap(),
        cranker_before
    );

    // The authority starts the pass (chunk 0) and stops there.
    let program = curta_program::id();
    let weights = weights_of(&bank, &model).await;
    assert_eq!(
        weights[0],
        curta_program::state::weight_address(&program, &authority.pubkey(), &model, 0)
    );
    let creation = creation_of(&bank, &model).await;
    let start = curta_program::instruction::start_seal(
        &program,
        &model,
        &weights,
        &authority.pubkey(),
        creation,
        0,
    );
    let blockhash = bank.latest_blockhash().await.unwrap().0;
    let tx = Transaction::new_signed_with_payer(
        &[start],
        Some(&authority.pubkey()),
        &[&authority],
        blockhash,
    );
    bank.banks_client().process_transaction(tx).await.unwrap();

    // The third party cranks every remaining chunk; the authority pays nothing for it.
    let authority_before = bank.balance(&authority.pubkey()).await.unwrap();
    let report = seal(&bank, &cranker, &model, None, &options())
        .await
        .unwrap();
    assert_eq!(report.state, "Sealed");
    let remaining = total_chunks(&sections) - 1;
    assert_eq!(report.transactions(), remaining);
    assert_eq!(
        cranker_before - bank.balance(&cranker.pubkey()).await.unwrap(),
        remaining * curta_tests::client::FEE
    );
    assert_eq!(
        bank.balance(&authority.pubkey()).await.unwrap(),
        authority_before
    );

    let account = bank
        .get_accounts(&[model])
        .await
        .unwrap()
        .remove(0)
        .unwrap();
    let on_chain = curta_program::state::Model::unpack(&account.data).unwrap();
    assert_eq!(
        on_chain.running_hash,
        sha256_chain(sections.iter().map(Vec::as_slice))
    );
}
