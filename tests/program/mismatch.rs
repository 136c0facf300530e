//! One wrong byte: the last seal records the computed hash (Mismatch); reopen, repair the
//! byte, reseal, Sealed.

use crate::harness::*;
use curta_program::error::CurtaError;
use curta_program::instruction as ix;
use curta_program::state::ModelState;
use curta_tests::{sha256_chain, tiny_sections};

#[tokio::test]
async fn mismatch_reopen_repair_reseal() {
    let sections = tiny_sections(150_000, 7);
    let mut bank = Bank::start().await;
    let p = create(&mut bank, sections, None).await;
    init_all(&mut bank, &p).await;
    write_all(&mut bank, &p, 8).await;

    // One byte of section 1 (in its second chunk) written wrong.
    let at = 70_001usize;
    let wrong = p.sections[1][at] ^ 0x5a;
    let a = bank.authority.insecure_clone();
    bank.send(
        &[ix::write(
            &PROGRAM,
            &p.weights[1],
            &p.authority,
            at as u32,
            &[wrong],
        )],
        &[&a],
    )
    .await
    .unwrap();
    let mut on_chain = p.sections.clone();
    on_chain[1][at] = wrong;
    let computed = sha256_chain(on_chain.iter().map(|s| s.as_slice()));
    assert_ne!(computed, p.declared);

    let chunks = p.chunks();
    let (last, rest) = chunks.split_last().unwrap();
    for chunk in 0..rest.len() as u32 {
        seal_chunk(&mut bank, &p, 0, chunk).await.unwrap();
    }
    let seal = ix::seal(
        &PROGRAM,
        &p.model,
        &p.weights[last.0],
        p.creation,
        0,
        rest.len() as u32,
    );
    let (result, logs) = bank.send_logged(&[seal], &[]).await;
    result.unwrap();
    // Both hashes are logged, in hex.
    let hex = |h: &[u8; 32]| h.iter().map(|b| format!("{b:02x}")).collect::<String>();
    let line = format!(
        "Program log: mismatch: declared weights hash {}, computed {}",
        hex(&p.declared),
        hex(&computed)
    );
    assert!(logs.contains(&line), "{logs:#?}");
    let model = bank.model(&p.model).await;
    assert_eq!(model.state, ModelState::Mismatch);
    assert_eq!(
        model.running_hash, computed,
        "the computed hash is recorded"
    );
    assert_eq!(model.weights_hash, p.declared, "the declared hash is kept");
    assert_eq!(model.seal_cursor, model.total_chunks);

    // Mismatch is final for sealing: another seal, a write or an init are refused.
    let watch = p.accounts();
    let start = ix::start_seal(&PROGRAM, &p.model, &p.weights, &p.authority, p.creation, 0);
    bank.refused(&[start], &[&a], 0, custom(CurtaError::WrongState), &watch)
        .await;
    let fix = ix::write(
        &PROGRAM,
        &p.weights[1],
        &p.authority,
        at as u32,
        &[p.sections[1][at]],
    );
    bank.refused(
        std::slice::from_ref(&fix),
        &[&a],
        0,
        custom(CurtaError::SectionFrozen),
        &watch,
    )
    .await;

    // Reopen: a new pass, cursor and running hash back to zero, every section unfrozen.
    bank.send(
        &[ix::reopen(&PROGRAM, &p.model, &p.authority, &p.weights)],
        &[&a],
    )
    .await
    .unwrap();
    let model = bank.model(&p.model).await;
    assert_eq!(
        (
            model.state,
            model.seal_pass,
            model.seal_cursor,
            model.running_hash
        ),
        (ModelState::Open, 1, 0, [0; 32])
    );
    for w in &p.weights {
        assert!(!bank.header(w).await.frozen);
    }
    // The bytes and the rent stay: nothing is uploaded or paid again.
    let data = bank.account(&p.weights[0]).await.unwrap().data;
    assert!(data[2048..] == p.sections[0][..]);

    bank.send(&[fix], &[&a]).await.unwrap();
    // A seal of the old pass is stale.
    let stale = ix::start_seal(&PROGRAM, &p.model, &p.weights, &p.authority, p.creation, 0);
    bank.refused(&[stale], &[&a], 0, custom(CurtaError::StalePass), &watch)
        .await;
    seal_all(&mut bank, &p, 1).await;
    let model = bank.model(&p.model).await;
    assert_eq!(model.state, ModelState::Sealed);
    assert_eq!(model.running_hash, p.declared);
}

#[tokio::test]
async fn reopen_midway_through_sealing() {
    let sections = tiny_sections(140_000, 8);
    let mut bank = Bank::start().await;
    let p = create(&mut bank, sections, None).await;
    init_all(&mut bank, &p).await;
    write_all(&mut bank, &p, 8).await;
    let a = bank.authority.insecure_clone();
    // Chunk 0 (section zero) and chunk 1 (section one's first): both sections frozen.
    seal_chunk(&mut bank, &p, 0, 0).await.unwrap();
    seal_chunk(&mut bank, &p, 0, 1).await.unwrap();
    assert_eq!(bank.model(&p.model).await.state, ModelState::Sealing);
    bank.send(
        &[ix::reopen(&PROGRAM, &p.model, &p.authority, &p.weights)],
        &[&a],
    )
    .await
    .unwrap();
    let model = bank.model(&p.model).await;
    assert_eq!(
        (model.state, model.seal_pass, model.seal_cursor),
        (ModelState::Open, 1, 0)
    );
    assert_eq!(model.config, curta_core::Config::default());
    seal_all(&mut bank, &p, 1).await;
    assert_eq!(bank.model(&p.model).await.state, ModelState::Sealed);
}
