//! An example consumer of Curta runs: a question (a model, a prompt, the sampling settings)
//! gets the answer of a run of that model that anyone may drive, and the program records it
//! only when curta-interface's `trusted_run` holds for the question's model, prompt and
//! settings, with a seed drawn from the chain, for the very run bound to the question in the
//! slot it started in, pinned (start slot, token count, runner seed) at Bind (docs/program.md,
//! "Trusting a run" and "The example consumer's interface").
//!
//! Instructions (tag byte first):
//! - 0 Ask: the asker fills a zeroed question account of this program: the model's address,
//!   temperature and top-p (u32 each, 16 fractional bits, curta-core's ranges, temperature
//!   above 0), the expiry (u32 slots, MIN_EXPIRY to MAX_EXPIRY), the prompt's count (u32, 1 to
//!   32) and ids (u32 each).
//! - 1 Bind: the asker binds the question to a run of the Curta program whose seed will be
//!   drawn, in the slot the run started in (the start slot's hash, hence the seed, does not
//!   exist yet: nobody can know the answer when the run is chosen), and records its pin.
//! - 2 Record: anyone records the bound run's answer once the run has finished.
//! - 3 Release: anyone unbinds a question whose bound run did not answer, from the run's start
//!   slot plus the question's expiry on; the asker may bind it again.
//! - 4 Close: the asker closes an asked or answered question and receives every lamport.
//! - 5 BindClaim: the asker binds the question to a claim of the Curta program whose seed will
//!   be drawn, in the claim's open slot, and records its pin (open slot, steps, claimer seed).
//! - 6 RecordClaim: anyone records the bound claim's answer, carried in the instruction (the
//!   ids, then the text), once the claim is settled with a window of at least
//!   MIN_CLAIM_WINDOW and the answer hashes to the claim's. Release unbinds a claim that is not
//!   settled (or was overturned) after the expiry, as a run.
#![no_std]

#[cfg(not(target_os = "solana"))]
extern crate alloc;

mod claims;
#[cfg(all(target_os = "solana", not(feature = "no-entrypoint")))]
mod entrypoint;
pub mod error;
pub mod instruction;
pub mod processor;
pub mod state;

/// The consumer's program id bytes (`kby4HFv6LQXDCjcoktcJo8B3YPpWCV31NcLuDmHSn1Z`; any id it is
/// deployed at works: the program reads its own from the runtime).
pub const ID: [u8; 32] = [
    11, 43, 130, 243, 147, 149, 27, 138, 133, 113, 95, 255, 176, 72, 27, 236, 154, 228, 0, 250,
    212, 173, 101, 108, 167, 109, 206, 104, 161, 92, 39, 220,
];
