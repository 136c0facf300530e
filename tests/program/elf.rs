//! The binary the suite runs is the deployable one: an SBF ELF whose only entry is
//! `entrypoint` and whose only undefined symbols are runtime syscalls, loaded at the program id
//! the client sends its instructions to.

use object::{Object, ObjectSymbol};

/// The syscalls the program may import (agave's names). Anything else undefined would fail
/// to load on a cluster.
const SYSCALLS: [&str; 12] = [
    "sol_log_",
    "sol_log_64_",
    "sol_panic_",
    "sol_sha256",
    "sol_memcpy_",
    "sol_memmove_",
    "sol_memset_",
    "sol_memcmp_",
    "sol_invoke_signed_c",
    "sol_try_find_program_address",
    "sol_get_sysvar",
    "sol_get_rent_sysvar",
];

#[test]
fn the_binary_is_sbf_with_one_entrypoint_and_only_syscalls_undefined() {
    let so = curta_tests::program_so();
    let elf = object::File::parse(so.bytes.as_slice()).expect("the program binary is an ELF");
    assert_eq!(elf.format(), object::BinaryFormat::Elf);
    assert_eq!(
        elf.architecture(),
        object::Architecture::Bpf,
        "machine type BPF (247)"
    );
    // e_machine at byte 18 of the ELF header: EM_BPF = 247.
    assert_eq!(u16::from_le_bytes([so.bytes[18], so.bytes[19]]), 247);
    assert_eq!(elf.endianness(), object::Endianness::Little);
    assert!(elf.is_64());
    assert_eq!(elf.kind(), object::ObjectKind::Dynamic, "a shared object");

    let symbols: Vec<_> = elf.dynamic_symbols().collect();
    let defined: Vec<&str> = symbols
        .iter()
        .filter(|s| s.is_definition())
        .map(|s| s.name().unwrap())
        .collect();
    assert_eq!(defined, ["entrypoint"]);
    let entry = symbols
        .iter()
        .find(|s| s.name() == Ok("entrypoint"))
        .unwrap();
    assert_eq!(
        elf.entry(),
        entry.address(),
        "the ELF entry is the entrypoint symbol"
    );
    let undefined: Vec<&str> = symbols
        .iter()
        .filter(|s| s.is_undefined() && !s.name().unwrap().is_empty())
        .map(|s| s.name().unwrap())
        .collect();
    assert!(!undefined.is_empty());
    for name in &undefined {
        assert!(
            SYSCALLS.contains(name),
            "undefined symbol {name} is not a syscall"
        );
    }
    assert!(undefined.contains(&"sol_sha256"), "{undefined:?}");
}

#[tokio::test]
async fn the_bank_runs_the_binary_at_the_clients_program_id() {
    use curta_client::Transport;
    use solana_sdk::signature::Signer;
    // The client addresses every instruction to curta_program::id(); its in-process bank and
    // the tests' bank both hold the built ELF there.
    let client_program = curta_program::id();
    let client_bank = curta_client::BankTransport::start(&[]).await;
    let mut bank = crate::harness::Bank::start().await;
    for account in [
        client_bank
            .get_accounts(&[client_program])
            .await
            .unwrap()
            .remove(0),
        bank.account(&client_program).await,
    ] {
        let account = account.expect("an account at the program id");
        assert!(account.executable);
        assert_eq!(
            account.data,
            curta_tests::program_so().bytes,
            "the built ELF"
        );
    }
    // And it is that ELF that answers there: a Write naming no real account is refused by the
    // program's account count check, a named error only it has.
    let authority = bank.authority.insecure_clone();
    let mut write = curta_program::instruction::write(
        &client_program,
        &solana_pubkey::Pubkey::new_unique(),
        &authority.pubkey(),
        0,
        &[1],
    );
    write.accounts.pop();
    assert_eq!(
        bank.send(&[write], &[]).await,
        Err(solana_sdk::transaction::TransactionError::InstructionError(
            0,
            crate::harness::custom(curta_program::error::CurtaError::WrongAccountCount)
        ))
    );
}

#[test]
fn a_missing_binary_says_what_to_run() {
    let missing = std::path::PathBuf::from("/nonexistent/curta_program.so");
    let error = curta_client::transport::ProgramSo::find_in(std::slice::from_ref(&missing))
        .err()
        .expect("no binary there");
    assert_eq!(
        error,
        "the Curta program's SBF binary is not built: run scripts/build-sbf \
         (looked at /nonexistent/curta_program.so)"
    );
}
