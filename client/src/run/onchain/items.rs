//! A run's transactions, each with its compute-unit policy: the start (the run account created
//! and StartRun), the steps and CloseRun.

use crate::send::{Item, Units, MAX_COMPUTE_UNITS};
use solana_instruction::Instruction;

/// The labels of a run's transactions, as errors and reports name them.
pub const START_RUN: &str = "start run";
pub const STEP: &str = "step";
pub const CLOSE_RUN: &str = "close run";

/// The compute units each step transaction requests: above what the program lets a step use
/// (under 1,200,000, which the `compute_units` tests assert), below the transaction maximum
/// so that more steps fit a block (docs/client.md, "Compute-unit limits").
pub const STEP_UNITS: u32 = 1_250_000;

/// CloseRun's limit where a simulation cannot measure it.
pub const CLOSE_RUN_UNITS: u32 = 50_000;

/// The start: it asks for the most a transaction may (a text prompt is tokenized on chain),
/// with or without a price; its units depend on the prompt's form, so it is never measured.
pub fn start_item(instructions: Vec<Instruction>) -> Item {
    Item::new(START_RUN, Units::Fixed(MAX_COMPUTE_UNITS), instructions)
}

/// A step: every step asks for [`STEP_UNITS`], with or without a price (one step's units say
/// nothing of the next one's: another stage, a longer attention). A step advances its run
/// from wherever it stands, and one that lands after the run ended is refused, so no step is
/// a barrier.
pub fn step_item(step: Instruction) -> Item {
    Item::new(STEP, Units::Fixed(STEP_UNITS), vec![step])
}

/// CloseRun.
pub fn close_run_item(close: Instruction) -> Item {
    let units = Units::Measured {
        fallback: CLOSE_RUN_UNITS,
        floor: 0,
    };
    Item::new(CLOSE_RUN, units, vec![close])
}
