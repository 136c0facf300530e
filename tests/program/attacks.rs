//! The attack suite: every refused instruction names its error, and no account it could touch
//! changes (data, lamports, owner).

use crate::harness::*;
use curta_program::error::CurtaError::{self, *};
use curta_program::instruction as ix;
use curta_program::state::{self, ModelState, WEIGHT_HEADER_LEN};
use curta_tests::{tiny_section_zero, tiny_sections, Rng};
use solana_instruction::error::InstructionError;
use solana_instruction::{AccountMeta, Instruction};
use solana_pubkey::Pubkey;
use solana_sdk::signature::{Keypair, Signer};
use solana_sdk::transaction::TransactionError;
use solana_system_interface::instruction as system_instruction;

const LEN: usize = 70_000; // section one: two chunks

fn err(e: CurtaError) -> InstructionError {
    custom(e)
}

/// The same instruction with account `index` no longer a signer.
fn unsigned(mut i: Instruction, index: usize) -> Instruction {
    i.accounts[index].is_signer = false;
    i
}

/// The same instruction with account `index` read-only.
fn readonly(mut i: Instruction, index: usize) -> Instruction {
    i.accounts[index].is_writable = false;
    i
}

fn seal(p: &Published, section: usize, pass: u32, chunk: u32) -> Instruction {
    ix::seal(
        &PROGRAM,
        &p.model,
        &p.weights[section],
        p.creation,
        pass,
        chunk,
    )
}

/// Chunk 0 of `pass`, with the model's authority signing and section `section`'s weight
/// account in section zero's place (the others after it, as they are).
fn start(p: &Published, section: usize, pass: u32) -> Instruction {
    let mut weights = p.weights.clone();
    weights[0] = p.weights[section];
    ix::start_seal(&PROGRAM, &p.model, &weights, &p.authority, p.creation, pass)
}

fn watch(bank: &Bank, models: &[&Published]) -> Vec<Pubkey> {
    let mut out = vec![bank.authority.pubkey(), bank.mallory.pubkey()];
    for p in models {
        out.extend(p.accounts());
    }
    out
}

#[tokio::test]
async fn write_attacks() {
    let mut bank = Bank::start().await;
    let a = bank.authority.insecure_clone();
    let m = bank.mallory.insecure_clone();
    let p = written(&mut bank, tiny_sections(LEN, 1)).await;
    let q = written(&mut bank, tiny_sections(LEN, 2)).await;
    let theirs = create_by(&mut bank, m.insecure_clone(), tiny_sections(LEN, 3), None).await;
    init_all(&mut bank, &theirs).await;
    let w = watch(&bank, &[&p, &q, &theirs]);
    let w1 = p.weights[1];
    let write = |offset: u32, bytes: &[u8]| ix::write(&PROGRAM, &w1, &p.authority, offset, bytes);

    // By a non-authority, without the authority's signature, into another authority's model.
    let by_mallory = ix::write(&PROGRAM, &w1, &m.pubkey(), 0, &[1]);
    bank.refused(&[by_mallory], &[&m], 0, err(Unauthorized), &w)
        .await;
    bank.refused(
        &[unsigned(write(0, &[1]), 1)],
        &[],
        0,
        InstructionError::MissingRequiredSignature,
        &w,
    )
    .await;
    let into_theirs = ix::write(&PROGRAM, &theirs.weights[0], &p.authority, 0, &[1]);
    bank.refused(&[into_theirs], &[&a], 0, err(Unauthorized), &w)
        .await;

    // Bounds: past the end, offset overflow, empty. The last byte itself is writable.
    bank.refused(
        &[write(LEN as u32 - 10, &[7; 11])],
        &[&a],
        0,
        err(WriteOutOfBounds),
        &w,
    )
    .await;
    bank.refused(
        &[write(LEN as u32, &[7])],
        &[&a],
        0,
        err(WriteOutOfBounds),
        &w,
    )
    .await;
    bank.refused(
        &[write(u32::MAX, &[7; 1019])],
        &[&a],
        0,
        err(WriteOutOfBounds),
        &w,
    )
    .await;
    bank.refused(
        &[write(u32::MAX - 1, &[7; 2])],
        &[&a],
        0,
        err(WriteOutOfBounds),
        &w,
    )
    .await;
    bank.refused(&[write(0, &[])], &[&a], 0, err(EmptyWrite), &w)
        .await;
    let last = p.sections[1][LEN - 1];
    bank.send(&[write(LEN as u32 - 1, &[last])], &[&a])
        .await
        .unwrap();

    // Not a weight account: the model, a foreign-owned account; and a read-only weight account.
    let into_model = ix::write(&PROGRAM, &p.model, &p.authority, 0, &[1]);
    bank.refused(&[into_model], &[&a], 0, err(NotInitialized), &w)
        .await;
    let into_wallet = ix::write(&PROGRAM, &m.pubkey(), &p.authority, 0, &[1]);
    bank.refused(&[into_wallet], &[&a], 0, err(WrongOwner), &w)
        .await;
    bank.refused(
        &[readonly(write(0, &[1]), 0)],
        &[&a],
        0,
        err(NotWritable),
        &w,
    )
    .await;

    // Into a frozen section: chunk 0 freezes every section, before and after the cursor
    // reaches it.
    bank.send(&[start(&p, 0, 0)], &[&a]).await.unwrap();
    let w0 = ix::write(&PROGRAM, &p.weights[0], &p.authority, 0, b"X");
    bank.refused(&[w0], &[&a], 0, err(SectionFrozen), &w).await;
    bank.refused(&[write(5, &[0])], &[&a], 0, err(SectionFrozen), &w)
        .await;
    bank.send(&[seal(&p, 1, 0, 1)], &[]).await.unwrap();
    bank.refused(&[write(5, &[0])], &[&a], 0, err(SectionFrozen), &w)
        .await;

    // After Sealed.
    bank.send(&[seal(&p, 1, 0, 2)], &[]).await.unwrap();
    assert_eq!(bank.model(&p.model).await.state, ModelState::Sealed);
    for s in 0..2 {
        let write = ix::write(&PROGRAM, &p.weights[s], &p.authority, 100, &[0; 1019]);
        bank.refused(&[write], &[&a], 0, err(SectionFrozen), &w)
            .await;
    }
}

#[tokio::test]
async fn init_attacks() {
    // The authority is known before the bank starts, so accounts can be planted at the
    // addresses its model will use.
    let authority = Keypair::new();
    let sections = tiny_sections(LEN, 4);
    let declared = curta_tests::sha256_chain(sections.iter().map(|s| s.as_slice()));
    let (model, _) = state::model_address(&PROGRAM, &authority.pubkey(), &declared);
    let planted = state::weight_address(&PROGRAM, &authority.pubkey(), &model, 1);
    let foreign = Pubkey::new_unique();
    let mut bank = Bank::start_as(authority.insecure_clone(), |test| {
        // Section one's weight account, owned by the program but holding 1 lamport.
        let data = vec![0; WEIGHT_HEADER_LEN + LEN];
        test.add_account(
            planted,
            solana_sdk::account::Account {
                lamports: 1,
                data,
                owner: PROGRAM,
                executable: false,
                rent_epoch: 0,
            },
        );
        // An account of the right size owned by another program.
        let data = vec![0; WEIGHT_HEADER_LEN + sections[0].len()];
        test.add_account(
            foreign,
            solana_sdk::account::Account {
                lamports: 1_000 * SOL,
                data,
                owner: Pubkey::new_unique(),
                executable: false,
                rent_epoch: 0,
            },
        );
    })
    .await;
    let a = authority;
    let m = bank.mallory.insecure_clone();
    let p = create(&mut bank, sections, None).await;
    assert_eq!(p.model, model);
    let mut w = watch(&bank, &[&p]);
    w.push(foreign);
    let init = |weight: &Pubkey, section: u8| {
        ix::init_weight_account(&PROGRAM, &p.model, weight, &p.authority, section)
    };

    // Foreign-owned: an address never created (system-owned) and another program's account.
    bank.refused(&[init(&p.weights[0], 0)], &[&a], 0, err(WrongOwner), &w)
        .await;
    bank.refused(&[init(&foreign, 0)], &[&a], 0, err(WrongOwner), &w)
        .await;
    // Not rent-exempt.
    bank.refused(&[init(&planted, 1)], &[&a], 0, err(NotRentExempt), &w)
        .await;

    // Wrong size: one byte more, one byte less than 2,048 + the section length (each in a
    // model of its own, since the address then holds an account of the wrong size).
    let full = WEIGHT_HEADER_LEN + p.sections[0].len();
    for (seed, space) in [(40, full + 1), (41, full - 1)] {
        let other = create(&mut bank, tiny_sections(LEN, seed), None).await;
        bank.send(&[create_weight_sized(&bank, &other, 0, space)], &[&a])
            .await
            .unwrap();
        let w = watch(&bank, &[&other]);
        let init = ix::init_weight_account(
            &PROGRAM,
            &other.model,
            &other.weights[0],
            &other.authority,
            0,
        );
        bank.refused(&[init], &[&a], 0, err(WeightSizeMismatch), &w)
            .await;
    }

    // Wrong seed-derived address: a program-owned account of the right size under another
    // seed, and section one's real address offered as section zero.
    let seed = "curta-00-not-the-right-seed";
    let elsewhere = Pubkey::create_with_seed(&p.authority, seed, &PROGRAM).unwrap();
    let create_elsewhere = system_instruction::create_account_with_seed(
        &p.authority,
        &elsewhere,
        &p.authority,
        seed,
        bank.rent.minimum_balance(full),
        full as u64,
        &PROGRAM,
    );
    bank.send(&[create_elsewhere], &[&a]).await.unwrap();
    w.push(elsewhere);
    bank.refused(
        &[init(&elsewhere, 0)],
        &[&a],
        0,
        err(WeightAddressMismatch),
        &w,
    )
    .await;

    // By a non-authority; out of range; not writable.
    bank.send(&[create_weight(&bank, &p, 0)], &[&a])
        .await
        .unwrap();
    let by_mallory = ix::init_weight_account(&PROGRAM, &p.model, &p.weights[0], &m.pubkey(), 0);
    bank.refused(&[by_mallory], &[&m], 0, err(Unauthorized), &w)
        .await;
    bank.refused(
        &[unsigned(init(&p.weights[0], 0), 2)],
        &[],
        0,
        InstructionError::MissingRequiredSignature,
        &w,
    )
    .await;
    bank.refused(
        &[init(&p.weights[0], 2)],
        &[&a],
        0,
        err(SectionOutOfRange),
        &w,
    )
    .await;
    bank.refused(
        &[init(&p.weights[0], 255)],
        &[&a],
        0,
        err(SectionOutOfRange),
        &w,
    )
    .await;
    bank.refused(
        &[readonly(init(&p.weights[0], 0), 0)],
        &[&a],
        0,
        err(NotWritable),
        &w,
    )
    .await;
    // Section one's account offered for section zero.
    bank.refused(
        &[init(&planted, 0)],
        &[&a],
        0,
        err(WeightAddressMismatch),
        &w,
    )
    .await;

    // Twice.
    bank.send(&[init(&p.weights[0], 0)], &[&a]).await.unwrap();
    bank.refused(
        &[init(&p.weights[0], 0)],
        &[&a],
        0,
        err(AlreadyInitialized),
        &w,
    )
    .await;

    // Once sealing started, and once Sealed. (Section one: top the planted account up first.)
    let top_up = system_instruction::transfer(
        &p.authority,
        &planted,
        bank.rent.minimum_balance(WEIGHT_HEADER_LEN + LEN),
    );
    bank.send(&[top_up, init(&planted, 1)], &[&a])
        .await
        .unwrap();
    write_all(&mut bank, &p, 16).await;
    bank.send(&[start(&p, 0, 0)], &[&a]).await.unwrap();
    bank.refused(&[init(&p.weights[0], 0)], &[&a], 0, err(WrongState), &w)
        .await;
    bank.send(&[seal(&p, 1, 0, 1), seal(&p, 1, 0, 2)], &[])
        .await
        .unwrap();
    bank.refused(&[init(&p.weights[1], 1)], &[&a], 0, err(ModelSealed), &w)
        .await;
}

#[tokio::test]
async fn seal_attacks() {
    let mut bank = Bank::start().await;
    let a = bank.authority.insecure_clone();
    // Before every weight account is initialized.
    let p = create(&mut bank, tiny_sections(LEN, 5), None).await;
    init_one(&mut bank, &p, 0).await;
    let w = watch(&bank, &[&p]);
    bank.refused(&[start(&p, 0, 0)], &[&a], 0, err(WeightAccountsMissing), &w)
        .await;
    init_one(&mut bank, &p, 1).await;
    write_all(&mut bank, &p, 16).await;
    let q = written(&mut bank, tiny_sections(LEN, 6)).await;
    let w = watch(&bank, &[&p, &q]);

    // A later chunk before the pass began (the model is Open), a wrong pass.
    bank.refused(&[seal(&p, 0, 0, 1)], &[], 0, err(WrongState), &w)
        .await;
    bank.refused(&[seal(&p, 0, 0, u32::MAX)], &[], 0, err(WrongState), &w)
        .await;
    bank.refused(&[start(&p, 0, 1)], &[&a], 0, err(StalePass), &w)
        .await;
    // Another model's weight account, the weight accounts swapped, the model as weight account
    // and a weight account as model, read-only accounts.
    let with_theirs = ix::start_seal(&PROGRAM, &p.model, &q.weights, &p.authority, p.creation, 0);
    bank.refused(&[with_theirs], &[&a], 0, err(WrongModel), &w)
        .await;
    bank.refused(&[start(&p, 1, 0)], &[&a], 0, err(WrongSection), &w)
        .await;
    let model_as_weight = ix::start_seal(
        &PROGRAM,
        &p.model,
        &[p.model, p.weights[1]],
        &p.authority,
        p.creation,
        0,
    );
    bank.refused(&[model_as_weight], &[&a], 0, err(NotInitialized), &w)
        .await;
    let weight_as_model = ix::start_seal(
        &PROGRAM,
        &p.weights[0],
        &p.weights,
        &p.authority,
        p.creation,
        0,
    );
    bank.refused(&[weight_as_model], &[&a], 0, err(NotAModel), &w)
        .await;
    bank.refused(
        &[readonly(start(&p, 0, 0), 1)],
        &[&a],
        0,
        err(NotWritable),
        &w,
    )
    .await;
    bank.refused(
        &[readonly(start(&p, 0, 0), 0)],
        &[&a],
        0,
        err(NotWritable),
        &w,
    )
    .await;

    // A duplicate or replayed seal fails cleanly instead of advancing twice.
    bank.send(&[start(&p, 0, 0)], &[&a]).await.unwrap();
    // A second start of the pass: the model is Sealing.
    bank.refused(&[start(&p, 0, 0)], &[&a], 0, err(WrongState), &w)
        .await;
    // A chunk number past the artifact, or of another section than the cursor's.
    bank.refused(
        &[seal(&p, 1, 0, u32::MAX)],
        &[],
        0,
        err(UnexpectedChunk),
        &w,
    )
    .await;
    // Seals are order-free: copies of one seal never hash a chunk twice. Two copies of chunk
    // 1's seal hash chunks 1 and 2 (section one's two); a third finds the model sealed, and the
    // transaction fails with every change undone.
    bank.refused(
        &[seal(&p, 1, 0, 1), seal(&p, 1, 0, 1), seal(&p, 1, 0, 1)],
        &[],
        2,
        err(ModelSealed),
        &w,
    )
    .await;
    // Section one's chunk with section zero's account.
    bank.refused(&[seal(&p, 0, 0, 1)], &[], 0, err(WrongSection), &w)
        .await;
    bank.send(&[seal(&p, 1, 0, 1)], &[]).await.unwrap();
    bank.send(&[seal(&p, 1, 0, 2)], &[]).await.unwrap();
    assert_eq!(bank.model(&p.model).await.state, ModelState::Sealed);

    // After Sealed, with any chunk number.
    bank.refused(&[seal(&p, 1, 0, 3)], &[], 0, err(ModelSealed), &w)
        .await;
    bank.refused(&[start(&p, 0, 0)], &[&a], 0, err(ModelSealed), &w)
        .await;
    // Reopen after Sealed.
    let reopen = ix::reopen(&PROGRAM, &p.model, &p.authority, &p.weights);
    bank.refused(&[reopen], &[&a], 0, err(ModelSealed), &w)
        .await;
}

#[tokio::test]
async fn section_zero_checked_at_first_chunk() {
    let mut bank = Bank::start().await;
    let mut rng = Rng::new(9);
    // Section zero's table says section one is 8 bytes longer than the declared length.
    let sections = vec![tiny_section_zero(LEN as u64 + 8), rng.bytes(LEN)];
    let p = written(&mut bank, sections).await;
    // A section zero without the tag.
    let mut bad = tiny_section_zero(LEN as u64);
    bad[0] = b'X';
    let q = written(&mut bank, vec![bad, rng.bytes(LEN)]).await;
    // A section zero whose config is out of range (vocabulary 258 < 259).
    let mut bad = tiny_section_zero(LEN as u64);
    bad[28..32].copy_from_slice(&258u32.to_le_bytes());
    let r = written(&mut bank, vec![bad, rng.bytes(LEN)]).await;
    let w = watch(&bank, &[&p, &q, &r]);
    let a = bank.authority.insecure_clone();

    let (_, logs) = bank.send_logged(&[start(&p, 0, 0)], &[&a]).await;
    // The reason, then the section, the length found and the declared one (sol_log_64).
    let reason = "Program log: section table: section length differs from the declared (section, found, declared)";
    let values = format!("Program log: 0x1, {:#x}, {:#x}, 0x0, 0x0", LEN + 8, LEN);
    assert!(logs.iter().any(|l| l == reason), "{logs:#?}");
    assert!(logs.contains(&values), "{logs:#?}");
    bank.refused(&[start(&p, 0, 0)], &[&a], 0, err(SectionTableMismatch), &w)
        .await;
    // The reason is logged.
    let (result, logs) = bank.send_logged(&[seal(&q, 0, 0, 1)], &[]).await;
    assert_eq!(
        result,
        Err(TransactionError::InstructionError(0, err(WrongState)))
    );
    assert!(
        logs.iter().all(|l| !l.contains("section zero:")),
        "a crank before the pass parses nothing"
    );
    let (_, logs) = bank.send_logged(&[start(&q, 0, 0)], &[&a]).await;
    assert!(
        logs.iter()
            .any(|l| l.starts_with("Program log: section zero: wrong tag at byte 0")),
        "{logs:#?}"
    );
    bank.refused(&[start(&q, 0, 0)], &[&a], 0, err(InvalidSectionZero), &w)
        .await;
    bank.refused(&[start(&r, 0, 0)], &[&a], 0, err(InvalidSectionZero), &w)
        .await;
    for x in [&p, &q, &r] {
        let model = bank.model(&x.model).await;
        assert_eq!((model.state, model.seal_cursor), (ModelState::Open, 0));
        assert!(
            !bank.header(&x.weights[0]).await.frozen,
            "a refused seal freezes nothing"
        );
    }
    // Repair section zero's table (still Open): the seal goes through and stores the config.
    let good = tiny_section_zero(LEN as u64);
    bank.send(
        &[ix::write(
            &PROGRAM,
            &p.weights[0],
            &p.authority,
            0,
            &good[..1000],
        )],
        &[&a],
    )
    .await
    .unwrap();
    bank.send(&[start(&p, 0, 0)], &[&a]).await.unwrap();
    let model = bank.model(&p.model).await;
    assert_eq!(model.config.fields(), curta_tests::TINY_CONFIG);
    assert_eq!(model.state, ModelState::Sealing);
}

/// Section zero's matrix descriptors and reserved words, as chunk 0 checks them (two aligned
/// words compared whole per descriptor, the reserved words OR-ed): each refusal names the
/// first differing descriptor field or the first non-zero word, and changes nothing.
#[tokio::test]
async fn section_zero_descriptors_and_reserved_words_refused() {
    let mut bank = Bank::start().await;
    let mut rng = Rng::new(21);
    let a = bank.authority.insecure_clone();
    let [dim, _, _, _, _, vocab, _] = curta_tests::TINY_CONFIG;
    // (header byte, new bytes, reason, the four logged values)
    let cases: [(usize, Vec<u8>, &str, [u64; 4]); 5] = [
        (
            512 + 3 * 24 + 8,
            (dim + 1).to_le_bytes().to_vec(),
            "section zero: matrix descriptor differs (index, header byte, found, expected)",
            [3, 512 + 3 * 24 + 8, dim as u64 + 1, dim as u64],
        ),
        (
            512,
            2u32.to_le_bytes().to_vec(),
            "section zero: matrix descriptor differs (index, header byte, found, expected)",
            [0, 512, 2, 1],
        ),
        (
            512 + 8 * 24 + 12,
            17u32.to_le_bytes().to_vec(),
            "section zero: matrix descriptor differs (index, header byte, found, expected)",
            [8, 512 + 8 * 24 + 12, 17, 16],
        ),
        (
            512 + 24 + 16,
            4u64.to_le_bytes().to_vec(),
            "section zero: matrix misaligned or out of its section (index, offset, end, length)",
            [1, 4, 4 + 16 * vocab as u64, LEN as u64],
        ),
        (
            4000,
            vec![1],
            "section zero: reserved header word not zero (byte)",
            [4000, 0, 0, 0],
        ),
    ];
    for (at, bytes, reason, values) in cases {
        let mut bad = tiny_section_zero(LEN as u64);
        bad[at..at + bytes.len()].copy_from_slice(&bytes);
        let p = written(&mut bank, vec![bad, rng.bytes(LEN)]).await;
        let w = watch(&bank, &[&p]);
        let (result, logs) = bank.send_logged(&[start(&p, 0, 0)], &[&a]).await;
        assert_eq!(
            result,
            Err(TransactionError::InstructionError(
                0,
                err(InvalidSectionZero)
            )),
            "{reason}"
        );
        assert!(
            logs.contains(&format!("Program log: {reason}")),
            "{logs:#?}"
        );
        let logged = format!(
            "Program log: {:#x}, {:#x}, {:#x}, {:#x}, 0x0",
            values[0], values[1], values[2], values[3]
        );
        assert!(logs.contains(&logged), "{logged} in {logs:#?}");
        bank.refused(&[start(&p, 0, 0)], &[&a], 0, err(InvalidSectionZero), &w)
            .await;
        let model = bank.model(&p.model).await;
        assert_eq!((model.state, model.seal_cursor), (ModelState::Open, 0));
        assert!(!bank.header(&p.weights[0]).await.frozen);
    }
}

#[tokio::test]
async fn close_attacks() {
    let mut bank = Bank::start().await;
    let a = bank.authority.insecure_clone();
    let m = bank.mallory.insecure_clone();
    let p = written(&mut bank, tiny_sections(LEN, 10)).await;
    let dest = Pubkey::new_unique();
    let mut w = watch(&bank, &[&p]);
    w.push(dest);
    let close = |weights: &[Pubkey], dest: &Pubkey| {
        ix::close(&PROGRAM, &p.model, &p.authority, dest, weights)
    };

    let by_mallory = ix::close(&PROGRAM, &p.model, &m.pubkey(), &m.pubkey(), &p.weights);
    bank.refused(&[by_mallory], &[&m], 0, err(Unauthorized), &w)
        .await;
    bank.refused(
        &[unsigned(close(&p.weights, &dest), 1)],
        &[],
        0,
        InstructionError::MissingRequiredSignature,
        &w,
    )
    .await;
    let reversed: Vec<Pubkey> = p.weights.iter().rev().copied().collect();
    bank.refused(
        &[close(&reversed, &dest)],
        &[&a],
        0,
        err(WeightAddressMismatch),
        &w,
    )
    .await;
    bank.refused(
        &[close(&p.weights[..1], &dest)],
        &[&a],
        0,
        err(WrongAccountCount),
        &w,
    )
    .await;
    bank.refused(
        &[close(&p.weights, &p.model)],
        &[&a],
        0,
        err(InvalidDestination),
        &w,
    )
    .await;
    bank.refused(
        &[close(&p.weights, &p.weights[1])],
        &[&a],
        0,
        err(InvalidDestination),
        &w,
    )
    .await;

    bank.send(&[close(&p.weights, &dest)], &[&a]).await.unwrap();
    for x in p.accounts() {
        assert_eq!(
            bank.account(&x).await,
            None,
            "{x} closed: no lamports, no data"
        );
    }
    // Twice; and reuse after close: write, init, seal, reopen all see a system account.
    bank.refused(&[close(&p.weights, &dest)], &[&a], 0, err(WrongOwner), &w)
        .await;
    let write = ix::write(&PROGRAM, &p.weights[1], &p.authority, 0, &[1]);
    bank.refused(&[write], &[&a], 0, err(WrongOwner), &w).await;
    let init = ix::init_weight_account(&PROGRAM, &p.model, &p.weights[0], &p.authority, 0);
    bank.refused(&[init], &[&a], 0, err(WrongOwner), &w).await;
    bank.refused(&[start(&p, 0, 0)], &[&a], 0, err(WrongOwner), &w)
        .await;
    let reopen = ix::reopen(&PROGRAM, &p.model, &p.authority, &p.weights);
    bank.refused(&[reopen], &[&a], 0, err(WrongOwner), &w).await;

    // The addresses are free again: the same model can be published from scratch, and its
    // state starts over (nothing of the closed accounts survives).
    let again = written(&mut bank, p.sections.clone()).await;
    assert_eq!(again.model, p.model);
    let model = bank.model(&again.model).await;
    assert_eq!(
        (model.state, model.seal_pass, model.seal_cursor),
        (ModelState::Open, 0, 0)
    );
    seal_all(&mut bank, &again, 0).await;

    // A sealed model can never be closed.
    let w = watch(&bank, &[&again]);
    bank.refused(
        &[close(&again.weights, &dest)],
        &[&a],
        0,
        err(ModelSealed),
        &w,
    )
    .await;
}

#[tokio::test]
async fn create_and_reopen_attacks() {
    let mut bank = Bank::start().await;
    let a = bank.authority.insecure_clone();
    let m = bank.mallory.insecure_clone();
    let me = a.pubkey();
    let hash = [7u8; 32];
    let (model, _) = state::model_address(&PROGRAM, &me, &hash);
    let w = vec![me, model];
    let create = |lengths: &[u32]| ix::create_model(&PROGRAM, &me, hash, lengths);

    bank.refused(&[create(&[100])], &[&a], 0, err(InvalidSectionCount), &w)
        .await;
    bank.refused(
        &[create(&[100; 19])],
        &[&a],
        0,
        err(InvalidSectionCount),
        &w,
    )
    .await;
    bank.refused(&[create(&[])], &[&a], 0, err(InvalidSectionCount), &w)
        .await;
    bank.refused(
        &[create(&[100, 0])],
        &[&a],
        0,
        err(InvalidSectionLength),
        &w,
    )
    .await;
    bank.refused(
        &[create(&[100, 10_483_713])],
        &[&a],
        0,
        err(InvalidSectionLength),
        &w,
    )
    .await;
    // Section zero shorter than the header a seal checks: it could never seal.
    bank.refused(
        &[create(&[4_095, 100])],
        &[&a],
        0,
        err(SectionZeroTooShort),
        &w,
    )
    .await;
    bank.refused(
        &[unsigned(create(&[4_096, 100]), 0)],
        &[],
        0,
        InstructionError::MissingRequiredSignature,
        &w,
    )
    .await;
    // Another address than the PDA, the PDA of another hash, another authority's PDA.
    let mut elsewhere = create(&[4_096, 100]);
    elsewhere.accounts[1] = AccountMeta::new(Pubkey::new_unique(), false);
    bank.refused(&[elsewhere], &[&a], 0, err(ModelAddressMismatch), &w)
        .await;
    let mut other_hash = create(&[4_096, 100]);
    other_hash.accounts[1].pubkey = state::model_address(&PROGRAM, &me, &[8; 32]).0;
    bank.refused(&[other_hash], &[&a], 0, err(ModelAddressMismatch), &w)
        .await;
    let mut theirs = create(&[4_096, 100]);
    theirs.accounts[1].pubkey = state::model_address(&PROGRAM, &m.pubkey(), &hash).0;
    bank.refused(&[theirs], &[&a], 0, err(ModelAddressMismatch), &w)
        .await;
    let mut fake_system = create(&[4_096, 100]);
    fake_system.accounts[2].pubkey = Pubkey::new_unique();
    bank.refused(
        &[fake_system],
        &[&a],
        0,
        InstructionError::IncorrectProgramId,
        &w,
    )
    .await;

    // Someone sends lamports to the PDA first: the model is still created, rent-exempt.
    bank.send(
        &[system_instruction::transfer(
            &m.pubkey(),
            &model,
            bank.rent.minimum_balance(0),
        )],
        &[&m],
    )
    .await
    .unwrap();
    bank.send(&[create(&[10_483_712, 1])], &[&a]).await.unwrap();
    let account = bank.account(&model).await.unwrap();
    assert_eq!(
        account.lamports,
        bank.rent.minimum_balance(state::MODEL_LEN)
    );
    assert_eq!(account.owner, PROGRAM);
    let w = vec![me, model];
    bank.refused(
        &[create(&[10_483_712, 2])],
        &[&a],
        0,
        err(AlreadyInitialized),
        &w,
    )
    .await;

    // Reopen: of an Open model, by a non-authority, with missing or wrong weight accounts.
    let p = written(&mut bank, tiny_sections(LEN, 11)).await;
    let w = watch(&bank, &[&p]);
    let reopen = |weights: &[Pubkey]| ix::reopen(&PROGRAM, &p.model, &p.authority, weights);
    bank.refused(&[reopen(&p.weights)], &[&a], 0, err(WrongState), &w)
        .await;
    bank.send(&[start(&p, 0, 0)], &[&a]).await.unwrap();
    let w = watch(&bank, &[&p]);
    let by_mallory = ix::reopen(&PROGRAM, &p.model, &m.pubkey(), &p.weights);
    bank.refused(&[by_mallory], &[&m], 0, err(Unauthorized), &w)
        .await;
    bank.refused(
        &[unsigned(reopen(&p.weights), 1)],
        &[],
        0,
        InstructionError::MissingRequiredSignature,
        &w,
    )
    .await;
    bank.refused(
        &[reopen(&p.weights[..1])],
        &[&a],
        0,
        err(WrongAccountCount),
        &w,
    )
    .await;
    let reversed: Vec<Pubkey> = p.weights.iter().rev().copied().collect();
    bank.refused(
        &[reopen(&reversed)],
        &[&a],
        0,
        err(WeightAddressMismatch),
        &w,
    )
    .await;
    bank.refused(
        &[readonly(reopen(&p.weights), 2)],
        &[&a],
        0,
        err(NotWritable),
        &w,
    )
    .await;
    bank.send(&[reopen(&p.weights)], &[&a]).await.unwrap();
    assert_eq!(bank.model(&p.model).await.state, ModelState::Open);
}

#[tokio::test]
async fn closed_accounts_cannot_be_revived() {
    let mut bank = Bank::start().await;
    let a = bank.authority.insecure_clone();
    let p = written(&mut bank, tiny_sections(LEN, 12)).await;
    // Close, then send lamports back to a closed weight account in the same transaction.
    let close = ix::close(&PROGRAM, &p.model, &p.authority, &a.pubkey(), &p.weights);
    let revive =
        system_instruction::transfer(&p.authority, &p.weights[1], bank.rent.minimum_balance(0));
    bank.send(&[close, revive], &[&a]).await.unwrap();
    let revived = bank.account(&p.weights[1]).await.unwrap();
    assert_eq!(revived.owner, solana_system_interface::program::ID);
    assert!(
        revived.data.is_empty(),
        "no byte of the closed account survives"
    );
    let w = watch(&bank, &[&p]);
    let write = ix::write(&PROGRAM, &p.weights[1], &p.authority, 0, &[1]);
    bank.refused(&[write], &[&a], 0, err(WrongOwner), &w).await;
    let reopen = ix::reopen(&PROGRAM, &p.model, &p.authority, &p.weights);
    bank.refused(&[reopen], &[&a], 0, err(WrongOwner), &w).await;
}

/// Weight seeds use only 10 bytes of the model address, so two models of one authority whose
/// addresses share those bytes share their weight addresses. Close checks each account's
/// header, not only its address: it never drains another model's weight account.
#[tokio::test]
async fn close_refuses_weight_accounts_of_another_model() {
    let mut bank = Bank::start().await;
    let a = bank.authority.insecure_clone();
    // Model A: sealed. Model B: open, section zero initialized, section one never created.
    let sealed = written(&mut bank, tiny_sections(LEN, 13)).await;
    seal_all(&mut bank, &sealed, 0).await;
    assert_eq!(bank.model(&sealed.model).await.state, ModelState::Sealed);
    let b = create(&mut bank, tiny_sections(LEN, 14), None).await;
    init_one(&mut bank, &b, 0).await;
    let dest = Pubkey::new_unique();
    let mut w = watch(&bank, &[&sealed, &b]);
    w.push(dest);
    let close = ix::close(&PROGRAM, &b.model, &b.authority, &dest, &b.weights);

    // The collision: A's section-one weight account (frozen, full of A's bytes) sits at B's
    // section-one address.
    let theirs = bank.account(&sealed.weights[1]).await.unwrap();
    bank.plant(&b.weights[1], theirs.clone());
    bank.refused(std::slice::from_ref(&close), &[&a], 0, err(WrongModel), &w)
        .await;

    // A copy of B's own section-zero account at B's section-one address.
    let section_zero = bank.account(&b.weights[0]).await.unwrap();
    bank.plant(&b.weights[1], section_zero);
    bank.refused(
        std::slice::from_ref(&close),
        &[&a],
        0,
        err(WrongSection),
        &w,
    )
    .await;

    // Not initialized, but not zero either: one byte of the header, then the magic with an
    // unknown layout version.
    let lamports = bank.rent.minimum_balance(WEIGHT_HEADER_LEN + LEN);
    let blank = solana_sdk::account::Account {
        lamports,
        data: vec![0; WEIGHT_HEADER_LEN + LEN],
        owner: PROGRAM,
        executable: false,
        rent_epoch: 0,
    };
    let mut dirty = blank.clone();
    dirty.data[WEIGHT_HEADER_LEN - 1] = 1;
    let mut unknown_version = theirs.clone();
    unknown_version.data[8] = 2;
    for planted in [dirty, unknown_version] {
        bank.plant(&b.weights[1], planted);
        bank.refused(
            std::slice::from_ref(&close),
            &[&a],
            0,
            err(UnrecognizedWeightAccount),
            &w,
        )
        .await;
    }

    // The model records another account for section zero than the one at its seed address.
    bank.plant(&b.weights[1], blank);
    let mut model = bank.account(&b.model).await.unwrap();
    let mut decoded = state::Model::unpack(&model.data).unwrap();
    decoded.weight_accounts[0] = Pubkey::new_unique();
    decoded.pack(&mut model.data);
    let real_model = bank.account(&b.model).await.unwrap();
    bank.plant(&b.model, model);
    bank.refused(
        std::slice::from_ref(&close),
        &[&a],
        0,
        err(WeightAddressMismatch),
        &w,
    )
    .await;

    // Restored: an initialized account of B and a zeroed one, both closed; A untouched.
    bank.plant(&b.model, real_model);
    let sealed_before = bank.snapshot(&sealed.accounts()).await;
    let sum = bank.lamports(&b.model).await
        + bank.lamports(&b.weights[0]).await
        + bank.lamports(&b.weights[1]).await;
    bank.send(&[close], &[&a]).await.unwrap();
    assert_eq!(bank.lamports(&dest).await, sum);
    for x in b.accounts() {
        assert_eq!(bank.account(&x).await, None);
    }
    assert_eq!(bank.snapshot(&sealed.accounts()).await, sealed_before);
}

/// Section zero's own section-table entry (byte 136) disagrees with its length: the table is
/// not the declared one (SectionTableMismatch), and the reason is logged.
#[tokio::test]
async fn section_zero_length_entry_is_a_table_mismatch() {
    let mut bank = Bank::start().await;
    let a = bank.authority.insecure_clone();
    let mut zero = tiny_section_zero(LEN as u64);
    let len = zero.len() as u64;
    // Section zero's entry says 8 bytes more; section one's offset (byte 144) follows it, so
    // the table still tiles.
    zero[136..144].copy_from_slice(&(len + 8).to_le_bytes());
    zero[144..152].copy_from_slice(&(len + 8).to_le_bytes());
    let p = written(&mut bank, vec![zero, Rng::new(15).bytes(LEN)]).await;
    let w = watch(&bank, &[&p]);
    let start = start(&p, 0, 0);
    let (result, logs) = bank.send_logged(std::slice::from_ref(&start), &[&a]).await;
    assert_eq!(
        result,
        Err(TransactionError::InstructionError(
            0,
            err(SectionTableMismatch)
        ))
    );
    // Section zero's entry, the first that differs from the declared lengths: section 0,
    // found len + 8, declared len.
    let reason = "Program log: section table: section length differs from the declared (section, found, declared)";
    let values = format!("Program log: 0x0, {:#x}, {len:#x}, 0x0, 0x0", len + 8);
    assert!(logs.iter().any(|l| l == reason), "{logs:#?}");
    assert!(logs.contains(&values), "{logs:#?}");
    bank.refused(&[start], &[&a], 0, err(SectionTableMismatch), &w)
        .await;
    let model = bank.model(&p.model).await;
    assert_eq!((model.state, model.seal_cursor), (ModelState::Open, 0));
    assert!(!bank.header(&p.weights[0]).await.frozen);
}

/// Starting a seal pass (chunk 0) freezes section zero: only the authority may do it, in each
/// pass. Once started, anyone may crank the later chunks.
#[tokio::test]
async fn only_the_authority_starts_a_seal_pass() {
    let mut bank = Bank::start().await;
    let a = bank.authority.insecure_clone();
    let m = bank.mallory.insecure_clone();
    let p = written(&mut bank, tiny_sections(LEN, 16)).await;
    let w = watch(&bank, &[&p]);
    let start = |authority: &Pubkey, pass: u32| {
        ix::start_seal(&PROGRAM, &p.model, &p.weights, authority, p.creation, pass)
    };

    for pass in 0..2u32 {
        // Without the authority (the two-account form), by another signer, unsigned.
        bank.refused(
            &[seal(&p, 0, pass, 0)],
            &[],
            0,
            err(SealStartNeedsAuthority),
            &w,
        )
        .await;
        bank.refused(&[start(&m.pubkey(), pass)], &[&m], 0, err(Unauthorized), &w)
            .await;
        assert_eq!(
            bank.send_paid_by(&[start(&m.pubkey(), pass)], &m).await,
            Err(TransactionError::InstructionError(0, err(Unauthorized)))
        );
        bank.refused(
            &[unsigned(start(&a.pubkey(), pass), 2)],
            &[],
            0,
            InstructionError::MissingRequiredSignature,
            &w,
        )
        .await;
        let model = bank.model(&p.model).await;
        assert_eq!((model.state, model.seal_cursor), (ModelState::Open, 0));
        assert!(!bank.header(&p.weights[0]).await.frozen);

        // The authority starts the pass.
        bank.send_paid_by(&[start(&a.pubkey(), pass)], &a)
            .await
            .unwrap();
        assert_eq!(bank.model(&p.model).await.state, ModelState::Sealing);
        // A later chunk takes the model and one weight account, or the model and every
        // section's (two here), even with the authority signing: the authority as a third
        // account is read as section 1's weight account, the cursor's, and refused (not the
        // program's); a fourth account is one too many.
        let mut with_authority = seal(&p, 1, pass, 1);
        with_authority
            .accounts
            .push(AccountMeta::new_readonly(a.pubkey(), true));
        bank.refused(&[with_authority.clone()], &[&a], 0, err(WrongOwner), &w)
            .await;
        with_authority
            .accounts
            .push(AccountMeta::new(p.weights[1], false));
        bank.refused(&[with_authority], &[&a], 0, err(WrongAccountCount), &w)
            .await;
        // The model's account alone: no weight account to hash (it once panicked on chain).
        let mut alone = seal(&p, 1, pass, 1);
        alone.accounts.truncate(1);
        bank.refused(&[alone], &[], 0, err(WrongAccountCount), &w)
            .await;
        // Mallory, sole signer and fee payer, cranks the next chunk.
        bank.send_paid_by(&[seal(&p, 1, pass, 1)], &m)
            .await
            .unwrap();
        assert_eq!(bank.model(&p.model).await.seal_cursor, 2);
        if pass == 0 {
            let reopen = ix::reopen(&PROGRAM, &p.model, &p.authority, &p.weights);
            bank.send(&[reopen], &[&a]).await.unwrap();
        }
    }
    bank.send_paid_by(&[seal(&p, 1, 1, 2)], &m).await.unwrap();
    let model = bank.model(&p.model).await;
    assert_eq!((model.state, model.seal_pass), (ModelState::Sealed, 1));
    assert_eq!(model.running_hash, p.declared);
}
