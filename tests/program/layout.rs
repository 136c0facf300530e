//! The account layouts byte by byte, as docs/program.md gives them, read from the raw account
//! data in the bank; the seeds; the error codes.

use crate::harness::*;
use curta_program::error::CurtaError;
use curta_program::state;
use curta_tests::tiny_sections;
use solana_pubkey::Pubkey;

fn u32_at(d: &[u8], at: usize) -> u32 {
    u32::from_le_bytes(d[at..at + 4].try_into().unwrap())
}

#[tokio::test]
async fn raw_account_bytes() {
    let mut bank = Bank::start().await;
    let p = create(&mut bank, tiny_sections(140_000, 51), None).await;
    init_all(&mut bank, &p).await;
    let (_, bump) =
        Pubkey::find_program_address(&[b"model", p.authority.as_ref(), &p.declared], &PROGRAM);

    let d = bank.account(&p.model).await.unwrap().data;
    assert_eq!(d.len(), 808);
    assert_eq!(&d[0..8], b"CURTAMDL");
    assert_eq!((d[8], d[9], d[10], d[11]), (1, 1, bump, 2));
    assert_eq!(u32_at(&d, 12), 0);
    assert_eq!(&d[16..48], p.authority.as_ref());
    assert_eq!(&d[48..80], &p.declared);
    assert_eq!(&d[80..112], &[0; 32]);
    let len0 = p.sections[0].len() as u32;
    // Section zero's chunks + 140,000 bytes = 3 chunks of section one.
    let total = len0.div_ceil(65_536) + 3;
    assert_eq!((u32_at(&d, 112), u32_at(&d, 116)), (0, total));
    assert!(
        d[120..152].iter().all(|&b| b == 0),
        "config unset, then zero padding"
    );
    // The creation id: the slot of the CreateModel.
    let creation = u64::from_le_bytes(d[152..160].try_into().unwrap());
    assert_eq!(creation, p.creation);
    let clock = bank
        .ctx
        .banks_client
        .get_sysvar::<solana_sdk::clock::Clock>()
        .await
        .unwrap();
    assert_eq!(creation, clock.slot);
    assert_eq!((u32_at(&d, 160), u32_at(&d, 164)), (len0, 140_000));
    assert!(d[168..232].iter().all(|&b| b == 0));
    assert_eq!(&d[232..264], p.weights[0].as_ref());
    assert_eq!(&d[264..296], p.weights[1].as_ref());
    assert!(d[296..808].iter().all(|&b| b == 0));

    for (s, w) in p.weights.iter().enumerate() {
        let d = bank.account(w).await.unwrap().data;
        assert_eq!(&d[0..8], b"CURTAWSC");
        assert_eq!((d[8], d[9]), (1, 0));
        assert_eq!(u16::from_le_bytes([d[10], d[11]]), s as u16);
        assert_eq!(u32_at(&d, 12) as usize, p.sections[s].len());
        assert_eq!(&d[16..48], p.model.as_ref());
        assert_eq!(&d[48..80], p.authority.as_ref());
        assert!(d[80..2048].iter().all(|&b| b == 0));
    }

    write_all(&mut bank, &p, 16).await;
    seal_chunk(&mut bank, &p, 0, 0).await.unwrap();
    let d = bank.account(&p.model).await.unwrap().data;
    assert_eq!(d[9], 2, "Sealing");
    assert_eq!(u32_at(&d, 112), 1);
    let chunk0 = &p.sections[0][..65_536.min(p.sections[0].len())];
    assert_eq!(
        &d[80..112],
        &crate::lifecycle::sha256_chain_step(&[0; 32], chunk0)
    );
    let config: Vec<u32> = (0..7).map(|i| u32_at(&d, 120 + 4 * i)).collect();
    assert_eq!(config, curta_tests::TINY_CONFIG);
    // Bytes 148-151: the first chunk (u16) and index (u8) of the cursor's section, then zero.
    let zero_chunks = p.sections[0].len().div_ceil(65_536) as u16;
    let (first, section) = if zero_chunks == 1 { (1, 1) } else { (0, 0) };
    assert_eq!(u16::from_le_bytes([d[148], d[149]]), first);
    assert_eq!((d[150], d[151]), (section, 0));
    assert_eq!(
        u64::from_le_bytes(d[152..160].try_into().unwrap()),
        p.creation
    );
    assert_eq!(
        bank.account(&p.weights[0]).await.unwrap().data[9],
        1,
        "section zero frozen"
    );
    assert_eq!(
        bank.account(&p.weights[1]).await.unwrap().data[9],
        1,
        "section one frozen too (chunk 0 freezes every section)"
    );
}

#[test]
fn seeds() {
    let model = Pubkey::new_from_array(core::array::from_fn(|i| (i as u8).wrapping_mul(17)));
    let seed = state::weight_seed(&model, 0);
    assert_eq!(seed, "curta-00-00112233445566778899");
    assert_eq!(seed.len(), 29);
    assert_eq!(
        state::weight_seed(&model, 17),
        "curta-17-00112233445566778899"
    );
    let authority = Pubkey::new_unique();
    assert_eq!(
        state::weight_address(&PROGRAM, &authority, &model, 3),
        Pubkey::create_with_seed(&authority, "curta-03-00112233445566778899", &PROGRAM).unwrap()
    );
    let hash = [9u8; 32];
    assert_eq!(
        state::model_address(&PROGRAM, &authority, &hash),
        Pubkey::find_program_address(&[b"model", authority.as_ref(), &hash], &PROGRAM)
    );
    assert_eq!(
        curta_program::id().to_string(),
        "EK9jqHnajPuMkoe66Go1ASMV1KQG9RctaRcrGcgs3Qqn"
    );
}

#[test]
fn error_codes() {
    // The codes docs/program.md lists.
    let pinned = [
        (0, CurtaError::WrongOwner),
        (1, CurtaError::Unauthorized),
        (7, CurtaError::AlreadyInitialized),
        (15, CurtaError::SectionFrozen),
        (16, CurtaError::ModelSealed),
        (18, CurtaError::UnexpectedChunk),
        (22, CurtaError::SectionTableMismatch),
        (23, CurtaError::WrongAccountCount),
        (27, CurtaError::Overflow),
        (28, CurtaError::SealStartNeedsAuthority),
        (29, CurtaError::UnrecognizedWeightAccount),
        (30, CurtaError::SectionZeroTooShort),
        (31, CurtaError::StaleCreation),
        (32, CurtaError::ModelTooLarge),
        (33, CurtaError::NotARun),
        (34, CurtaError::RunAddressMismatch),
        (35, CurtaError::RunSizeMismatch),
        (36, CurtaError::StaleCursor),
        (37, CurtaError::RunEnded),
        (38, CurtaError::InvalidRun),
        (39, CurtaError::InvalidStepBudget),
        (40, CurtaError::ModelNotSealed),
        (41, CurtaError::RunTooLarge),
        (42, CurtaError::SeedNotReady),
        (43, CurtaError::SeedExpired),
        (44, CurtaError::NotSlotHashes),
        (45, CurtaError::PromptTooLongToEncode),
        (46, CurtaError::SectionNotLoaded),
        (47, CurtaError::NotAClaim),
        (51, CurtaError::BondTooLow),
        (58, CurtaError::DisputeRunLocked),
        (61, CurtaError::InvalidPriorityPrice),
    ];
    for (code, e) in pinned {
        assert_eq!(e as u32, code);
        assert_eq!(CurtaError::try_from(code), Ok(e));
    }
    for e in CurtaError::ALL {
        assert_eq!(CurtaError::try_from(e as u32), Ok(e));
        assert!(!e.to_string().is_empty());
    }
    assert_eq!(CurtaError::ALL.len(), 62);
    assert_eq!(CurtaError::try_from(62), Err(62));
    assert_eq!(CurtaError::try_from(u32::MAX), Err(u32::MAX));
}

#[test]
fn hand_built_artifact_decodes() {
    // The hand-built section zero is a real CURTAW01 header: curta-core's reader accepts the
    // whole artifact, with the config and section table it was built with.
    for len in [curta_tests::TINY_MATRIX_BYTES as usize, 70_000, 10_483_712] {
        let sections = tiny_sections(len, 3);
        let file = sections.concat();
        let artifact = curta_core::decode(&file).unwrap();
        assert_eq!(artifact.config().fields(), curta_tests::TINY_CONFIG);
        let lengths: Vec<usize> = artifact.sections().map(|s| s.len()).collect();
        assert_eq!(lengths, [sections[0].len(), len]);
    }
}
