//! A claim's transactions, each with its label and compute-unit policy: the open (the claim
//! account created with its rent and the bond, and OpenClaim), the answer, the challenge (the
//! dispute run's account created and Challenge), Resolve and CloseClaim.

use crate::send::{Item, Units, MAX_COMPUTE_UNITS};
use curta_interface::claim::{claim_seed, CLAIM_HEADER_LEN};
use curta_interface::instruction::{self as ix, ClaimTerms, OwnedPrompt};
use curta_interface::run::run_seed;
use solana_pubkey::Pubkey;

pub const OPEN_CLAIM: &str = "open claim";
pub const ANSWER_CLAIM: &str = "answer claim";
pub const CHALLENGE: &str = "challenge";
pub const RESOLVE: &str = "resolve";
pub const CLOSE_CLAIM: &str = "close claim";

/// The limit of a claim transaction whose simulation could not measure it (an AnswerClaim
/// simulated in its open slot, a Resolve before the dispute ended): OpenClaim reads the
/// prompt's ids against the vocabulary, AnswerClaim hashes a 90-byte preimage, Resolve hashes
/// the dispute run's ids and text; each is far below this.
pub const CLAIM_UNITS: u32 = 200_000;

fn measured() -> Units {
    Units::Measured {
        fallback: CLAIM_UNITS,
        floor: 0,
    }
}

/// The open: `create_account_with_seed` (base and funder the claimer, owner the program, the
/// rent and the bond) and OpenClaim, in one transaction.
#[allow(clippy::too_many_arguments)]
pub fn open_item(
    program: &Pubkey,
    claim: &Pubkey,
    claimer: &Pubkey,
    model: &Pubkey,
    terms: &ClaimTerms,
    prompt: &OwnedPrompt,
    prompt_len: usize,
    lamports: u64,
) -> Item {
    let create = solana_system_interface::instruction::create_account_with_seed(
        claimer,
        claim,
        claimer,
        &claim_seed(model, terms.nonce),
        lamports,
        (CLAIM_HEADER_LEN + prompt_len) as u64,
        program,
    );
    let open = ix::open_claim(program, claim, claimer, model, terms, prompt);
    Item::new(
        OPEN_CLAIM,
        Units::MeasuredEach {
            fallback: CLAIM_UNITS,
            floor: 0,
        },
        vec![create, open],
    )
    .about(format!("claim {claim}"))
}

pub fn answer_item(
    program: &Pubkey,
    claim: &Pubkey,
    claimer: &Pubkey,
    token_count: u32,
    hash: &[u8; 32],
) -> Item {
    let answer = ix::answer_claim(program, claim, claimer, token_count, hash);
    Item::new(ANSWER_CLAIM, measured(), vec![answer]).about(format!("claim {claim}"))
}

/// The challenge: the dispute run's account created at the challenger's run address of the
/// model and `nonce` (its rent-exempt minimum) and Challenge, which starts the run (a text
/// prompt tokenized as StartRun does): it asks for the most a transaction may, as a run's
/// start does.
#[allow(clippy::too_many_arguments)]
pub fn challenge_item(
    program: &Pubkey,
    claim: &Pubkey,
    challenger: &Pubkey,
    run: &Pubkey,
    model: &Pubkey,
    section_zero: &Pubkey,
    nonce: u32,
    run_len: u64,
    rent: u64,
) -> Item {
    let create = solana_system_interface::instruction::create_account_with_seed(
        challenger,
        run,
        challenger,
        &run_seed(model, nonce),
        rent,
        run_len,
        program,
    );
    let challenge = ix::challenge(program, claim, challenger, run, model, section_zero, nonce);
    Item::new(
        CHALLENGE,
        Units::Fixed(MAX_COMPUTE_UNITS),
        vec![create, challenge],
    )
    .about(format!("claim {claim} (dispute run {run})"))
}

pub fn resolve_item(
    program: &Pubkey,
    claim: &Pubkey,
    run: &Pubkey,
    claimer: &Pubkey,
    challenger: &Pubkey,
) -> Item {
    let resolve = ix::resolve(program, claim, run, claimer, challenger);
    Item::new(RESOLVE, measured(), vec![resolve])
        .about(format!("claim {claim} (dispute run {run})"))
}

pub fn close_item(program: &Pubkey, claim: &Pubkey, claimer: &Pubkey) -> Item {
    let close = ix::close_claim(program, claim, claimer);
    Item::new(CLOSE_CLAIM, measured(), vec![close]).about(format!("claim {claim}"))
}
