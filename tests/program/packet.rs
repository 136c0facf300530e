//! A Write of MAX_WRITE_BYTES fits a 1,232-byte transaction with one signer; one byte more
//! does not.

use curta_program::instruction::{self as ix, MAX_WRITE_BYTES};
use solana_pubkey::Pubkey;
use solana_sdk::hash::Hash;
use solana_sdk::signature::{Keypair, Signer};
use solana_sdk::transaction::Transaction;

const PACKET_DATA_SIZE: usize = 1232;

fn write_transaction_len(bytes: usize) -> usize {
    let authority = Keypair::new();
    let weight = Pubkey::new_unique();
    let write = ix::write(
        &curta_program::ID,
        &weight,
        &authority.pubkey(),
        10_000_000,
        &vec![0xab; bytes],
    );
    let tx = Transaction::new_signed_with_payer(
        &[write],
        Some(&authority.pubkey()),
        &[&authority],
        Hash::new_unique(),
    );
    assert_eq!(
        tx.message.account_keys.len(),
        3,
        "authority, weight account, program"
    );
    assert_eq!(tx.signatures.len(), 1);
    bincode::serialize(&tx).unwrap().len()
}

#[test]
fn max_write_fits_one_packet() {
    // The issue asks for at least 1,016 bytes per Write.
    const { assert!(MAX_WRITE_BYTES >= 1016) };
    assert_eq!(write_transaction_len(MAX_WRITE_BYTES), PACKET_DATA_SIZE);
    assert_eq!(
        write_transaction_len(MAX_WRITE_BYTES + 1),
        PACKET_DATA_SIZE + 1
    );
}

/// The packet-sized Write, processed: a transaction whose only signer and fee payer is the
/// authority, 1,232 bytes on the wire, lands its 1,019 bytes.
#[tokio::test]
async fn single_signer_max_write_lands_in_the_bank() {
    use crate::harness::*;
    use curta_program::state::WEIGHT_HEADER_LEN;

    let mut bank = Bank::start().await;
    let p = create(&mut bank, curta_tests::tiny_sections(6_000, 23), None).await;
    init_all(&mut bank, &p).await;
    // The authority (funded with 1,000 SOL when the bank starts) pays its own fee.
    let offset = 3_000usize;
    let bytes = curta_tests::Rng::new(24).bytes(MAX_WRITE_BYTES);
    let write = ix::write(&PROGRAM, &p.weights[1], &p.authority, offset as u32, &bytes);
    let blockhash = bank.ctx.banks_client.get_latest_blockhash().await.unwrap();
    let tx =
        Transaction::new_signed_with_payer(&[write], Some(&p.authority), &[&p.signer], blockhash);
    assert_eq!(tx.signatures.len(), 1);
    assert_eq!(tx.message.header.num_required_signatures, 1);
    assert_eq!(tx.message.account_keys[0], p.authority, "the fee payer");
    assert_eq!(bincode::serialize(&tx).unwrap().len(), PACKET_DATA_SIZE);

    let before = bank.lamports(&p.authority).await;
    bank.ctx.banks_client.process_transaction(tx).await.unwrap();
    assert_eq!(
        before - bank.lamports(&p.authority).await,
        5_000,
        "one signature's fee"
    );
    let data = bank.account(&p.weights[1]).await.unwrap().data;
    let section = &data[WEIGHT_HEADER_LEN..];
    assert!(section[offset..offset + MAX_WRITE_BYTES] == bytes[..]);
    assert!(section[..offset].iter().all(|&b| b == 0));
    assert!(section[offset + MAX_WRITE_BYTES..].iter().all(|&b| b == 0));
}
