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
    // e_flags: 0 for SBPF v0 (dynamic symbols and relocations), 3 for SBPF v3 (static
    // syscalls, no dynamic section: checked by the_v3_binary_calls_only_syscalls).
    if u32::from_le_bytes(so.bytes[48..52].try_into().unwrap()) == 3 {
        return;
    }
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

/// SBPF v3 (SIMD-0178, SIMD-0189): two program headers, read-only data at 0 and bytecode at
/// 1 << 32, the entry inside the bytecode, no dynamic section; a syscall is `call` with
/// source register 0 and the murmur3 hash of its name (`call` with source 1 is a relative call
/// inside the program). Every hashed call names one of the syscalls the v0 binary imports.
#[test]
fn the_v3_binary_calls_only_syscalls() {
    let so = curta_tests::program_so();
    let elf = &so.bytes;
    let u16_at = |o: usize| u16::from_le_bytes(elf[o..o + 2].try_into().unwrap());
    let u32_at = |o: usize| u32::from_le_bytes(elf[o..o + 4].try_into().unwrap());
    let u64_at = |o: usize| u64::from_le_bytes(elf[o..o + 8].try_into().unwrap());
    if u32_at(48) != 3 {
        return; // v0: the test above
    }
    assert_eq!(u16_at(18), 247, "EM_BPF");
    assert_eq!(u16_at(56), 2, "two program headers: rodata, bytecode");
    let header = |i: usize| {
        let o = 64 + 56 * i;
        // p_flags, p_offset, p_vaddr, p_filesz
        (u32_at(o + 4), u64_at(o + 8), u64_at(o + 16), u64_at(o + 32))
    };
    let (rodata_flags, _, rodata_vaddr, _) = header(0);
    let (text_flags, text_offset, text_vaddr, text_size) = header(1);
    assert_eq!((rodata_flags, rodata_vaddr), (4, 0), "PF_R at 0");
    assert_eq!((text_flags, text_vaddr), (1, 1 << 32), "PF_X at 1 << 32");
    let entry = u64_at(24);
    assert!(entry >= text_vaddr && entry < text_vaddr + text_size && entry % 8 == 0);
    let hashes: Vec<(u32, &str)> = SYSCALLS
        .iter()
        .map(|name| (solana_sbpf::ebpf::hash_symbol_name(name.as_bytes()), *name))
        .collect();
    let text = &elf[text_offset as usize..(text_offset + text_size) as usize];
    let mut called = std::collections::BTreeSet::new();
    let mut pc = 0;
    while pc < text.len() {
        let (opcode, src) = (text[pc], text[pc + 1] >> 4);
        if opcode == 0x85 && src == 0 {
            let imm = u32::from_le_bytes(text[pc + 4..pc + 8].try_into().unwrap());
            let name = hashes
                .iter()
                .find(|(hash, _)| *hash == imm)
                .unwrap_or_else(|| panic!("call of hash {imm:#x} at pc {} is no syscall", pc / 8))
                .1;
            called.insert(name);
        }
        pc += if opcode == 0x18 { 16 } else { 8 };
    }
    assert!(called.contains("sol_sha256"), "{called:?}");
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
    let error = curta_client::send::transport::ProgramSo::find_in(std::slice::from_ref(&missing))
        .err()
        .expect("no binary there");
    assert_eq!(
        error,
        "the Curta program's SBF binary is not built: run scripts/build-sbf \
         (looked at /nonexistent/curta_program.so)"
    );
}
