//! The checks and helpers every instruction shares: accounts, addresses, rent, hashing,
//! logging and the system program's calls.

use pinocchio::account_info::AccountInfo;
use pinocchio::instruction::{AccountMeta, Instruction, Signer};
use pinocchio::program_error::ProgramError;
use pinocchio::pubkey::{self, Pubkey};
use pinocchio::ProgramResult;

use crate::error::CurtaError;
use crate::state::{model_field, same_address, weight_seed_bytes, ModelState};

/// An address at an 8-byte aligned place.
#[repr(C, align(8))]
pub(crate) struct Aligned(pub(crate) Pubkey);

/// `address` copied into `place`, 8-byte aligned. On chain with the `sol_memcpy_` syscall
/// (about 10 CU): LLVM's BPF backend copies an address it cannot prove aligned as 32 byte loads
/// and 32 byte stores.
#[inline(always)]
pub(crate) fn aligned_copy<'a>(
    address: &Pubkey,
    place: &'a mut core::mem::MaybeUninit<Aligned>,
) -> &'a Pubkey {
    #[cfg(target_os = "solana")]
    // SAFETY: the syscall writes all 32 bytes of `place` (an address has no invalid value)
    // from the 32 readable bytes of `address`; the two do not overlap.
    unsafe {
        pinocchio::syscalls::sol_memcpy_(
            place.as_mut_ptr() as *mut u8,
            address.as_ptr(),
            address.len() as u64,
        );
        &place.assume_init_ref().0
    }
    #[cfg(not(target_os = "solana"))]
    &place.write(Aligned(*address)).0
}

/// The system program's id (all zeros: `all_zero` compares an owner with it).
pub(crate) const SYSTEM_PROGRAM: Pubkey = [0; 32];

/// Moves every lamport of `account` to `destination`, shrinks its data to nothing (no byte of
/// it survives, and shrinking costs nothing per byte, unlike zeroing 10 MiB on chain) and gives
/// it to the system program, so it can never be read as initialized again.
#[inline(always)]
pub(crate) fn drain(account: &AccountInfo, destination: &AccountInfo) -> ProgramResult {
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

/// A Sealed model of this program, read in place: its configuration, and its data for
/// [`weight_account`]. Owner (`WrongOwner`), a model (`NotAModel`), Sealed (`ModelNotSealed`).
#[inline(always)]
pub(crate) fn sealed_model<'a>(
    model_info: &'a AccountInfo,
    program_id: &Pubkey,
) -> Result<(curta_core::Config, &'a [u8]), ProgramError> {
    owned(model_info, program_id)?;
    // SAFETY: read-only for the whole instruction; the run instructions never write the model
    // and check every other account's address against it first.
    let data = unsafe { model_info.borrow_data_unchecked() };
    if crate::state::check_model(data)? != ModelState::Sealed {
        return Err(CurtaError::ModelNotSealed.into());
    }
    let mut fields = [0u32; 7];
    for (i, field) in fields.iter_mut().enumerate() {
        *field = curta_core::le::u32_at(data, model_field::CONFIG + 4 * i);
    }
    Ok((curta_core::Config::from_fields(fields), data))
}

/// The weight account the model's data records for `section`.
#[inline(always)]
pub(crate) fn weight_account(model: &[u8], section: usize) -> &Pubkey {
    let at = model_field::WEIGHT_ACCOUNTS + 32 * section;
    model[at..at + 32].try_into().unwrap_or(&[0; 32])
}

/// A run refused by curta-core (a prompt, steps or settings out of range; never expected of a
/// started run): the reason logged as a static string, `InvalidRun`.
#[inline(never)]
pub(crate) fn log_run_error(error: curta_core::infer::RunError) -> CurtaError {
    use curta_core::infer::RunError as E;
    pinocchio::log::sol_log(match error {
        E::Format(_) => "run: section zero unreadable",
        E::StateTooSmall { .. } => "run: state buffer too small",
        E::EmptyPrompt => "run: empty prompt",
        E::PromptTooLong { .. } => "run: prompt longer than the context",
        E::TokenOutOfRange { .. } => "run: a prompt token is outside the vocabulary",
        E::NoSteps => "run: steps must be at least 1",
        E::StepsPastContext { .. } => "run: prompt + steps - 1 past the context",
        E::Temperature { .. } => "run: temperature out of range (0 to 16)",
        E::TopP { .. } => "run: top-p out of range (above 0, at most 1)",
        E::SeedZero => "run: seed 0 cannot sample",
        E::TokenBuffer { .. } => "run: prompt text too long to tokenize",
        E::SectionMissing { .. } | E::SectionLength { .. } | E::TooManySections { .. } => {
            "run: weight accounts do not match the section table"
        }
        _ => "run: state refused",
    });
    CurtaError::InvalidRun
}

/// Token ids a prompt may hold on chain (16 KiB of the heap frame).
pub(crate) const PROMPT_TOKENS: usize = 4096;

/// The prompt's token buffer: on chain the 16 KiB of the heap frame after curta-core's run
/// scratch (`forward::Scratch`; the program installs no allocator).
#[inline(always)]
pub(crate) fn prompt_buffer() -> &'static mut [u32] {
    #[cfg(target_os = "solana")]
    // SAFETY: bytes 16,384..32,768 of the 32 KiB heap frame, 8-byte aligned, used by StartRun
    // or the Step that ends a run's encoding (which runs no forward pass), once.
    unsafe {
        use curta_core::infer::forward::{HEAP_START, SCRATCH_BYTES};
        core::slice::from_raw_parts_mut(
            (HEAP_START as usize + SCRATCH_BYTES) as *mut u32,
            PROMPT_TOKENS,
        )
    }
    #[cfg(not(target_os = "solana"))]
    alloc::vec![0u32; PROMPT_TOKENS].leak()
}

/// A result as one register (0 for success, else the runtime's code of the error), for the
/// instructions processed in a frame of their own.
#[inline(always)]
pub(crate) fn error_code(result: ProgramResult) -> u64 {
    match result {
        Ok(()) => 0,
        Err(error) => error.into(),
    }
}

/// [`error_code`] back to a result.
#[inline(always)]
pub(crate) fn from_code(code: u64) -> ProgramResult {
    match code {
        0 => Ok(()),
        code => Err(ProgramError::from(code)),
    }
}

/// The one authority rule: `account` is the expected authority (`Unauthorized`) and signs
/// (`MissingRequiredSignature`).
#[inline(always)]
pub(crate) fn authority_signs(expected: &Pubkey, account: &AccountInfo) -> ProgramResult {
    if !same_address(account.key(), expected) {
        return Err(CurtaError::Unauthorized.into());
    }
    signer(account)
}

#[inline(always)]
pub(crate) fn signer(account: &AccountInfo) -> ProgramResult {
    if account.is_signer() {
        Ok(())
    } else {
        Err(ProgramError::MissingRequiredSignature)
    }
}

#[inline(always)]
pub(crate) fn writable(account: &AccountInfo) -> ProgramResult {
    if account.is_writable() {
        Ok(())
    } else {
        Err(CurtaError::NotWritable.into())
    }
}

#[inline(always)]
pub(crate) fn owned(account: &AccountInfo, program_id: &Pubkey) -> ProgramResult {
    if same_address(account.owner(), program_id) {
        Ok(())
    } else {
        Err(CurtaError::WrongOwner.into())
    }
}

/// The data of an account the program must own (`WrongOwner`), borrowed for writing.
pub(crate) fn owned_data<'a>(
    account: &'a AccountInfo,
    program_id: &Pubkey,
) -> Result<pinocchio::account_info::RefMut<'a, [u8]>, ProgramError> {
    owned(account, program_id)?;
    account.try_borrow_mut_data()
}

/// The address of section `section`'s weight account: create_with_seed(authority,
/// weight_seed, program id).
#[inline(always)]
pub(crate) fn weight_address(
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
pub(crate) fn creation_slot() -> Result<u64, ProgramError> {
    current_slot()
}

/// The current slot (Clock sysvar).
pub(crate) fn current_slot() -> Result<u64, ProgramError> {
    use pinocchio::sysvars::{clock::Clock, Sysvar};
    Ok(Clock::get()?.slot)
}

/// The rent-exempt minimum for `len` bytes, from the rent sysvar, in integers: the exemption
/// threshold is 2 years (or 1 under SIMD-0194); any other value is refused rather than computed
/// with floating point, which SBF lacks.
#[allow(deprecated)]
#[inline(always)]
pub(crate) fn minimum_balance(len: usize) -> Result<u64, ProgramError> {
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
pub(crate) fn chain_in_place(running: &mut [u8; 32], chunk: &[u8]) {
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

/// SHA-256 of `bytes`: the `sol_sha256` syscall on chain.
#[inline(always)]
pub(crate) fn sha256(bytes: &[u8]) -> [u8; 32] {
    sha256_of(&[bytes])
}

/// SHA-256 of `parts` one after the other, none copied: the `sol_sha256` syscall on chain.
#[inline(always)]
pub(crate) fn sha256_of(parts: &[&[u8]]) -> [u8; 32] {
    #[cfg(target_os = "solana")]
    {
        let mut out = [0u8; 32];
        // SAFETY: the syscall reads the (pointer, length) pairs and their bytes, then writes
        // 32 bytes at `out`.
        unsafe {
            pinocchio::syscalls::sol_sha256(
                parts.as_ptr() as *const u8,
                parts.len() as u64,
                out.as_mut_ptr(),
            );
        }
        out
    }
    #[cfg(not(target_os = "solana"))]
    {
        curta_core::sha256(&parts.concat())
    }
}

/// Logs `first` and the lower-case hex of `hash`, then optionally a second label and hash, as
/// one line: no formatting machinery (core::fmt) in the binary.
#[inline(always)]
pub(crate) fn log_hashes(first: &[u8], hash: &[u8; 32], second: Option<(&[u8], &[u8; 32])>) {
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
pub(crate) fn append(line: &mut [u8; 192], at: usize, bytes: &[u8]) -> usize {
    line[at..at + bytes.len()].copy_from_slice(bytes);
    at + bytes.len()
}

#[inline(always)]
pub(crate) fn append_hex(line: &mut [u8; 192], at: usize, hash: &[u8; 32]) -> usize {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    for (i, byte) in hash.iter().enumerate() {
        line[at + 2 * i] = DIGITS[(byte >> 4) as usize];
        line[at + 2 * i + 1] = DIGITS[(byte & 15) as usize];
    }
    at + 64
}

/// The system program instructions the program invokes (the system program's bincode layout:
/// a u32 tag, then the fields little-endian).
pub(crate) mod claim;

pub(crate) mod system {
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
