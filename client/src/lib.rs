//! Curta client: publish, seal, verify and close models, and run them off chain and on chain,
//! against an RPC endpoint or an in-process bank running the real program.
//!
//! Four rooms: [`send`] signs and sends transactions (the engine, the transaction formats,
//! the transports, progress), knowing nothing of models or runs; [`model`] publishes, seals,
//! closes, inspects and verifies models; [`run`] runs them; [`claim`] makes, watches and
//! disputes optimistic claims of their answers. The CLI ([`cli`]) is a thin layer over the
//! functions re-exported here.

pub mod artifact;
pub mod claim;
pub mod cli;
pub mod error;
pub mod model;
pub mod options;
pub mod program;
pub mod rehearse;
pub mod run;
pub mod send;

pub use artifact::LocalArtifact;
pub use error::Error;
pub use model::{
    close, publish, seal, status, status_in, verify, CloseReport, Report, Status, Verification,
};
pub use options::Options;
pub use program::{verify_program, ProgramVerification};
pub use rehearse::{demo, rehearsal_bank, rehearse, Demo};
pub use send::transport::{
    BankTransport, Ledger, Profile, RpcTransport, Sent, Simulation, Transport, TxStatus,
};
pub use send::{Format, Tally, TxVersion};
