//! The consumer's error codes: its own below 16, a run `trusted_run` refuses at 16 and on (16
//! plus the `Distrust` variant's index).

use curta_interface::trust::Distrust;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u32)]
pub enum ConsumerError {
    /// The question account is not this program's.
    WrongOwner = 0,
    /// The question account is not QUESTION_LEN bytes, or its magic is not `CURTAQST`.
    NotAQuestion = 1,
    /// Ask: the question was asked already (or its data is not all zero).
    AlreadyAsked = 2,
    /// The question is not in the state the instruction needs (asked for Bind, bound for
    /// Record and Release, asked or answered for Close).
    WrongState = 3,
    /// Ask, Bind, Close: the signer is not the question's asker, or does not sign.
    Unauthorized = 4,
    /// Ask: a prompt of 0 or more than 32 ids, temperature 0 (no seed to draw) or above 16,
    /// top-p 0 or above 1, or an expiry outside MIN_EXPIRY..=MAX_EXPIRY.
    InvalidQuestion = 5,
    /// Bind: not in the run's start slot (its seed can be known by now), or the seed drawn.
    TooLate = 6,
    /// Bind: the run's seed is not drawn from the chain.
    NotDrawn = 7,
    /// Record, Release: not the run bound to the question.
    WrongRun = 8,
    /// Release: the slot is before the bound run's start slot plus the question's expiry.
    NotExpired = 9,
    /// Release: the bound run finished and is trusted: Record it instead.
    RunAnswered = 10,
    /// The question (or, for Close, the asker receiving its lamports) is not writable.
    NotWritable = 11,
    /// The run is not trusted (`Distrust` + 16).
    Run(Distrust),
}

impl ConsumerError {
    pub fn code(self) -> u32 {
        match self {
            ConsumerError::Run(d) => 16 + d.index(),
            ConsumerError::WrongOwner => 0,
            ConsumerError::NotAQuestion => 1,
            ConsumerError::AlreadyAsked => 2,
            ConsumerError::WrongState => 3,
            ConsumerError::Unauthorized => 4,
            ConsumerError::InvalidQuestion => 5,
            ConsumerError::TooLate => 6,
            ConsumerError::NotDrawn => 7,
            ConsumerError::WrongRun => 8,
            ConsumerError::NotExpired => 9,
            ConsumerError::RunAnswered => 10,
            ConsumerError::NotWritable => 11,
        }
    }
}

impl From<ConsumerError> for pinocchio::program_error::ProgramError {
    fn from(e: ConsumerError) -> Self {
        pinocchio::program_error::ProgramError::Custom(e.code())
    }
}

impl From<Distrust> for ConsumerError {
    fn from(d: Distrust) -> Self {
        ConsumerError::Run(d)
    }
}
