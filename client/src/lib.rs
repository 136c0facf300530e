//! Curta client: publish, seal, verify and close models, against an RPC endpoint or an
//! in-process bank running the real program.
//!
//! One engine ([`engine`]) plans from on-chain state and sends many transactions in flight;
//! it runs unchanged over any [`Transport`]. The CLI ([`cli`]) is a thin layer over the
//! functions re-exported here.

pub mod artifact;
pub mod chain;
pub mod cli;
pub mod close;
pub mod engine;
pub mod error;
pub mod onchain;
pub mod plan;
pub mod progress;
pub mod publish;
pub mod rehearse;
pub mod report;
pub mod run;
pub mod seal;
pub mod status;
pub mod steps;
pub mod transport;
pub mod txformat;
pub mod verify;
pub mod verify_program;

pub use artifact::LocalArtifact;
pub use close::{close, CloseReport};
pub use engine::Tally;
pub use error::Error;
pub use publish::publish;
pub use rehearse::{demo, rehearsal_bank, rehearse, Demo};
pub use report::Report;
pub use seal::seal;
pub use status::{status, status_in, Status};
pub use transport::{
    BankTransport, Ledger, Profile, RpcTransport, Sent, Simulation, Transport, TxStatus,
};
pub use txformat::{Format, TxVersion};
pub use verify::{verify, Verification};
pub use verify_program::{verify_program, ProgramVerification};

/// Settings shared by the operations.
#[derive(Clone, Debug, Default)]
pub struct Options {
    /// Micro-lamports per compute unit. With it every transaction also sets a tight,
    /// measured compute-unit limit; without it no compute-budget instruction is sent.
    pub compute_unit_price: Option<u64>,
    /// Most transactions in flight (default: the transport's profile).
    pub max_in_flight: Option<usize>,
    /// Progress bars on stderr (only drawn when stderr is a terminal).
    pub progress: bool,
    /// The transaction format (default auto: version 1 where the cluster accepts it).
    pub tx_version: TxVersion,
}
