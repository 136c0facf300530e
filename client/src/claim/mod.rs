//! Optimistic claims (issue 40): an answer computed off chain and posted with a bond, settled
//! once its challenge window passes, overturned when a challenger's dispute run (the claim's
//! run, stepped on chain) disagrees. The program's accounts and rules are in docs/program.md
//! ("Claims"); `curta_interface::claim` is the account's layout.
//!
//! - [`open`]: `client claim` (open, answer, wait until settled), its stages one by one.
//! - [`plan`]: the checks OpenClaim makes, made before anything is sent; the address and the
//!   bond.
//! - [`answer`]: the answer computed off chain, and a drawn claim's seed.
//! - [`account`]: claim accounts, `client claims`, `client close-claim`.
//! - [`dispute`]: the challenge, the dispute run stepped to its end, Resolve.
//! - [`watch`]: `client watch`.

pub mod account;
pub mod answer;
pub mod dispute;
pub mod items;
pub mod open;
pub mod plan;
mod request;
pub mod watch;

pub use account::{claims, close_claim, ClaimList, ClaimListing, ClosedClaim};
pub use answer::Answer;
pub use dispute::{challenge, finish_dispute, DisputeOptions, Resolution};
pub use open::{claim, ClaimStage};
pub use request::{state_at, state_name, ClaimError, ClaimReport, ClaimRequest};
pub use watch::event::{Verdict, WatchEvent, WatchSummary};
pub use watch::{watch, WatchOptions};
