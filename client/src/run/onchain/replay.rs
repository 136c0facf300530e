//! `client run --from-run <RUN>`: a run account recomputed off chain from its own fields (the
//! model, the prompt ids, the token count, the temperature, top-p and the seed in force) and
//! the sealed model's accounts, compared byte for byte with what the chain holds.

use super::account::{read_run, Found};
use super::expected::{expected, follow_encoding, generated, Shadow};
use super::request::source_name;
use crate::model::{fetch_sealed, FetchError};
use crate::send::transport::Transport;
use crate::Error;
use curta_core::infer::state::field;
use curta_core::infer::{encode, Encoding, Model, Run, RunError, Settings};
use curta_core::le::u32_at;
use curta_interface::run::{
    drawn_seed, find_slot_hash, RunHeader, SeedSource, SlotHashLookup, MAX_STEP_BUDGET,
};
use solana_pubkey::Pubkey;

/// Why a run could not be recomputed (a disagreement is not an error: see [`Replay::agrees`]).
#[derive(Debug, thiserror::Error)]
pub enum ReplayError {
    #[error(transparent)]
    Client(#[from] Error),
    #[error(transparent)]
    Fetch(#[from] FetchError),
    #[error("run account {address}: {problem}")]
    NotARun { address: Pubkey, problem: String },
    #[error("run account {address}: its state cannot be recomputed: {error}")]
    State { address: Pubkey, error: RunError },
}

/// A run recomputed off chain, beside the chain's.
#[derive(Clone, Debug, serde::Serialize)]
pub struct Replay {
    pub run: String,
    pub model: String,
    pub runner: String,
    pub nonce: u32,
    /// "tokenizing its prompt" (a text prompt's encoding still continued by Steps), "running",
    /// "ended by token" or "steps done".
    pub status: &'static str,
    pub seed_source: &'static str,
    pub runner_seed: u64,
    pub start_slot: u64,
    pub seed_slot: u64,
    pub slot_hash: String,
    pub seed: u64,
    /// A drawn seed: whether SHA-256 of the header's runner seed, run address, slot and slot
    /// hash gives the header's seed (None for other sources, or a seed not drawn yet).
    pub seed_derivation_agrees: Option<bool>,
    /// Whether the cluster's SlotHashes still holds the seed's slot, and with the header's
    /// hash (None: the slot has left it, or no seed was drawn).
    pub slot_hash_agrees: Option<bool>,
    pub temperature: u32,
    pub top_p: u32,
    pub prompt_tokens: Vec<u32>,
    /// The generated ids the chain holds, and curta-core's for as many.
    pub chain_tokens: Vec<u32>,
    pub offline_tokens: Vec<u32>,
    pub tokens_agree: bool,
    pub text_agrees: bool,
    /// Every byte of the state buffer equal to curta-core's at the chain's point of progress
    /// (or how they differ).
    pub state: Result<(), String>,
    #[serde(skip)]
    pub chain_text: Vec<u8>,
    #[serde(skip)]
    pub offline_text: Vec<u8>,
}

impl Replay {
    /// The run's own fields as its header holds them; nothing recomputed yet (no tokens, no
    /// checks, the state not compared).
    fn of_header(address: &Pubkey, header: &RunHeader) -> Replay {
        Replay {
            run: address.to_string(),
            model: header.model.to_string(),
            runner: header.runner.to_string(),
            nonce: header.nonce,
            status: "running",
            seed_source: source_name(header.seed_source),
            runner_seed: header.runner_seed,
            start_slot: header.start_slot,
            seed_slot: header.seed_slot,
            slot_hash: crate::artifact::hex(&header.slot_hash),
            seed: header.seed,
            seed_derivation_agrees: None,
            slot_hash_agrees: None,
            temperature: header.temperature,
            top_p: header.top_p,
            prompt_tokens: vec![],
            chain_tokens: vec![],
            offline_tokens: vec![],
            tokens_agree: false,
            text_agrees: false,
            state: Err("not compared".into()),
            chain_text: header.text.clone(),
            offline_text: vec![],
        }
    }

    /// Every token, byte of text and byte of state agrees, and the drawn seed (if any) is the
    /// hash of the header's fields.
    pub fn agrees(&self) -> bool {
        self.tokens_agree
            && self.text_agrees
            && self.state.is_ok()
            && self.seed_derivation_agrees != Some(false)
            && self.slot_hash_agrees != Some(false)
    }
}

/// Reads the run at `address`, recomputes it from its fields and the sealed model, and
/// compares.
pub async fn replay<T: Transport>(t: &T, address: &Pubkey) -> Result<Replay, ReplayError> {
    let header = read_header(t, address).await?;
    let (file, _) = fetch_sealed(t, &header.model).await?;
    let artifact = curta_core::decode(&file).map_err(Error::Artifact)?;
    let model = Model::from_artifact(&artifact).map_err(|error| ReplayError::State {
        address: *address,
        error,
    })?;
    let state_error = |error| ReplayError::State {
        address: *address,
        error,
    };
    if header.encoding {
        return tokenizing(address, &header, &model).map_err(state_error);
    }
    let mut state = header.state.clone();
    let run = Run::resume(&mut state, &model).map_err(state_error)?;
    let prompt: Vec<u32> = (0..run.prompt_len()).map(|i| run.token(i)).collect();
    let steps = u32_at(&header.state, field::STEPS);
    let status = match u32_at(&header.state, field::STATUS) {
        0 => "running",
        1 => "ended by token",
        _ => "steps done",
    };
    let drawn = header.seed_source == SeedSource::Drawn;
    let settings = Settings {
        temperature: header.temperature,
        top_p: header.top_p,
        // Not drawn yet: nothing was sampled, and the expected start is the chain's (RNG 0).
        seed: match (drawn, header.seed) {
            (true, 0) => 1,
            (_, seed) => seed,
        },
    };
    let mut offline =
        expected(&artifact, &prompt, steps, settings, MAX_STEP_BUDGET).map_err(state_error)?;
    if drawn && header.seed == 0 {
        offline.start[field::RNG..][..8].fill(0);
    }
    let chain_tokens = generated(&model, &header.state).map_err(state_error)?;
    let count = chain_tokens.len();
    let offline_tokens: Vec<u32> = offline.tokens.iter().take(count).copied().collect();
    let finished = status != "running";
    let tokens_agree =
        chain_tokens == offline_tokens && (!finished || count == offline.tokens.len());
    let offline_text = offline.text_of(count);
    let mut shadow = Shadow::new(&model, offline.start.clone());
    let state = shadow.follow(&header.state);

    let (seed_derivation_agrees, slot_hash_agrees) = seed_checks(t, address, &header).await?;
    Ok(Replay {
        status,
        seed_derivation_agrees,
        slot_hash_agrees,
        prompt_tokens: prompt,
        chain_tokens,
        offline_tokens,
        tokens_agree,
        text_agrees: header.text == offline_text,
        state,
        offline_text,
        ..Replay::of_header(address, &header)
    })
}

/// The run at `address`, or why there is none.
async fn read_header<T: Transport>(t: &T, address: &Pubkey) -> Result<Box<RunHeader>, ReplayError> {
    let not_a_run = |problem: &str| ReplayError::NotARun {
        address: *address,
        problem: problem.into(),
    };
    match read_run(t, address).await? {
        Found::Run(header, _, _) => Ok(header),
        Found::Nothing => Err(not_a_run("no account there")),
        Found::Funded(_) => Err(not_a_run("lamports and no data: no run")),
        Found::Unstarted { .. } => Err(not_a_run("its StartRun never landed: no run")),
        Found::Foreign { owner, .. } if owner == t.program_id() => Err(not_a_run(&format!(
            "an account of program {owner} that is not a run (magic CURTARUN, layout version 2, lengths)"
        ))),
        Found::Foreign { owner, .. } => Err(not_a_run(&format!(
            "owned by {owner}, not a run of program {}",
            t.program_id()
        ))),
    }
}

/// A drawn seed's checks (None for other sources, or a seed not drawn yet): whether SHA-256
/// of the header's fields gives its seed, and whether the cluster's SlotHashes holds the
/// seed's slot with the header's hash (None once the slot has left it).
async fn seed_checks<T: Transport>(
    t: &T,
    address: &Pubkey,
    header: &RunHeader,
) -> Result<(Option<bool>, Option<bool>), Error> {
    if header.seed_source != SeedSource::Drawn || header.seed == 0 {
        return Ok((None, None));
    }
    let derived = drawn_seed(
        header.runner_seed,
        address,
        header.seed_slot,
        &header.slot_hash,
    ) == header.seed
        && header.seed_slot == header.start_slot;
    let sysvar = curta_interface::instruction::SLOT_HASHES;
    let data = t.get_accounts(&[sysvar]).await?.remove(0).map(|a| a.data);
    let slot_hash = match data.map(|d| find_slot_hash(&d, header.seed_slot)) {
        Some(SlotHashLookup::Found(hash)) => Some(hash == header.slot_hash),
        _ => None,
    };
    Ok((Some(derived), slot_hash))
}

/// A run still tokenizing its text prompt: its encoding against curta-core's at the point the
/// chain reached (the prompt's ids are curta-core's encoding of the text it holds; nothing was
/// generated or drawn yet).
fn tokenizing(address: &Pubkey, header: &RunHeader, model: &Model) -> Result<Replay, RunError> {
    let meta = model.metadata();
    let mut bytes = header.state.clone();
    let text = Encoding::resume(&mut bytes)
        .map(|e| e.text().to_vec())
        .ok_or(RunError::NotAState)?;
    let mut ids = vec![0u32; text.len() + 2];
    let n = encode(meta, &text, &mut ids)?;
    ids.truncate(n);
    Ok(Replay {
        status: "tokenizing its prompt",
        prompt_tokens: ids,
        tokens_agree: true,
        text_agrees: header.text.is_empty(),
        state: follow_encoding(meta, &text, &header.state),
        ..Replay::of_header(address, header)
    })
}
