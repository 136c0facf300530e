//! Running a model read from the chain: a sealed model's weight accounts give back the
//! artifact, checked against the declared hash, and run to the same tokens as the file; an
//! unsealed model, an absent one and a non-model are refused before anything runs.

use super::*;
use curta_client::model::{fetch_sealed, FetchError};
use curta_client::run::{generate, Prompt};
use curta_client::{publish, Error};
use curta_core::infer::Settings;
use curta_tests::{sha256_chain, split_sections, stories260k_artifact};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sealed_model_runs_from_its_weight_accounts() {
    let artifact = stories260k_artifact();
    let hash = sha256_chain(split_sections(&artifact).iter().map(Vec::as_slice));
    let (bank, authority) = bank(100 * SOL).await;
    let model = model_of(&authority.pubkey(), &artifact);

    // Absent, then Open (published without sealing): refused, nothing read as a model.
    let err = fetch_sealed(&bank, &model).await.unwrap_err();
    assert!(
        matches!(err, FetchError::Client(Error::ModelNotFound(m)) if m == model),
        "{err}"
    );
    publish(&bank, &authority, &artifact, false, &options())
        .await
        .unwrap();
    let err = fetch_sealed(&bank, &model).await.unwrap_err();
    assert!(
        matches!(&err, FetchError::NotSealed { model: m, .. } if *m == model),
        "{err}"
    );
    assert_eq!(
        err.to_string(),
        format!("model {model} is Open, not Sealed: only a sealed model runs (finish it with `client seal`)")
    );
    // A weight account is not a model.
    let weight =
        curta_program::state::weight_address(&curta_program::id(), &authority.pubkey(), &model, 0);
    let err = fetch_sealed(&bank, &weight).await.unwrap_err();
    assert!(
        matches!(err, FetchError::Client(Error::NotAModel { .. })),
        "{err}"
    );

    publish(&bank, &authority, &artifact, true, &options())
        .await
        .unwrap();
    let (bytes, declared) = fetch_sealed(&bank, &model).await.unwrap();
    assert_eq!(declared, hash);
    assert!(bytes == artifact, "the weight accounts hold the artifact");

    // The same tokens from the chain's bytes as from the file, greedy and sampled.
    let from_chain = curta_core::decode(&bytes).unwrap();
    let from_file = curta_core::decode(&artifact).unwrap();
    let prompt = Prompt::Text(b"e4 e5".to_vec()).tokens(&from_file).unwrap();
    for settings in [
        Settings::greedy(),
        Settings {
            temperature: 1 << 16,
            top_p: 58_982,
            seed: 42,
        },
    ] {
        let a = generate(&from_chain, &prompt, 24, settings, 2, |_, _| {}).unwrap();
        let b = generate(&from_file, &prompt, 24, settings, 1, |_, _| {}).unwrap();
        assert_eq!(a.tokens, b.tokens);
        assert_eq!(a.text, b.text);
        assert_eq!(a.weights_hash, curta_client::artifact::hex(&hash));
    }
}
