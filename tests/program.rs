//! The Curta program's SBF binary in solana-program-test's VM: the life cycle on the real
//! stories260K artifact, the largest weight account, a mismatch and its repair, the attack
//! suite, rent and instruction data. One test binary (each links solana-program-test).

#[path = "program/harness.rs"]
mod harness;

#[path = "program/lifecycle.rs"]
mod lifecycle;

#[path = "program/max_account.rs"]
mod max_account;

#[path = "program/mismatch.rs"]
mod mismatch;

#[path = "program/packet.rs"]
mod packet;

#[path = "program/attacks.rs"]
mod attacks;

#[path = "program/rent.rs"]
mod rent;

#[path = "program/instruction_data.rs"]
mod instruction_data;

#[path = "program/layout.rs"]
mod layout;

#[path = "program/fixtures.rs"]
mod fixtures;

#[path = "program/many_sections.rs"]
mod many_sections;

#[path = "program/attacks_more.rs"]
mod attacks_more;

#[path = "program/compute_units.rs"]
mod compute_units;

#[path = "program/elf.rs"]
mod elf;

// The binaries through the loader and verifier of a deployment: SBPF v0 and v3.
#[path = "program/sbpf.rs"]
mod sbpf;

#[path = "program/review.rs"]
mod review;

#[path = "program/runs.rs"]
mod runs;

#[path = "program/order.rs"]
mod order;

#[path = "program/traps.rs"]
mod traps;

#[path = "program/run_refusals.rs"]
mod run_refusals;

// A run's seed: drawn from the start slot's hash, chosen, or none.
#[path = "program/seed.rs"]
mod seed;

// The example consumer of runs beside the program (programs/curta-consumer).
#[path = "program/consumer.rs"]
mod consumer;

// Claims: opened with a bond, answered, settled or challenged and re-run on chain.
#[path = "program/claims.rs"]
mod claims;

#[path = "program/claim_refusals.rs"]
mod claim_refusals;

#[path = "program/consumer_claims.rs"]
mod consumer_claims;
