//! Account bytes for the TypeScript SDK's tests (sdk/test/golden/chain.json), produced by the
//! real program on solana-program-test: a stories260K model published by a fixed authority and
//! recorded Open (written), Sealing (after chunk 0) and Sealed, with its weight accounts'
//! headers, and a model declared with a wrong hash recorded in Mismatch.
//!
//! The test compares what the bank holds with the committed file, so a change of the program's
//! layouts shows up here and in the SDK. To write the file afresh:
//! `CURTA_SDK_GOLDEN=sdk/test/golden/chain.json cargo test -p curta-tests --test sdk_accounts`
//! (the path is taken from the workspace root).

#[allow(dead_code)]
#[path = "program/harness.rs"]
mod harness;

use curta_program::state::{ModelState, WEIGHT_HEADER_LEN};
use curta_tests::{sha256_chain, split_sections, stories260k_artifact};
use harness::*;
use solana_pubkey::Pubkey;
use solana_sdk::account::Account;
use solana_sdk::signature::Keypair;
use std::fmt::Write as _;
use std::path::PathBuf;

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// One account as JSON: address, owner, lamports, data length and the first `keep` data bytes.
fn account_json(address: &Pubkey, account: &Account, keep: usize) -> String {
    let keep = keep.min(account.data.len());
    format!(
        "{{\"address\": \"{address}\", \"owner\": \"{}\", \"lamports\": {}, \"space\": {}, \"data\": \"{}\"}}",
        account.owner,
        account.lamports,
        account.data.len(),
        hex(&account.data[..keep])
    )
}

async fn snapshot(bank: &mut Bank, address: &Pubkey) -> String {
    let account = bank.account(address).await.expect("account exists");
    account_json(address, &account, account.data.len())
}

fn workspace_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..")
}

#[tokio::test]
async fn sdk_golden_accounts() {
    let artifact = stories260k_artifact();
    let sections = split_sections(&artifact);
    let declared = sha256_chain(sections.iter().map(|s| s.as_slice()));
    // A fixed authority, so the addresses (and the bump) are the same on every run.
    let authority = Keypair::new_from_array([7; 32]);
    let mut bank = Bank::start_as(authority, |_| {}).await;

    let p = written(&mut bank, sections.clone()).await;
    let open = snapshot(&mut bank, &p.model).await;
    seal_chunk(&mut bank, &p, 0, 0).await.unwrap();
    let sealing = snapshot(&mut bank, &p.model).await;
    for chunk in 1..p.chunks().len() as u32 {
        seal_chunk(&mut bank, &p, 0, chunk).await.unwrap();
    }
    assert_eq!(bank.model(&p.model).await.state, ModelState::Sealed);
    let sealed = snapshot(&mut bank, &p.model).await;
    let mut weights = Vec::new();
    for (s, w) in p.weights.iter().enumerate() {
        let account = bank.account(w).await.expect("weight account");
        assert_eq!(&account.data[WEIGHT_HEADER_LEN..], &sections[s][..]);
        weights.push(account_json(w, &account, WEIGHT_HEADER_LEN));
    }

    // The same sections declared under another hash: sealing ends in Mismatch.
    let mut wrong = declared;
    wrong[0] ^= 1;
    let m = create(&mut bank, sections.clone(), Some(wrong)).await;
    init_all(&mut bank, &m).await;
    write_all(&mut bank, &m, 16).await;
    seal_all(&mut bank, &m, 0).await;
    assert_eq!(bank.model(&m.model).await.state, ModelState::Mismatch);
    let mismatch = snapshot(&mut bank, &m.model).await;

    let mut json = String::from("{\n");
    let _ = writeln!(json, "  \"programId\": \"{}\",", curta_program::ID);
    let _ = writeln!(json, "  \"authority\": \"{}\",", p.authority);
    let _ = writeln!(json, "  \"artifact\": \"stories260K.curta\",");
    let _ = writeln!(json, "  \"weightsHash\": \"{}\",", hex(&declared));
    let _ = writeln!(json, "  \"model\": \"{}\",", p.model);
    let _ = writeln!(json, "  \"open\": {open},");
    let _ = writeln!(json, "  \"sealing\": {sealing},");
    let _ = writeln!(json, "  \"sealed\": {sealed},");
    let _ = writeln!(
        json,
        "  \"weights\": [\n    {}\n  ],",
        weights.join(",\n    ")
    );
    let _ = writeln!(json, "  \"mismatchModel\": \"{}\",", m.model);
    let _ = writeln!(json, "  \"mismatchWeightsHash\": \"{}\",", hex(&wrong));
    let _ = writeln!(json, "  \"mismatch\": {mismatch}");
    json.push_str("}\n");

    if let Some(path) = std::env::var_os("CURTA_SDK_GOLDEN") {
        let path = workspace_root().join(path);
        std::fs::write(&path, &json).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        return;
    }
    let path = workspace_root().join("sdk/test/golden/chain.json");
    let committed =
        std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    assert!(
        committed == json,
        "{} differs from the accounts the program produces now; rewrite it with \
         CURTA_SDK_GOLDEN=sdk/test/golden/chain.json cargo test -p curta-tests --test sdk_accounts",
        path.display()
    );
}
