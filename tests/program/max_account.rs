//! The largest weight account: 10,485,760 bytes, a section of 10,483,712 bytes, written in
//! Writes of MAX_WRITE_BYTES and sealed in 160 chunks.

use crate::harness::*;
use curta_program::state::{ModelState, MAX_WEIGHT_ACCOUNT_LEN, WEIGHT_HEADER_LEN};
use curta_tests::{sha256_chain, tiny_sections};
use std::time::Instant;

#[tokio::test]
async fn largest_weight_account_written_and_sealed_in_160_chunks() {
    const MAX: usize = 10_483_712;
    let sections = tiny_sections(MAX, 0x1000);
    let hash = sha256_chain(sections.iter().map(|s| s.as_slice()));
    let mut bank = Bank::start().await;
    let p = create(&mut bank, sections, Some(hash)).await;
    init_all(&mut bank, &p).await;
    let big = bank.account(&p.weights[1]).await.unwrap();
    assert_eq!(big.data.len(), MAX_WEIGHT_ACCOUNT_LEN);
    assert_eq!(
        big.lamports,
        bank.rent.minimum_balance(MAX_WEIGHT_ACCOUNT_LEN)
    );

    let started = Instant::now();
    // 10,289 Writes of up to 1,019 bytes; 32 per transaction to spare the bank's per-transaction
    // copies of the 10 MiB account (each Write is still one instruction of MAX_WRITE_BYTES).
    write_section(&mut bank, &p, 0, 1).await;
    write_section(&mut bank, &p, 1, 32).await;
    eprintln!("10 MiB section written in {:.1?}", started.elapsed());
    let data = bank.account(&p.weights[1]).await.unwrap().data;
    assert!(data[WEIGHT_HEADER_LEN..] == p.sections[1][..]);

    let started = Instant::now();
    let chunks = p.chunks();
    assert_eq!(chunks.iter().filter(|(s, _)| *s == 1).count(), 160);
    for chunk in 0..chunks.len() as u32 {
        seal_chunk(&mut bank, &p, 0, chunk).await.unwrap();
    }
    eprintln!("161 chunks sealed in {:.1?}", started.elapsed());
    let model = bank.model(&p.model).await;
    assert_eq!(model.state, ModelState::Sealed);
    assert_eq!(model.running_hash, hash);
    assert_eq!(model.total_chunks, 161);
    assert_eq!(model.sections(), &[p.sections[0].len() as u32, MAX as u32]);
}
