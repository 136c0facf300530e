//! Bad input: clear errors, and nothing sent (the payer's balance is unchanged).

use super::*;
use curta_client::artifact::hex;
use curta_client::{close, publish, seal, status, verify, Error};
use curta_tests::client::{model_rent, FEE};
use curta_tests::{sha256_chain, split_sections, stories260k_artifact};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unfunded_payer_is_refused_with_the_numbers() {
    let artifact = stories260k_artifact();
    let sections = split_sections(&artifact);
    let (bank, authority) = bank(SOL).await;
    let err = publish(&bank, &authority, &artifact, true, &options())
        .await
        .unwrap_err();
    match &err {
        Error::InsufficientFunds {
            payer,
            balance,
            needed,
            rent,
            fees,
            reserve,
        } => {
            assert_eq!(*payer, authority.pubkey());
            assert_eq!(*balance, SOL);
            assert_eq!(*rent, model_rent(&lengths(&sections)));
            assert!(*fees > 0 && fees % FEE == 0);
            // At least one create, every byte in 1,019-byte writes, one seal per chunk.
            assert!(
                *fees
                    >= FEE
                        * (1 + (artifact.len() as u64 / 2).div_ceil(1019)
                            + total_chunks(&sections))
            );
            // The payer must keep its own rent-exempt minimum (a 0-byte account).
            assert_eq!(*reserve, curta_tests::client::rent(0));
            assert_eq!(*needed, rent + fees + reserve);
        }
        other => panic!("expected insufficient funds, got {other}"),
    }
    let text = err.to_string();
    assert!(
        text.contains(&authority.pubkey().to_string()) && text.contains("1000000000 lamports"),
        "{text}"
    );
    assert_eq!(bank.balance(&authority.pubkey()).await.unwrap(), SOL);
    let hash = sha256_chain(sections.iter().map(Vec::as_slice));
    assert!(
        live_accounts(&bank, &authority.pubkey(), &hash, sections.len())
            .await
            .is_empty()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn wrong_addresses_and_files_send_nothing() {
    let artifact = stories260k_artifact();
    let sections = split_sections(&artifact);
    let (bank, authority) = bank(100 * SOL).await;
    let before = bank.balance(&authority.pubkey()).await.unwrap();

    // No account at the address.
    let nowhere = Pubkey::new_unique();
    let err = seal(&bank, &authority, &nowhere, None, &options())
        .await
        .unwrap_err();
    assert!(
        matches!(err, Error::ModelNotFound(a) if a == nowhere),
        "{err}"
    );
    assert!(matches!(
        status(&bank, &nowhere, None).await,
        Err(Error::ModelNotFound(_))
    ));
    assert!(matches!(
        close(&bank, &authority, &nowhere, None, &options()).await,
        Err(Error::ModelNotFound(_))
    ));

    // An account that is not a model (the payer's own system account).
    let err = seal(&bank, &authority, &authority.pubkey(), None, &options())
        .await
        .unwrap_err();
    match &err {
        Error::NotAModel {
            address,
            owner,
            len,
            program,
        } => {
            assert_eq!(*program, curta_program::id());
            assert_eq!(*address, authority.pubkey());
            assert_eq!(*owner, solana_system_interface::program::ID);
            assert_eq!(*len, 0);
        }
        other => panic!("expected not a model, got {other}"),
    }

    // Files that are not artifacts.
    for bad in [
        b"not an artifact at all".to_vec(),
        artifact[..4096].to_vec(),
        Vec::new(),
    ] {
        let err = publish(&bank, &authority, &bad, true, &options())
            .await
            .unwrap_err();
        assert!(matches!(err, Error::Artifact(_)), "{err}");
        assert!(
            err.to_string().starts_with("not a CURTAW01 artifact"),
            "{err}"
        );
    }
    assert_eq!(bank.balance(&authority.pubkey()).await.unwrap(), before);

    // An artifact whose hash differs from the existing model's.
    let report = publish(&bank, &authority, &artifact, false, &options())
        .await
        .unwrap();
    let spent = bank.balance(&authority.pubkey()).await.unwrap();
    let mut other = artifact.clone();
    let last = other.len() - 1;
    other[last] ^= 1;
    let mut other_sections = sections.clone();
    let s = other_sections.len() - 1;
    let l = other_sections[s].len() - 1;
    other_sections[s][l] ^= 1;
    let err = seal(&bank, &authority, &report.model, Some(&other), &options())
        .await
        .unwrap_err();
    match &err {
        Error::HashMismatch {
            model,
            artifact: a,
            declared,
        } => {
            assert_eq!(*model, report.model);
            assert_eq!(
                a,
                &hex(&sha256_chain(other_sections.iter().map(Vec::as_slice)))
            );
            assert_eq!(
                declared,
                &hex(&sha256_chain(sections.iter().map(Vec::as_slice)))
            );
        }
        other => panic!("expected a hash mismatch, got {other}"),
    }
    assert!(matches!(
        verify(&bank, &report.model, &other).await,
        Err(Error::HashMismatch { .. })
    ));
    assert!(matches!(
        status(&bank, &report.model, Some(&other)).await,
        Err(Error::HashMismatch { .. })
    ));

    // Someone else may not close it.
    let stranger = Keypair::new();
    let err = close(&bank, &stranger, &report.model, None, &options())
        .await
        .unwrap_err();
    assert!(matches!(err, Error::NotAuthority { .. }), "{err}");
    assert_eq!(bank.balance(&authority.pubkey()).await.unwrap(), spent);
}
