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
