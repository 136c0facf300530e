//! The run account's layout, seed and address (`curta_interface::run`) and the cost model of
//! its steps (`curta_interface::cost`) are the interface crate's, re-exported here.

pub use curta_interface::cost::*;
pub use curta_interface::run::*;
