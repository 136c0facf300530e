//! The whole life cycle on the artifact converted from stories260K.

use crate::harness::*;
use curta_program::state::{ModelState, MODEL_LEN, WEIGHT_HEADER_LEN};
use curta_tests::{sha256_chain, split_sections, stories260k_artifact};

#[tokio::test]
async fn stories260k_life_cycle() {
    let artifact = stories260k_artifact();
    let sections = split_sections(&artifact);
    assert_eq!(
        sections.len(),
        2,
        "stories260K has under 1,000,000 matrix weights: two sections"
    );
    let off_chain = curta_core::weights_hash(sections.iter().map(|s| s.as_slice()));
    assert_eq!(
        off_chain,
        sha256_chain(sections.iter().map(|s| s.as_slice()))
    );

    let mut bank = Bank::start().await;
    let p = create(&mut bank, sections.clone(), Some(off_chain)).await;
    let model = bank.model(&p.model).await;
    assert_eq!(model.state, ModelState::Open);
    assert_eq!(model.authority, p.authority);
    assert_eq!(model.weights_hash, off_chain);
    assert_eq!(model.sections(), p.lengths().as_slice());
    let chunks = p.chunks().len() as u32;
    assert_eq!(model.total_chunks, chunks);
    assert_eq!(bank.account(&p.model).await.unwrap().data.len(), MODEL_LEN);

    init_all(&mut bank, &p).await;
    let model = bank.model(&p.model).await;
    assert_eq!(model.weights(), p.weights.as_slice());
    for (s, w) in p.weights.iter().enumerate() {
        let header = bank.header(w).await;
        assert_eq!(
            (
                header.section,
                header.length,
                header.model,
                header.authority,
                header.frozen
            ),
            (
                s as u16,
                p.sections[s].len() as u32,
                p.model,
                p.authority,
                false
            )
        );
    }

    write_all(&mut bank, &p, 1).await;
    for (s, w) in p.weights.iter().enumerate() {
        let data = bank.account(w).await.unwrap().data;
        assert!(
            data[WEIGHT_HEADER_LEN..] == p.sections[s][..],
            "section {s} bytes on chain"
        );
    }

    let mut expected = [0u8; 32];
    for (i, (s, c)) in p.chunks().into_iter().enumerate() {
        seal_chunk(&mut bank, &p, 0, i as u32).await.unwrap();
        let start = c as usize * 65_536;
        let end = (start + 65_536).min(p.sections[s].len());
        expected = sha256_chain_step(&expected, &p.sections[s][start..end]);
        let model = bank.model(&p.model).await;
        assert_eq!(model.running_hash, expected, "running hash after chunk {i}");
        assert_eq!(model.seal_cursor, i as u32 + 1);
        let last = i as u32 + 1 == chunks;
        assert_eq!(
            model.state,
            if last {
                ModelState::Sealed
            } else {
                ModelState::Sealing
            }
        );
    }

    let model = bank.model(&p.model).await;
    assert_eq!(model.running_hash, off_chain);
    // The config, read from the model account, equals the checkpoint's own header (the first
    // seven i32 of stories260K.bin; a positive vocabulary means a shared classifier).
    let checkpoint = std::fs::read(curta_tests::models_dir().join("stories260K.bin")).unwrap();
    let field = |i: usize| {
        i32::from_le_bytes(checkpoint[4 * i..4 * i + 4].try_into().unwrap()).unsigned_abs()
    };
    assert_eq!(model.config.fields(), core::array::from_fn(field));
    let c = model.config;
    assert_eq!([c.dim, c.layers, c.vocab_size], [64, 5, 512]);
    for w in &p.weights {
        assert!(bank.header(w).await.frozen);
    }
}

/// One SHA-256 step with the sha2 crate (the independent path).
pub fn sha256_chain_step(prev: &[u8; 32], chunk: &[u8]) -> [u8; 32] {
    use sha2::{Digest, Sha256};
    Sha256::new()
        .chain_update(prev)
        .chain_update(chunk)
        .finalize()
        .into()
}
