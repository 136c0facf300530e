//! The program's errors. Each is returned as `ProgramError::Custom(code)`, code = the variant's
//! discriminant below (stable: clients print errors by name through `TryFrom<u32>`).

#[repr(u32)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum CurtaError {
    #[error("account is not owned by the expected program")]
    WrongOwner = 0,
    #[error("signer is not the model's authority")]
    Unauthorized = 1,
    #[error("section count must be 2 to 18")]
    InvalidSectionCount = 2,
    #[error("section length must be 1 to 10,483,712 bytes")]
    InvalidSectionLength = 3,
    #[error("model account is not the PDA of [\"model\", authority, weights hash]")]
    ModelAddressMismatch = 4,
    #[error("weight account is not the seed-derived address of (authority, model, section)")]
    WeightAddressMismatch = 5,
    #[error("weight account data length is not 2,048 + the section length")]
    WeightSizeMismatch = 6,
    #[error("account or section is already initialized")]
    AlreadyInitialized = 7,
    #[error("section index is not below the model's section count")]
    SectionOutOfRange = 8,
    #[error("account does not hold the rent-exempt minimum")]
    NotRentExempt = 9,
    #[error("weight account is not initialized")]
    NotInitialized = 10,
    #[error("weight account belongs to another model")]
    WrongModel = 11,
    #[error("weight account holds another section than the one expected")]
    WrongSection = 12,
    #[error("write reaches past the end of the section")]
    WriteOutOfBounds = 13,
    #[error("write carries no bytes")]
    EmptyWrite = 14,
    #[error("section is frozen: a seal pass started; Reopen unfreezes it")]
    SectionFrozen = 15,
    #[error("model is sealed and can never change or close")]
    ModelSealed = 16,
    #[error("instruction is not allowed in the model's current state")]
    WrongState = 17,
    #[error("seal names another chunk than the model's seal cursor")]
    UnexpectedChunk = 18,
    #[error("seal names another seal pass than the model's")]
    StalePass = 19,
    #[error("not every section's weight account is initialized")]
    WeightAccountsMissing = 20,
    #[error("section zero's header is not a valid CURTAW01 header")]
    InvalidSectionZero = 21,
    #[error("section zero's section table differs from the declared section lengths")]
    SectionTableMismatch = 22,
    #[error("wrong number of accounts for this instruction")]
    WrongAccountCount = 23,
    #[error("account is not a Curta model account")]
    NotAModel = 24,
    #[error("account must be writable")]
    NotWritable = 25,
    #[error("destination must not be one of the accounts being closed")]
    InvalidDestination = 26,
    #[error("arithmetic overflow")]
    Overflow = 27,
    #[error("the seal of chunk 0 starts a pass: it needs the model's authority as third account, signing")]
    SealStartNeedsAuthority = 28,
    #[error("account at a weight address holds neither a zero header nor a valid weight header")]
    UnrecognizedWeightAccount = 29,
    #[error("section zero must hold at least the 4,096-byte header")]
    SectionZeroTooShort = 30,
    #[error("seal names another creation of the model than the one at this address")]
    StaleCreation = 31,
    #[error("the model's accounts would hold more than 66,060,288 bytes: one Reopen or Close transaction could not load them")]
    ModelTooLarge = 32,
    #[error("account is not a Curta run account")]
    NotARun = 33,
    #[error("run account is not the seed-derived address of (runner, model, nonce)")]
    RunAddressMismatch = 34,
    #[error("run account data length is not 128 + the model's state length + 128 x steps")]
    RunSizeMismatch = 35,
    #[error("no longer returned: steps are order-free (the code stays reserved)")]
    StaleCursor = 36,
    #[error("the run has ended: no step is left to do")]
    RunEnded = 37,
    #[error("the run's prompt, steps or sampling settings are refused (the reason is logged)")]
    InvalidRun = 38,
    #[error("step budget must be 1 to 1,175,000 estimated compute units")]
    InvalidStepBudget = 39,
    #[error("runs take a Sealed model only")]
    ModelNotSealed = 40,
    #[error("no longer returned: a Step carries only the sections it reads, so every run can be stepped (the code stays reserved)")]
    RunTooLarge = 41,
    #[error("a run whose seed is drawn from the chain steps only after the slot it started in: the start slot's hash is not in SlotHashes yet")]
    SeedNotReady = 42,
    #[error("the start slot's hash has left SlotHashes (512 slots) before the run's seed was drawn: the run can only be closed")]
    SeedExpired = 43,
    #[error("the account is not the SlotHashes sysvar")]
    NotSlotHashes = 44,
    #[error("the text prompt's working state (curta-core's Encoding) does not fit the run's state buffer: send the prompt as token ids")]
    PromptTooLongToEncode = 45,
    #[error("the step's next item reads a section whose weight account the step does not carry (the section is logged)")]
    SectionNotLoaded = 46,
    #[error("the account is not a claim (magic, version, state, prompt length)")]
    NotAClaim = 47,
    #[error("claim account is not at the claimer's claim address of the model and nonce")]
    ClaimAddressMismatch = 48,
    #[error("claim account's data length is not the header plus the prompt's bytes")]
    ClaimSizeMismatch = 49,
    #[error("challenge window must be 150 to 432,000 slots")]
    InvalidWindow = 50,
    #[error("bond is below what a dispute's steps cost at the claim's priority price (cost::claim_bond), or the account holds less than its rent and the bond")]
    BondTooLow = 51,
    #[error("claim is not open: it was answered already")]
    AlreadyAnswered = 52,
    #[error("claim is not answered (or was challenged already, or resolved)")]
    NotAnswered = 53,
    #[error("claim's challenge window has passed")]
    WindowClosed = 54,
    #[error("claim is not challenged: nothing to resolve")]
    NotChallenged = 55,
    #[error("dispute run has not finished")]
    DisputeNotFinished = 56,
    #[error("run is not the claim's dispute run")]
    WrongDisputeRun = 57,
    #[error("run is a claim's dispute run: only Resolve closes it")]
    DisputeRunLocked = 58,
    #[error("claim cannot be closed now: answered and within its window, or challenged and not resolved")]
    ClaimNotClosable = 59,
    #[error("answer's token count must be 1 to the claim's steps")]
    InvalidAnswer = 60,
    #[error("claim's priority price is above cost::MAX_PRIORITY_PRICE (10,000,000,000 micro-lamports a unit)")]
    InvalidPriorityPrice = 61,
}

impl CurtaError {
    /// Every variant, in code order.
    pub const ALL: [CurtaError; 62] = [
        CurtaError::WrongOwner,
        CurtaError::Unauthorized,
        CurtaError::InvalidSectionCount,
        CurtaError::InvalidSectionLength,
        CurtaError::ModelAddressMismatch,
        CurtaError::WeightAddressMismatch,
        CurtaError::WeightSizeMismatch,
        CurtaError::AlreadyInitialized,
        CurtaError::SectionOutOfRange,
        CurtaError::NotRentExempt,
        CurtaError::NotInitialized,
        CurtaError::WrongModel,
        CurtaError::WrongSection,
        CurtaError::WriteOutOfBounds,
        CurtaError::EmptyWrite,
        CurtaError::SectionFrozen,
        CurtaError::ModelSealed,
        CurtaError::WrongState,
        CurtaError::UnexpectedChunk,
        CurtaError::StalePass,
        CurtaError::WeightAccountsMissing,
        CurtaError::InvalidSectionZero,
        CurtaError::SectionTableMismatch,
        CurtaError::WrongAccountCount,
        CurtaError::NotAModel,
        CurtaError::NotWritable,
        CurtaError::InvalidDestination,
        CurtaError::Overflow,
        CurtaError::SealStartNeedsAuthority,
        CurtaError::UnrecognizedWeightAccount,
        CurtaError::SectionZeroTooShort,
        CurtaError::StaleCreation,
        CurtaError::ModelTooLarge,
        CurtaError::NotARun,
        CurtaError::RunAddressMismatch,
        CurtaError::RunSizeMismatch,
        CurtaError::StaleCursor,
        CurtaError::RunEnded,
        CurtaError::InvalidRun,
        CurtaError::InvalidStepBudget,
        CurtaError::ModelNotSealed,
        CurtaError::RunTooLarge,
        CurtaError::SeedNotReady,
        CurtaError::SeedExpired,
        CurtaError::NotSlotHashes,
        CurtaError::PromptTooLongToEncode,
        CurtaError::SectionNotLoaded,
        CurtaError::NotAClaim,
        CurtaError::ClaimAddressMismatch,
        CurtaError::ClaimSizeMismatch,
        CurtaError::InvalidWindow,
        CurtaError::BondTooLow,
        CurtaError::AlreadyAnswered,
        CurtaError::NotAnswered,
        CurtaError::WindowClosed,
        CurtaError::NotChallenged,
        CurtaError::DisputeNotFinished,
        CurtaError::WrongDisputeRun,
        CurtaError::DisputeRunLocked,
        CurtaError::ClaimNotClosable,
        CurtaError::InvalidAnswer,
        CurtaError::InvalidPriorityPrice,
    ];
}

impl From<CurtaError> for pinocchio::program_error::ProgramError {
    fn from(e: CurtaError) -> Self {
        pinocchio::program_error::ProgramError::Custom(e as u32)
    }
}

#[cfg(not(target_os = "solana"))]
impl From<CurtaError> for solana_program_error::ProgramError {
    fn from(e: CurtaError) -> Self {
        solana_program_error::ProgramError::Custom(e as u32)
    }
}

impl TryFrom<u32> for CurtaError {
    type Error = u32;

    /// The error of a custom code, or the code back when no variant has it.
    fn try_from(code: u32) -> Result<Self, u32> {
        CurtaError::ALL.get(code as usize).copied().ok_or(code)
    }
}
