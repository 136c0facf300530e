//! The client library on the in-process bank: publish, seal, status, verify, close, under
//! dropped transactions, expiring blockhashes, aborts, corruption and bad input.

#[path = "client/bad_input.rs"]
mod bad_input;
#[path = "client/claims.rs"]
mod claims;
#[path = "client/claims_load.rs"]
mod claims_load;
#[path = "client/crank.rs"]
mod crank;
#[path = "client/deployed_program.rs"]
mod deployed_program;
#[path = "client/faults.rs"]
mod faults;
#[path = "client/large_model.rs"]
mod large_model;
#[path = "client/late.rs"]
mod late;
#[path = "client/layouts.rs"]
mod layouts;
#[path = "client/long_prompt.rs"]
mod long_prompt;
#[path = "client/onchain_run.rs"]
mod onchain_run;
#[path = "client/pipelined.rs"]
mod pipelined;
#[path = "client/prefunded.rs"]
mod prefunded;
#[path = "client/priced.rs"]
mod priced;
#[path = "client/program_id.rs"]
mod program_id;
#[path = "client/publish.rs"]
mod publish;
#[path = "client/repair.rs"]
mod repair;
#[path = "client/run.rs"]
mod run;
#[path = "client/strangers.rs"]
mod strangers;

use curta_client::{BankTransport, Options, Transport};
use solana_keypair::Keypair;
use solana_pubkey::Pubkey;
use solana_signer::Signer;

/// Silences the bank's per-instruction debug log (unless RUST_LOG asks for it).
pub fn quiet() {
    static QUIET: std::sync::Once = std::sync::Once::new();
    QUIET.call_once(|| {
        if std::env::var_os("RUST_LOG").is_none() {
            std::env::set_var("RUST_LOG", "error");
        }
    });
}

/// A fresh bank and an authority holding `lamports`.
pub async fn bank(lamports: u64) -> (BankTransport, Keypair) {
    quiet();
    let authority = Keypair::new();
    let bank = BankTransport::start(&[(authority.pubkey(), lamports)]).await;
    (bank, authority)
}

/// Legacy transactions: these tests count and read the 1,232-byte format (its write
/// capacity, its compute-budget instructions); client/tests/tx_v1.rs covers version 1.
pub fn options() -> Options {
    Options {
        tx_version: curta_client::TxVersion::Legacy,
        ..Options::default()
    }
}

pub const SOL: u64 = 1_000_000_000;

/// The model address of `authority` for `artifact` at the default program id, from the
/// independent hash.
pub fn model_of(authority: &Pubkey, artifact: &[u8]) -> Pubkey {
    let sections = curta_tests::split_sections(artifact);
    let hash = curta_tests::sha256_chain(sections.iter().map(Vec::as_slice));
    curta_program::state::model_address(&curta_program::id(), authority, &hash).0
}

/// The creation id of the model at `model` (every Seal names it), read from the chain.
pub async fn creation_of<T: Transport>(t: &T, model: &Pubkey) -> u64 {
    let account = t.get_accounts(&[*model]).await.unwrap().remove(0);
    curta_program::state::Model::unpack(&account.expect("the model exists").data)
        .unwrap()
        .creation
}

/// Every section's weight account, as the model on chain records them.
pub async fn weights_of<T: Transport>(t: &T, model: &Pubkey) -> Vec<Pubkey> {
    let account = t.get_accounts(&[*model]).await.unwrap().remove(0);
    curta_program::state::Model::unpack(&account.expect("the model exists").data)
        .unwrap()
        .weights()
        .to_vec()
}

pub fn lengths(sections: &[Vec<u8>]) -> Vec<usize> {
    sections.iter().map(Vec::len).collect()
}

/// Chunks of 65,536 bytes over all sections (the last chunk of a section may be shorter).
pub fn total_chunks(sections: &[Vec<u8>]) -> u64 {
    sections
        .iter()
        .map(|s| s.len().div_ceil(65_536) as u64)
        .sum()
}

/// The model and seed-derived weight addresses of `authority` for `sections` that hold an
/// account with lamports.
pub async fn live_accounts<T: Transport>(
    t: &T,
    authority: &Pubkey,
    weights_hash: &[u8; 32],
    sections: usize,
) -> Vec<Pubkey> {
    let program = curta_program::id();
    let model = curta_program::state::model_address(&program, authority, weights_hash).0;
    let mut addresses = vec![model];
    addresses.extend(
        (0..sections)
            .map(|i| curta_program::state::weight_address(&program, authority, &model, i as u8)),
    );
    let accounts = t.get_accounts(&addresses).await.unwrap();
    addresses
        .into_iter()
        .zip(accounts)
        .filter(|(_, a)| a.as_ref().is_some_and(|a| a.lamports > 0))
        .map(|(k, _)| k)
        .collect()
}
/// Sends `instructions` with a 1,400,000 compute-unit limit, paid and signed by `payer`,
/// straight to the bank (no engine): the transaction's result.
pub async fn send_limited(
    bank: &BankTransport,
    payer: &Keypair,
    instructions: &[solana_instruction::Instruction],
) -> Result<(), solana_transaction_error::TransactionError> {
    use solana_compute_budget_interface::ComputeBudgetInstruction;
    let mut all = vec![ComputeBudgetInstruction::set_compute_unit_limit(1_400_000)];
    all.extend_from_slice(instructions);
    let client = bank.banks_client();
    let blockhash = client.get_latest_blockhash().await.unwrap();
    let tx = solana_transaction::Transaction::new_signed_with_payer(
        &all,
        Some(&payer.pubkey()),
        &[payer],
        blockhash,
    );
    // Held while it executes: the client may move the bank's slot (drawing a run's seed).
    let _executing = bank.slot_gate().read_owned().await;
    client.process_transaction(tx).await.map_err(|e| e.unwrap())
}

/// A run started by hand (create_account_with_seed + StartRun in one transaction, as an
/// interrupted client leaves it): its address, the rent put in, the model's weight accounts.
pub struct HandRun {
    pub address: Pubkey,
    pub rent: u64,
    pub weights: Vec<Pubkey>,
}

/// Starts run `nonce` of `runner` on the sealed `model` of `artifact` by hand.
#[allow(clippy::too_many_arguments)]
pub async fn start_run_by_hand(
    bank: &BankTransport,
    runner: &Keypair,
    artifact: &[u8],
    model: &Pubkey,
    nonce: u32,
    steps: u32,
    settings: &curta_core::infer::Settings,
    prompt: curta_program::instruction::OwnedPrompt,
) -> HandRun {
    use curta_program::run::{run_address, run_len, run_seed};
    let account = bank
        .get_accounts(&[*model])
        .await
        .unwrap()
        .remove(0)
        .unwrap();
    let sealed = curta_program::state::Model::unpack(&account.data).unwrap();
    let weights = sealed.weight_accounts[..sealed.sections().len()].to_vec();
    let (program, me) = (curta_program::id(), runner.pubkey());
    let address = run_address(&program, &me, model, nonce);
    let config = curta_core::decode(artifact).unwrap().config();
    let len = run_len(&config, steps) as usize;
    let rent = bank.rent_minimum(len).await.unwrap();
    let create = solana_system_interface::instruction::create_account_with_seed(
        &me,
        &address,
        &me,
        &run_seed(model, nonce),
        rent,
        len as u64,
        &program,
    );
    let start = curta_program::instruction::start_run(
        &program,
        &address,
        &me,
        model,
        &weights[0],
        nonce,
        steps,
        settings,
        curta_program::run::SeedSource::reproducible(settings.temperature),
        prompt,
    );
    send_limited(bank, runner, &[create, start]).await.unwrap();
    HandRun {
        address,
        rent,
        weights,
    }
}

#[path = "client/rpc.rs"]
mod rpc;
