//! What the engine sends: an item is one transaction's instructions (without compute-budget
//! instructions) with what the caller decides about it: its label, how its compute-unit limit
//! is set, whether it is a barrier, and what it counts and reports.

use crate::Error;
use solana_instruction::Instruction;
use solana_pubkey::Pubkey;
use solana_transaction_error::TransactionError;

/// The most compute units a transaction may request (and what it gets without a limit).
pub const MAX_COMPUTE_UNITS: u32 = 1_400_000;

/// How an item's compute-unit limit is set. A limit is carried by every version 1 transaction
/// and by legacy ones with a compute-unit price; a [`Units::Fixed`] limit also without one.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Units {
    /// One limit for every item of the label: the first one's simulation, 1.2 x its units +
    /// 1,000, at least `floor`; `fallback` where the chain refuses the simulation (e.g. its
    /// accounts do not exist yet).
    Measured { fallback: u32, floor: u32 },
    /// As `Measured`, each list of instructions (program, tag and account count of each)
    /// measured on its own.
    MeasuredEach { fallback: u32, floor: u32 },
    /// Always this limit, with or without a price.
    Fixed(u32),
}

impl Units {
    /// The limit where the simulation measured `units`.
    pub fn measured(self, units: u64) -> u32 {
        let floor = match self {
            Units::Measured { floor, .. } | Units::MeasuredEach { floor, .. } => floor,
            Units::Fixed(limit) => return limit,
        };
        (units + units / 5 + 1_000)
            .max(floor as u64)
            .min(MAX_COMPUTE_UNITS as u64) as u32
    }

    /// The limit where no simulation could measure it.
    pub fn fallback(self) -> u32 {
        match self {
            Units::Measured { fallback, .. } | Units::MeasuredEach { fallback, .. } => fallback,
            Units::Fixed(limit) => limit,
        }
    }
}

/// How far what was sent before a barrier must have come before the barrier goes out.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Settle {
    /// Final or expired: nothing sent earlier can land again, even after a fork.
    Final,
    /// Landed (at the transport's commitment) or expired.
    Landed,
}

/// The progress bar an item advances when it lands.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Bar {
    /// The byte bar of this key (and the overall one) by the item's payload bytes.
    Bytes(usize),
    /// The count bar by one.
    Count,
}

/// One transaction's instructions, and how to send, count and report it.
#[derive(Clone, Debug)]
pub struct Item {
    /// What it is, in errors and the tally ("write", "seal", "start run").
    pub label: &'static str,
    pub instructions: Vec<Instruction>,
    pub units: Units,
    /// Set for an item that may only go out, alone, once what was sent earlier has come this
    /// far.
    pub barrier: Option<Settle>,
    /// Payload bytes it carries (counted in the tally).
    pub bytes: usize,
    /// What it is about, where an error names it ("section 3 (weight account ...)").
    pub about: Option<String>,
    pub bar: Option<Bar>,
}

impl Item {
    pub fn new(label: &'static str, units: Units, instructions: Vec<Instruction>) -> Item {
        Item {
            label,
            instructions,
            units,
            barrier: None,
            bytes: 0,
            about: None,
            bar: None,
        }
    }

    /// The item as a barrier that waits for `settle`.
    pub fn barrier(mut self, settle: Settle) -> Item {
        self.barrier = Some(settle);
        self
    }

    /// The item carrying `bytes` payload bytes.
    pub fn carrying(mut self, bytes: usize) -> Item {
        self.bytes = bytes;
        self
    }

    /// The item about `about` where an error names it.
    pub fn about(mut self, about: String) -> Item {
        self.about = Some(about);
        self
    }

    /// The item advancing `bar` when it lands.
    pub fn bar(mut self, bar: Bar) -> Item {
        self.bar = Some(bar);
        self
    }

    /// The item's first instruction's account at `index`, if any.
    pub fn account(&self, index: usize) -> Option<Pubkey> {
        self.instructions
            .first()
            .and_then(|ix| ix.accounts.get(index))
            .map(|a| a.pubkey)
    }

    /// The key of the items that share a compute-unit limit (and so a fee).
    pub(super) fn shape(&self) -> Shape {
        match self.units {
            // A fixed limit is the item's own: it shares no measure with the label's others.
            Units::MeasuredEach { .. } | Units::Fixed(_) => Shape(
                self.label,
                self.instructions
                    .iter()
                    .map(|ix| {
                        (
                            ix.program_id,
                            ix.data.first().copied().unwrap_or(0),
                            ix.accounts.len(),
                        )
                    })
                    .collect(),
            ),
            _ => Shape(self.label, Vec::new()),
        }
    }
}

/// What decides a transaction's compute-unit limit: its label and, for items measured each
/// on its own, the program, tag and account count of each instruction.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub(super) struct Shape(&'static str, Vec<(Pubkey, u8, usize)>);

/// A transaction that landed with an error.
#[derive(Clone, Debug)]
pub struct Failure {
    pub item: Item,
    pub error: TransactionError,
}

impl Failure {
    /// `Error::Transaction` named `what`, saying what the item was about.
    pub fn into_error(self, what: &'static str) -> Error {
        Error::Transaction {
            what,
            about: self.item.about,
            error: self.error,
        }
    }
}
