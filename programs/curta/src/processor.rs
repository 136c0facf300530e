//! Instruction processing: one function per instruction. Every account's owner, signer,
//! writability, size and address is checked before anything is written, and every check comes
//! before the first write, so a failed instruction changes nothing (the runtime also rolls back).

use solana_account_info::AccountInfo;
use solana_instruction::Instruction;
use solana_program_error::{ProgramError, ProgramResult};
use solana_pubkey::Pubkey;
use solana_rent::Rent;
use solana_sha256_hasher::hashv;
use solana_system_interface::{instruction as system_instruction, program as system_program};

use crate::error::CurtaError;
use crate::instruction::CurtaInstruction;
use crate::state::{
    weight_address, Model, ModelState, WeightHeader, MAX_SECTIONS, MIN_SECTIONS, MODEL_LEN,
    MODEL_SEED, WEIGHT_HEADER_LEN,
};

/// `msg!` on SBF. On the host, solana-msg prints to stdout, so the log goes to the syscall
/// stubs instead, where solana-program-test's bank records it with the transaction.
macro_rules! log {
    ($($arg:tt)*) => {{
        #[cfg(target_os = "solana")]
        solana_msg::msg!($($arg)*);
        #[cfg(not(target_os = "solana"))]
        solana_sysvar::program_stubs::sol_log(&alloc::format!($($arg)*));
    }};
}

pub fn process_instruction(
    program_id: &Pubkey,
    accounts: &[AccountInfo],
    data: &[u8],
) -> ProgramResult {
    match CurtaInstruction::unpack(data)? {
        CurtaInstruction::CreateModel {
            weights_hash,
            section_lengths,
        } => process_create_model(program_id, accounts, &weights_hash, &section_lengths),
        CurtaInstruction::InitWeightAccount { section } => {
            process_init_weight_account(program_id, accounts, section)
        }
        CurtaInstruction::Write { offset, bytes } => {
            process_write(program_id, accounts, offset, &bytes)
        }
        CurtaInstruction::Seal { pass, chunk } => process_seal(program_id, accounts, pass, chunk),
        CurtaInstruction::Reopen => process_reopen(program_id, accounts),
        CurtaInstruction::Close => process_close(program_id, accounts),
    }
}

fn process_create_model(
    program_id: &Pubkey,
    accounts: &[AccountInfo],
    weights_hash: &[u8; 32],
    section_lengths: &[u32],
) -> ProgramResult {
    let [authority, model_info, system] = accounts else {
        return Err(CurtaError::WrongAccountCount.into());
    };
    signer(authority)?;
    writable(authority)?;
    writable(model_info)?;
    if system.key != &system_program::ID {
        return Err(ProgramError::IncorrectProgramId);
    }
    if !(MIN_SECTIONS..=MAX_SECTIONS).contains(&section_lengths.len()) {
        return Err(CurtaError::InvalidSectionCount.into());
    }
    let mut total_chunks = 0u32;
    for &length in section_lengths {
        if length == 0 || length as usize > curta_core::MAX_SECTION_LEN {
            return Err(CurtaError::InvalidSectionLength.into());
        }
        // At most 18 x 160 chunks: no overflow.
        total_chunks += curta_core::chunk_count(length as u64) as u32;
    }
    let seeds: &[&[u8]] = &[MODEL_SEED, authority.key.as_ref(), weights_hash];
    let (address, bump) = Pubkey::try_find_program_address(seeds, program_id)
        .ok_or(CurtaError::ModelAddressMismatch)?;
    if model_info.key != &address {
        return Err(CurtaError::ModelAddressMismatch.into());
    }
    if model_info.owner == program_id {
        return Err(CurtaError::AlreadyInitialized.into());
    }
    if model_info.owner != &system_program::ID || !model_info.data_is_empty() {
        return Err(CurtaError::WrongOwner.into());
    }

    let lamports = rent()?.minimum_balance(MODEL_LEN);
    let bump_seed = [bump];
    let signer_seeds: &[&[u8]] = &[MODEL_SEED, authority.key.as_ref(), weights_hash, &bump_seed];
    let infos = [authority.clone(), model_info.clone(), system.clone()];
    if model_info.lamports() == 0 {
        let create = system_instruction::create_account(
            authority.key,
            model_info.key,
            lamports,
            MODEL_LEN as u64,
            program_id,
        );
        invoke_signed(&create, &infos, &[signer_seeds])?;
    } else {
        // Someone sent lamports to the address first: top it up, then allocate and assign.
        let shortfall = lamports.saturating_sub(model_info.lamports());
        if shortfall > 0 {
            invoke_signed(
                &system_instruction::transfer(authority.key, model_info.key, shortfall),
                &infos,
                &[],
            )?;
        }
        invoke_signed(
            &system_instruction::allocate(model_info.key, MODEL_LEN as u64),
            &infos,
            &[signer_seeds],
        )?;
        invoke_signed(
            &system_instruction::assign(model_info.key, program_id),
            &infos,
            &[signer_seeds],
        )?;
    }

    let mut section_table = [0u32; MAX_SECTIONS];
    section_table[..section_lengths.len()].copy_from_slice(section_lengths);
    let model = Model {
        state: ModelState::Open,
        bump,
        section_count: section_lengths.len() as u8,
        seal_pass: 0,
        authority: *authority.key,
        weights_hash: *weights_hash,
        running_hash: [0; 32],
        seal_cursor: 0,
        total_chunks,
        config: curta_core::Config::default(),
        section_lengths: section_table,
        weight_accounts: [Pubkey::default(); MAX_SECTIONS],
    };
    store_model(model_info, &model)
}

fn process_init_weight_account(
    program_id: &Pubkey,
    accounts: &[AccountInfo],
    section: u8,
) -> ProgramResult {
    let [model_info, weight_info, authority] = accounts else {
        return Err(CurtaError::WrongAccountCount.into());
    };
    signer(authority)?;
    writable(model_info)?;
    writable(weight_info)?;
    let mut model = load_model(program_id, model_info)?;
    if model.authority != *authority.key {
        return Err(CurtaError::Unauthorized.into());
    }
    open(&model)?;
    if section >= model.section_count {
        return Err(CurtaError::SectionOutOfRange.into());
    }
    let index = section as usize;
    if model.weight_accounts[index] != Pubkey::default() {
        return Err(CurtaError::AlreadyInitialized.into());
    }
    owned(weight_info, program_id)?;
    if *weight_info.key != weight_address(program_id, authority.key, model_info.key, section) {
        return Err(CurtaError::WeightAddressMismatch.into());
    }
    let length = model.section_lengths[index];
    if weight_info.data_len() != WEIGHT_HEADER_LEN + length as usize {
        return Err(CurtaError::WeightSizeMismatch.into());
    }
    if weight_info.lamports() < rent()?.minimum_balance(weight_info.data_len()) {
        return Err(CurtaError::NotRentExempt.into());
    }
    {
        let mut data = weight_info.try_borrow_mut_data()?;
        if data[..WEIGHT_HEADER_LEN].iter().any(|&b| b != 0) {
            return Err(CurtaError::AlreadyInitialized.into());
        }
        let header = WeightHeader {
            frozen: false,
            section: section as u16,
            length,
            model: *model_info.key,
            authority: *authority.key,
        };
        header.pack(&mut data);
    }
    model.weight_accounts[index] = *weight_info.key;
    store_model(model_info, &model)
}

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
    owned(weight_info, program_id)?;
    let mut data = weight_info.try_borrow_mut_data()?;
    let header = WeightHeader::unpack(&data)?;
    if header.authority != *authority.key {
        return Err(CurtaError::Unauthorized.into());
    }
    signer(authority)?;
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

fn process_seal(
    program_id: &Pubkey,
    accounts: &[AccountInfo],
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
    let mut model = load_model(program_id, model_info)?;
    if let Some(authority) = authority {
        if model.authority != *authority.key {
            return Err(CurtaError::Unauthorized.into());
        }
        signer(authority)?;
    }
    match model.state {
        ModelState::Open | ModelState::Sealing => {}
        ModelState::Sealed => return Err(CurtaError::ModelSealed.into()),
        ModelState::Mismatch => return Err(CurtaError::WrongState.into()),
    }
    if model.weights().contains(&Pubkey::default()) {
        return Err(CurtaError::WeightAccountsMissing.into());
    }
    if pass != model.seal_pass {
        return Err(CurtaError::StalePass.into());
    }
    if chunk != model.seal_cursor {
        return Err(CurtaError::UnexpectedChunk.into());
    }
    let (section, chunk_in_section) = model
        .locate_chunk(chunk)
        .ok_or(CurtaError::UnexpectedChunk)?;
    owned(weight_info, program_id)?;
    let mut data = weight_info.try_borrow_mut_data()?;
    let header = WeightHeader::unpack(&data)?;
    if header.model != *model_info.key {
        return Err(CurtaError::WrongModel.into());
    }
    if header.section as usize != section {
        return Err(CurtaError::WrongSection.into());
    }
    if *weight_info.key != model.weight_accounts[section]
        || header.length != model.section_lengths[section]
    {
        return Err(CurtaError::WeightAddressMismatch.into());
    }

    if chunk_in_section == 0 {
        if section == 0 {
            let metadata =
                curta_core::Metadata::parse(&data[WEIGHT_HEADER_LEN..]).map_err(|e| {
                    log!("section zero: {}", e);
                    match e {
                        // Section zero's own table entry differs from its declared length.
                        curta_core::FormatError::SectionZeroLength { .. } => {
                            CurtaError::SectionTableMismatch
                        }
                        _ => CurtaError::InvalidSectionZero,
                    }
                })?;
            let declared = model.sections();
            if metadata.section_count() != declared.len() {
                log!(
                    "section table: {} sections, declared {}",
                    metadata.section_count(),
                    declared.len()
                );
                return Err(CurtaError::SectionTableMismatch.into());
            }
            for (section, (entry, &length)) in metadata.sections().zip(declared).enumerate() {
                if entry.length != length as u64 {
                    log!(
                        "section table: section {} is {} bytes, declared {}",
                        section,
                        entry.length,
                        length
                    );
                    return Err(CurtaError::SectionTableMismatch.into());
                }
            }
            model.config = metadata.config();
            model.state = ModelState::Sealing;
        }
        // Frozen before its first chunk is hashed: no hashed byte can change afterwards.
        WeightHeader::set_frozen(&mut data, true);
    }

    let start = chunk_in_section as usize * curta_core::CHUNK_LEN;
    let end = (start + curta_core::CHUNK_LEN).min(header.length as usize);
    let bytes = &data[WEIGHT_HEADER_LEN + start..WEIGHT_HEADER_LEN + end];
    model.running_hash = hashv(&[&model.running_hash, bytes]).to_bytes();
    model.seal_cursor += 1;

    if model.seal_cursor == model.total_chunks {
        if model.running_hash == model.weights_hash {
            model.state = ModelState::Sealed;
            log!("sealed: weights hash {}", Hex(&model.weights_hash));
        } else {
            model.state = ModelState::Mismatch;
            log!(
                "mismatch: declared weights hash {}, computed {}",
                Hex(&model.weights_hash),
                Hex(&model.running_hash)
            );
        }
    }
    drop(data);
    store_model(model_info, &model)
}

fn process_reopen(program_id: &Pubkey, accounts: &[AccountInfo]) -> ProgramResult {
    let [model_info, authority, weights @ ..] = accounts else {
        return Err(CurtaError::WrongAccountCount.into());
    };
    writable(model_info)?;
    let mut model = load_model(program_id, model_info)?;
    if model.authority != *authority.key {
        return Err(CurtaError::Unauthorized.into());
    }
    signer(authority)?;
    match model.state {
        ModelState::Sealing | ModelState::Mismatch => {}
        ModelState::Sealed => return Err(CurtaError::ModelSealed.into()),
        ModelState::Open => return Err(CurtaError::WrongState.into()),
    }
    if weights.len() != model.section_count as usize {
        return Err(CurtaError::WrongAccountCount.into());
    }
    // Sealing started, so every section's weight account is bound.
    for (weight_info, expected) in weights.iter().zip(model.weights()) {
        if weight_info.key != expected {
            return Err(CurtaError::WeightAddressMismatch.into());
        }
        writable(weight_info)?;
        owned(weight_info, program_id)?;
        WeightHeader::unpack(&weight_info.try_borrow_data()?)?;
    }
    for weight_info in weights {
        WeightHeader::set_frozen(&mut weight_info.try_borrow_mut_data()?, false);
    }
    model.seal_pass = model.seal_pass.checked_add(1).ok_or(CurtaError::Overflow)?;
    model.seal_cursor = 0;
    model.running_hash = [0; 32];
    model.config = curta_core::Config::default();
    model.state = ModelState::Open;
    store_model(model_info, &model)
}

fn process_close(program_id: &Pubkey, accounts: &[AccountInfo]) -> ProgramResult {
    let [model_info, authority, destination, weights @ ..] = accounts else {
        return Err(CurtaError::WrongAccountCount.into());
    };
    writable(model_info)?;
    writable(destination)?;
    let model = load_model(program_id, model_info)?;
    if model.authority != *authority.key {
        return Err(CurtaError::Unauthorized.into());
    }
    signer(authority)?;
    if model.state == ModelState::Sealed {
        return Err(CurtaError::ModelSealed.into());
    }
    if weights.len() != model.section_count as usize {
        return Err(CurtaError::WrongAccountCount.into());
    }
    if destination.key == model_info.key || weights.iter().any(|w| w.key == destination.key) {
        return Err(CurtaError::InvalidDestination.into());
    }
    for (section, weight_info) in weights.iter().enumerate() {
        if *weight_info.key
            != weight_address(program_id, authority.key, model_info.key, section as u8)
        {
            return Err(CurtaError::WeightAddressMismatch.into());
        }
        writable(weight_info)?;
        // A seed address with this program as owner can only be owned by the system program
        // (not created, or created elsewise) or by this program.
        if weight_info.owner == program_id {
            closable_weight(&model, model_info.key, section, weight_info)?;
        } else if weight_info.owner != &system_program::ID {
            return Err(CurtaError::WrongOwner.into());
        }
    }
    for weight_info in weights {
        if weight_info.owner == program_id {
            drain(weight_info, destination)?;
        }
    }
    drain(model_info, destination)
}

/// Checks that the program-owned account at section `section`'s seed address belongs to the
/// model being closed. The seed holds only 10 bytes of the model address, so two models of one
/// authority can share weight addresses: the address alone does not prove it. An initialized
/// account must name this model and section in its header (and be the account the model
/// recorded, once it recorded one); an uninitialized one must have an all-zero header.
fn closable_weight(
    model: &Model,
    model_key: &Pubkey,
    section: usize,
    weight_info: &AccountInfo,
) -> ProgramResult {
    let data = weight_info.try_borrow_data()?;
    if data[..data.len().min(WEIGHT_HEADER_LEN)]
        .iter()
        .all(|&b| b == 0)
    {
        return Ok(());
    }
    let header = WeightHeader::unpack(&data).map_err(|_| CurtaError::UnrecognizedWeightAccount)?;
    if header.model != *model_key {
        return Err(CurtaError::WrongModel.into());
    }
    if header.section as usize != section {
        return Err(CurtaError::WrongSection.into());
    }
    let bound = model.weight_accounts[section];
    if bound != Pubkey::default() && bound != *weight_info.key {
        return Err(CurtaError::WeightAddressMismatch.into());
    }
    Ok(())
}

/// Moves every lamport of `account` to `destination`, shrinks its data to nothing (no byte of
/// it survives, and shrinking costs nothing per byte, unlike zeroing 10 MiB on chain) and gives
/// it to the system program, so it can never be read as initialized again.
fn drain(account: &AccountInfo, destination: &AccountInfo) -> ProgramResult {
    let lamports = account.lamports();
    let total = destination
        .lamports()
        .checked_add(lamports)
        .ok_or(CurtaError::Overflow)?;
    **destination.try_borrow_mut_lamports()? = total;
    **account.try_borrow_mut_lamports()? = 0;
    account.resize(0)?;
    account.assign(&system_program::ID);
    Ok(())
}

fn load_model(program_id: &Pubkey, model_info: &AccountInfo) -> Result<Model, ProgramError> {
    owned(model_info, program_id)?;
    Model::unpack(&model_info.try_borrow_data()?)
}

fn store_model(model_info: &AccountInfo, model: &Model) -> ProgramResult {
    model.pack(&mut model_info.try_borrow_mut_data()?);
    Ok(())
}

fn open(model: &Model) -> ProgramResult {
    match model.state {
        ModelState::Open => Ok(()),
        ModelState::Sealed => Err(CurtaError::ModelSealed.into()),
        ModelState::Sealing | ModelState::Mismatch => Err(CurtaError::WrongState.into()),
    }
}

fn signer(account: &AccountInfo) -> ProgramResult {
    if account.is_signer {
        Ok(())
    } else {
        Err(ProgramError::MissingRequiredSignature)
    }
}

fn writable(account: &AccountInfo) -> ProgramResult {
    if account.is_writable {
        Ok(())
    } else {
        Err(CurtaError::NotWritable.into())
    }
}

fn owned(account: &AccountInfo, program_id: &Pubkey) -> ProgramResult {
    if account.owner == program_id {
        Ok(())
    } else {
        Err(CurtaError::WrongOwner.into())
    }
}

/// The rent sysvar. On SBF it comes from the runtime; a host build (the native processor of
/// solana-program-test) has no sysvar syscall in solana-sysvar 4.1, so it falls back to the
/// default rent, which is the rent solana-program-test's bank uses.
fn rent() -> Result<Rent, ProgramError> {
    use solana_sysvar::Sysvar;
    #[cfg(target_os = "solana")]
    {
        Rent::get()
    }
    #[cfg(not(target_os = "solana"))]
    {
        match Rent::get() {
            Err(ProgramError::UnsupportedSysvar) => Ok(Rent::default()),
            other => other,
        }
    }
}

/// A cross-program invocation. On SBF this is the runtime's; on the host solana-cpi's
/// invoke is a no-op, so the call goes to the syscall stubs solana-program-test installs.
fn invoke_signed(
    instruction: &Instruction,
    infos: &[AccountInfo],
    seeds: &[&[&[u8]]],
) -> ProgramResult {
    #[cfg(target_os = "solana")]
    {
        solana_cpi::invoke_signed(instruction, infos, seeds)
    }
    #[cfg(not(target_os = "solana"))]
    {
        solana_sysvar::program_stubs::sol_invoke_signed(instruction, infos, seeds)
    }
}

/// Lower-case hex of a hash, for the log.
struct Hex<'a>(&'a [u8; 32]);

impl core::fmt::Display for Hex<'_> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        self.0.iter().try_for_each(|byte| write!(f, "{byte:02x}"))
    }
}
