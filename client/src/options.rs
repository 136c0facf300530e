//! The settings every model and run operation takes.

use crate::send::TxVersion;

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
