//! With a compute-unit price: every transaction carries the limit the cost check priced,
//! the payer pays exactly what was checked, and program errors are shown by name.

use super::*;
use curta_client::model::items::{seal_item, write_item};
use curta_client::send::{Engine, Progress};
use curta_client::{publish, Error};
use curta_tests::client::{model_rent, rent, Fault, Faulty, FEE};
use curta_tests::{split_sections, stories260k_artifact};
use solana_signature::Signature;
use solana_transaction::versioned::VersionedTransaction;
use solana_transaction::Transaction;

/// Micro-lamports per compute unit: not a round number, so the fee's rounding up shows.
const PRICE: u64 = 12_345;
/// The fixed limit of Writes, which cannot be simulated before their accounts exist
/// (docs/client.md): a fresh publish sends it.
const WRITE_LIMIT: u32 = 2_000;
/// The fixed limit of the Seals after chunk 0, which the cost check cannot simulate before the
/// pass starts; chunk 0's Seal carries its own fixed limit (it checks every sorted token id).
const SEAL_LIMIT: u32 = 120_000;
const SEAL_START_LIMIT: u32 = 870_000;

/// SetComputeUnitLimit: tag 2, then the u32 limit little-endian (the compute-budget program's
/// borsh layout).
fn set_limit(limit: u32) -> Vec<u8> {
    [&[2u8][..], &limit.to_le_bytes()].concat()
}

/// SetComputeUnitPrice: tag 3, then the u64 price little-endian.
fn set_price(price: u64) -> Vec<u8> {
    [&[3u8][..], &price.to_le_bytes()].concat()
}

/// Legacy transactions: these tests read the compute-budget instructions a price adds.
fn priced() -> Options {
    Options {
        compute_unit_price: Some(PRICE),
        tx_version: curta_client::TxVersion::Legacy,
        ..Options::default()
    }
}

/// The instructions of a landed transaction, decompiled.
fn instructions(tx: &VersionedTransaction) -> Vec<(Pubkey, Vec<u8>)> {
    let keys = tx.message.static_account_keys();
    tx.message
        .instructions()
        .iter()
        .map(|ix| (keys[ix.program_id_index as usize], ix.data.clone()))
        .collect()
}

/// Priority fee in lamports: price x limit micro-lamports, rounded up.
fn priority_fee(limit: u32) -> u64 {
    (PRICE * limit as u64).div_ceil(1_000_000)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn priced_publish_sends_and_pays_exactly_what_it_checked() {
    let artifact = stories260k_artifact();
    let sections = split_sections(&artifact);
    let rent_all = model_rent(&lengths(&sections));
    let (bank, authority) = bank(100 * SOL).await;
    let t = Faulty::new(&bank, Fault::None, 0);
    let before = bank.balance(&authority.pubkey()).await.unwrap();
    let report = publish(&t, &authority, &artifact, true, &priced())
        .await
        .unwrap();
    assert_eq!(report.state, "Sealed");
    let after = bank.balance(&authority.pubkey()).await.unwrap();

    let sent = t.forwarded_transactions();
    let signatures: Vec<Signature> = sent.iter().map(|tx| tx.signatures[0]).collect();
    let statuses = bank.statuses(&signatures).await.unwrap();
    let landed: Vec<&VersionedTransaction> = sent
        .iter()
        .zip(&statuses)
        .filter(|(_, s)| matches!(s, curta_client::TxStatus::Landed(_)))
        .map(|(tx, _)| tx)
        .collect();
    assert_eq!(landed.len() as u64, report.transactions());

    // The create's limit: its instructions simulated on a second bank (same authority, so
    // the same addresses) with the maximum limit, then 1.2 x units + 1,000.
    let second = BankTransport::start(&[(authority.pubkey(), 100 * SOL)]).await;
    let compute_budget: Pubkey = "ComputeBudget111111111111111111111111111111"
        .parse()
        .unwrap();
    let program = curta_program::id();
    let (mut creates, mut writes, mut seals, mut expected_fees) = (0, 0, 0, 0);
    for tx in &landed {
        let ixs = instructions(tx);
        assert_eq!(ixs[0].0, compute_budget, "first: SetComputeUnitLimit");
        assert_eq!(ixs[1].0, compute_budget, "second: SetComputeUnitPrice");
        assert_eq!(ixs[1].1, set_price(PRICE));
        let limit = match ixs[2] {
            (p, ref d) if p == program && d[0] == 2 => {
                writes += 1;
                WRITE_LIMIT
            }
            (p, ref d) if p == program && d[0] == 3 => {
                seals += 1;
                // Seal's data: tag, pass (u32), chunk (u32), creation (u64).
                match u32::from_le_bytes(d[5..9].try_into().unwrap()) {
                    0 => SEAL_START_LIMIT,
                    _ => SEAL_LIMIT,
                }
            }
            _ => {
                creates += 1;
                let mut message = (*tx)
                    .clone()
                    .into_legacy_transaction()
                    .expect("a legacy transaction")
                    .message;
                message.instructions.remove(1);
                let mut unsigned = Transaction::new_unsigned(message);
                unsigned.message.instructions[0].data = set_limit(1_400_000);
                let (blockhash, _) = second.latest_blockhash().await.unwrap();
                unsigned.sign(&[&authority], blockhash);
                let simulation = second.simulate(&unsigned.into()).await.unwrap();
                assert_eq!(simulation.result, Ok(()), "{:?}", simulation.logs);
                let units = simulation.units;
                (units + units / 5 + 1_000) as u32
            }
        };
        assert_eq!(
            ixs[0].1,
            set_limit(limit),
            "limit of {:?}",
            ixs[2].1.first()
        );
        expected_fees += FEE + priority_fee(limit);
    }
    assert_eq!(creates, 1);
    assert_eq!(seals, total_chunks(&sections));
    assert_eq!(writes, report.counts.write);
    assert_eq!(report.counts.fees, expected_fees);
    assert_eq!(report.rent, rent_all);
    assert_eq!(before - after, rent_all + expected_fees);
    // 1,019 bytes less the compute-budget program's key (32) and the two instructions
    // (1 program index + 1 account count + 1 data length + 5 or 9 data bytes).
    let capacity = 1019 - 32 - (3 + 5) - (3 + 9);
    assert_eq!(capacity, 967);
    assert_eq!(report.counts.write_bytes_max, capacity);
    let json = report.to_json();
    assert_eq!(json["write_bytes_per_tx"]["max"], capacity);
    assert_eq!(json["write_bytes_per_tx"]["capacity"], 1019);
    assert_eq!(
        json["write_bytes_per_tx"]["capacity_with_compute_budget"],
        capacity
    );

    // The cost check asks for exactly rent + these fees + the payer's own rent-exempt
    // minimum (the runtime refuses a transaction that leaves a fee payer with fewer
    // lamports, unless none), each from the formula above.
    let reserve = rent(0);
    let needed = rent_all + expected_fees + reserve;
    for (balance, refused) in [
        (needed - 1, true),
        (rent_all + expected_fees + 1, true),
        (needed, false),
    ] {
        let fresh = BankTransport::start(&[(authority.pubkey(), balance)]).await;
        let result = publish(&fresh, &authority, &artifact, true, &priced()).await;
        let left = fresh.balance(&authority.pubkey()).await.unwrap();
        if refused {
            match result {
                Err(Error::InsufficientFunds {
                    payer,
                    balance: b,
                    needed: n,
                    rent: r,
                    fees: f,
                    reserve: k,
                }) => {
                    assert_eq!(
                        (payer, b, n, r, f, k),
                        (
                            authority.pubkey(),
                            balance,
                            needed,
                            rent_all,
                            expected_fees,
                            reserve
                        )
                    );
                }
                other => {
                    panic!("a payer with {balance} lamports: expected a refusal, got {other:?}")
                }
            }
            assert_eq!(left, balance, "nothing sent");
        } else {
            let report = result.unwrap();
            assert_eq!(report.state, "Sealed");
            assert_eq!(report.counts.fees, expected_fees);
            assert_eq!(
                left, reserve,
                "the payer keeps exactly its rent-exempt minimum"
            );
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refused_write_is_shown_by_its_program_error_name_and_section() {
    let artifact = stories260k_artifact();
    let (bank, authority) = bank(100 * SOL).await;
    let report = publish(&bank, &authority, &artifact, false, &options())
        .await
        .unwrap();
    let program = curta_program::id();
    let weights = weights_of(&bank, &report.model).await;
    let weight0 =
        curta_program::state::weight_address(&program, &authority.pubkey(), &report.model, 0);
    assert_eq!(weights[0], weight0);
    let creation = creation_of(&bank, &report.model).await;
    let mut engine = Engine::new(&bank, &authority, None, None, Progress::hidden());
    // Chunk 0 starts a seal pass, which freezes every section.
    let start = seal_item(
        0,
        curta_program::instruction::start_seal(
            &program,
            &report.model,
            &weights,
            &authority.pubkey(),
            creation,
            0,
        ),
    );
    engine.send_one(start, "seal").await.unwrap();
    let write = write_item(
        0,
        3,
        curta_program::instruction::write(&program, &weight0, &authority.pubkey(), 0, &[1, 2, 3]),
    );
    let err = engine.send_one(write, "write").await.unwrap_err();
    // SectionFrozen is custom error 15 (docs/program.md's table).
    assert_eq!(
        err.to_string(),
        format!(
            "write transaction for section 0 (weight account {weight0}) failed: instruction 0: \
             SectionFrozen (section is frozen: a seal pass started; Reopen unfreezes it, custom program error 15)"
        )
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn status_json_counts_what_is_still_needed() {
    let artifact = stories260k_artifact();
    let sections = split_sections(&artifact);
    let (bank, authority) = bank(100 * SOL).await;
    let report = publish(&bank, &authority, &artifact, false, &options())
        .await
        .unwrap();
    let chunks = total_chunks(&sections);
    let held = model_rent(&lengths(&sections));
    for with_artifact in [true, false] {
        let s = curta_client::status(&bank, &report.model, with_artifact.then_some(&artifact[..]))
            .await
            .unwrap();
        let j = s.to_json();
        assert_eq!(j["model"], report.model.to_string());
        assert_eq!(
            j["weights_hash"],
            curta_client::artifact::hex(&report.weights_hash)
        );
        assert_eq!(j["state"], "Open");
        assert_eq!(j["transactions"]["create"], 0);
        assert_eq!(j["transactions"]["seal"], chunks);
        assert_eq!(j["lamports"]["rent"], held);
        assert!(j["write_bytes_per_tx"].is_null(), "nothing left to write");
        assert!(j["seconds"].as_f64().unwrap() >= 0.0);
        if with_artifact {
            assert_eq!(j["transactions"]["write"], 0);
            assert_eq!(j["lamports"]["fees"], FEE * chunks);
        } else {
            assert!(j["transactions"]["write"].is_null());
            assert!(j["lamports"]["fees"].is_null());
        }
    }
    // A sealed model needs nothing more.
    let sealed = curta_client::seal(&bank, &authority, &report.model, None, &options())
        .await
        .unwrap();
    assert_eq!(sealed.state, "Sealed");
    let j = curta_client::status(&bank, &report.model, None)
        .await
        .unwrap()
        .to_json();
    assert_eq!(
        (
            &j["transactions"]["create"],
            &j["transactions"]["write"],
            &j["transactions"]["seal"]
        ),
        (
            &serde_json::json!(0),
            &serde_json::json!(0),
            &serde_json::json!(0)
        )
    );
    assert_eq!(j["lamports"]["fees"], 0);
}
