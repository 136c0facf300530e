//! A claim's answer computed off chain with curta-core: the generated ids exactly as a run's
//! state records them (an end token 1 or 2 included), the text as the program appends a run's
//! pieces, and the answer hash over both (`curta_interface::claim::answer_hash`). The same
//! inputs give the same bytes on chain: a dispute run of the claim is a run of these inputs.

use crate::run::{generate, Prompt};
use crate::send::transport::Transport;
use crate::Error;
use curta_core::infer::{RunError, Settings};
use curta_core::Artifact;
use curta_interface::claim::{answer_hash, ClaimHeader};
use curta_interface::instruction::{OwnedPrompt, Prompt as WirePrompt};
use curta_interface::run::{drawn_seed, find_slot_hash, SeedSource, SlotHashLookup};
use solana_pubkey::Pubkey;
use std::time::Instant;

/// An answer computed off chain.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Answer {
    pub prompt_tokens: Vec<u32>,
    /// The generated ids (the last may be the end token 1 or 2).
    pub ids: Vec<u32>,
    /// The pieces' bytes, concatenated.
    pub text: Vec<u8>,
    /// [`answer_hash`] of the ids and the text.
    pub hash: [u8; 32],
}

impl Answer {
    /// The answer of `ids` and `text` after `prompt_tokens`, with its hash.
    pub fn new(prompt_tokens: Vec<u32>, ids: Vec<u32>, text: Vec<u8>) -> Answer {
        let hash = answer_hash(&ids, &text);
        Answer {
            prompt_tokens,
            ids,
            text,
            hash,
        }
    }

    pub fn token_count(&self) -> u32 {
        self.ids.len() as u32
    }
}

/// Runs `prompt` for at most `steps` tokens with `settings` (the seed in force) on
/// `threads` threads: the answer, and the seconds the run took.
pub fn compute(
    artifact: &Artifact,
    prompt: &Prompt,
    steps: u32,
    settings: Settings,
    threads: usize,
) -> Result<(Answer, f64), RunError> {
    let prompt_tokens = prompt.tokens(artifact)?;
    let started = Instant::now();
    let mut text = Vec::new();
    let generation = generate(
        artifact,
        &prompt_tokens,
        steps,
        settings,
        threads.max(1),
        |_, piece| text.extend_from_slice(piece),
    )?;
    let seconds = started.elapsed().as_secs_f64();
    Ok((Answer::new(prompt_tokens, generation.tokens, text), seconds))
}

/// A claim's prompt, read from its wire bytes.
pub fn claim_prompt(header: &ClaimHeader) -> Option<Prompt> {
    Some(match header.prompt()? {
        WirePrompt::Text(text) => Prompt::Text(text.to_vec()),
        WirePrompt::Tokens(ids) => Prompt::Tokens(ids.iter().collect()),
    })
}

/// A prompt as OpenClaim and StartRun carry it.
pub fn owned_prompt(prompt: &Prompt) -> OwnedPrompt {
    match prompt {
        Prompt::Text(text) => OwnedPrompt::Text(text.clone()),
        Prompt::Tokens(ids) => OwnedPrompt::Tokens(ids.clone()),
    }
}

/// The settings an answered claim's answer was computed with: its temperature and top-p and
/// the seed in force (drawn at AnswerClaim, the claimer's when chosen, none when greedy).
pub fn claim_settings(header: &ClaimHeader) -> Settings {
    Settings {
        temperature: header.temperature,
        top_p: header.top_p,
        seed: match header.seed_source {
            SeedSource::None => 0,
            SeedSource::Chosen => header.claimer_seed,
            SeedSource::Drawn => header.seed,
        },
    }
}

/// What the SlotHashes sysvar says of a drawn claim's open slot: the seed AnswerClaim will
/// draw ([`drawn_seed`] with the claim's address where a run's stands), not yet (the slot has
/// not ended), or never (the slot has left the sysvar: the claim can no longer be answered).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DrawnSeed {
    Seed { seed: u64, slot_hash: [u8; 32] },
    NotYet,
    Gone,
}

/// Reads SlotHashes and derives the seed a drawn claim's AnswerClaim draws from `open_slot`.
pub async fn drawn_claim_seed<T: Transport>(
    t: &T,
    claim: &Pubkey,
    claimer_seed: u64,
    open_slot: u64,
) -> Result<DrawnSeed, Error> {
    let sysvar = solana_sdk::sysvar::slot_hashes::ID;
    let data = t.get_accounts(&[sysvar]).await?.remove(0).map(|a| a.data);
    Ok(match find_slot_hash(&data.unwrap_or_default(), open_slot) {
        SlotHashLookup::Found(slot_hash) => DrawnSeed::Seed {
            seed: drawn_seed(claimer_seed, claim, open_slot, &slot_hash),
            slot_hash,
        },
        SlotHashLookup::NotYet => DrawnSeed::NotYet,
        SlotHashLookup::Gone => DrawnSeed::Gone,
    })
}

/// The hex of a hash, for reports.
pub fn hex(bytes: &[u8; 32]) -> String {
    crate::artifact::hex(bytes)
}
