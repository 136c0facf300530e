//! The rules a consumer applies before it relies on a sealed model or a run (docs/program.md,
//! "Trusting a run"). Both read account bytes in place, allocate nothing and run on chain
//! (another program checking the accounts of its own instruction) as off chain.

use curta_core::infer::state::{field, StateLayout, STATE_HEADER_LEN, STATE_TAG};
use curta_core::le::{u32_at, u64_at};
use curta_core::Config;

use crate::claim::{claim_seed_bytes, ClaimState, ClaimView};
use crate::error::CurtaError;
use crate::instruction::Prompt;
use crate::run::{
    run_field, run_seed_bytes, SeedSource, RUN_HEADER_LEN, RUN_MAGIC, RUN_VERSION, TEXT_PER_STEP,
};
use crate::state::{check_model, model_field, Address, ModelState, MODEL_SEED};

/// Why a run (or a model) is not trusted.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum Distrust {
    #[error("the account is not owned by the Curta program")]
    WrongOwner,
    #[error("the account is not a Curta run (magic, layout version 2, lengths, state tag)")]
    NotARun,
    #[error("the account is not at the run address of its runner, model and nonce")]
    RunAddressMismatch,
    #[error("the run is of another model than the expected one")]
    WrongModel,
    #[error("the run has not finished (status 0): its tokens may still change")]
    NotFinished,
    #[error("the run's prompt is not the expected one")]
    WrongPrompt,
    #[error("the run's temperature or top-p is not the expected one")]
    WrongSettings,
    #[error("the run's seed was chosen by its runner, and the rule requires one nobody chose")]
    ChosenSeed,
    #[error("the run is greedy, and the rule requires a seed drawn from the chain")]
    NoSeed,
    #[error("the run started in another slot than the expected one (closed and created again at the same address?)")]
    WrongStartSlot,
    #[error("the model account is not a Sealed model of the program at the address of the expected authority and weights hash: {0}")]
    Model(CurtaError),
    #[error("the run's token count is not the pinned one (closed and created again at the same address in the same slot?)")]
    WrongSteps,
    #[error("the run's runner seed is not the pinned one (closed and created again at the same address in the same slot?)")]
    WrongRunnerSeed,
    #[error("the account is not a Curta claim (magic, version, state, prompt)")]
    NotAClaim,
    #[error("the account is not at the claim address of its claimer, model and nonce")]
    ClaimAddressMismatch,
    #[error("the claim is not settled: unanswered, within its challenge window, or challenged")]
    NotSettled,
    #[error("the claim was overturned: its dispute run disagreed with its answer")]
    Overturned,
    #[error("the claim's challenge window is shorter than the rule requires")]
    WindowTooShort,
    #[error("the answer given is not the claim's (its token count or its hash)")]
    WrongAnswer,
}

impl Distrust {
    /// The variant's number, in declaration order (0 `WrongOwner` ... 10 `Model`, 11
    /// `WrongSteps`, 12 `WrongRunnerSeed`, 13 `NotAClaim` ... 18 `WrongAnswer`): for a
    /// consumer's error codes.
    pub fn index(self) -> u32 {
        match self {
            Distrust::WrongOwner => 0,
            Distrust::NotARun => 1,
            Distrust::RunAddressMismatch => 2,
            Distrust::WrongModel => 3,
            Distrust::NotFinished => 4,
            Distrust::WrongPrompt => 5,
            Distrust::WrongSettings => 6,
            Distrust::ChosenSeed => 7,
            Distrust::NoSeed => 8,
            Distrust::WrongStartSlot => 9,
            Distrust::Model(_) => 10,
            Distrust::WrongSteps => 11,
            Distrust::WrongRunnerSeed => 12,
            Distrust::NotAClaim => 13,
            Distrust::ClaimAddressMismatch => 14,
            Distrust::NotSettled => 15,
            Distrust::Overturned => 16,
            Distrust::WindowTooShort => 17,
            Distrust::WrongAnswer => 18,
        }
    }
}

/// Which seed sources a consumer accepts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SeedRule {
    /// Any: drawn, chosen or none (greedy).
    Any,
    /// A seed nobody chose: drawn from the chain, or a greedy run (no seed at all).
    NotChosen,
    /// Drawn from the chain only (a sampled run whose seed the runner did not choose).
    Drawn,
}

/// What a consumer expects of a run.
#[derive(Clone, Copy, Debug)]
pub struct RunRule<'a> {
    /// The model's address: the PDA of the expected authority and weights hash
    /// ([`model_is_trusted`] checks a model account against them).
    pub model: &'a Address,
    /// The prompt's token ids, if one is required.
    pub prompt: Option<&'a [u32]>,
    /// (temperature, top-p) with 16 fractional bits, if required.
    pub settings: Option<(u32, u32)>,
    pub seed: SeedRule,
    /// The run as the consumer recorded it before its seed could be known ([`RunPin::of`]),
    /// if any: a run closed and created again at the same address differs from it in its start
    /// slot (a later slot), or, in the same slot, in its token count or runner seed.
    pub pin: Option<RunPin>,
}

/// What StartRun fixed of a run that the run's address, model, prompt, settings and seed
/// source do not: the slot it started in, its token count and the runner's seed. A runner may
/// close its run and start it again at the same address with the same model, prompt and
/// settings; in a later slot it has another start slot, and in the *same* slot (the same
/// start slot, hence, with the same runner seed, the same drawn seed) it may have fewer steps
/// (the same answer cut short) or another runner seed (another drawn seed). A consumer that
/// binds a run before its seed is drawn records the three ([`RunPin::of`] the run it binds)
/// and requires them when it relies on the run ([`RunRule::pin`]): the run it reads is then
/// the one it bound, or one identical to it in every input the program takes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RunPin {
    /// The slot StartRun landed in (`WrongStartSlot`).
    pub start_slot: u64,
    /// The most tokens the run may generate, as StartRun was given (`WrongSteps`).
    pub steps: u32,
    /// The runner's seed, an input of a drawn seed (`WrongRunnerSeed`).
    pub runner_seed: u64,
}

impl RunPin {
    /// The pin of a run as it is now.
    // Inlined: SBF returns one register, so no call may return this aggregate.
    #[inline(always)]
    pub fn of(run: &RunView) -> RunPin {
        RunPin {
            start_slot: run.start_slot(),
            steps: run.steps(),
            runner_seed: run.runner_seed(),
        }
    }

    /// Whether `run` is the pinned run: its start slot (`WrongStartSlot`), token count
    /// (`WrongSteps`) and runner seed (`WrongRunnerSeed`) are the pin's.
    #[inline(always)]
    pub fn check(&self, run: &RunView) -> Result<(), Distrust> {
        if run.start_slot() != self.start_slot {
            return Err(Distrust::WrongStartSlot);
        }
        if run.steps() != self.steps {
            return Err(Distrust::WrongSteps);
        }
        if run.runner_seed() != self.runner_seed {
            return Err(Distrust::WrongRunnerSeed);
        }
        Ok(())
    }
}

/// A run account's fields, read in place: what [`read_run`] and [`trusted_run`] return.
#[derive(Clone, Copy, Debug)]
pub struct RunView<'d> {
    data: &'d [u8],
    layout: StateLayout,
}

impl<'d> RunView<'d> {
    fn state(&self) -> &'d [u8] {
        &self.data[RUN_HEADER_LEN..]
    }

    pub fn runner(&self) -> &'d Address {
        address_at(self.data, run_field::RUNNER)
    }

    pub fn model(&self) -> &'d Address {
        address_at(self.data, run_field::MODEL)
    }

    pub fn nonce(&self) -> u32 {
        u32_at(self.data, run_field::NONCE)
    }

    /// 1: ended by token 1 or 2; 2: every step of the token count done.
    pub fn status(&self) -> u32 {
        u32_at(self.state(), field::STATUS)
    }

    pub fn seed_source(&self) -> SeedSource {
        // Checked by `trusted_run`.
        SeedSource::from_u8(self.data[run_field::SEED_SOURCE]).unwrap_or(SeedSource::None)
    }

    /// The seed in force (0 for a greedy run).
    pub fn seed(&self) -> u64 {
        u64_at(self.data, run_field::SEED)
    }

    /// The slot whose hash a drawn seed came from (0 until drawn).
    pub fn seed_slot(&self) -> u64 {
        u64_at(self.data, run_field::SEED_SLOT)
    }

    pub fn start_slot(&self) -> u64 {
        u64_at(self.data, run_field::START_SLOT)
    }

    /// The most tokens the run may generate (its token count as StartRun was given): its text
    /// capacity over `TEXT_PER_STEP`.
    pub fn steps(&self) -> u32 {
        u32_at(self.data, run_field::TEXT_CAPACITY) / TEXT_PER_STEP as u32
    }

    /// The runner's seed as StartRun was given (a drawn seed's input; chosen: the seed).
    pub fn runner_seed(&self) -> u64 {
        u64_at(self.data, run_field::RUNNER_SEED)
    }

    pub fn temperature(&self) -> u32 {
        u32_at(self.data, run_field::TEMPERATURE)
    }

    pub fn top_p(&self) -> u32 {
        u32_at(self.data, run_field::TOP_P)
    }

    pub fn prompt_len(&self) -> usize {
        u32_at(self.state(), field::PROMPT_LEN) as usize
    }

    /// How many tokens the run generated (the last may be the end token 1 or 2).
    pub fn generated_len(&self) -> usize {
        u32_at(self.state(), field::GENERATED) as usize
    }

    /// Token `i` of the run: the prompt's first, then the generated ones.
    pub fn token(&self, i: usize) -> u32 {
        u32_at(self.state(), self.layout.tokens + 4 * i)
    }

    /// Generated token `i`.
    pub fn generated(&self, i: usize) -> u32 {
        self.token(self.prompt_len() + i)
    }

    /// The generated ids' bytes (u32 little-endian each), in place: what a claim's answer hash
    /// hashes before the text.
    pub fn generated_bytes(&self) -> &'d [u8] {
        let at = self.layout.tokens + 4 * self.prompt_len();
        self.state()
            .get(at..at + 4 * self.generated_len())
            .unwrap_or(&[])
    }

    /// The text of the generated tokens.
    pub fn text(&self) -> &'d [u8] {
        let state_len = u32_at(self.data, run_field::STATE_LEN) as usize;
        let text_len = u32_at(self.data, run_field::TEXT_LEN) as usize;
        &self.data[RUN_HEADER_LEN + state_len..][..text_len]
    }
}

fn address_at(data: &[u8], at: usize) -> &Address {
    data[at..at + 32].try_into().unwrap_or(&[0; 32])
}

/// The run account's bytes as the program writes them: magic, version 2, a known seed source,
/// the declared lengths equal to the data's, a state buffer with its tag, a configuration
/// whose layout is the declared state length, and prompt and generated counts within it.
// Inlined: SBF returns one register, so no call may return this aggregate.
#[inline(always)]
fn parse_run(data: &[u8]) -> Option<RunView<'_>> {
    if data.len() < RUN_HEADER_LEN
        || data[run_field::MAGIC..run_field::MAGIC + 8] != RUN_MAGIC
        || data[run_field::VERSION] != RUN_VERSION
    {
        return None;
    }
    SeedSource::from_u8(data[run_field::SEED_SOURCE])?;
    let state_len = u32_at(data, run_field::STATE_LEN) as u64;
    let capacity = u32_at(data, run_field::TEXT_CAPACITY) as u64;
    let text_len = u32_at(data, run_field::TEXT_LEN) as u64;
    if RUN_HEADER_LEN as u64 + state_len + capacity != data.len() as u64
        || text_len > capacity
        || state_len < STATE_HEADER_LEN as u64
    {
        return None;
    }
    let state = &data[RUN_HEADER_LEN..];
    if state[..8] != STATE_TAG {
        return None;
    }
    let config = Config::from_fields(core::array::from_fn(|i| {
        u32_at(state, field::CONFIG + 4 * i)
    }));
    if config.validate().is_err() {
        return None;
    }
    let layout = StateLayout::new(&config);
    let (prompt, generated) = (
        u32_at(state, field::PROMPT_LEN) as u64,
        u32_at(state, field::GENERATED) as u64,
    );
    if layout.len as u64 != state_len || prompt + generated > config.context_length as u64 + 1 {
        return None;
    }
    Some(RunView { data, layout })
}

/// A run of `program_id` at any point: the account at `address` (its `owner` and `data`) is
/// the program's (`WrongOwner`), a run (`NotARun`: magic, version 2, lengths, state tag and
/// configuration), at the run address of its runner, model and nonce (`RunAddressMismatch`).
// Inlined: SBF returns one register, so no call may return this aggregate.
#[inline(always)]
pub fn read_run<'d>(
    program_id: &Address,
    address: &Address,
    owner: &Address,
    data: &'d [u8],
) -> Result<RunView<'d>, Distrust> {
    if owner != program_id {
        return Err(Distrust::WrongOwner);
    }
    let run = parse_run(data).ok_or(Distrust::NotARun)?;
    let seed = run_seed_bytes(run.model(), run.nonce());
    if create_with_seed(run.runner(), &seed, program_id).as_ref() != Some(address) {
        return Err(Distrust::RunAddressMismatch);
    }
    Ok(run)
}

/// A consumer's check before it relies on a run: [`read_run`]'s, then the run is of the
/// rule's model (`WrongModel`),
/// finished with status 1 or 2 (`NotFinished`), with the rule's prompt, settings, seed
/// source and pin (start slot, token count, runner seed: [`RunPin::check`]) where the rule
/// names them. What it returns reads the run's tokens, text and seed in place.
///
/// A run can be closed and created again at the same address: a consumer that acts on a run
/// in a later transaction than the one that checked it must check it again there (and, to
/// rule out a runner who aborts runs it dislikes, pin the run before its seed is drawn:
/// [`RunRule::pin`]).
// Inlined: SBF returns one register, so no call may return this aggregate.
#[inline(always)]
pub fn trusted_run<'d>(
    program_id: &Address,
    address: &Address,
    owner: &Address,
    data: &'d [u8],
    rule: &RunRule,
) -> Result<RunView<'d>, Distrust> {
    let run = read_run(program_id, address, owner, data)?;
    if run.model() != rule.model {
        return Err(Distrust::WrongModel);
    }
    if !matches!(run.status(), 1 | 2) {
        return Err(Distrust::NotFinished);
    }
    if let Some(prompt) = rule.prompt {
        let same = run.prompt_len() == prompt.len()
            && prompt.iter().enumerate().all(|(i, &id)| run.token(i) == id);
        if !same {
            return Err(Distrust::WrongPrompt);
        }
    }
    if let Some((temperature, top_p)) = rule.settings {
        if (run.temperature(), run.top_p()) != (temperature, top_p) {
            return Err(Distrust::WrongSettings);
        }
    }
    seed_allowed(rule.seed, run.seed_source())?;
    if let Some(pin) = rule.pin {
        pin.check(&run)?;
    }
    Ok(run)
}

#[inline(always)]
fn seed_allowed(rule: SeedRule, source: SeedSource) -> Result<(), Distrust> {
    match (rule, source) {
        (SeedRule::Any, _) | (_, SeedSource::Drawn) | (SeedRule::NotChosen, SeedSource::None) => {
            Ok(())
        }
        (_, SeedSource::Chosen) => Err(Distrust::ChosenSeed),
        (SeedRule::Drawn, SeedSource::None) => Err(Distrust::NoSeed),
    }
}

/// What a consumer expects of a claim.
#[derive(Clone, Copy, Debug)]
pub struct ClaimRule<'a> {
    /// The model's address ([`model_is_trusted`] checks a model account).
    pub model: &'a Address,
    /// The prompt (text or ids, as the claim carries it), if one is required.
    pub prompt: Option<Prompt<'a>>,
    /// (temperature, top-p) with 16 fractional bits, if required.
    pub settings: Option<(u32, u32)>,
    pub seed: SeedRule,
    /// The shortest challenge window the consumer accepts, in slots: the time its watchers
    /// need to see and challenge a wrong answer.
    pub min_window: u32,
}

/// A claim of `program_id` in any state: the account at `address` is the program's
/// (`WrongOwner`), a claim (`NotAClaim`) at the claim address of its claimer, model and nonce
/// (`ClaimAddressMismatch`).
// Inlined: SBF returns one register, so no call may return this aggregate.
#[inline(always)]
pub fn read_claim<'d>(
    program_id: &Address,
    address: &Address,
    owner: &Address,
    data: &'d [u8],
) -> Result<ClaimView<'d>, Distrust> {
    if owner != program_id {
        return Err(Distrust::WrongOwner);
    }
    let claim = ClaimView::new(data).map_err(|_| Distrust::NotAClaim)?;
    let seed = claim_seed_bytes(claim.model(), claim.nonce());
    if create_with_seed(claim.claimer(), &seed, program_id).as_ref() != Some(address) {
        return Err(Distrust::ClaimAddressMismatch);
    }
    Ok(claim)
}

/// A consumer's check before it relies on a claim at `slot` (the current slot): the account
/// at `address` is the program's (`WrongOwner`), a claim (`NotAClaim`) at the claim address of
/// its claimer, model and nonce (`ClaimAddressMismatch`), of the rule's model (`WrongModel`),
/// not overturned (`Overturned`), settled (`NotSettled`: answered and past its window
/// unchallenged, or upheld), with a window of at least the rule's (`WindowTooShort`), and the
/// rule's prompt, settings and seed source. The answer itself is carried by whoever relies on
/// the claim: [`ClaimView::answer_is`] checks it against the claim's token count and hash.
// Inlined: SBF returns one register, so no call may return this aggregate.
#[inline(always)]
pub fn trusted_claim<'d>(
    program_id: &Address,
    address: &Address,
    owner: &Address,
    data: &'d [u8],
    rule: &ClaimRule,
    slot: u64,
) -> Result<ClaimView<'d>, Distrust> {
    let claim = read_claim(program_id, address, owner, data)?;
    if claim.model() != rule.model {
        return Err(Distrust::WrongModel);
    }
    if claim.state() == ClaimState::Overturned {
        return Err(Distrust::Overturned);
    }
    if !claim.settled(slot) {
        return Err(Distrust::NotSettled);
    }
    if claim.window() < rule.min_window {
        return Err(Distrust::WindowTooShort);
    }
    if let Some(prompt) = rule.prompt {
        if claim.prompt() != Some(prompt) {
            return Err(Distrust::WrongPrompt);
        }
    }
    if let Some(settings) = rule.settings {
        if (claim.temperature(), claim.top_p()) != settings {
            return Err(Distrust::WrongSettings);
        }
    }
    seed_allowed(rule.seed, claim.seed_source())?;
    Ok(claim)
}

/// A consumer's check before it relies on a sealed model: the account at `address` is owned
/// by the program (`WrongOwner`), is a model (`NotAModel`), is Sealed (`WrongState`), records
/// the expected authority and weights hash, and `address` is their PDA with the recorded
/// bump (`ModelAddressMismatch`). The address is what binds a model to (authority, hash):
/// anyone can publish and seal the same artifact under their own authority, and such a model
/// is Sealed with the same hash and config, at another address.
// Inlined: SBF returns one register, so no call may return this aggregate.
#[inline(always)]
pub fn model_is_trusted(
    program_id: &Address,
    address: &Address,
    owner: &Address,
    data: &[u8],
    authority: &Address,
    weights_hash: &[u8; 32],
) -> Result<(), CurtaError> {
    if owner != program_id {
        return Err(CurtaError::WrongOwner);
    }
    if check_model(data)? != ModelState::Sealed {
        return Err(CurtaError::WrongState);
    }
    let recorded = |at: usize| &data[at..at + 32];
    let bump = [data[model_field::BUMP]];
    let seeds: [&[u8]; 4] = [MODEL_SEED, authority, weights_hash, &bump];
    if recorded(model_field::AUTHORITY) != authority
        || recorded(model_field::WEIGHTS_HASH) != weights_hash
        || create_program_address(&seeds, program_id).as_ref() != Some(address)
    {
        return Err(CurtaError::ModelAddressMismatch);
    }
    Ok(())
}

#[cfg(target_os = "solana")]
fn create_with_seed(base: &Address, seed: &[u8], owner: &Address) -> Option<Address> {
    pinocchio::pubkey::create_with_seed(base, seed, owner).ok()
}

#[cfg(not(target_os = "solana"))]
fn create_with_seed(base: &Address, seed: &[u8], owner: &Address) -> Option<Address> {
    let seed = core::str::from_utf8(seed).ok()?;
    solana_pubkey::Pubkey::create_with_seed(&(*base).into(), seed, &(*owner).into())
        .ok()
        .map(|a| a.to_bytes())
}

#[cfg(target_os = "solana")]
fn create_program_address(seeds: &[&[u8]], program_id: &Address) -> Option<Address> {
    pinocchio::pubkey::create_program_address(seeds, program_id).ok()
}

#[cfg(not(target_os = "solana"))]
fn create_program_address(seeds: &[&[u8]], program_id: &Address) -> Option<Address> {
    solana_pubkey::Pubkey::create_program_address(seeds, &(*program_id).into())
        .ok()
        .map(|a| a.to_bytes())
}

#[cfg(not(target_os = "solana"))]
pub use host::*;

#[cfg(not(target_os = "solana"))]
mod host {
    use super::*;
    use crate::state::Model;
    use solana_pubkey::Pubkey;

    /// [`model_is_trusted`] on the Solana SDK's types, returning the decoded model.
    pub fn trusted_sealed_model(
        program_id: &Pubkey,
        address: &Pubkey,
        owner: &Pubkey,
        data: &[u8],
        authority: &Pubkey,
        weights_hash: &[u8; 32],
    ) -> Result<Model, CurtaError> {
        model_is_trusted(
            &program_id.to_bytes(),
            &address.to_bytes(),
            &owner.to_bytes(),
            data,
            &authority.to_bytes(),
            weights_hash,
        )?;
        Model::unpack(data).map_err(|_| CurtaError::NotAModel)
    }
}
