//! Attack classes attacks.rs does not reach: InitWeightAccount over a non-zero header the model
//! never recorded and in Mismatch, Close in Sealing and in Mismatch, a stale pass at a later
//! chunk, cranks left over from a closed and re-created model, every writable account offered
//! read-only, and a section zero too short to ever seal. Each refusal names its error and
//! leaves every watched account (data, lamports, owner) as it was.

use crate::fixtures::rent_of;
use crate::harness::*;
use crate::lifecycle::sha256_chain_step;
use curta_program::error::CurtaError::*;
use curta_program::instruction as ix;
use curta_program::state::{self, ModelState, WeightHeader, MODEL_LEN, WEIGHT_HEADER_LEN};
use curta_tests::{sha256_chain, tiny_sections};
use solana_instruction::error::InstructionError;
use solana_instruction::Instruction;
use solana_pubkey::Pubkey;
use solana_sdk::account::Account;
use solana_sdk::signature::{Keypair, Signer};
use solana_sdk::transaction::{Transaction, TransactionError};

/// Section one of two chunks (3 chunks in all).
const LEN: usize = 70_000;
/// Section one of three chunks (4 chunks in all).
const LEN3: usize = 140_000;

fn refusal(e: InstructionError) -> Result<(), TransactionError> {
    Err(TransactionError::InstructionError(0, e))
}

/// The same instruction with account `index` read-only.
fn read_only(mut i: Instruction, index: usize) -> Instruction {
    i.accounts[index].is_writable = false;
    i
}

/// What Close must return: the rent of the model and of every weight account.
fn rent_of_all(p: &Published) -> u64 {
    rent_of(MODEL_LEN)
        + p.sections
            .iter()
            .map(|s| rent_of(WEIGHT_HEADER_LEN + s.len()))
            .sum::<u64>()
}

/// Lands a transaction signed earlier (a cranker's queue) and returns its result.
async fn land(bank: &mut Bank, tx: Transaction) -> Result<(), TransactionError> {
    bank.ctx
        .banks_client
        .process_transaction_with_metadata(tx)
        .await
        .unwrap()
        .result
}

/// The weight address of another model of the same authority can hold an initialized header
/// (their seeds share 10 bytes of the model address), and a planted account can hold any
/// bytes. InitWeightAccount at a section the model has not recorded binds only an account
/// whose 2,048 header bytes are all zero (AlreadyInitialized otherwise); the section bytes
/// after the header do not matter.
#[tokio::test]
async fn init_over_a_nonzero_header_the_model_has_not_recorded() {
    let mut bank = Bank::start().await;
    let a = bank.authority.insecure_clone();
    let sealed = written(&mut bank, tiny_sections(LEN, 61)).await;
    seal_all(&mut bank, &sealed, 0).await;
    let b = create(&mut bank, tiny_sections(LEN, 62), None).await;
    assert_eq!(
        b.lengths(),
        sealed.lengths(),
        "the same sizes: only the header differs"
    );
    let mut w = b.accounts();
    w.extend(sealed.accounts());
    let init = |s: usize| {
        ix::init_weight_account(&PROGRAM, &b.model, &b.weights[s], &b.authority, s as u8)
    };

    // The sealed model's accounts (frozen, full, rent-exempt, the right size) at B's addresses.
    for s in 0..2 {
        let theirs = bank.account(&sealed.weights[s]).await.unwrap();
        bank.plant(&b.weights[s], theirs);
        bank.refused(&[init(s)], &[&a], 0, custom(AlreadyInitialized), &w)
            .await;
    }
    // A valid header naming B and section one, unfrozen, that B never recorded.
    let blank = Account {
        lamports: bank.rent.minimum_balance(WEIGHT_HEADER_LEN + LEN),
        data: vec![0; WEIGHT_HEADER_LEN + LEN],
        owner: PROGRAM,
        executable: false,
        rent_epoch: 0,
    };
    let expected = WeightHeader {
        frozen: false,
        section: 1,
        length: LEN as u32,
        model: b.model,
        authority: b.authority,
    };
    let mut own = blank.clone();
    expected.pack(&mut own.data);
    bank.plant(&b.weights[1], own);
    bank.refused(&[init(1)], &[&a], 0, custom(AlreadyInitialized), &w)
        .await;
    // One non-zero byte: the header's last.
    let mut dirty = blank.clone();
    dirty.data[WEIGHT_HEADER_LEN - 1] = 1;
    bank.plant(&b.weights[1], dirty);
    bank.refused(&[init(1)], &[&a], 0, custom(AlreadyInitialized), &w)
        .await;
    let model = bank.model(&b.model).await;
    assert_eq!(model.weights(), &[Pubkey::default(); 2]);

    // A zero header over non-zero section bytes is bound; the bytes stay for Write to replace.
    let mut stale_bytes = blank;
    stale_bytes.data[WEIGHT_HEADER_LEN..].fill(0xee);
    bank.plant(&b.weights[1], stale_bytes);
    bank.send(&[init(1)], &[&a]).await.unwrap();
    let data = bank.account(&b.weights[1]).await.unwrap().data;
    assert_eq!(WeightHeader::unpack(&data).unwrap(), expected);
    assert!(data[WEIGHT_HEADER_LEN..].iter().all(|&x| x == 0xee));
    assert_eq!(
        bank.model(&b.model).await.weights(),
        &[Pubkey::default(), b.weights[1]]
    );
}

/// Mismatch is reached only with every weight account bound, and InitWeightAccount there is
/// WrongState (checked before the section's own binding, which would be AlreadyInitialized).
#[tokio::test]
async fn init_weight_account_in_mismatch() {
    let mut bank = Bank::start().await;
    let a = bank.authority.insecure_clone();
    let p = create(&mut bank, tiny_sections(LEN, 63), Some([0x5a; 32])).await;
    init_all(&mut bank, &p).await;
    write_all(&mut bank, &p, 16).await;
    seal_all(&mut bank, &p, 0).await;
    assert_eq!(bank.model(&p.model).await.state, ModelState::Mismatch);
    let w = p.accounts();
    for s in 0..2 {
        let init =
            ix::init_weight_account(&PROGRAM, &p.model, &p.weights[s], &p.authority, s as u8);
        bank.refused(&[init], &[&a], 0, custom(WrongState), &w)
            .await;
    }
}

/// Today's rule (docs/program.md, Close): any state but Sealed closes, so an upload abandoned
/// mid-seal or sealed to another hash returns its rent. The destination gets exactly the rent
/// of the model and of both weight accounts, (128 + length) × 6,960 each.
#[tokio::test]
async fn close_in_sealing_and_in_mismatch() {
    let mut bank = Bank::start().await;
    let a = bank.authority.insecure_clone();
    let sealing = written(&mut bank, tiny_sections(LEN, 64)).await;
    seal_chunk(&mut bank, &sealing, 0, 0).await.unwrap();
    seal_chunk(&mut bank, &sealing, 0, 1).await.unwrap();
    let mismatch = create(&mut bank, tiny_sections(LEN, 65), Some([0x5b; 32])).await;
    init_all(&mut bank, &mismatch).await;
    write_all(&mut bank, &mismatch, 16).await;
    seal_all(&mut bank, &mismatch, 0).await;

    for (p, state) in [
        (&sealing, ModelState::Sealing),
        (&mismatch, ModelState::Mismatch),
    ] {
        assert_eq!(bank.model(&p.model).await.state, state);
        let before = bank.lamports(&a.pubkey()).await;
        let dest = Pubkey::new_unique();
        let close = ix::close(&PROGRAM, &p.model, &p.authority, &dest, &p.weights);
        bank.send(&[close], &[&a]).await.unwrap();
        assert_eq!(bank.lamports(&dest).await, rent_of_all(p), "{state:?}");
        assert_eq!(bank.lamports(&a.pubkey()).await, before);
        for x in p.accounts() {
            assert_eq!(bank.account(&x).await, None, "{state:?}: {x} closed");
        }
    }
}

/// After a Reopen, a seal of the old pass is StalePass at any chunk, the one the cursor is at
/// included, and so is a pass not begun yet; the pass is checked before the chunk.
#[tokio::test]
async fn stale_pass_at_a_later_chunk() {
    let mut bank = Bank::start().await;
    let a = bank.authority.insecure_clone();
    let p = written(&mut bank, tiny_sections(LEN3, 66)).await;
    seal_chunk(&mut bank, &p, 0, 0).await.unwrap();
    seal_chunk(&mut bank, &p, 0, 1).await.unwrap();
    let reopen = ix::reopen(&PROGRAM, &p.model, &p.authority, &p.weights);
    bank.send(&[reopen], &[&a]).await.unwrap();
    seal_chunk(&mut bank, &p, 1, 0).await.unwrap();
    seal_chunk(&mut bank, &p, 1, 1).await.unwrap();
    let model = bank.model(&p.model).await;
    assert_eq!((model.seal_pass, model.seal_cursor), (1, 2));

    let w = p.accounts();
    let seal = |pass: u32, chunk: u32| {
        ix::seal(&PROGRAM, &p.model, &p.weights[1], p.creation, pass, chunk)
    };
    for (pass, chunk) in [(0, 2), (0, 1), (0, 3), (2, 2), (u32::MAX, 2)] {
        bank.refused(&[seal(pass, chunk)], &[], 0, custom(StalePass), &w)
            .await;
    }
    bank.send(&[seal(1, 2)], &[]).await.unwrap();
    bank.send(&[seal(1, 3)], &[]).await.unwrap();
    let model = bank.model(&p.model).await;
    assert_eq!(
        (model.state, model.running_hash),
        (ModelState::Sealed, p.declared)
    );
}

/// A cranker's queue of pass-0 seals, signed before the authority closed the model (a bad
/// upload) and re-created it at the same address in a later slot (same authority, same
/// declared hash, pass 0 again). Landing after the Close, a crank finds no model (WrongOwner);
/// on the re-created model every one of them names the old creation: StaleCreation, nothing
/// changes, and the new model's own seals seal it.
#[tokio::test]
async fn cranks_left_over_from_a_closed_and_recreated_model() {
    let mut bank = Bank::start().await;
    let a = bank.authority.insecure_clone();
    let m = bank.mallory.insecure_clone();
    let good = tiny_sections(LEN3, 67);
    let declared = sha256_chain(good.iter().map(Vec::as_slice));
    let mut bad = good.clone();
    bad[1][100_000] ^= 1;
    let old = create(&mut bank, bad, Some(declared)).await;
    init_all(&mut bank, &old).await;
    write_all(&mut bank, &old, 16).await;
    seal_chunk(&mut bank, &old, 0, 0).await.unwrap();
    seal_chunk(&mut bank, &old, 0, 1).await.unwrap();

    let blockhash = bank.ctx.banks_client.get_latest_blockhash().await.unwrap();
    let queued = |payer: &Keypair, chunk: u32| {
        let seal = ix::seal(
            &PROGRAM,
            &old.model,
            &old.weights[1],
            old.creation,
            0,
            chunk,
        );
        Transaction::new_signed_with_payer(&[seal], Some(&payer.pubkey()), &[payer], blockhash)
    };
    let after_close = queued(&m, 2);
    let while_open = queued(&m, 3);
    let at_cursor = queued(&bank.ctx.payer, 2);

    let close = ix::close(
        &PROGRAM,
        &old.model,
        &old.authority,
        &a.pubkey(),
        &old.weights,
    );
    bank.send(&[close], &[&a]).await.unwrap();
    assert_eq!(
        land(&mut bank, after_close).await,
        refusal(custom(WrongOwner))
    );
    assert_eq!(bank.account(&old.model).await, None);

    next_slot(&mut bank).await;
    let new = create(&mut bank, good, Some(declared)).await;
    assert_eq!((new.model, &new.weights), (old.model, &old.weights));
    assert!(new.creation > old.creation);
    init_all(&mut bank, &new).await;
    write_all(&mut bank, &new, 16).await;
    let before = bank.snapshot(&new.accounts()).await;
    assert_eq!(
        land(&mut bank, while_open).await,
        refusal(custom(StaleCreation))
    );
    assert_eq!(bank.snapshot(&new.accounts()).await, before);

    seal_chunk(&mut bank, &new, 0, 0).await.unwrap();
    seal_chunk(&mut bank, &new, 0, 1).await.unwrap();
    let before = bank.snapshot(&new.accounts()).await;
    assert_eq!(
        land(&mut bank, at_cursor).await,
        refusal(custom(StaleCreation))
    );
    assert_eq!(bank.snapshot(&new.accounts()).await, before);
    let mut expected = [0u8; 32];
    for bytes in [&new.sections[0][..], &new.sections[1][..65_536]] {
        expected = sha256_chain_step(&expected, bytes);
    }
    let model = bank.model(&new.model).await;
    assert_eq!((model.seal_cursor, model.running_hash), (2, expected));
    seal_chunk(&mut bank, &new, 0, 2).await.unwrap();
    seal_chunk(&mut bank, &new, 0, 3).await.unwrap();
    let model = bank.model(&new.model).await;
    assert_eq!(
        (model.state, model.running_hash),
        (ModelState::Sealed, declared)
    );
}

/// Every account an instruction writes, offered read-only, is NotWritable. attacks.rs covers
/// Write's weight account, InitWeightAccount's model, chunk 0's model and weight account and
/// Reopen's first weight account; here are the rest: CreateModel's authority and model,
/// InitWeightAccount's weight account, chunk 0's later weight accounts, a later chunk's model
/// (its weight accounts are read only), Reopen's model
/// and last weight account, Close's model, destination and each weight account.
#[tokio::test]
async fn every_writable_account_offered_read_only() {
    let mut bank = Bank::start().await;
    let a = bank.authority.insecure_clone();
    let me = a.pubkey();
    let not_writable = custom(NotWritable);

    let hash = [0x31; 32];
    let (model, _) = state::model_address(&PROGRAM, &me, &hash);
    let create_model = ix::create_model(&PROGRAM, &me, hash, &[8_000, 100]);
    for index in [0, 1] {
        let i = read_only(create_model.clone(), index);
        bank.refused(&[i], &[&a], 0, not_writable.clone(), &[me, model])
            .await;
    }

    let p = create(&mut bank, tiny_sections(LEN, 68), None).await;
    init_one(&mut bank, &p, 0).await;
    bank.send(&[create_weight(&bank, &p, 1)], &[&a])
        .await
        .unwrap();
    let dest = Pubkey::new_unique();
    let mut w = p.accounts();
    w.push(dest);
    let init = ix::init_weight_account(&PROGRAM, &p.model, &p.weights[1], &p.authority, 1);
    bank.refused(
        &[read_only(init.clone(), 1)],
        &[&a],
        0,
        not_writable.clone(),
        &w,
    )
    .await;
    bank.send(&[init], &[&a]).await.unwrap();
    write_all(&mut bank, &p, 16).await;
    // Chunk 0 freezes every section: section one's weight account (after the authority) must
    // be writable too.
    let start = ix::start_seal(&PROGRAM, &p.model, &p.weights, &p.authority, p.creation, 0);
    bank.refused(&[read_only(start, 3)], &[&a], 0, not_writable.clone(), &w)
        .await;
    seal_chunk(&mut bank, &p, 0, 0).await.unwrap();

    // A later chunk writes only the model: its weight account is read only (the builder's).
    let crank = ix::seal(&PROGRAM, &p.model, &p.weights[1], p.creation, 0, 1);
    assert!(!crank.accounts[1].is_writable);
    let reopen = ix::reopen(&PROGRAM, &p.model, &p.authority, &p.weights);
    let close = ix::close(&PROGRAM, &p.model, &p.authority, &dest, &p.weights);
    let cases = [
        (crank, vec![0], vec![]),
        (reopen, vec![0, 3], vec![&a]),
        (close.clone(), vec![0, 2, 3, 4], vec![&a]),
    ];
    for (i, indices, signers) in cases {
        for index in indices {
            let i = read_only(i.clone(), index);
            bank.refused(&[i], &signers, 0, not_writable.clone(), &w)
                .await;
        }
    }
    // The same Close with every account writable goes through.
    bank.send(&[close], &[&a]).await.unwrap();
    assert_eq!(bank.lamports(&dest).await, rent_of_all(&p));
}

/// NEW RULE (issue 10, added by the `sbf` branch): a section zero under 4,096 bytes cannot
/// hold the header, so no such model could ever seal; CreateModel refuses it with
/// `SectionZeroTooShort`, custom code 30. The program before that merge has no such check:
/// this test fails there, by design.
const SECTION_ZERO_TOO_SHORT: u32 = 30;

#[tokio::test]
async fn new_rule_create_refuses_section_zero_under_4096_bytes() {
    let mut bank = Bank::start().await;
    let a = bank.authority.insecure_clone();
    let me = a.pubkey();
    for (tag, zero) in [(1u8, 1u32), (2, 4_095)] {
        let hash = [tag; 32];
        let (model, _) = state::model_address(&PROGRAM, &me, &hash);
        let create = ix::create_model(&PROGRAM, &me, hash, &[zero, 70_000]);
        bank.refused(
            &[create],
            &[&a],
            0,
            InstructionError::Custom(SECTION_ZERO_TOO_SHORT),
            &[me, model],
        )
        .await;
        assert_eq!(
            bank.account(&model).await,
            None,
            "section zero of {zero} bytes"
        );
    }
    // The header alone, 4,096 bytes, is not refused at creation (chunk 0 checks the rest).
    let hash = [3; 32];
    let create = ix::create_model(&PROGRAM, &me, hash, &[4_096, 70_000]);
    bank.send(&[create], &[&a]).await.unwrap();
    let (model, _) = state::model_address(&PROGRAM, &me, &hash);
    assert_eq!(bank.model(&model).await.sections(), &[4_096, 70_000]);
}
