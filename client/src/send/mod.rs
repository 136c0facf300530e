//! Sending transactions: the engine ([`engine`]), which signs, sends many in flight, confirms
//! and re-signs; what it sends ([`item`]: instructions with the compute-unit policy and
//! barrier the caller puts on them); what it counts ([`tally`]); the transaction formats
//! ([`format`]); the transports ([`transport`]); progress bars ([`progress`]). Nothing here
//! knows of models or runs.

pub mod engine;
pub mod format;
pub mod item;
pub mod progress;
pub mod tally;
pub mod transport;

pub use engine::Engine;
pub use format::{Format, TxVersion};
pub use item::{Bar, Failure, Item, Settle, Units, MAX_COMPUTE_UNITS};
pub use progress::Progress;
pub use tally::{Tally, Timeline};
