//! Running a sealed model on chain: the run account, StartRun, the steps and CloseRun, checked
//! against curta-core's offline run of the same model, prompt and settings.
//!
//! Steps are order-free: each advances the run from wherever it stands, anyone may send one,
//! and any cut of the work gives the same bytes at the same point of progress. So the client
//! keeps as many steps in flight as the run account can take in a block ([`pipeline`]),
//! re-plans from the chain's state after every round (how many steps of its budget are left
//! from there), treats steps it did not send as progress, and compares the chain's state with
//! curta-core's at the point the chain reached ([`expected::Shadow`]), streaming tokens as
//! they land. An interrupted run resumes from the run account at (runner, model, nonce).
//!
//! The stages of [`run_on_chain`], in order: [`context::prepare`] (the sealed model, the
//! expected run), [`start::existing`] (what the run address holds), [`start::price`],
//! [`start::start`], [`start::encode`] and [`start::draw`], [`drive::drive`] (the steps),
//! [`drive::finish`].

pub mod account;
mod context;
mod drive;
pub mod expected;
pub mod items;
pub mod pipeline;
pub mod replay;
mod request;
mod start;

use crate::model::fetch_sealed;
use crate::send::transport::Transport;
use crate::send::{Engine, Progress as Bars};
use crate::Error;
use context::{prepare, Context, Existing};
use curta_core::infer::{Model, Status};
use curta_interface::run::{SeedSource, MAX_STEP_BUDGET};
use drive::{drive, finish, Passed};
use expected::{generated, Shadow};
use pipeline::{account_limit, AccountLimit};
use solana_keypair::Keypair;
use solana_pubkey::Pubkey;
use start::{draw, encode, existing, expected_with_seed, price, start};
use std::time::Instant;

pub use account::{close_run, close_run_in, runs, ClosedRun, RunListing, RunRef};
pub use replay::{replay, Replay, ReplayError};
pub use request::{default_steps, source_name, OnChainRun, RunOnChainError, RunRequest};

/// What the stages of one [`run_on_chain`] did, for its report.
struct Stages {
    /// The steps landed when the run was resumed (None: started by this call).
    resumed_from: Option<u32>,
    /// How the prompt went and the start's units (None: resumed).
    start: Option<(&'static str, u64)>,
    encoding: u32,
    drawing: u32,
    driven: u32,
    passed: Passed,
    rent: u64,
    balance_before: u64,
    started: Instant,
    generation_seconds: f64,
}

/// Runs `model` (a sealed model's address) on chain with `runner` paying, from the chain's
/// run account at (runner, model, nonce) if one exists. `on_token` gets each generated token
/// and its text once the chain holds it. Refused before anything is sent when the offline run
/// refuses the inputs or the runner cannot pay (Error::InsufficientFunds, with the numbers).
pub async fn run_on_chain<T: Transport>(
    t: &T,
    runner: &Keypair,
    model_address: &Pubkey,
    request: &RunRequest,
    mut on_token: impl FnMut(u32, &[u8]),
) -> Result<OnChainRun, RunOnChainError> {
    if request.budget == 0 || request.budget > MAX_STEP_BUDGET {
        return Err(RunOnChainError::Budget(request.budget));
    }
    let (file, hash) = fetch_sealed(t, model_address).await?;
    let artifact = curta_core::decode(&file).map_err(Error::Artifact)?;
    let model = Model::from_artifact(&artifact)?;
    let mut p = prepare(t, runner, model_address, request, &artifact, hash).await?;
    let existing = existing(t, runner, model_address, request, &mut p, &model, &artifact).await?;
    let limit = account_limit(t, request.account_limit).await?;
    let choice = crate::send::format::choose_noted(t, request.tx_version).await?;
    let mut engine = Engine::new(
        t,
        runner,
        request.compute_unit_price,
        Some(p.window(limit.units)),
        Bars::hidden(),
    )
    .with_format(choice.format);
    let ctx = Context::new(t, runner, model_address, request, &p);
    let (rent, balance_before) = price(&mut engine, &ctx, &existing, &model).await?;
    let started = Instant::now();
    let (resumed_from, start) = match &existing {
        Existing::Resume(header) => (Some(header.steps_landed), None),
        Existing::Fresh { funded } => (None, Some(start(&mut engine, &ctx, *funded).await?)),
    };
    let mut passed = Passed::default();
    let encoding_steps = encode(&mut engine, &ctx, &model, limit, &mut passed).await?;
    let mut drawing_steps = 0;
    if request.source == SeedSource::Drawn {
        let (seed, sent) = draw(&mut engine, &ctx, &model, &mut passed).await?;
        drawing_steps = sent;
        p.expected = expected_with_seed(&artifact, request, &p, seed)?;
    }
    let ctx = Context::new(t, runner, model_address, request, &p);
    let mut shadow = Shadow::new(&model, p.expected.start.clone());
    let driven = drive(
        &mut engine,
        &ctx,
        &model,
        &mut shadow,
        limit,
        &mut passed,
        &mut on_token,
    )
    .await?;
    let generation_seconds = started.elapsed().as_secs_f64();
    let ended = finish(&mut engine, &ctx, &model).await?;
    let stages = Stages {
        resumed_from,
        start,
        encoding: encoding_steps,
        drawing: drawing_steps,
        driven,
        passed,
        rent,
        balance_before,
        started,
        generation_seconds,
    };
    report(&engine, &ctx, &model, ended, stages, limit).await
}

/// The report of a run that ended: `ended` is the run as read back, the lamports it held and
/// the close's units.
async fn report<T: Transport>(
    engine: &Engine<'_, T>,
    ctx: &Context<'_>,
    model: &Model<'_>,
    ended: (curta_interface::run::RunHeader, u64, Option<u64>),
    stages: Stages,
    limit: AccountLimit,
) -> Result<OnChainRun, RunOnChainError> {
    let (header, lamports, close_units) = ended;
    let (p, request, passed) = (ctx.p, ctx.request, &stages.passed);
    let steps_landed = header.steps_landed;
    let tokens = generated(model, &header.state)?;
    let sent = stages.driven + stages.drawing + stages.encoding;
    Ok(OnChainRun {
        prompt_tokens: p.expected.prompt_tokens.clone(),
        tokens_per_second: tokens.len() as f64 / stages.generation_seconds.max(1e-9),
        tokens,
        text: String::from_utf8_lossy(&header.text).into_owned(),
        weights_hash: crate::artifact::hex(&p.hash),
        seed: header.seed,
        seed_source: source_name(header.seed_source),
        runner_seed: header.runner_seed,
        start_slot: header.start_slot,
        seed_slot: header.seed_slot,
        model: ctx.model.to_string(),
        run: p.address.to_string(),
        nonce: request.nonce,
        prompt_sent_as: stages.start.map(|(sent_as, _)| sent_as),
        steps: p.expected.steps,
        steps_sent: sent,
        encoding_steps: stages.encoding,
        steps_after_end: passed.after_end,
        steps_out_of_reach: passed.out_of_reach,
        steps_before_seed: passed.before_seed,
        steps_by_others: match stages.resumed_from {
            None => steps_landed.saturating_sub(sent),
            Some(_) => 0,
        },
        steps_landed,
        window: p.window(limit.units),
        account_limit: limit,
        step_unit_limit: items::STEP_UNITS,
        resumed_from: stages.resumed_from,
        transactions: engine.tally.landed(),
        failed_transactions: engine.tally.failed,
        start_units: stages.start.map(|(_, units)| units),
        close_units,
        fees: engine.tally.fees,
        rent: stages.rent,
        rent_held: if request.keep { lamports } else { 0 },
        balance_before: stages.balance_before,
        balance_after: engine.transport().balance(&ctx.runner).await?,
        closed: !request.keep,
        seconds: stages.started.elapsed().as_secs_f64(),
        tx_version: engine.format(),
        end: match curta_core::le::u32_at(&header.state, curta_core::infer::state::field::STATUS) {
            1 => Status::EndToken,
            _ => Status::Done,
        },
        text_bytes: header.text,
    })
}
