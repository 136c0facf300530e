//! The claim instructions' builders (OpenClaim to CloseClaim), for clients and tests.

use alloc::vec;
use solana_instruction::{AccountMeta, Instruction};
use solana_pubkey::Pubkey;

use super::builders::{instruction, OwnedPrompt, SLOT_HASHES, SYSTEM_PROGRAM};
use super::{CurtaInstruction, SeedSource};

/// What OpenClaim fixes of a claim besides its model and prompt.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ClaimTerms {
    pub nonce: u32,
    pub steps: u32,
    pub settings: curta_core::infer::Settings,
    pub source: SeedSource,
    /// Slots after the answer during which anyone may challenge.
    pub window: u32,
    /// Micro-lamports per compute unit the bond covers a dispute's steps at.
    pub priority_price: u64,
    /// Lamports: at least `cost::claim_bond`.
    pub bond: u64,
}

/// OpenClaim: the claim account (created by the claimer with its rent and the bond, writable),
/// the claimer (signer) and the Sealed model.
pub fn open_claim(
    program_id: &Pubkey,
    claim: &Pubkey,
    claimer: &Pubkey,
    model: &Pubkey,
    terms: &ClaimTerms,
    prompt: &OwnedPrompt,
) -> Instruction {
    instruction(
        program_id,
        vec![
            AccountMeta::new(*claim, false),
            AccountMeta::new_readonly(*claimer, true),
            AccountMeta::new_readonly(*model, false),
        ],
        &CurtaInstruction::OpenClaim {
            nonce: terms.nonce,
            steps: terms.steps,
            temperature: terms.settings.temperature,
            top_p: terms.settings.top_p,
            seed: terms.settings.seed,
            seed_source: terms.source,
            window: terms.window,
            priority_price: terms.priority_price,
            bond: terms.bond,
            prompt: prompt.as_wire(),
        },
    )
}

/// AnswerClaim: the answer's generated ids' count and hash (`claim::answer_hash`).
pub fn answer_claim(
    program_id: &Pubkey,
    claim: &Pubkey,
    claimer: &Pubkey,
    token_count: u32,
    answer_hash: &[u8; 32],
) -> Instruction {
    instruction(
        program_id,
        vec![
            AccountMeta::new(*claim, false),
            AccountMeta::new_readonly(*claimer, true),
            AccountMeta::new_readonly(SLOT_HASHES, false),
        ],
        &CurtaInstruction::AnswerClaim {
            token_count,
            answer_hash,
        },
    )
}

/// Challenge: the challenger (signer, writable: it pays the bond) starts the dispute run in
/// the run account it created at `run::run_address(program, challenger, model, nonce)`.
pub fn challenge(
    program_id: &Pubkey,
    claim: &Pubkey,
    challenger: &Pubkey,
    run: &Pubkey,
    model: &Pubkey,
    section_zero: &Pubkey,
    nonce: u32,
) -> Instruction {
    instruction(
        program_id,
        vec![
            AccountMeta::new(*claim, false),
            AccountMeta::new(*challenger, true),
            AccountMeta::new(*run, false),
            AccountMeta::new_readonly(*model, false),
            AccountMeta::new_readonly(*section_zero, false),
            AccountMeta::new_readonly(SYSTEM_PROGRAM, false),
        ],
        &CurtaInstruction::Challenge { nonce },
    )
}

/// Resolve: anyone sends it; the claimer and the challenger receive lamports.
pub fn resolve(
    program_id: &Pubkey,
    claim: &Pubkey,
    run: &Pubkey,
    claimer: &Pubkey,
    challenger: &Pubkey,
) -> Instruction {
    instruction(
        program_id,
        vec![
            AccountMeta::new(*claim, false),
            AccountMeta::new(*run, false),
            AccountMeta::new(*claimer, false),
            AccountMeta::new(*challenger, false),
        ],
        &CurtaInstruction::Resolve {},
    )
}

/// CloseClaim: every lamport of the claim to the claimer (signer).
pub fn close_claim(program_id: &Pubkey, claim: &Pubkey, claimer: &Pubkey) -> Instruction {
    instruction(
        program_id,
        vec![
            AccountMeta::new(*claim, false),
            AccountMeta::new(*claimer, true),
        ],
        &CurtaInstruction::CloseClaim {},
    )
}
