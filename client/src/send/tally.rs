//! What an engine sent and what landed ([`Tally`]), and where its time went ([`Timeline`]).

use super::item::Item;
use std::collections::BTreeMap;
use std::time::Duration;

/// What the engine sent and what landed, over all its sends.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Tally {
    /// Landed without an error, by item label.
    pub by_label: BTreeMap<&'static str, u64>,
    /// Landed with an error (the fee is charged all the same).
    pub failed: u64,
    pub fees: u64,
    /// The least and most payload bytes an item that carried some carried, and all of them.
    pub bytes_min: Option<usize>,
    pub bytes_max: usize,
    pub bytes: u64,
    /// Signings that never landed (dropped, or their blockhash expired) and were re-signed.
    pub resigned: u64,
}

impl Tally {
    /// Every transaction that landed, failed ones included.
    pub fn landed(&self) -> u64 {
        self.by_label.values().sum::<u64>() + self.failed
    }

    /// Items of `label` that landed without an error.
    pub fn of(&self, label: &str) -> u64 {
        self.by_label.get(label).copied().unwrap_or(0)
    }

    /// Counts an item that landed without an error.
    pub(super) fn count(&mut self, item: &Item) {
        *self.by_label.entry(item.label).or_default() += 1;
        if item.bytes > 0 {
            self.bytes += item.bytes as u64;
            self.bytes_min = Some(self.bytes_min.map_or(item.bytes, |m| m.min(item.bytes)));
            self.bytes_max = self.bytes_max.max(item.bytes);
        }
    }
}

/// Where an engine's wall time went, for profiling (printed to stderr when the engine is
/// dropped if `CURTA_TIMELINE` is set): each field is the time spent in that step of the send
/// loop, summed over its sends.
#[derive(Clone, Debug, Default)]
pub struct Timeline {
    /// Pricing shapes before a send (fee and compute-unit simulations).
    pub pricing: Duration,
    /// Fetching blockhashes.
    pub blockhash: Duration,
    /// Signing transactions.
    pub signing: Duration,
    /// Handing transactions to the transport.
    pub sending: Duration,
    /// Asking whether blockhashes expired (the bank's fences included).
    pub expiry: Duration,
    /// Reading signature statuses.
    pub statuses: Duration,
    /// Waiting for progress when nothing resolved.
    pub waiting: Duration,
    /// Waiting before barriers (`Engine::settle`).
    pub settling: Duration,
    /// Reading the chain and planning between rounds (the operations add it).
    pub planning: Duration,
    /// Time inside `Engine::send`, all of the above but planning.
    pub total: Duration,
    /// Passes of the send loop, and sends.
    pub loops: u64,
    pub sends: u64,
}

impl std::fmt::Display for Timeline {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let ms = |d: Duration| d.as_secs_f64() * 1e3;
        write!(
            f,
            "engine timeline (ms): sends {} loops {} total {:.1} = pricing {:.1} blockhash {:.1} signing {:.1} sending {:.1} expiry {:.1} statuses {:.1} waiting {:.1} settling {:.1}; planning (outside sends) {:.1}",
            self.sends,
            self.loops,
            ms(self.total),
            ms(self.pricing),
            ms(self.blockhash),
            ms(self.signing),
            ms(self.sending),
            ms(self.expiry),
            ms(self.statuses),
            ms(self.waiting),
            ms(self.settling),
            ms(self.planning),
        )
    }
}
