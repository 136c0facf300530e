//! The review of issue 21, each finding as its attack sequence in the VM: a start seal signed
//! for a model that was then closed and created again, duplicate entries in a weight list,
//! more accounts than the entrypoint reads, a consumer's view of a sealed model, and a model
//! too large to ever be reopened or closed. Each refusal names its error and leaves every
//! watched account (data, lamports, owner) as it was.

use crate::fixtures::rent_of;
use crate::harness::*;
use curta_program::error::CurtaError::{self, *};
use curta_program::instruction as ix;
use curta_program::state::{
    self, Model, ModelState, WeightHeader, MAX_MODEL_BYTES, MAX_SECTIONS, MODEL_LEN,
    WEIGHT_HEADER_LEN,
};
use curta_tests::{sha256_chain, tiny_sections};
use solana_instruction::error::InstructionError;
use solana_instruction::AccountMeta;
use solana_pubkey::Pubkey;
use solana_sdk::account::Account;
use solana_sdk::signature::Signer;
use solana_sdk::transaction::{Transaction, TransactionError};

/// Section one of two chunks (3 chunks in all).
const LEN: usize = 70_000;

fn err(e: CurtaError) -> InstructionError {
    custom(e)
}

fn watch(bank: &Bank, p: &Published) -> Vec<Pubkey> {
    let mut out = vec![bank.authority.pubkey(), bank.mallory.pubkey()];
    out.extend(p.accounts());
    out
}

/// The issue's sequence: the authority signs the start seal of model A (pass 0) and it does not
/// land at once; A is closed (a bad upload) and created again at the same address in a later
/// slot (same authority, same declared hash, pass 0 again); while the new model's sections are
/// still being written, the old start seal lands. It names A's creation: StaleCreation, and
/// section zero stays writable, the model Open. The authority's own start seal then seals it.
#[tokio::test]
async fn a_stale_start_seal_does_not_land_on_a_recreated_model() {
    let mut bank = Bank::start().await;
    let a = bank.authority.insecure_clone();
    let good = tiny_sections(LEN, 101);
    let declared = sha256_chain(good.iter().map(Vec::as_slice));
    let mut bad = good.clone();
    bad[1][1_000] ^= 1;
    let old = create(&mut bank, bad, Some(declared)).await;
    init_all(&mut bank, &old).await;
    write_all(&mut bank, &old, 16).await;

    // Signed, not landed (say it reached no leader yet).
    let blockhash = bank.ctx.banks_client.get_latest_blockhash().await.unwrap();
    let stale = Transaction::new_signed_with_payer(
        &[ix::start_seal(
            &PROGRAM,
            &old.model,
            &old.weights,
            &old.authority,
            old.creation,
            0,
        )],
        Some(&bank.ctx.payer.pubkey()),
        &[&bank.ctx.payer, &a],
        blockhash,
    );
    let close = ix::close(
        &PROGRAM,
        &old.model,
        &old.authority,
        &a.pubkey(),
        &old.weights,
    );
    bank.send(&[close], &[&a]).await.unwrap();

    next_slot(&mut bank).await;
    let new = create(&mut bank, good, Some(declared)).await;
    assert_eq!((new.model, &new.weights), (old.model, &old.weights));
    assert_eq!(bank.model(&new.model).await.seal_pass, 0);
    assert!(new.creation > old.creation);
    init_all(&mut bank, &new).await;
    // Section zero written, section one not yet.
    write_section(&mut bank, &new, 0, 16).await;
    let w = watch(&bank, &new);
    let before = bank.snapshot(&w).await;
    let result = bank
        .ctx
        .banks_client
        .process_transaction_with_metadata(stale)
        .await
        .unwrap()
        .result;
    assert_eq!(
        result,
        Err(TransactionError::InstructionError(0, err(StaleCreation)))
    );
    let after = bank.snapshot(&w).await;
    assert_eq!(before, after, "a stale start seal changes nothing");
    let model = bank.model(&new.model).await;
    assert_eq!((model.state, model.seal_cursor), (ModelState::Open, 0));
    assert!(!bank.header(&new.weights[0]).await.frozen);

    // A later chunk of the old creation is refused the same way once the new pass runs.
    write_section(&mut bank, &new, 1, 16).await;
    seal_chunk(&mut bank, &new, 0, 0).await.unwrap();
    let old_crank = ix::seal(&PROGRAM, &old.model, &old.weights[1], old.creation, 0, 1);
    bank.refused(&[old_crank], &[], 0, err(StaleCreation), &w)
        .await;
    seal_chunk(&mut bank, &new, 0, 1).await.unwrap();
    seal_chunk(&mut bank, &new, 0, 2).await.unwrap();
    let model = bank.model(&new.model).await;
    assert_eq!(
        (model.state, model.running_hash),
        (ModelState::Sealed, declared)
    );
}

/// The creation id is the slot of the CreateModel, and every Seal must name it, at chunk 0 and
/// after; the check comes before the pass and the chunk.
#[tokio::test]
async fn every_seal_names_the_models_creation() {
    let mut bank = Bank::start().await;
    let a = bank.authority.insecure_clone();
    next_slot(&mut bank).await;
    let p = written(&mut bank, tiny_sections(LEN, 102)).await;
    let w = watch(&bank, &p);
    for creation in [0, p.creation - 1, p.creation + 1, u64::MAX] {
        let start = ix::start_seal(&PROGRAM, &p.model, &p.weights, &p.authority, creation, 0);
        bank.refused(&[start], &[&a], 0, err(StaleCreation), &w)
            .await;
        // Also with a stale pass and chunk: the creation is checked first.
        let seal = ix::seal(&PROGRAM, &p.model, &p.weights[1], creation, 7, 1);
        bank.refused(&[seal], &[], 0, err(StaleCreation), &w).await;
    }
    seal_all(&mut bank, &p, 0).await;
    assert_eq!(bank.model(&p.model).await.state, ModelState::Sealed);
}

/// Duplicate entries in a weight list: `[w0, w0]` to Reopen and Close, and the same account
/// twice in a Seal (as model and weight account, as weight account and authority).
#[tokio::test]
async fn duplicate_accounts_in_a_weight_list() {
    let mut bank = Bank::start().await;
    let a = bank.authority.insecure_clone();
    let p = written(&mut bank, tiny_sections(LEN, 103)).await;
    let w = watch(&bank, &p);
    let (w0, w1) = (p.weights[0], p.weights[1]);

    // Open: Close of [w0, w0] and [w1, w1].
    for list in [[w0, w0], [w1, w1], [p.model, w1], [w0, p.model]] {
        let close = ix::close(&PROGRAM, &p.model, &p.authority, &a.pubkey(), &list);
        bank.refused(&[close], &[&a], 0, err(WeightAddressMismatch), &w)
            .await;
    }
    // The same weight account as model and weight account (two-account form, chunk 1: a
    // crank of an Open model, refused by its state first), and as the model of a start seal.
    let model_twice = ix::seal(&PROGRAM, &p.model, &p.model, p.creation, 0, 1);
    bank.refused(&[model_twice], &[], 0, err(WrongState), &w)
        .await;
    let start_model_twice = ix::start_seal(
        &PROGRAM,
        &p.model,
        &[p.model, p.weights[1]],
        &p.authority,
        p.creation,
        0,
    );
    bank.refused(&[start_model_twice], &[&a], 0, err(NotInitialized), &w)
        .await;
    let weight_twice = ix::start_seal(&PROGRAM, &w0, &p.weights, &p.authority, p.creation, 0);
    bank.refused(&[weight_twice], &[&a], 0, err(NotAModel), &w)
        .await;
    // The weight account as the authority of chunk 0.
    let mut weight_as_authority =
        ix::start_seal(&PROGRAM, &p.model, &p.weights, &p.authority, p.creation, 0);
    weight_as_authority.accounts[2] = AccountMeta::new_readonly(w0, false);
    bank.refused(&[weight_as_authority], &[], 0, err(Unauthorized), &w)
        .await;

    // Sealing: the model as the weight account of the cursor's chunk; Reopen of [w0, w0],
    // [w1, w1], [w1, w0].
    seal_chunk(&mut bank, &p, 0, 0).await.unwrap();
    let w = watch(&bank, &p);
    let model_twice = ix::seal(&PROGRAM, &p.model, &p.model, p.creation, 0, 1);
    bank.refused(&[model_twice], &[], 0, err(NotInitialized), &w)
        .await;
    for list in [[w0, w0], [w1, w1], [w1, w0], [w0, p.model]] {
        let reopen = ix::reopen(&PROGRAM, &p.model, &p.authority, &list);
        bank.refused(&[reopen], &[&a], 0, err(WeightAddressMismatch), &w)
            .await;
    }
    // Close in Sealing, too.
    let close = ix::close(&PROGRAM, &p.model, &p.authority, &a.pubkey(), &[w0, w0]);
    bank.refused(&[close], &[&a], 0, err(WeightAddressMismatch), &w)
        .await;
    // The right lists still work.
    let reopen = ix::reopen(&PROGRAM, &p.model, &p.authority, &p.weights);
    bank.send(&[reopen], &[&a]).await.unwrap();
    let before = bank.lamports(&a.pubkey()).await;
    let close = ix::close(&PROGRAM, &p.model, &p.authority, &a.pubkey(), &p.weights);
    bank.send(&[close], &[&a]).await.unwrap();
    let rent = rent_of(MODEL_LEN)
        + rent_of(WEIGHT_HEADER_LEN + p.sections[0].len())
        + rent_of(WEIGHT_HEADER_LEN + LEN);
    assert_eq!(bank.lamports(&a.pubkey()).await, before + rent);
}

/// The entrypoint reads at most 22 accounts (Close of 18 sections takes 21): an instruction
/// with more is seen with 22 and refused by its account count, whatever it is.
#[tokio::test]
async fn more_accounts_than_the_entrypoint_reads() {
    let mut bank = Bank::start().await;
    let a = bank.authority.insecure_clone();
    let p = written(&mut bank, tiny_sections(LEN, 104)).await;
    let w = watch(&bank, &p);
    let extra = |n: usize| -> Vec<AccountMeta> {
        (0..n)
            .map(|_| AccountMeta::new_readonly(Pubkey::new_unique(), false))
            .collect()
    };
    let close = ix::close(&PROGRAM, &p.model, &p.authority, &a.pubkey(), &p.weights);
    // 5 + 17 = 22 (exactly what the entrypoint reads), 5 + 20 = 25 (more).
    for n in [17, 20] {
        let mut more = close.clone();
        more.accounts.extend(extra(n));
        bank.refused(&[more], &[&a], 0, err(WrongAccountCount), &w)
            .await;
    }
    let write = ix::write(&PROGRAM, &p.weights[1], &p.authority, 0, &[1, 2, 3]);
    let start = ix::start_seal(&PROGRAM, &p.model, &p.weights, &p.authority, p.creation, 0);
    for instruction in [write, start] {
        let mut more = instruction;
        more.accounts.extend(extra(24));
        bank.refused(&[more], &[&a], 0, err(WrongAccountCount), &w)
            .await;
    }
    // The model is untouched and seals.
    seal_all(&mut bank, &p, 0).await;
    assert_eq!(bank.model(&p.model).await.state, ModelState::Sealed);
}

/// A consumer relies on a sealed model only at the PDA of the authority and hash it expects:
/// anyone can publish the same artifact (same hash, same config) under their own authority and
/// seal it, and that model is Sealed too, at another address.
#[tokio::test]
async fn a_consumer_trusts_a_sealed_model_at_the_expected_address_only() {
    let mut bank = Bank::start().await;
    let sections = tiny_sections(LEN, 105);
    let p = written(&mut bank, sections.clone()).await;
    seal_all(&mut bank, &p, 0).await;
    let m = bank.mallory.insecure_clone();
    let copy = create_by(&mut bank, m.insecure_clone(), sections, None).await;
    init_all(&mut bank, &copy).await;
    write_all(&mut bank, &copy, 16).await;
    seal_all(&mut bank, &copy, 0).await;

    let real = bank.account(&p.model).await.unwrap();
    let theirs = bank.account(&copy.model).await.unwrap();
    let real_model = Model::unpack(&real.data).unwrap();
    let their_model = Model::unpack(&theirs.data).unwrap();
    // Both are Sealed with the same hash and config; only the address (and the authority it
    // binds) tells them apart.
    assert_eq!(their_model.state, ModelState::Sealed);
    assert_eq!(their_model.weights_hash, real_model.weights_hash);
    assert_eq!(their_model.config, real_model.config);
    let trust = |address: &Pubkey, account: &Account, authority: &Pubkey| {
        curta_interface::trust::trusted_sealed_model(
            &PROGRAM,
            address,
            &account.owner,
            &account.data,
            authority,
            &p.declared,
        )
    };
    assert_eq!(trust(&p.model, &real, &p.authority), Ok(real_model));
    assert_eq!(
        trust(&copy.model, &theirs, &p.authority),
        Err(ModelAddressMismatch)
    );
    // Their model is trusted only as theirs.
    assert_eq!(trust(&copy.model, &theirs, &m.pubkey()), Ok(their_model));
    // The real model's bytes at another address (a copy no instruction could make), or owned
    // by another program.
    assert_eq!(
        trust(&Pubkey::new_unique(), &real, &p.authority),
        Err(ModelAddressMismatch)
    );
    let mut foreign = real.clone();
    foreign.owner = Pubkey::new_unique();
    assert_eq!(trust(&p.model, &foreign, &p.authority), Err(WrongOwner));
    // A model not sealed yet is not trusted.
    let q = written(&mut bank, tiny_sections(LEN, 106)).await;
    let open = bank.account(&q.model).await.unwrap();
    assert_eq!(
        curta_interface::trust::trusted_sealed_model(
            &PROGRAM,
            &q.model,
            &open.owner,
            &open.data,
            &q.authority,
            &q.declared
        ),
        Err(WrongState)
    );
}

/// The largest section, 10,483,712 bytes, in a weight account of 10,485,760.
const MAX_LEN: u32 = 10_483_712;

/// Seven sections whose accounts hold exactly MAX_MODEL_BYTES (66,060,288) with `extra` more
/// bytes in section zero.
fn seven_sections(extra: u32) -> Vec<u32> {
    let rest = 6 * (WEIGHT_HEADER_LEN as u64 + MAX_LEN as u64);
    let zero = MAX_MODEL_BYTES - MODEL_LEN as u64 - rest - WEIGHT_HEADER_LEN as u64;
    let mut out = vec![zero as u32 + extra];
    out.extend([MAX_LEN; 6]);
    out
}

/// Plants, at `p`'s weight addresses, program-owned weight accounts of the declared lengths
/// (rent-exempt; initialized with a frozen header when `headers`), with zero section bytes.
fn weight_accounts(bank: &mut Bank, p: &Published, lengths: &[u32], headers: bool) -> u64 {
    let mut rent = 0;
    for (s, &length) in lengths.iter().enumerate() {
        let space = WEIGHT_HEADER_LEN + length as usize;
        let mut data = vec![0u8; space];
        if headers {
            WeightHeader {
                frozen: true,
                section: s as u16,
                length,
                model: p.model,
                authority: p.authority,
            }
            .pack(&mut data);
        }
        let lamports = bank.rent.minimum_balance(space);
        rent += lamports;
        bank.plant(
            &p.weights[s],
            Account {
                lamports,
                data,
                owner: PROGRAM,
                executable: false,
                rent_epoch: 0,
            },
        );
    }
    rent
}

/// A transaction loads at most 64 MiB of account data, and Close (like Reopen) takes every
/// weight account in one instruction. CreateModel refuses a model whose accounts would hold
/// more than 66,060,288 bytes (64 MiB less 1 MiB for the rest of the transaction), with
/// ModelTooLarge, and accepts one of exactly that. In the bank: a model at the limit, every
/// weight account created, is closed and returns every lamport; a model over 64 MiB, planted
/// as it would have been uploaded and driven to Mismatch without the rule, can be neither
/// reopened nor closed (the runtime refuses to load the transaction).
#[tokio::test]
async fn a_model_too_large_to_close_is_refused_at_create() {
    let mut bank = Bank::start().await;
    let a = bank.authority.insecure_clone();
    let declared = [0x21; 32];
    let (model, _) = state::model_address(&PROGRAM, &a.pubkey(), &declared);

    // One byte over the limit, the issue's 68 MB model (section zero, the embedding and 16
    // layer sections of 4,247,552 bytes), seven full sections: refused, nothing created.
    let mut issue = vec![200_000, 4_000_000];
    issue.extend([4_247_552; 16]);
    assert_eq!(issue.len(), MAX_SECTIONS);
    for lengths in [seven_sections(1), issue, vec![MAX_LEN; 7]] {
        assert!(state::model_bytes(lengths.iter().copied()) > MAX_MODEL_BYTES);
        let create = ix::create_model(&PROGRAM, &a.pubkey(), declared, &lengths);
        bank.refused(
            &[create],
            &[&a],
            0,
            err(ModelTooLarge),
            &[a.pubkey(), model],
        )
        .await;
        assert_eq!(bank.account(&model).await, None);
    }

    // Exactly at the limit: created; every weight account created (planted: 66 MB of Writes
    // would take hours), then closed in one transaction.
    let lengths = seven_sections(0);
    assert_eq!(state::model_bytes(lengths.iter().copied()), MAX_MODEL_BYTES);
    bank.send(
        &[ix::create_model(&PROGRAM, &a.pubkey(), declared, &lengths)],
        &[&a],
    )
    .await
    .unwrap();
    let p = Published {
        model,
        authority: a.pubkey(),
        signer: a.insecure_clone(),
        sections: vec![],
        weights: (0..7)
            .map(|s| state::weight_address(&PROGRAM, &a.pubkey(), &model, s))
            .collect(),
        declared,
        creation: bank.model(&model).await.creation,
    };
    let rent = weight_accounts(&mut bank, &p, &lengths, false) + rent_of(MODEL_LEN);
    let destination = Pubkey::new_unique();
    let close = ix::close(&PROGRAM, &p.model, &p.authority, &destination, &p.weights);
    bank.send(&[close], &[&a]).await.unwrap();
    assert_eq!(bank.lamports(&destination).await, rent);
    for x in p.accounts() {
        assert_eq!(bank.account(&x).await, None);
    }

    // Over 64 MiB (seven full sections, 73,401,128 bytes of accounts), as an upload driven to
    // Mismatch would leave it if CreateModel allowed it: stuck.
    let lengths = vec![MAX_LEN; 7];
    let total_chunks = lengths.iter().map(|&l| l.div_ceil(65_536)).sum();
    let mut section_lengths = [0; MAX_SECTIONS];
    section_lengths[..7].copy_from_slice(&lengths);
    let mut weight_accounts_of = [Pubkey::default(); MAX_SECTIONS];
    weight_accounts_of[..7].copy_from_slice(&p.weights);
    let stuck = Model {
        state: ModelState::Mismatch,
        bump: state::model_address(&PROGRAM, &a.pubkey(), &declared).1,
        section_count: 7,
        seal_pass: 0,
        creation: p.creation,
        authority: a.pubkey(),
        weights_hash: declared,
        running_hash: [0x66; 32],
        seal_cursor: total_chunks,
        total_chunks,
        config: Default::default(),
        section_lengths,
        weight_accounts: weight_accounts_of,
    };
    let mut data = vec![0; MODEL_LEN];
    stuck.pack(&mut data);
    bank.plant(
        &model,
        Account {
            lamports: rent_of(MODEL_LEN),
            data,
            owner: PROGRAM,
            executable: false,
            rent_epoch: 0,
        },
    );
    weight_accounts(&mut bank, &p, &lengths, true);
    let close = ix::close(&PROGRAM, &p.model, &p.authority, &destination, &p.weights);
    let reopen = ix::reopen(&PROGRAM, &p.model, &p.authority, &p.weights);
    for instruction in [close, reopen] {
        assert_eq!(
            bank.send(&[instruction], &[&a]).await,
            Err(TransactionError::MaxLoadedAccountsDataSizeExceeded)
        );
    }
    assert_eq!(bank.model(&model).await.state, ModelState::Mismatch);
}
