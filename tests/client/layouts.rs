//! Every section layout the format allows (2, 3, 8 and 18 sections), published and sealed
//! under many authorities (the smallest model of each layout, about 1 MB; stories15M's
//! 16.5 MB shape once); the create transactions landing in the worst order; publish
//! interrupted after its creates and resumed; pre-funded weight addresses; and the create
//! transactions checked against the packet and the runtime's per-transaction limits.

use super::*;
use curta_client::model::items::{self as plan, MAX_NEW_DATA_PER_TX};
use curta_client::send::format::{transaction_len, PACKET_LEN};
use curta_client::{close, publish, status, verify, Error};
use curta_program::state::{model_address, weight_address, MODEL_LEN, WEIGHT_HEADER_LEN};
use curta_tests::client::{landed, model_rent, rent, Fault, Faulty, FEE};
use curta_tests::{seeded_keypair, sha256_chain, split_sections, Layout};
use solana_instruction::Instruction;
use solana_transaction::Transaction;

/// Authorities per layout, from the seeded generator.
const AUTHORITIES: u64 = 50;
/// Enough for the rent of the largest layout (stories15M's 16.5 MB, about 115 SOL) and its
/// fees.
const FUNDS: u64 = 200 * SOL;

/// The end state every publish here must reach: the model account says Sealed (state byte
/// 9 = 4) with the declared and running hashes equal to the independently computed chain,
/// the chain's bytes equal the file, close is refused without spending, and the only live
/// accounts are the model and its weight accounts.
async fn assert_sealed(bank: &BankTransport, authority: &Keypair, artifact: &[u8]) {
    let sections = split_sections(artifact);
    let hash = sha256_chain(sections.iter().map(Vec::as_slice));
    let model = model_of(&authority.pubkey(), artifact);
    let data = bank
        .get_accounts(&[model])
        .await
        .unwrap()
        .pop()
        .flatten()
        .expect("model account")
        .data;
    assert_eq!(data[9], 4, "state byte: Sealed");
    assert_eq!(&data[48..80], &hash, "declared hash");
    assert_eq!(&data[80..112], &hash, "running hash");
    let v = verify(bank, &model, artifact).await.unwrap();
    assert!(v.ok(), "chain bytes equal the file");
    let before = bank.balance(&authority.pubkey()).await.unwrap();
    let err = close(bank, authority, &model, None, &options())
        .await
        .unwrap_err();
    assert!(matches!(err, Error::Sealed { .. }), "{err}");
    assert_eq!(bank.balance(&authority.pubkey()).await.unwrap(), before);
    let live = live_accounts(bank, &authority.pubkey(), &hash, sections.len()).await;
    assert_eq!(
        live.len(),
        1 + sections.len(),
        "the model and its weight accounts"
    );
}

/// Publishes and seals `layout` under the seeded authorities `indices` on one bank, with
/// exact lamports: rent of every account plus one fee per transaction.
async fn publish_under_many_authorities(layout: Layout, seed: u64, indices: std::ops::Range<u64>) {
    let artifact = layout.artifact();
    let sections = split_sections(&artifact);
    assert_eq!(sections.len(), layout.sections());
    let authorities: Vec<Keypair> = indices.map(|i| seeded_keypair(seed, i)).collect();
    quiet();
    let funded: Vec<(Pubkey, u64)> = authorities.iter().map(|a| (a.pubkey(), FUNDS)).collect();
    let bank = BankTransport::start(&funded).await;
    for authority in &authorities {
        let report = publish(&bank, authority, &artifact, true, &options())
            .await
            .unwrap_or_else(|e| panic!("{layout:?}, authority {}: {e}", authority.pubkey()));
        assert_eq!(report.state, "Sealed");
        assert_eq!(
            report.counts.failed, 0,
            "no transaction landed with an error"
        );
        assert_eq!(
            FUNDS - bank.balance(&authority.pubkey()).await.unwrap(),
            model_rent(&lengths(&sections)) + FEE * report.transactions(),
            "{layout:?}: rent of every account + one fee per transaction"
        );
        assert_sealed(&bank, authority, &artifact).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_sections_under_fifty_authorities() {
    publish_under_many_authorities(Layout::Two, 0x2002, 0..AUTHORITIES).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn three_sections_under_fifty_authorities() {
    publish_under_many_authorities(Layout::Three, 0x3003, 0..AUTHORITIES).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn eight_sections_under_fifty_authorities() {
    publish_under_many_authorities(Layout::Eight, 0x8008, 0..AUTHORITIES).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn eighteen_sections_under_fifty_authorities() {
    publish_under_many_authorities(Layout::Eighteen, 0x1818, 0..AUTHORITIES).await;
}

/// The one full-size publish: stories15M's shape (16.5 MB, a 9.47 MB section that every
/// Write copies in and out of the VM, about 20 s on the bank) under one authority, with the
/// same checks as the loops above. The many-authority loops run on the smallest model of
/// each layout.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stories15m_shape_under_one_authority() {
    publish_under_many_authorities(Layout::Stories15M, 0x1515, 0..1).await;
}

/// The bug of a multi-section publish: its create transactions went out together, and one
/// that initializes weight accounts could execute before the one that creates the model
/// (WrongOwner: the model address was not yet the program's). A transport that executes each
/// batch last first makes that order certain: publish must still seal.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn creates_landing_last_first_still_seal() {
    for layout in [Layout::Eight, Layout::Eighteen] {
        let artifact = layout.artifact();
        let (bank, authority) = bank(FUNDS).await;
        let reversed = Faulty::new(&bank, Fault::Reverse, 1);
        let report = publish(&reversed, &authority, &artifact, true, &options())
            .await
            .unwrap_or_else(|e| panic!("{layout:?}: {e}"));
        assert!(
            report.counts.create >= 2,
            "{layout:?}: several create transactions"
        );
        assert_eq!(
            report.counts.failed, 0,
            "{layout:?}: no create landed too early"
        );
        assert_sealed(&bank, &authority, &artifact).await;
    }
}

/// The planned creates: the model's transaction is set apart (it must land first), and no
/// other create transaction carries CreateModel.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_model_transaction_is_planned_apart() {
    let authority = seeded_keypair(9, 0);
    for layout in Layout::ALL {
        let creates = planned_creates(layout, &authority.pubkey(), false);
        let model = creates
            .model
            .as_ref()
            .expect("the model is missing: it is created");
        assert_eq!(
            model.instructions[0].data[0], 0,
            "CreateModel (tag 0) leads"
        );
        for item in &creates.weights {
            assert!(
                item.instructions
                    .iter()
                    .all(|ix| ix.program_id != curta_program::id() || ix.data[0] != 0),
                "{layout:?}: CreateModel only in the model's transaction"
            );
        }
        let expected = if layout.sections() > 3 { 2.. } else { 1.. };
        assert!(
            expected.contains(&creates.len()),
            "{layout:?}: {}",
            creates.len()
        );
    }
}

/// The creates of `layout` planned from an empty chain for `authority`, with or without the
/// two compute-budget instructions a priced run adds.
fn planned_creates(layout: Layout, authority: &Pubkey, priced: bool) -> plan::Creates {
    let artifact = layout.artifact();
    let sections = split_sections(&artifact);
    let lengths: Vec<u32> = sections.iter().map(|s| s.len() as u32).collect();
    let hash = sha256_chain(sections.iter().map(Vec::as_slice));
    let program = curta_program::id();
    let model = model_address(&program, authority, &hash).0;
    let chain = curta_client::model::accounts::OnChain {
        program_id: program,
        address: model,
        model: None,
        model_lamports: 0,
        weights: (0..lengths.len())
            .map(|i| curta_client::model::accounts::Weight {
                address: weight_address(&program, authority, &model, i as u8),
                account: None,
                header: None,
                prefunded: 0,
            })
            .collect(),
    };
    plan::creates(
        &chain,
        authority,
        hash,
        &lengths,
        &|len| rent(len),
        &|ixs| transaction_len(authority, priced, ixs),
    )
}

/// New account data a create transaction allocates: the space of each create_account_with_seed
/// and allocate_with_seed it carries (system instructions 3 and 9, space at bytes 4.. after
/// the base, seed length and seed, and lamports for creates), read from the wire bytes.
fn new_account_data(instructions: &[Instruction]) -> usize {
    let mut total = 0;
    for ix in instructions {
        if ix.program_id == curta_program::id() && ix.data[0] == 0 {
            total += MODEL_LEN;
        }
        if ix.program_id != solana_system_interface::program::ID {
            continue;
        }
        let tag = u32::from_le_bytes(ix.data[0..4].try_into().unwrap());
        // After the tag: base (32 bytes), seed (u64 length + bytes), then for a create the
        // lamports (8) before the space; for an allocate the space directly.
        let lamports_len = match tag {
            3 => 8, // CreateAccountWithSeed
            9 => 0, // AllocateWithSeed
            _ => continue,
        };
        let seed_len = u64::from_le_bytes(ix.data[36..44].try_into().unwrap()) as usize;
        let space_at = 44 + seed_len + lamports_len;
        total += u64::from_le_bytes(ix.data[space_at..space_at + 8].try_into().unwrap()) as usize;
    }
    total
}

/// Every layout's create transactions, with and without compute-budget instructions, fit a
/// packet (serialized and signed for real), allocate at most the runtime's 2 x 10 MiB per
/// transaction, lock at most 64 accounts, and create every section exactly once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn create_transactions_fit_the_packet_and_the_runtime_limits() {
    assert_eq!(MAX_NEW_DATA_PER_TX, 2 * 10 * 1024 * 1024);
    let authority = seeded_keypair(10, 0);
    for layout in Layout::ALL {
        for priced in [false, true] {
            let creates = planned_creates(layout, &authority.pubkey(), priced);
            let mut inits = Vec::new();
            for item in creates.items() {
                let mut instructions = item.instructions.clone();
                if priced {
                    instructions.insert(
                        0,
                        solana_compute_budget_interface::ComputeBudgetInstruction::set_compute_unit_limit(1_400_000),
                    );
                    instructions.insert(
                        1,
                        solana_compute_budget_interface::ComputeBudgetInstruction::set_compute_unit_price(u64::MAX),
                    );
                }
                let tx = Transaction::new_signed_with_payer(
                    &instructions,
                    Some(&authority.pubkey()),
                    &[&authority],
                    solana_hash::Hash::new_unique(),
                );
                let wire = bincode::serialize(&tx).unwrap();
                assert!(wire.len() <= PACKET_LEN, "{layout:?}: {} bytes", wire.len());
                assert!(
                    tx.message.account_keys.len() <= 64,
                    "{layout:?}: account locks"
                );
                assert!(
                    new_account_data(&item.instructions) <= 2 * 10_485_760,
                    "{layout:?}: new data per transaction"
                );
                inits.extend(
                    item.instructions
                        .iter()
                        .filter(|ix| ix.program_id == curta_program::id() && ix.data[0] == 1)
                        .map(|ix| ix.data[1]),
                );
            }
            let expected: Vec<u8> = (0..layout.sections() as u8).collect();
            assert_eq!(
                inits, expected,
                "{layout:?}: each section initialized once, in order"
            );
        }
    }
}

/// Publish of an 18- and an 8-section model interrupted right after its create round (the
/// connection drops), then run again: it finishes without creating anything twice, ends
/// Sealed, and the authority paid exactly rent + one fee per landed transaction.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn publish_interrupted_after_creates_resumes() {
    for layout in [Layout::Eighteen, Layout::Eight] {
        let artifact = layout.artifact();
        let sections = split_sections(&artifact);
        let (bank, authority) = bank(FUNDS).await;
        let faulty = Faulty::new(&bank, Fault::None, 3);
        // Two sends: the model's transaction, then the other creates; the third call fails.
        *faulty.fail_after_sends.lock().unwrap() = Some(2);
        let err = publish(&faulty, &authority, &artifact, true, &options())
            .await
            .unwrap_err();
        assert!(matches!(err, Error::Transport(_)), "{err}");
        // Everything forwarded has executed (landed waits for the bank's queue) before the
        // chain is read.
        let first = landed(&bank, &faulty.forwarded()).await;
        let model = model_of(&authority.pubkey(), &artifact);
        let s = status(&bank, &model, Some(&artifact)).await.unwrap();
        assert_eq!(s.state, "Open");
        assert!(
            s.sections.iter().all(|x| x.created),
            "every account was created"
        );
        assert_eq!(s.needed.create, 0);
        assert_eq!(s.rent_held, model_rent(&lengths(&sections)));

        let report = publish(&bank, &authority, &artifact, true, &options())
            .await
            .unwrap();
        assert_eq!(report.counts.create, 0, "nothing created twice");
        assert_eq!(report.counts.failed, 0);
        assert_eq!(report.rent, 0, "the rent was paid by the first run");
        assert_eq!(
            FUNDS - bank.balance(&authority.pubkey()).await.unwrap(),
            model_rent(&lengths(&sections)) + FEE * (first + report.transactions()),
            "{layout:?}: rent + one fee per landed transaction, over both runs"
        );
        assert_sealed(&bank, &authority, &artifact).await;
    }
}

/// Lamports sent to some weight addresses of an 18-section model before publish (by the
/// bank's mint, not the authority): publish tops them up instead of failing, ends Sealed,
/// and the authority pays the rent less what the addresses already held.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn prefunded_weight_addresses_of_eighteen_sections() {
    let layout = Layout::Eighteen;
    let artifact = layout.artifact();
    let sections = split_sections(&artifact);
    let (bank, authority) = bank(FUNDS).await;
    let program = curta_program::id();
    let model = model_of(&authority.pubkey(), &artifact);
    let mint = bank.mint();
    // Sections 0, 5, 11 and 17 (across several create transactions), with amounts under
    // and over their rent-exempt minimum.
    let prefunds = [
        (0u8, rent(0)),
        (5, rent(WEIGHT_HEADER_LEN + sections[5].len()) + 1_000),
        (11, 3 * rent(0)),
        (17, rent(WEIGHT_HEADER_LEN + sections[17].len()) / 2),
    ];
    let blockhash = bank.latest_blockhash().await.unwrap().0;
    for (section, lamports) in prefunds {
        let address = weight_address(&program, &authority.pubkey(), &model, section);
        let tx = Transaction::new_signed_with_payer(
            &[solana_system_interface::instruction::transfer(
                &mint.pubkey(),
                &address,
                lamports,
            )],
            Some(&mint.pubkey()),
            &[&mint],
            blockhash,
        );
        bank.banks_client().process_transaction(tx).await.unwrap();
    }
    let report = publish(&bank, &authority, &artifact, true, &options())
        .await
        .unwrap();
    assert_eq!(report.state, "Sealed");
    assert_eq!(report.counts.failed, 0);
    // Each prefunded address needs only its shortfall (nothing when it holds more).
    let given: u64 = prefunds
        .iter()
        .map(|&(section, lamports)| {
            lamports.min(rent(WEIGHT_HEADER_LEN + sections[section as usize].len()))
        })
        .sum();
    let over = rent(WEIGHT_HEADER_LEN + sections[5].len()) + 1_000
        - rent(WEIGHT_HEADER_LEN + sections[5].len());
    assert_eq!(
        FUNDS - bank.balance(&authority.pubkey()).await.unwrap(),
        model_rent(&lengths(&sections)) - given + FEE * report.transactions(),
        "rent less what the addresses held, plus one fee per transaction"
    );
    assert_eq!(
        report.rent_held,
        model_rent(&lengths(&sections)) + over,
        "the surplus sent to section 5 stays in its account"
    );
    assert_sealed(&bank, &authority, &artifact).await;
}

/// The engine's half of the bug: a create planned again after it landed with an error was
/// the very same transaction (same instructions, same blockhash, same signature), so the
/// bank answered with the old failure and publish stalled. Here a transfer fails for want of
/// lamports, the authority is funded, and the same item is run again under the same cached
/// blockhash: it must be signed anew and land.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_item_planned_again_is_signed_anew() {
    use curta_client::model::items::{CLOSE, CLOSE_UNITS};
    use curta_client::send::{Engine, Item, Progress, Settle, Units};
    let (bank, authority) = bank(SOL).await;
    let mut engine = Engine::new(&bank, &authority, None, None, Progress::new(false));
    engine.profile.blockhash_refresh = std::time::Duration::from_secs(3600);
    let units = Units::Measured {
        fallback: CLOSE_UNITS,
        floor: 0,
    };
    let transfer = solana_system_interface::instruction::transfer(
        &authority.pubkey(),
        &Pubkey::new_unique(),
        5 * SOL,
    );
    let item = Item::new(CLOSE, units, vec![transfer]).barrier(Settle::Final);
    let failures = engine.send(vec![item.clone()], 8, false).await.unwrap();
    assert_eq!(failures.len(), 1, "1 SOL cannot pay 5");
    let mint = bank.mint();
    let blockhash = bank.latest_blockhash().await.unwrap().0;
    let fund = Transaction::new_signed_with_payer(
        &[solana_system_interface::instruction::transfer(
            &mint.pubkey(),
            &authority.pubkey(),
            10 * SOL,
        )],
        Some(&mint.pubkey()),
        &[&mint],
        blockhash,
    );
    bank.banks_client().process_transaction(fund).await.unwrap();
    let failures = engine.send(vec![item], 8, false).await.unwrap();
    assert!(
        failures.is_empty(),
        "{:?}",
        failures.first().map(|f| &f.error)
    );
    assert_eq!(
        engine.tally.of(CLOSE),
        1,
        "the item landed once, as a close"
    );
    assert_eq!(engine.tally.failed, 1);
    assert_eq!(
        bank.balance(&authority.pubkey()).await.unwrap(),
        SOL + 10 * SOL - 5 * SOL - 2 * FEE,
        "two transactions landed, each paid its fee"
    );
}
