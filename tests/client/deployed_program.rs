//! `verify_program` on the bank: the program the bank runs (BPF loader v2: the account holds the
//! ELF), the same ELF deployed with the upgradeable loader (Program -> ProgramData, 45-byte
//! header, zero padding), a tampered deployment, and addresses that hold no program. Expected
//! hashes are computed here with sha2 over the ELF with its trailing zeros cut off.

use super::*;
use curta_client::program::{PROGRAMDATA_HEADER_LEN, UPGRADEABLE_LOADER};
use curta_client::send::transport::ProgramSo;
use curta_client::{verify_program, Error};
use sha2::{Digest, Sha256};
use solana_account::Account;

/// SHA-256 of `bytes` without its trailing zero bytes, and that length.
fn trimmed_hash(bytes: &[u8]) -> ([u8; 32], usize) {
    let mut end = bytes.len();
    while end > 0 && bytes[end - 1] == 0 {
        end -= 1;
    }
    (Sha256::digest(&bytes[..end]).into(), end)
}

fn local() -> ProgramSo {
    let so = curta_tests::program_so();
    ProgramSo {
        path: so.path.clone(),
        bytes: so.bytes.clone(),
        embedded: so.embedded,
    }
}

/// A Program account at `program` naming `programdata`, and a ProgramData account holding
/// `elf` deployed at `slot` by `authority`, followed by `padding` zero bytes.
fn deploy_upgradeable(
    bank: &BankTransport,
    program: &Pubkey,
    authority: Option<&Pubkey>,
    slot: u64,
    elf: &[u8],
    padding: usize,
) -> Pubkey {
    let programdata = Pubkey::find_program_address(&[program.as_ref()], &UPGRADEABLE_LOADER).0;
    let mut data = 2u32.to_le_bytes().to_vec();
    data.extend_from_slice(programdata.as_ref());
    bank.set_account(
        program,
        Account {
            lamports: 1_141_440,
            data,
            owner: UPGRADEABLE_LOADER,
            executable: true,
            rent_epoch: 0,
        },
    );
    let mut data = 3u32.to_le_bytes().to_vec();
    data.extend_from_slice(&slot.to_le_bytes());
    match authority {
        Some(a) => {
            data.push(1);
            data.extend_from_slice(a.as_ref());
        }
        None => data.extend_from_slice(&[0; 33]),
    }
    assert_eq!(data.len(), 45);
    data.extend_from_slice(elf);
    data.extend(std::iter::repeat_n(0u8, padding));
    bank.set_account(
        &programdata,
        Account {
            lamports: SOL,
            data,
            owner: UPGRADEABLE_LOADER,
            executable: false,
            rent_epoch: 0,
        },
    );
    programdata
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_banks_program_is_the_local_build() {
    let (bank, _) = bank(SOL).await;
    let local = local();
    let (hash, len) = trimmed_hash(&local.bytes);
    assert!(
        len < local.bytes.len(),
        "the ELF ends in zeros (section headers): trimming matters"
    );
    let v = verify_program(&bank, &curta_program::id(), &local)
        .await
        .unwrap();
    assert!(v.ok(), "{}", v.to_text());
    assert_eq!(v.loader, "BPF loader v2");
    assert_eq!(v.executable_account, curta_program::id());
    assert_eq!((v.deployed_hash, v.deployed_len), (hash, len));
    assert_eq!((v.local_hash, v.local_len), (hash, len));
    assert_eq!(v.to_json()["matches"], true);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_upgradeable_deployment_is_compared_without_header_and_padding() {
    let (bank, _) = bank(SOL).await;
    let local = local();
    let (hash, len) = trimmed_hash(&local.bytes);
    let program = Pubkey::new_unique();
    let authority = Pubkey::new_unique();
    // solana program deploy --max-len: the account is larger than the ELF, zero-filled.
    let programdata =
        deploy_upgradeable(&bank, &program, Some(&authority), 77, &local.bytes, 4_096);
    let v = verify_program(&bank, &program, &local).await.unwrap();
    assert!(v.ok(), "{}", v.to_text());
    assert_eq!(v.loader, "upgradeable loader");
    assert_eq!(v.executable_account, programdata);
    assert_eq!(v.deployed_slot, Some(77));
    assert_eq!(v.upgrade_authority, Some(authority));
    assert_eq!((v.deployed_hash, v.deployed_len), (hash, len));
    assert!(v.to_text().contains(&format!(
        "ProgramData {programdata}, deployed at slot 77, upgrade authority {authority}"
    )));

    // An immutable one (no upgrade authority), with one byte of the code changed.
    let mut tampered = local.bytes.clone();
    tampered[0x200] ^= 1;
    let (tampered_hash, _) = trimmed_hash(&tampered);
    let other = Pubkey::new_unique();
    deploy_upgradeable(&bank, &other, None, 5, &tampered, 0);
    let v = verify_program(&bank, &other, &local).await.unwrap();
    assert!(!v.ok());
    assert_eq!(v.upgrade_authority, None);
    assert_eq!(v.deployed_hash, tampered_hash);
    assert_eq!(v.local_hash, hash);
    assert_eq!(v.to_json()["matches"], false);
    assert!(v.to_text().contains("DIFFERENT"), "{}", v.to_text());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn addresses_without_a_program_are_named() {
    let (bank, authority) = bank(SOL).await;
    let local = local();
    let nothing = Pubkey::new_unique();
    let err = verify_program(&bank, &nothing, &local).await.unwrap_err();
    assert!(
        matches!(&err, Error::ProgramNotDeployed { program, found, .. } if *program == nothing && found == "no account"),
        "{err}"
    );
    // A wallet: not executable.
    let err = verify_program(&bank, &authority.pubkey(), &local)
        .await
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        format!(
            "program id {} is not a deployed program on {}: the account there is not executable \
             (owner 11111111111111111111111111111111, 0 bytes); deploy \
             target/deploy/curta_program.so there (solana program deploy) or pass the \
             --program-id it was deployed at",
            authority.pubkey(),
            bank.describe()
        )
    );
    // A Program account whose ProgramData account is gone.
    let program = Pubkey::new_unique();
    let programdata = deploy_upgradeable(&bank, &program, None, 1, &local.bytes, 0);
    bank.set_account(
        &programdata,
        Account::new(0, 0, &solana_system_interface::program::ID),
    );
    let err = verify_program(&bank, &program, &local).await.unwrap_err();
    assert_eq!(
        err.to_string(),
        format!("program account {programdata}: the ProgramData account of program {program} does not exist")
    );
    // A ProgramData account cut short inside its header.
    let program = Pubkey::new_unique();
    let programdata = deploy_upgradeable(&bank, &program, None, 1, &[], 0);
    let mut short = bank.get_accounts(&[programdata]).await.unwrap()[0]
        .clone()
        .unwrap();
    short.data.truncate(PROGRAMDATA_HEADER_LEN - 1);
    bank.set_account(&programdata, short);
    let err = verify_program(&bank, &program, &local).await.unwrap_err();
    assert_eq!(
        err.to_string(),
        format!(
            "program account {programdata}: not a ProgramData account (44 bytes, state tag 3; \
             expected at least 45 bytes, state tag 3)"
        )
    );
}
