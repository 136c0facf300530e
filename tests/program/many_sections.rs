//! Models with many sections, converted from synthetic checkpoints: 18 sections (16 layers,
//! the most), 3 sections (one layer over the threshold) and stories15M's 8. The seal cursor
//! crosses every section with the running hash checked against the sha2 chain after every
//! chunk, a seal naming a neighbouring section's account is WrongSection, and Reopen and Close
//! take every weight account in one packet.

use crate::fixtures::*;
use crate::harness::*;
use crate::lifecycle::sha256_chain_step;
use curta_program::error::CurtaError::*;
use curta_program::instruction as ix;
use curta_program::state::{ModelState, MODEL_LEN, WEIGHT_HEADER_LEN};
use curta_tests::sha256_chain;
use solana_pubkey::Pubkey;
use solana_sdk::signature::Signer;
use std::time::Instant;

fn lengths(sections: &[Vec<u8>]) -> Vec<usize> {
    sections.iter().map(Vec::len).collect()
}

/// Seals every chunk of `p` in pass 0, checking after each chunk the running hash (against
/// the sha2 chain), the cursor, the state and the cursor's section as the model keeps it, and at
/// each section's first chunk that every section is frozen (chunk 0 froze them all). Before
/// each chunk of a section >= 2,
/// a seal naming the previous or the next section's weight account is WrongSection.
/// `watch_all` snapshots every account of the model around each refusal (the big model
/// watches the three accounts involved).
async fn seal_walk(bank: &mut Bank, p: &Published, watch_all: bool) {
    let chunks = p.chunks();
    let n = p.sections.len();
    let mut expected = [0u8; 32];
    for (i, &(s, c)) in chunks.iter().enumerate() {
        let i = i as u32;
        if s >= 2 {
            let neighbours = if c == 0 {
                vec![s - 1, s + 1]
            } else {
                vec![s + 1]
            };
            for x in neighbours.into_iter().filter(|&x| x < n) {
                let w = if watch_all {
                    p.accounts()
                } else {
                    vec![p.model, p.weights[s], p.weights[x]]
                };
                let wrong = ix::seal(&PROGRAM, &p.model, &p.weights[x], p.creation, 0, i);
                bank.refused(&[wrong], &[], 0, custom(WrongSection), &w)
                    .await;
            }
        }
        seal_chunk(bank, p, 0, i).await.unwrap();
        expected = sha256_chain_step(&expected, chunk_of(p, s, c));
        let model = bank.model(&p.model).await;
        assert_eq!(model.running_hash, expected, "running hash after chunk {i}");
        assert_eq!(model.seal_cursor, i + 1);
        let last = i as usize + 1 == chunks.len();
        let state = if last {
            ModelState::Sealed
        } else {
            ModelState::Sealing
        };
        assert_eq!(model.state, state, "after chunk {i}");
        if c == 0 {
            for (t, w) in p.weights.iter().enumerate() {
                assert!(
                    bank.header(w).await.frozen,
                    "section {t} frozen at section {s}'s first chunk"
                );
            }
        }
        // The cursor's section and its first chunk as the model keeps them (bytes 148, 150),
        // from the chunk list: the next chunk's section, and where that section starts.
        if let Some(&(next, _)) = chunks.get(i as usize + 1) {
            let data = bank.account(&p.model).await.unwrap().data;
            let first = chunks
                .iter()
                .position(|&(t, c)| (t, c) == (next, 0))
                .unwrap();
            assert_eq!(
                (
                    u16::from_le_bytes([data[148], data[149]]) as usize,
                    data[150] as usize
                ),
                (first, next),
                "the seal section after chunk {i}"
            );
        }
    }
    assert_eq!(expected, sha256_chain(p.sections.iter().map(Vec::as_slice)));
    assert_eq!(expected, p.declared);
}

#[tokio::test]
async fn eighteen_sections_sealed_across_every_boundary() {
    let started = Instant::now();
    let sections = eighteen_sections();
    assert_eq!(lengths(&sections), eighteen_lengths());
    assert_eq!(EIGHTEEN.weight_count(), 1_016_000);
    let mut bank = Bank::start().await;
    let p = written(&mut bank, sections).await;
    let model = bank.model(&p.model).await;
    assert_eq!(model.section_count, 18);
    // 1 + 1 + 16 × 2 chunks.
    assert_eq!(model.total_chunks, 34);
    assert_eq!(chunk_total(&eighteen_lengths()), 34);

    seal_walk(&mut bank, &p, true).await;
    let model = bank.model(&p.model).await;
    assert_eq!(model.config, EIGHTEEN);
    assert_eq!(model.running_hash, p.declared);
    eprintln!(
        "18 sections published and sealed in {:.1?}",
        started.elapsed()
    );
}

#[tokio::test]
async fn eighteen_sections_reopen_and_close_in_one_packet() {
    let mut bank = Bank::start().await;
    let a = bank.authority.insecure_clone();
    let before = bank.lamports(&a.pubkey()).await;
    let p = written(&mut bank, eighteen_sections()).await;
    // 33 of the 34 chunks: every section frozen, the cursor in section 17's second chunk.
    for chunk in 0..33 {
        seal_chunk(&mut bank, &p, 0, chunk).await.unwrap();
    }
    for weight in &p.weights {
        assert!(bank.header(weight).await.frozen);
    }
    let w = p.accounts();

    // Reopen: 18 weight accounts. The transaction: 2 signatures (1 + 128 bytes), the message
    // header (3), 22 keys (1 + 704: fee payer, authority, model, 18 weight accounts, program),
    // the blockhash (32), 1 instruction (1 + program index 1 + 1 + 20 account indices + 1 + the
    // tag 1) = 894 bytes.
    let reopen = |weights: &[Pubkey]| ix::reopen(&PROGRAM, &p.model, &p.authority, weights);
    assert_eq!(wire_len(&bank, &[reopen(&p.weights)], &[&a]), 894);
    // One account too many (19, one more than any model has): refused, still in one packet.
    let mut extra = p.weights.clone();
    extra.push(Pubkey::new_unique());
    assert!(wire_len(&bank, &[reopen(&extra)], &[&a]) <= PACKET);
    bank.refused(&[reopen(&extra)], &[&a], 0, custom(WrongAccountCount), &w)
        .await;
    bank.send(&[reopen(&p.weights)], &[&a]).await.unwrap();
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
    for (s, weight) in p.weights.iter().enumerate() {
        let data = bank.account(weight).await.unwrap().data;
        assert_eq!(data[9], 0, "section {s} unfrozen");
        assert!(
            data[WEIGHT_HEADER_LEN..] == p.sections[s][..],
            "section {s} kept"
        );
    }

    // Pass 1 started, three chunks in: Close (of a Sealing model) with 18 weight accounts.
    for chunk in 0..3 {
        seal_chunk(&mut bank, &p, 1, chunk).await.unwrap();
    }
    let dest = Pubkey::new_unique();
    let close = |weights: &[Pubkey]| ix::close(&PROGRAM, &p.model, &p.authority, &dest, weights);
    let mut w = p.accounts();
    w.push(dest);
    bank.refused(&[close(&extra)], &[&a], 0, custom(WrongAccountCount), &w)
        .await;
    // 23 keys (the destination too) and 21 account indices: 894 + 32 + 1 = 927 bytes.
    assert_eq!(wire_len(&bank, &[close(&p.weights)], &[&a]), 927);
    let sum = rent_of(MODEL_LEN)
        + p.sections
            .iter()
            .map(|s| rent_of(WEIGHT_HEADER_LEN + s.len()))
            .sum::<u64>();
    bank.send(&[close(&p.weights)], &[&a]).await.unwrap();
    assert_eq!(bank.lamports(&dest).await, sum);
    assert_eq!(
        bank.lamports(&a.pubkey()).await,
        before - sum,
        "the authority paid the rent and gets nothing back"
    );
    for x in p.accounts() {
        assert_eq!(bank.account(&x).await, None, "{x} closed");
    }
}

/// One layer just over 1,000,000 matrix weights: three sections, section two a whole layer.
/// Reopen and Close refuse one weight account too many.
#[tokio::test]
async fn three_sections_one_layer_over_the_threshold() {
    let sections = three_sections();
    assert_eq!(lengths(&sections), three_lengths());
    assert_eq!(THREE.weight_count(), 1_004_288);
    let mut bank = Bank::start().await;
    let a = bank.authority.insecure_clone();
    let p = written(&mut bank, sections).await;
    // 1 + 2 + 15 chunks.
    assert_eq!(bank.model(&p.model).await.total_chunks, 18);
    assert_eq!(chunk_total(&three_lengths()), 18);

    // Sealing (chunk 0 hashed): four weight accounts are one too many.
    seal_chunk(&mut bank, &p, 0, 0).await.unwrap();
    let dest = Pubkey::new_unique();
    let mut extra = p.weights.clone();
    extra.push(p.weights[2]);
    let mut w = p.accounts();
    w.push(dest);
    let reopen = ix::reopen(&PROGRAM, &p.model, &p.authority, &extra);
    bank.refused(&[reopen], &[&a], 0, custom(WrongAccountCount), &w)
        .await;
    let close = ix::close(&PROGRAM, &p.model, &p.authority, &dest, &extra);
    bank.refused(&[close], &[&a], 0, custom(WrongAccountCount), &w)
        .await;
    let reopen = ix::reopen(&PROGRAM, &p.model, &p.authority, &p.weights);
    bank.send(&[reopen], &[&a]).await.unwrap();

    // Pass 1: chunk 1 (section one) with section two's account is WrongSection too.
    let w = p.accounts();
    seal_chunk(&mut bank, &p, 1, 0).await.unwrap();
    let wrong = ix::seal(&PROGRAM, &p.model, &p.weights[2], p.creation, 1, 1);
    bank.refused(&[wrong], &[], 0, custom(WrongSection), &w)
        .await;
    let reopen = ix::reopen(&PROGRAM, &p.model, &p.authority, &p.weights);
    bank.send(&[reopen], &[&a]).await.unwrap();

    // Pass 2 from chunk 0 to the end, the running hash checked after every chunk.
    let chunks = p.chunks();
    let mut expected = [0u8; 32];
    for (i, &(s, c)) in chunks.iter().enumerate() {
        let i = i as u32;
        if s == 2 && c == 0 {
            let wrong = ix::seal(&PROGRAM, &p.model, &p.weights[1], p.creation, 2, i);
            bank.refused(&[wrong], &[], 0, custom(WrongSection), &w)
                .await;
        }
        seal_chunk(&mut bank, &p, 2, i).await.unwrap();
        expected = sha256_chain_step(&expected, chunk_of(&p, s, c));
        assert_eq!(bank.model(&p.model).await.running_hash, expected);
    }
    let model = bank.model(&p.model).await;
    assert_eq!(
        (model.state, model.seal_pass, model.running_hash),
        (ModelState::Sealed, 2, p.declared)
    );
    assert_eq!(model.config, THREE);
}

/// stories15M's shape: section zero with 32,000 tokens, the 9,472,000-byte embedding in 145
/// chunks and six layers of 16 chunks. The bytes are planted (16.5 MB of Writes would take
/// minutes); everything else goes through the program.
#[tokio::test]
async fn stories15m_shape_sealed_across_every_boundary() {
    let started = Instant::now();
    let (sections, strings) = stories15m_sections();
    assert_eq!(lengths(sections), stories15m_lengths(*strings));
    eprintln!("stories15M shape converted in {:.1?}", started.elapsed());
    let mut bank = Bank::start().await;
    let a = bank.authority.insecure_clone();
    let p = planted(&mut bank, sections.clone()).await;
    let total = chunk_total(&stories15m_lengths(*strings));
    let zero_chunks = stories15m_lengths(*strings)[0].div_ceil(65_536) as u32;
    assert_eq!(total, zero_chunks + 145 + 6 * 16);
    assert_eq!(bank.model(&p.model).await.total_chunks, total);

    let started = Instant::now();
    seal_walk(&mut bank, &p, false).await;
    eprintln!("{total} chunks sealed in {:.1?}", started.elapsed());
    let model = bank.model(&p.model).await;
    assert_eq!(model.config, curta_core::convert::synth::STORIES15M);
    let dest = Pubkey::new_unique();
    let close = ix::close(&PROGRAM, &p.model, &p.authority, &dest, &p.weights);
    bank.refused(&[close], &[&a], 0, custom(ModelSealed), &[p.model, dest])
        .await;
}

/// The rule for cranks while the authority is still writing: the authority's start of a pass
/// (chunk 0) declares the upload done. No one else can start it, and from then on anyone may
/// crank; chunk 0 freezes every section, so a Write into any section fails (SectionFrozen),
/// whether the cursor reached it or not. The hash then covers what was on chain: Mismatch,
/// and the authority reopens.
#[tokio::test]
async fn a_stranger_cranks_while_the_authority_is_still_writing() {
    let mut bank = Bank::start().await;
    let a = bank.authority.insecure_clone();
    let m = bank.mallory.insecure_clone();
    let p = create(&mut bank, eighteen_sections(), None).await;
    init_all(&mut bank, &p).await;
    for s in 0..10 {
        write_section(&mut bank, &p, s, 16).await;
    }
    let w = p.accounts();
    let crank = |s: usize, pass: u32, chunk: u32| {
        ix::seal(&PROGRAM, &p.model, &p.weights[s], p.creation, pass, chunk)
    };

    // The stranger cannot start the pass, nor crank ahead of it.
    assert_eq!(
        bank.send_paid_by(&[crank(0, 0, 0)], &m).await,
        Err(solana_sdk::transaction::TransactionError::InstructionError(
            0,
            custom(SealStartNeedsAuthority)
        ))
    );
    let as_authority = ix::start_seal(&PROGRAM, &p.model, &p.weights, &m.pubkey(), p.creation, 0);
    bank.refused(&[as_authority], &[&m], 0, custom(Unauthorized), &w)
        .await;
    bank.refused(&[crank(1, 0, 1)], &[], 0, custom(WrongState), &w)
        .await;
    let model = bank.model(&p.model).await;
    assert_eq!((model.state, model.seal_cursor), (ModelState::Open, 0));

    // The authority starts the pass with sections 10 to 17 unwritten; the stranger cranks up
    // to and including section 10's first chunk.
    seal_chunk(&mut bank, &p, 0, 0).await.unwrap();
    let chunks = p.chunks();
    let first_of_10 = chunks.iter().position(|&(s, c)| (s, c) == (10, 0)).unwrap() as u32;
    assert_eq!(first_of_10, 2 + 8 * 2);
    for chunk in 1..=first_of_10 {
        let (s, _) = chunks[chunk as usize];
        bank.send_paid_by(&[crank(s, 0, chunk)], &m).await.unwrap();
    }
    let write = |s: usize, offset: usize| {
        let bytes = &p.sections[s][offset..offset + ix::MAX_WRITE_BYTES];
        ix::write(&PROGRAM, &p.weights[s], &p.authority, offset as u32, bytes)
    };
    // Section 10 was reached: frozen, even where its first chunk does not reach (offset
    // 66,000 is in its second chunk); section 11 was not, and is frozen too.
    for (section, offset) in [(10, 0), (10, 66_000), (11, 0), (17, 0)] {
        bank.refused(
            &[write(section, offset)],
            &[&a],
            0,
            custom(SectionFrozen),
            &w,
        )
        .await;
    }

    // The stranger cranks to the end: the hash covers sections 0 to 9 as written and sections
    // 10 to 17 as zeros.
    for chunk in first_of_10 + 1..chunks.len() as u32 {
        let (s, _) = chunks[chunk as usize];
        bank.send_paid_by(&[crank(s, 0, chunk)], &m).await.unwrap();
    }
    let on_chain: Vec<Vec<u8>> = (0..18)
        .map(|s| {
            if s < 10 {
                p.sections[s].clone()
            } else {
                vec![0; p.sections[s].len()]
            }
        })
        .collect();
    let computed = sha256_chain(on_chain.iter().map(Vec::as_slice));
    let model = bank.model(&p.model).await;
    assert_eq!(
        (model.state, model.running_hash),
        (ModelState::Mismatch, computed)
    );

    // The authority reopens, writes the rest and seals pass 1.
    let reopen = ix::reopen(&PROGRAM, &p.model, &p.authority, &p.weights);
    bank.send(&[reopen], &[&a]).await.unwrap();
    for s in 10..18 {
        write_section(&mut bank, &p, s, 16).await;
    }
    seal_all(&mut bank, &p, 1).await;
    let model = bank.model(&p.model).await;
    assert_eq!(
        (model.state, model.running_hash),
        (ModelState::Sealed, p.declared)
    );
}
