//! The client's errors. Each says which account, file or transaction is at fault, and what
//! was expected and found. Program errors are shown by name.

use curta_interface::error::CurtaError;
use solana_instruction::error::InstructionError;
use solana_pubkey::Pubkey;
use solana_transaction_error::TransactionError;

#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("not a CURTAW01 artifact: {0}")]
    Artifact(#[from] curta_core::FormatError),
    #[error("{0}")]
    Transport(String),
    #[error("converting {what}: {error}")]
    Convert {
        what: &'static str,
        error: curta_core::convert::ConvertError,
    },
    #[error(
        "payer {payer} holds {balance} lamports ({}), but this needs {needed} lamports ({}): \
         {rent} rent + {fees} fees + {reserve} the payer keeps (its own rent-exempt minimum); \
         fund the payer and run the command again",
        sol(*balance), sol(*needed)
    )]
    InsufficientFunds {
        payer: Pubkey,
        balance: u64,
        needed: u64,
        rent: u64,
        fees: u64,
        /// The payer's own rent-exempt minimum: the runtime refuses a transaction that leaves
        /// the fee payer with fewer lamports (but more than none).
        reserve: u64,
    },
    #[error("no model account at {0}")]
    ModelNotFound(Pubkey),
    #[error(
        "{cluster} does not accept version 1 transactions (its feature enable_tx_v1, \
         {}, is not active); nothing was sent: use --tx-version legacy or auto",
        crate::send::format::FEATURE_TX_V1
    )]
    TxV1Unsupported { cluster: String },
    #[error(
        "account {address} is not a Curta model of program {program} (owner {owner}, {len} bytes){}",
        if .owner != .program && *.len == curta_interface::state::MODEL_LEN {
            format!("; if it is a model of the Curta program deployed at {owner}, pass --program-id {owner}")
        } else {
            String::new()
        }
    )]
    NotAModel {
        address: Pubkey,
        owner: Pubkey,
        len: usize,
        /// The program this client targets (`--program-id`).
        program: Pubkey,
    },
    #[error("model account {address} is inconsistent: {problem}")]
    BadModel { address: Pubkey, problem: String },
    #[error("the artifact's weights hash {artifact} differs from model {model}'s declared hash {declared}")]
    HashMismatch {
        model: Pubkey,
        artifact: String,
        declared: String,
    },
    #[error(
        "the artifact's section lengths {artifact:?} differ from model {model}'s {declared:?}"
    )]
    SectionsMismatch {
        model: Pubkey,
        artifact: Vec<u32>,
        declared: Vec<u32>,
    },
    #[error("weight account {address} of section {section}: {problem}")]
    BadWeightAccount {
        address: Pubkey,
        section: usize,
        problem: String,
    },
    #[error("model {model}: section {section}'s weight account {address} is not created and initialized yet; run `client publish` with the artifact first")]
    Incomplete {
        model: Pubkey,
        section: usize,
        address: Pubkey,
    },
    #[error(
        "model {model} sealed to a mismatch: the chain computed {computed}, the declared hash is {declared}; \
         run `client seal {model} --artifact <ARTIFACT>` to find and rewrite the differing bytes"
    )]
    Mismatch {
        model: Pubkey,
        computed: String,
        declared: String,
    },
    #[error(
        "program id {program} is not a deployed program on {cluster}: {found}; deploy \
         target/deploy/curta_program.so there (solana program deploy) or pass the --program-id \
         it was deployed at"
    )]
    ProgramNotDeployed {
        program: Pubkey,
        cluster: String,
        /// What the address holds instead ("no account", or its owner and size).
        found: String,
    },
    #[error("program account {address}: {problem}")]
    BadProgramAccount { address: Pubkey, problem: String },
    #[error("model {model} is sealed; a sealed model is permanent and cannot be {action}")]
    Sealed { model: Pubkey, action: &'static str },
    #[error("{signer} is not the authority of model {model} (the authority is {authority})")]
    NotAuthority {
        model: Pubkey,
        signer: Pubkey,
        authority: Pubkey,
    },
    #[error(
        "{what} transaction{} failed: {}",
        .about.as_ref().map_or(String::new(), |a| format!(" for {a}")),
        describe_transaction_error(.error)
    )]
    Transaction {
        what: &'static str,
        /// The section, chunk and account it was about, where the transaction knows it.
        about: Option<String>,
        error: TransactionError,
    },
    #[error("{0}")]
    Stalled(String),
    /// The client refuses an operation on what it found on chain (nothing was sent).
    #[error("{0}")]
    Refused(String),
}

/// "1.5 SOL" for a number of lamports.
pub fn sol(lamports: u64) -> String {
    format!("{} SOL", lamports as f64 / 1e9)
}

/// A transaction error with Curta's custom codes by name.
pub fn describe_transaction_error(error: &TransactionError) -> String {
    match error {
        TransactionError::InstructionError(index, InstructionError::Custom(code)) => {
            match CurtaError::try_from(*code) {
                Ok(e) => format!("instruction {index}: {e:?} ({e}, custom program error {code})"),
                Err(_) => format!("instruction {index}: custom program error {code}"),
            }
        }
        TransactionError::InstructionError(index, e) => format!("instruction {index}: {e}"),
        other => other.to_string(),
    }
}

/// The Curta error of a failed transaction, if that is what it is.
pub fn curta_error(error: &TransactionError) -> Option<CurtaError> {
    match error {
        TransactionError::InstructionError(_, InstructionError::Custom(code)) => {
            CurtaError::try_from(*code).ok()
        }
        _ => None,
    }
}
