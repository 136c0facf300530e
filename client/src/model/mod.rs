//! Models: publish, seal, close, status and verify, and their reading of the chain. Each
//! operation plans from the model's accounts ([`accounts`]) the transactions still needed
//! ([`items`], [`plan`]) and hands them to the engine (`crate::send`).

pub mod accounts;
pub mod close;
pub mod items;
pub mod plan;
pub mod publish;
pub mod report;
pub mod seal;
pub mod sealed;
pub mod status;
pub mod verify;

pub use close::{close, CloseReport};
pub use publish::{publish, publish_artifact};
pub use report::{Counts, Report, State};
pub use seal::seal;
pub use sealed::{fetch_sealed, FetchError};
pub use status::{status, status_in, Status};
pub use verify::{verify, Verification};
