//! Instruction processing: one function per instruction. Every account's owner, signer,
//! writability, size and address is checked before anything is written, and every check comes
//! before the first write, so a failed instruction changes nothing (the runtime also rolls back).
//! Nothing is allocated: accounts and instruction data are read and written in place.
//!
//! The functions returning `ProgramResult` are `#[inline(always)]`: the SBF route's LLVM 19
//! BPF backend cannot return a two-register value (scripts/build-sbf), and the entrypoint is
//! one function either way.
//!
//! Off chain this module compiles (type checks, clippy) but is not run: pinocchio's CPI and
//! syscalls do nothing there. Every test runs the SBF binary in the VM.

use pinocchio::account_info::AccountInfo;
use pinocchio::instruction::{AccountMeta, Instruction, Seed, Signer};
use pinocchio::program_error::ProgramError;
use pinocchio::pubkey::{self, Pubkey};
use pinocchio::ProgramResult;

use crate::error::CurtaError;
use crate::instruction::InstructionData;
use crate::state::{
    all_zero, header_is_zero, same_address, set_frozen, weight_seed_bytes, write_weight_header,
    ModelAccount, ModelState, WeightFields, MAX_SECTIONS, MIN_SECTIONS, MODEL_LEN, MODEL_SEED,
    WEIGHT_HEADER_LEN,
};

/// An address at an 8-byte aligned place.
#[repr(C, align(8))]
struct Aligned(Pubkey);

/// The system program's id (all zeros: `all_zero` compares an owner with it).
const SYSTEM_PROGRAM: Pubkey = [0; 32];

#[inline(always)]
pub fn process_instruction(
    program_id: &Pubkey,
    accounts: &[AccountInfo],
    data: &[u8],
) -> ProgramResult {
    // The runtime places the program id after the instruction data, at any alignment: an
    // aligned copy makes every owner check a word-wise `same_address`.
    let program_id = &Aligned(*program_id).0;
    match InstructionData::parse(data).ok_or(ProgramError::InvalidInstructionData)? {
        InstructionData::CreateModel {
            weights_hash,
            section_lengths,
        } => process_create_model(program_id, accounts, weights_hash, section_lengths),
        InstructionData::InitWeightAccount { section } => {
            process_init_weight_account(program_id, accounts, section)
        }
        InstructionData::Write { offset, bytes } => {
            process_write(program_id, accounts, offset, bytes)
        }
        InstructionData::Seal {
            pass,
            chunk,
            creation,
        } => process_seal(program_id, accounts, creation, pass, chunk),
        InstructionData::Reopen => process_reopen(program_id, accounts),
        InstructionData::Close => process_close(program_id, accounts),
    }
}

#[inline(always)]
fn process_create_model(
    program_id: &Pubkey,
    accounts: &[AccountInfo],
    weights_hash: &[u8; 32],
    section_lengths: &[u8],
) -> ProgramResult {
    let [authority, model_info, system] = accounts else {
        return Err(CurtaError::WrongAccountCount.into());
    };
    signer(authority)?;
    writable(authority)?;
    writable(model_info)?;
    if !all_zero(system.key()) {
        return Err(ProgramError::IncorrectProgramId);
    }
    let count = section_lengths.len() / 4;
    if !(MIN_SECTIONS..=MAX_SECTIONS).contains(&count) {
        return Err(CurtaError::InvalidSectionCount.into());
    }
    let mut declared = [0u32; MAX_SECTIONS];
    for (length, word) in declared.iter_mut().zip(section_lengths.chunks_exact(4)) {
        *length = curta_core::le::u32_at(word, 0);
    }
    let lengths = &declared[..count];
    if lengths
        .iter()
        .any(|&length| length == 0 || length as usize > curta_core::MAX_SECTION_LEN)
    {
        return Err(CurtaError::InvalidSectionLength.into());
    }
    // Section zero holds the header the seal of chunk 0 checks: shorter, it could never seal.
    if (lengths[0] as usize) < curta_core::HEADER_LEN {
        return Err(CurtaError::SectionZeroTooShort.into());
    }
    // Reopen and Close load every account of the model in one transaction: a model whose
    // accounts exceed what a transaction may load could be uploaded but never recovered.
    if crate::state::model_bytes(lengths.iter().copied()) > crate::state::MAX_MODEL_BYTES {
        return Err(CurtaError::ModelTooLarge.into());
    }
    let total_chunks = curta_core::total_chunks(lengths);
    let (address, bump) =
        pubkey::try_find_program_address(&[MODEL_SEED, authority.key(), weights_hash], program_id)
            .ok_or(CurtaError::ModelAddressMismatch)?;
    if !same_address(model_info.key(), &address) {
        return Err(CurtaError::ModelAddressMismatch.into());
    }
    if same_address(model_info.owner(), program_id) {
        return Err(CurtaError::AlreadyInitialized.into());
    }
    if !all_zero(model_info.owner()) || !model_info.data_is_empty() {
        return Err(CurtaError::WrongOwner.into());
    }

    let lamports = minimum_balance(MODEL_LEN)?;
    let bump_seed = [bump];
    let seeds = [
        Seed::from(MODEL_SEED),
        Seed::from(authority.key()),
        Seed::from(weights_hash),
        Seed::from(&bump_seed),
    ];
    let model_signer = [Signer::from(&seeds)];
    // Transfer the rent (or its shortfall, if someone sent lamports to the address first),
    // then allocate and assign: one path whether the address was funded or not.
    let shortfall = lamports.saturating_sub(model_info.lamports());
    let calls = [
        system::transfer(authority, model_info, shortfall),
        system::allocate(model_info, authority, MODEL_LEN),
        system::assign(model_info, authority, program_id),
    ];
    // One CPI site for the three (the model's signature is harmless to the transfer).
    for call in &calls[if shortfall > 0 { 0 } else { 1 }..] {
        call.invoke(&model_signer)?;
    }
    ModelAccount::create(
        &mut model_info.try_borrow_mut_data()?,
        creation_slot()?,
        bump,
        authority.key(),
        weights_hash,
        section_lengths,
        total_chunks,
    )?;
    Ok(())
}

#[inline(always)]
fn process_init_weight_account(
    program_id: &Pubkey,
    accounts: &[AccountInfo],
    section: u8,
) -> ProgramResult {
    let [model_info, weight_info, authority] = accounts else {
        return Err(CurtaError::WrongAccountCount.into());
    };
    writable(model_info)?;
    writable(weight_info)?;
    let mut model_data = owned_data(model_info, program_id)?;
    let mut model = ModelAccount::new(&mut model_data)?;
    authority_signs(model.authority(), authority)?;
    model.state().require(&[ModelState::Open])?;
    let index = section as usize;
    if index >= model.section_count() {
        return Err(CurtaError::SectionOutOfRange.into());
    }
    if !all_zero(model.weight_account(index)) {
        return Err(CurtaError::AlreadyInitialized.into());
    }
    owned(weight_info, program_id)?;
    let expected = weight_address(program_id, authority.key(), model_info.key(), section)?;
    if !same_address(weight_info.key(), &expected) {
        return Err(CurtaError::WeightAddressMismatch.into());
    }
    let length = model.section_length(index);
    if weight_info.data_len() != WEIGHT_HEADER_LEN + length as usize {
        return Err(CurtaError::WeightSizeMismatch.into());
    }
    if weight_info.lamports() < minimum_balance(weight_info.data_len())? {
        return Err(CurtaError::NotRentExempt.into());
    }
    let mut data = weight_info.try_borrow_mut_data()?;
    if !header_is_zero(&data) {
        return Err(CurtaError::AlreadyInitialized.into());
    }
    write_weight_header(
        &mut data,
        section as u16,
        length,
        model_info.key(),
        authority.key(),
    );
    model.set_weight_account(index, weight_info.key());
    Ok(())
}

#[inline(always)]
fn process_write(
    program_id: &Pubkey,
    accounts: &[AccountInfo],
    offset: u32,
    bytes: &[u8],
) -> ProgramResult {
    let [weight_info, authority] = accounts else {
        return Err(CurtaError::WrongAccountCount.into());
    };
    writable(weight_info)?;
    let mut data = owned_data(weight_info, program_id)?;
    let header = WeightFields::parse(&data)?;
    authority_signs(header.authority, authority)?;
    if header.frozen {
        return Err(CurtaError::SectionFrozen.into());
    }
    if bytes.is_empty() {
        return Err(CurtaError::EmptyWrite.into());
    }
    let end = (offset as usize)
        .checked_add(bytes.len())
        .filter(|&end| end <= header.length as usize)
        .ok_or(CurtaError::WriteOutOfBounds)?;
    data[WEIGHT_HEADER_LEN + offset as usize..WEIGHT_HEADER_LEN + end].copy_from_slice(bytes);
    Ok(())
}

/// Seal: check the chunk against the model's pass and cursor, begin the pass at chunk 0 (the
/// header check), then hash the chunk.
#[inline(always)]
fn process_seal(
    program_id: &Pubkey,
    accounts: &[AccountInfo],
    creation: u64,
    pass: u32,
    chunk: u32,
) -> ProgramResult {
    // Chunk 0 starts a pass and freezes section zero: the authority must sign it. Every later
    // chunk takes exactly the model and the weight account, and anyone may send it.
    let (model_info, weight_info, authority) = match (accounts, chunk) {
        ([_, _], 0) => return Err(CurtaError::SealStartNeedsAuthority.into()),
        ([model_info, weight_info], _) => (model_info, weight_info, None),
        ([model_info, weight_info, authority], 0) => (model_info, weight_info, Some(authority)),
        _ => return Err(CurtaError::WrongAccountCount.into()),
    };
    writable(model_info)?;
    writable(weight_info)?;
    let mut model_data = owned_data(model_info, program_id)?;
    let mut model = ModelAccount::new(&mut model_data)?;
    if let Some(authority) = authority {
        authority_signs(model.authority(), authority)?;
    }
    model
        .state()
        .require(&[ModelState::Open, ModelState::Sealing])?;
    // Sealing is reached only by a chunk 0 that found every account bound, and no account is
    // bound outside Open: only an Open model can lack one.
    if model.state() == ModelState::Open && !model.all_weights_bound() {
        return Err(CurtaError::WeightAccountsMissing.into());
    }
    // A Seal signed for an earlier model at this address (closed, then created again) names
    // that model's creation: it is refused before it can start or move a pass of this one.
    if creation != model.creation() {
        return Err(CurtaError::StaleCreation.into());
    }
    if pass != model.seal_pass() {
        return Err(CurtaError::StalePass.into());
    }
    if chunk != model.seal_cursor() {
        return Err(CurtaError::UnexpectedChunk.into());
    }
    let (section, chunk_in_section) =
        crate::state::locate_chunk(model.sections(), chunk).ok_or(CurtaError::UnexpectedChunk)?;
    if same_address(weight_info.key(), model_info.key()) {
        // The model's own data (borrowed above) holds no weight header.
        return Err(CurtaError::NotInitialized.into());
    }
    let mut data = owned_data(weight_info, program_id)?;
    let header = WeightFields::parse(&data)?;
    header.belongs_to(
        model_info.key(),
        section,
        model.section_length(section),
        model.weight_account(section),
        weight_info.key(),
    )?;
    let length = header.length as usize;

    if chunk_in_section == 0 {
        if section == 0 {
            begin_pass(&mut model, &data[WEIGHT_HEADER_LEN..])?;
        }
        // Frozen before its first chunk is hashed: no hashed byte can change afterwards.
        set_frozen(&mut data, true);
    }
    let start = chunk_in_section as usize * curta_core::CHUNK_LEN;
    let end = (start + curta_core::CHUNK_LEN).min(length);
    hash_chunk(
        &mut model,
        &data[WEIGHT_HEADER_LEN + start..WEIGHT_HEADER_LEN + end],
    );
    Ok(())
}

/// Chunk 0: section zero's header must be valid and its section table the declared lengths
/// (`section_zero::check`, the reason logged); its config is stored and the model is Sealing.
#[inline(always)]
fn begin_pass(model: &mut ModelAccount, section_zero: &[u8]) -> ProgramResult {
    let mut declared = [0u32; MAX_SECTIONS];
    let count = model.section_count();
    for (slot, length) in declared.iter_mut().zip(model.sections()) {
        *slot = length;
    }
    let config =
        crate::section_zero::check(section_zero, &declared[..count]).map_err(|refusal| {
            pinocchio::log::sol_log(refusal.reason);
            let [a, b, c, d] = refusal.values;
            pinocchio::log::sol_log_64(a, b, c, d, 0);
            refusal.error
        })?;
    model.set_config(&config);
    model.set_state(ModelState::Sealing);
    Ok(())
}

/// running = SHA-256(running || chunk), the cursor advances; after the last chunk the model is
/// Sealed (running = declared) or Mismatch.
#[inline(always)]
fn hash_chunk(model: &mut ModelAccount, chunk: &[u8]) {
    chain_in_place(model.running_hash_mut(), chunk);
    let cursor = model.seal_cursor() + 1;
    model.set_seal_cursor(cursor);
    if cursor == model.total_chunks() {
        if same_address(model.running_hash(), model.weights_hash()) {
            model.set_state(ModelState::Sealed);
            log_hashes(b"sealed: weights hash ", model.running_hash(), None);
        } else {
            model.set_state(ModelState::Mismatch);
            log_hashes(
                b"mismatch: declared weights hash ",
                model.weights_hash(),
                Some((b", computed ", model.running_hash())),
            );
        }
    }
}

#[inline(always)]
fn process_reopen(program_id: &Pubkey, accounts: &[AccountInfo]) -> ProgramResult {
    let [model_info, authority, weights @ ..] = accounts else {
        return Err(CurtaError::WrongAccountCount.into());
    };
    writable(model_info)?;
    let mut model_data = owned_data(model_info, program_id)?;
    let mut model = ModelAccount::new(&mut model_data)?;
    authority_signs(model.authority(), authority)?;
    model
        .state()
        .require(&[ModelState::Sealing, ModelState::Mismatch])?;
    if weights.len() != model.section_count() {
        return Err(CurtaError::WrongAccountCount.into());
    }
    // Sealing started, so every section's weight account is bound.
    for (section, weight_info) in weights.iter().enumerate() {
        if !same_address(weight_info.key(), model.weight_account(section)) {
            return Err(CurtaError::WeightAddressMismatch.into());
        }
        writable(weight_info)?;
        let data = owned_data(weight_info, program_id)?;
        WeightFields::parse(&data)?.belongs_to(
            model_info.key(),
            section,
            model.section_length(section),
            model.weight_account(section),
            weight_info.key(),
        )?;
    }
    for weight_info in weights {
        set_frozen(&mut weight_info.try_borrow_mut_data()?, false);
    }
    model.start_over()?;
    Ok(())
}

#[inline(always)]
fn process_close(program_id: &Pubkey, accounts: &[AccountInfo]) -> ProgramResult {
    let [model_info, authority, destination, weights @ ..] = accounts else {
        return Err(CurtaError::WrongAccountCount.into());
    };
    writable(model_info)?;
    writable(destination)?;
    {
        let mut model_data = owned_data(model_info, program_id)?;
        let model = ModelAccount::new(&mut model_data)?;
        authority_signs(model.authority(), authority)?;
        model
            .state()
            .require(&[ModelState::Open, ModelState::Sealing, ModelState::Mismatch])?;
        if weights.len() != model.section_count() {
            return Err(CurtaError::WrongAccountCount.into());
        }
        if same_address(destination.key(), model_info.key())
            || weights
                .iter()
                .any(|w| same_address(w.key(), destination.key()))
        {
            return Err(CurtaError::InvalidDestination.into());
        }
        for (section, weight_info) in weights.iter().enumerate() {
            let expected =
                weight_address(program_id, authority.key(), model_info.key(), section as u8)?;
            if !same_address(weight_info.key(), &expected) {
                return Err(CurtaError::WeightAddressMismatch.into());
            }
            writable(weight_info)?;
            // A seed address with this program as owner can only be owned by the system
            // program (not created, or created elsewise) or by this program.
            if same_address(weight_info.owner(), program_id) {
                closable_weight(&model, model_info.key(), section, weight_info)?;
            } else if !all_zero(weight_info.owner()) {
                return Err(CurtaError::WrongOwner.into());
            }
        }
    }
    for weight_info in weights {
        if same_address(weight_info.owner(), program_id) {
            drain(weight_info, destination)?;
        }
    }
    drain(model_info, destination)
}

/// Checks that the program-owned account at section `section`'s seed address belongs to the
/// model being closed. The seed holds only 10 bytes of the model address, so two models of one
/// authority can share weight addresses: the address alone does not prove it. A header of
/// zeros (created, never initialized) is closable; anything else must be a valid weight header
/// that belongs to the model at this section.
#[inline(always)]
fn closable_weight(
    model: &ModelAccount,
    model_key: &Pubkey,
    section: usize,
    weight_info: &AccountInfo,
) -> ProgramResult {
    let data = weight_info.try_borrow_data()?;
    if header_is_zero(&data) {
        return Ok(());
    }
    let header = WeightFields::parse(&data).map_err(|_| CurtaError::UnrecognizedWeightAccount)?;
    header.belongs_to(
        model_key,
        section,
        header.length,
        model.weight_account(section),
        weight_info.key(),
    )?;
    Ok(())
}

/// Moves every lamport of `account` to `destination`, shrinks its data to nothing (no byte of
/// it survives, and shrinking costs nothing per byte, unlike zeroing 10 MiB on chain) and gives
/// it to the system program, so it can never be read as initialized again.
#[inline(always)]
fn drain(account: &AccountInfo, destination: &AccountInfo) -> ProgramResult {
    let lamports = account.lamports();
    let total = destination
        .lamports()
        .checked_add(lamports)
        .ok_or(CurtaError::Overflow)?;
    *destination.try_borrow_mut_lamports()? = total;
    *account.try_borrow_mut_lamports()? = 0;
    account.resize(0)?;
    // SAFETY: no reference to the account's owner is alive.
    unsafe { account.assign(&SYSTEM_PROGRAM) };
    Ok(())
}

/// The one authority rule: `account` is the expected authority (`Unauthorized`) and signs
/// (`MissingRequiredSignature`).
#[inline(always)]
fn authority_signs(expected: &Pubkey, account: &AccountInfo) -> ProgramResult {
    if !same_address(account.key(), expected) {
        return Err(CurtaError::Unauthorized.into());
    }
    signer(account)
}

#[inline(always)]
fn signer(account: &AccountInfo) -> ProgramResult {
    if account.is_signer() {
        Ok(())
    } else {
        Err(ProgramError::MissingRequiredSignature)
    }
}

#[inline(always)]
fn writable(account: &AccountInfo) -> ProgramResult {
    if account.is_writable() {
        Ok(())
    } else {
        Err(CurtaError::NotWritable.into())
    }
}

#[inline(always)]
fn owned(account: &AccountInfo, program_id: &Pubkey) -> ProgramResult {
    if same_address(account.owner(), program_id) {
        Ok(())
    } else {
        Err(CurtaError::WrongOwner.into())
    }
}

/// The data of an account the program must own (`WrongOwner`), borrowed for writing.
fn owned_data<'a>(
    account: &'a AccountInfo,
    program_id: &Pubkey,
) -> Result<pinocchio::account_info::RefMut<'a, [u8]>, ProgramError> {
    owned(account, program_id)?;
    account.try_borrow_mut_data()
}

/// The address of section `section`'s weight account: create_with_seed(authority,
/// weight_seed, program id).
#[inline(always)]
fn weight_address(
    program_id: &Pubkey,
    authority: &Pubkey,
    model: &Pubkey,
    section: u8,
) -> Result<Pubkey, ProgramError> {
    pubkey::create_with_seed(authority, &weight_seed_bytes(model, section), program_id)
}

/// The creation id of a model created now: the current slot (Clock sysvar). A model closed
/// and created again at its address in a later slot gets another id.
#[inline(always)]
fn creation_slot() -> Result<u64, ProgramError> {
    use pinocchio::sysvars::{clock::Clock, Sysvar};
    Ok(Clock::get()?.slot)
}

/// The rent-exempt minimum for `len` bytes, from the rent sysvar, in integers: the exemption
/// threshold is 2 years (or 1 under SIMD-0194); any other value is refused rather than computed
/// with floating point, which SBF lacks.
#[allow(deprecated)]
#[inline(always)]
fn minimum_balance(len: usize) -> Result<u64, ProgramError> {
    use pinocchio::sysvars::{rent::Rent, Sysvar};
    let rent = Rent::get()?;
    let years = match rent.exemption_threshold.to_bits() {
        bits if bits == 2.0f64.to_bits() => 2,
        bits if bits == 1.0f64.to_bits() => 1,
        _ => return Err(ProgramError::UnsupportedSysvar),
    };
    Ok((128 + len as u64) * rent.lamports_per_byte_year * years)
}

/// running = SHA-256(running || chunk), written over `running`: the `sol_sha256` syscall on
/// chain (it reads every slice before it writes the result, so no copy is needed).
#[inline(always)]
fn chain_in_place(running: &mut [u8; 32], chunk: &[u8]) {
    #[cfg(target_os = "solana")]
    {
        let out = running.as_mut_ptr();
        // SAFETY: the syscall reads the (pointer, length) pairs and their bytes, then writes
        // 32 bytes at `out`.
        unsafe {
            let slices: [&[u8]; 2] = [core::slice::from_raw_parts(out, 32), chunk];
            pinocchio::syscalls::sol_sha256(slices.as_ptr() as *const u8, 2, out);
        }
    }
    #[cfg(not(target_os = "solana"))]
    {
        *running = curta_core::chain_chunk(running, chunk);
    }
}

/// Logs `first` and the lower-case hex of `hash`, then optionally a second label and hash, as
/// one line: no formatting machinery (core::fmt) in the binary.
#[inline(always)]
fn log_hashes(first: &[u8], hash: &[u8; 32], second: Option<(&[u8], &[u8; 32])>) {
    let mut line = [0u8; 192];
    let mut len = append(&mut line, 0, first);
    len = append_hex(&mut line, len, hash);
    if let Some((label, hash)) = second {
        len = append(&mut line, len, label);
        len = append_hex(&mut line, len, hash);
    }
    // SAFETY: the labels are ASCII and so are the digits.
    pinocchio::log::sol_log(unsafe { core::str::from_utf8_unchecked(&line[..len]) });
}

#[inline(always)]
fn append(line: &mut [u8; 192], at: usize, bytes: &[u8]) -> usize {
    line[at..at + bytes.len()].copy_from_slice(bytes);
    at + bytes.len()
}

#[inline(always)]
fn append_hex(line: &mut [u8; 192], at: usize, hash: &[u8; 32]) -> usize {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    for (i, byte) in hash.iter().enumerate() {
        line[at + 2 * i] = DIGITS[(byte >> 4) as usize];
        line[at + 2 * i + 1] = DIGITS[(byte & 15) as usize];
    }
    at + 64
}

/// The system program instructions the program invokes (the system program's bincode layout:
/// a u32 tag, then the fields little-endian).
mod system {
    use super::*;

    /// One system program instruction: its accounts (the first `metas` of them are the
    /// instruction's; a second account info may ride along unused) and its data. One type for
    /// every call, so the program has one copy of the CPI.
    pub struct Call<'a> {
        accounts: [&'a AccountInfo; 2],
        metas: [AccountMeta<'a>; 2],
        count: usize,
        data: [u8; 52],
        len: usize,
    }

    impl Call<'_> {
        #[inline(always)]
        pub fn invoke(&self, signers: &[Signer]) -> ProgramResult {
            let instruction = Instruction {
                program_id: &SYSTEM_PROGRAM,
                accounts: &self.metas[..self.count],
                data: &self.data[..self.len],
            };
            pinocchio::cpi::invoke_signed(&instruction, &self.accounts, signers)
        }
    }

    fn encode(tag: u32, field: &[u8]) -> ([u8; 52], usize) {
        let mut data = [0u8; 52];
        data[..4].copy_from_slice(&tag.to_le_bytes());
        data[4..4 + field.len()].copy_from_slice(field);
        (data, 4 + field.len())
    }

    pub fn transfer<'a>(from: &'a AccountInfo, to: &'a AccountInfo, lamports: u64) -> Call<'a> {
        let (data, len) = encode(2, &lamports.to_le_bytes());
        Call {
            accounts: [from, to],
            metas: [
                AccountMeta::writable_signer(from.key()),
                AccountMeta::writable(to.key()),
            ],
            count: 2,
            data,
            len,
        }
    }

    /// `allocate(account, space)`; `payer` rides along.
    pub fn allocate<'a>(
        account: &'a AccountInfo,
        payer: &'a AccountInfo,
        space: usize,
    ) -> Call<'a> {
        let (data, len) = encode(8, &(space as u64).to_le_bytes());
        Call {
            accounts: [account, payer],
            metas: [
                AccountMeta::writable_signer(account.key()),
                AccountMeta::readonly(payer.key()),
            ],
            count: 1,
            data,
            len,
        }
    }

    /// `assign(account, owner)`; `payer` rides along.
    pub fn assign<'a>(
        account: &'a AccountInfo,
        payer: &'a AccountInfo,
        owner: &Pubkey,
    ) -> Call<'a> {
        let (data, len) = encode(1, owner);
        Call {
            accounts: [account, payer],
            metas: [
                AccountMeta::writable_signer(account.key()),
                AccountMeta::readonly(payer.key()),
            ],
            count: 1,
            data,
            len,
        }
    }
}
