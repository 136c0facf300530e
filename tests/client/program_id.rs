//! The program id is the user's: a program loaded at another address than the crate's id is
//! published to, sealed, verified and closed at that address; a program id with no program
//! behind it, and a model that belongs to another deployment, are errors before anything is
//! spent.

use super::*;
use curta_client::{close, publish, seal, status, verify, Error};
use curta_program::state::{model_address, weight_address};
use curta_tests::client::{model_rent, Faulty, FEE};
use curta_tests::{seeded_keypair, sha256_chain, split_sections, Layout};

/// Publish + seal + status + verify of the 18-section layout and stories260K on a bank whose
/// program sits at a seeded random address; every account is derived from and owned by that
/// address, and nothing exists at the crate id's addresses.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_program_at_another_address_is_used_everywhere() {
    quiet();
    for (i, layout) in [Layout::Two, Layout::Eighteen].into_iter().enumerate() {
        let program = seeded_keypair(0x1d, i as u64).pubkey();
        assert_ne!(program, curta_program::id());
        let authority = Keypair::new();
        let bank = BankTransport::start_at(&[(authority.pubkey(), 100 * SOL)], program).await;
        let artifact = layout.artifact();
        let sections = split_sections(&artifact);
        let hash = sha256_chain(sections.iter().map(Vec::as_slice));
        let report = publish(&bank, &authority, &artifact, true, &options())
            .await
            .unwrap();
        let model = model_address(&program, &authority.pubkey(), &hash).0;
        assert_eq!(report.model, model, "derived from the program id in use");
        assert_eq!(report.state, "Sealed");
        let mut addresses = vec![model];
        addresses.extend(
            (0..sections.len())
                .map(|s| weight_address(&program, &authority.pubkey(), &model, s as u8)),
        );
        for (address, account) in addresses
            .iter()
            .zip(bank.get_accounts(&addresses).await.unwrap())
        {
            assert_eq!(
                account.expect("created").owner,
                program,
                "{address} owned by the program in use"
            );
        }
        let default_model = model_address(&curta_program::id(), &authority.pubkey(), &hash).0;
        assert_eq!(
            bank.get_accounts(&[default_model]).await.unwrap(),
            vec![None]
        );
        let s = status(&bank, &model, Some(&artifact)).await.unwrap();
        assert_eq!((s.state.as_str(), s.weights_hash), ("Sealed", hash));
        assert!(verify(&bank, &model, &artifact).await.unwrap().ok());
    }
}

/// Close of an unsealed model at another program id returns every lamport.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn close_at_another_program_id_recovers_all_rent() {
    quiet();
    let program = seeded_keypair(0x1d, 7).pubkey();
    let authority = Keypair::new();
    let bank = BankTransport::start_at(&[(authority.pubkey(), 100 * SOL)], program).await;
    let artifact = Layout::Two.artifact();
    let sections = split_sections(&artifact);
    let report = publish(&bank, &authority, &artifact, false, &options())
        .await
        .unwrap();
    let closed = close(&bank, &authority, &report.model, None, &options())
        .await
        .unwrap();
    assert_eq!(closed.recovered, model_rent(&lengths(&sections)));
    assert_eq!(
        100 * SOL - bank.balance(&authority.pubkey()).await.unwrap(),
        FEE * (report.transactions() + 1),
        "only fees are lost"
    );
}

/// A program id with no program behind it (an empty address, or the payer's own system
/// account): publish, seal and close refuse with ProgramNotDeployed, and spend nothing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_program_id_without_a_program_is_refused_before_spending() {
    let (bank, authority) = bank(100 * SOL).await;
    let artifact = Layout::Two.artifact();
    let empty = seeded_keypair(0x1d, 99).pubkey();
    for (wrong, found) in [
        (empty, "no account".to_string()),
        (
            authority.pubkey(),
            format!(
                "the account there is not executable (owner {}, 0 bytes)",
                solana_system_interface::program::ID
            ),
        ),
    ] {
        let t = Faulty::with_program_id(&bank, wrong);
        let expect = |err: Error| match err {
            Error::ProgramNotDeployed {
                program, found: f, ..
            } => {
                assert_eq!(program, wrong);
                assert_eq!(f, found);
            }
            other => panic!("expected ProgramNotDeployed, got {other}"),
        };
        expect(
            publish(&t, &authority, &artifact, true, &options())
                .await
                .unwrap_err(),
        );
        let model = Pubkey::new_unique();
        expect(
            seal(&t, &authority, &model, None, &options())
                .await
                .unwrap_err(),
        );
        expect(
            close(&t, &authority, &model, None, &options())
                .await
                .unwrap_err(),
        );
    }
    assert_eq!(bank.balance(&authority.pubkey()).await.unwrap(), 100 * SOL);
}

/// A model published under the crate's id, looked at by a client told another deployed
/// program (the bank's system program, which is executable): NotAModel names the owner,
/// the program expected and suggests --program-id; seal and close spend nothing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_model_of_another_deployment_is_a_clear_error() {
    let (bank, authority) = bank(100 * SOL).await;
    let artifact = Layout::Two.artifact();
    let report = publish(&bank, &authority, &artifact, false, &options())
        .await
        .unwrap();
    let before = bank.balance(&authority.pubkey()).await.unwrap();
    let other = solana_system_interface::program::ID;
    let t = Faulty::with_program_id(&bank, other);
    let err = seal(&t, &authority, &report.model, None, &options())
        .await
        .unwrap_err();
    match &err {
        Error::NotAModel {
            address,
            owner,
            program,
            ..
        } => {
            assert_eq!(
                (*address, *owner, *program),
                (report.model, curta_program::id(), other)
            );
        }
        other => panic!("expected NotAModel, got {other}"),
    }
    assert!(
        err.to_string()
            .contains(&format!("pass --program-id {}", curta_program::id())),
        "{err}"
    );
    assert!(close(&t, &authority, &report.model, None, &options())
        .await
        .is_err());
    assert!(status(&t, &report.model, None).await.is_err());
    assert_eq!(bank.balance(&authority.pubkey()).await.unwrap(), before);
}
