//! The stages before the steps: what the run address holds ([`existing`]), the price
//! ([`price`]), the start ([`start`]), a long text prompt's tokenization ([`encode`]) and a
//! drawn seed ([`draw`]).

use super::account::{read_run, Found};
use super::context::{Context, Existing, Prepared};
use super::drive::{refused, Passed};
use super::expected::{
    encoding_steps, encoding_steps_left, expected, follow_encoding, point, steps_ahead, steps_left,
    Expected, Shadow,
};
use super::pipeline::AccountLimit;
use super::request::{source_name, RunOnChainError, RunRequest};
use crate::run::Prompt;
use crate::send::transport::Transport;
use crate::send::Engine;
use crate::Error;
use curta_core::infer::{Model, Settings};
use curta_core::Artifact;
use curta_interface::instruction::OwnedPrompt;
use curta_interface::run::SeedSource;
use solana_instruction::error::InstructionError;
use solana_keypair::Keypair;
use solana_pubkey::Pubkey;
use solana_signer::Signer;
use solana_transaction_error::TransactionError;

/// What the run address holds: nothing (or someone's lamports), or this very run (the same
/// model, runner, nonce, token count, and a state curta-core's run of this prompt and these
/// settings reaches). Anything else is refused with the command that frees the nonce.
pub(super) async fn existing<T: Transport>(
    t: &T,
    runner: &Keypair,
    model_address: &Pubkey,
    request: &RunRequest,
    p: &mut Prepared,
    model: &Model<'_>,
    artifact: &Artifact<'_>,
) -> Result<Existing, RunOnChainError> {
    let (address, me) = (p.address, runner.pubkey());
    let problem = |problem: String| RunOnChainError::RunAccount { address, problem };
    let close = format!(
        "`client close-run --model {model_address} --nonce {}` closes it and returns its lamports, or pass another --nonce",
        request.nonce
    );
    match read_run(t, &address).await? {
        Found::Nothing => Ok(Existing::Fresh { funded: 0 }),
        Found::Funded(lamports) => Ok(Existing::Fresh { funded: lamports }),
        Found::Unstarted { lamports, len } => Err(problem(format!(
            "holds {lamports} lamports and {len} bytes of the program but no run (its StartRun never landed): {close}"
        ))),
        Found::Foreign {
            owner,
            lamports,
            len,
        } => Err(problem(format!(
            "holds {lamports} lamports and {len} bytes owned by {owner}, not a run of program {}: the run cannot be created there; pass another --nonce",
            t.program_id()
        ))),
        Found::Run(header, _, data_len) => {
            if header.model != *model_address || header.runner != me || header.nonce != request.nonce
            {
                return Err(problem(format!(
                    "is a run of model {} by {} (nonce {}), not of model {model_address} by {me} (nonce {})",
                    header.model, header.runner, header.nonce, request.nonce
                )));
            }
            if data_len != p.len {
                return Err(problem(format!(
                    "was started with another token count ({data_len} bytes, not the {} of --steps {}): run the same command with its --steps; {close}",
                    p.len, p.steps
                )));
            }
            if header.seed_source != request.source {
                return Err(problem(format!(
                    "was started with seed source {}, not {} (--temperature 0 is none; --chosen-seed is chosen; else drawn): run the same command as started it; {close}",
                    source_name(header.seed_source),
                    source_name(request.source)
                )));
            }
            if request.source == SeedSource::Drawn && header.seed != 0 {
                p.expected = expected_with_seed(artifact, request, p, header.seed)?;
            }
            if header.encoding {
                let text = match &request.prompt {
                    Prompt::Text(text) => text.as_slice(),
                    Prompt::Tokens(_) => &[],
                };
                return match follow_encoding(model.metadata(), text, &header.state) {
                    Ok(()) => Ok(Existing::Resume(header)),
                    Err(what) => Err(problem(format!(
                        "is tokenizing another prompt than this one ({what}): run the same command as started it; {close}"
                    ))),
                };
            }
            let mut shadow = Shadow::new(model, p.expected.start.clone());
            if shadow.follow(&header.state).is_err() {
                let (_, position, stage, item) = point(&header.state);
                return Err(problem(format!(
                    "at position {position}, stage {stage}, item {item} holds another run than this prompt and these settings (prompt, --temperature, --top-p and --seed must be the ones it was started with): run the same command as started it; {close}"
                )));
            }
            Ok(Existing::Resume(header))
        }
    }
}

/// Prices what is left to send (the start and its rent, the steps from where the run stands,
/// the close) and refuses when the runner cannot pay. Returns the rent put in and the balance.
pub(super) async fn price<T: Transport>(
    engine: &mut Engine<'_, T>,
    ctx: &Context<'_>,
    existing: &Existing,
    model: &Model<'_>,
) -> Result<(u64, u64), RunOnChainError> {
    let t = engine.transport();
    let rent_minimum = t.rent_minimum(ctx.p.len).await?;
    let budget = ctx.request.budget;
    let (left, rent, start) = match existing {
        Existing::Resume(header) if header.encoding => (
            encoding_steps_left(model.metadata(), &header.state, budget).unwrap_or(0)
                + ctx.p.expected.steps,
            0,
            None,
        ),
        Existing::Resume(header) => (steps_left(model, &header.state, budget)?, 0, None),
        Existing::Fresh { funded } => {
            let encoding = match &ctx.request.prompt {
                Prompt::Text(text) => {
                    encoding_steps(model.metadata(), text, ctx.p.expected.start.len(), budget)?
                }
                Prompt::Tokens(_) => 0,
            };
            let start = ctx.start_item(
                OwnedPrompt::Tokens(ctx.p.expected.prompt_tokens.clone()),
                rent_minimum,
                *funded,
            );
            (
                encoding + ctx.p.expected.steps,
                rent_minimum.saturating_sub(*funded),
                Some(start),
            )
        }
    };
    let mut fees = left as u64 * engine.fee(&ctx.step_item(0, 0, 0)).await?;
    if let Some(start) = start {
        fees += engine.fee(&start).await?;
    }
    if !ctx.request.keep {
        fees += engine.fee(&ctx.close_item()).await?;
    }
    let t = engine.transport();
    let balance = t.balance(&ctx.runner).await?;
    let reserve = t.rent_minimum(0).await?;
    let needed = rent + fees + reserve;
    if balance < needed {
        return Err(Error::InsufficientFunds {
            payer: ctx.runner,
            balance,
            needed,
            rent,
            fees,
            reserve,
        }
        .into());
    }
    Ok((rent, balance))
}

/// Creates the run account and starts the run. A text prompt goes as text (the program
/// tokenizes it from section zero) unless that StartRun does not fit a packet or the compute
/// limit; then as the ids the client tokenized, which give the same state. Returns how the
/// prompt went and the start's units (simulated just before it was sent).
pub(super) async fn start<T: Transport>(
    engine: &mut Engine<'_, T>,
    ctx: &Context<'_>,
    funded: u64,
) -> Result<(&'static str, u64), RunOnChainError> {
    let rent = engine.transport().rent_minimum(ctx.p.len).await?;
    let ids = || OwnedPrompt::Tokens(ctx.p.expected.prompt_tokens.clone());
    let mut tries = match &ctx.request.prompt {
        Prompt::Text(text) => vec![("text", OwnedPrompt::Text(text.clone())), ("tokens", ids())],
        Prompt::Tokens(_) => vec![("tokens", ids())],
    };
    let mut last = None;
    for (sent_as, prompt) in tries.drain(..) {
        let item = ctx.start_item(prompt, rent, funded);
        // The largest form of the item in the engine's format (a price's compute-budget
        // instructions counted whether set or not).
        let len = crate::send::format::transaction_len_in(
            engine.format(),
            &ctx.runner,
            true,
            &item.instructions,
        );
        let most = engine.format().packet_len();
        if len > most {
            last = Some(RunOnChainError::PromptTooLong { bytes: len, most });
            continue;
        }
        let simulation = engine.simulate(&item).await?;
        match simulation.result {
            Ok(()) => {
                engine.send_one(item, "start run").await?;
                return Ok((sent_as, simulation.units));
            }
            Err(error) if over_compute_limit(&error, &simulation.logs) && sent_as == "text" => {
                continue
            }
            Err(error) => {
                return Err(RunOnChainError::StartRefused {
                    address: ctx.p.address,
                    error: crate::error::describe_transaction_error(&error),
                    logs: simulation.logs,
                })
            }
        }
    }
    Err(last.unwrap_or_else(|| RunOnChainError::RunAccount {
        address: ctx.p.address,
        problem: "no form of StartRun could be sent".into(),
    }))
}

pub(super) fn over_compute_limit(error: &TransactionError, logs: &[String]) -> bool {
    matches!(
        error,
        TransactionError::InstructionError(_, InstructionError::ComputationalBudgetExceeded)
    ) || logs.iter().any(|l| l.contains("exceeded CUs meter"))
}

/// Continues a text prompt's tokenization on chain until the run has started: StartRun does
/// what fits its compute units ([`curta_interface::cost::START_ENCODE_BUDGET`]) and Steps the
/// rest, order-free like every step, `window` in flight. Each round re-plans from the chain's
/// encoding (compared with curta-core's at the point it reached); the chain's state once the
/// run starts is checked by [`drive`]'s shadow. Returns the steps this call sent that landed
/// (0 when the prompt went as ids, or StartRun's share ended the encoding). A step of this
/// client's that lands where others' steps ended the encoding is refused ([`Passed`]: the run
/// ended, its first items read another section, or its seed cannot be drawn in the start
/// slot): the next round reads the run again and returns once it has started.
pub(super) async fn encode<T: Transport>(
    engine: &mut Engine<'_, T>,
    ctx: &Context<'_>,
    model: &Model<'_>,
    limit: AccountLimit,
    passed: &mut Passed,
) -> Result<u32, RunOnChainError> {
    let address = ctx.p.address;
    let mut sent = 0;
    loop {
        let Found::Run(header, _, _) = read_run(engine.transport(), &address).await? else {
            return Err(RunOnChainError::RunAccount {
                address,
                problem: "holds no run while its prompt is tokenized (closed by its runner?)"
                    .into(),
            });
        };
        if !header.encoding {
            return Ok(sent);
        }
        let diverged = |what: String| RunOnChainError::Diverged { address, what };
        let Prompt::Text(text) = &ctx.request.prompt else {
            return Err(diverged(
                "it is tokenizing a text prompt, this run's prompt is ids".into(),
            ));
        };
        follow_encoding(model.metadata(), text, &header.state).map_err(diverged)?;
        let left = encoding_steps_left(model.metadata(), &header.state, ctx.request.budget)
            .map_err(diverged)?;
        // The encoding reads section zero only.
        let items = ctx.next_steps(&vec![0; left.max(1) as usize], 0);
        let failures = engine.send(items, ctx.p.window(limit.units), false).await?;
        sent += left.max(1) - failures.len() as u32;
        // A step of ours that landed after the encoding ended (a stranger's steps did part of
        // it) steps the run itself: refused with SeedNotReady in a drawn run's start slot,
        // SectionNotLoaded where it carries section zero only, RunEnded after a run a
        // stranger finished. The next round reads where the run is.
        for failure in &failures {
            if !passed.count(&failure.error) {
                return Err(refused(engine, ctx, &failure.error).await);
            }
        }
    }
}

/// How many steps [`draw`] sends at most before giving up on a seed (each waits for the
/// cluster to pass the start slot first, so a second is rare).
pub(super) const DRAW_TRIES: u32 = 8;

/// Draws a drawn run's seed: once the cluster is past the slot StartRun landed in, one step
/// (the program refuses a step in the start slot with SeedNotReady: tried again after the next
/// slot). A stranger's step may draw it first, and finish the run: this client's step is then
/// refused (RunEnded, or SectionNotLoaded where it does not carry the section the run moved
/// to) and the header read again holds the seed. Returns the seed in force, read from the
/// run's header, and the steps this call sent that advanced the run (0 when the seed was
/// drawn already, by anyone).
pub(super) async fn draw<T: Transport>(
    engine: &mut Engine<'_, T>,
    ctx: &Context<'_>,
    model: &Model<'_>,
    passed: &mut Passed,
) -> Result<(u64, u32), RunOnChainError> {
    let address = ctx.p.address;
    let mut sent = 0;
    for _ in 0..DRAW_TRIES {
        let Found::Run(header, _, _) = read_run(engine.transport(), &address).await? else {
            return Err(RunOnChainError::RunAccount {
                address,
                problem: "holds no run while its seed is drawn (closed by its runner?)".into(),
            });
        };
        if header.seed != 0 {
            return Ok((header.seed, sent));
        }
        engine.transport().pass_slot(header.start_slot).await?;
        // What the first step reads does not depend on the seed it draws.
        let reads = steps_ahead(model, &header.state, ctx.request.budget, 1)?;
        let first = reads.first().copied().unwrap_or(0);
        let failures = engine.send(ctx.next_steps(&[first], 0), 1, false).await?;
        match failures.first() {
            None => sent += 1,
            Some(failure) if passed.count(&failure.error) => {}
            Some(failure) => return Err(refused(engine, ctx, &failure.error).await),
        }
    }
    Err(RunOnChainError::RunAccount {
        address,
        problem: format!("its seed was still not drawn after {DRAW_TRIES} steps"),
    })
}

/// The expected run of a drawn run once its seed is known: the request's settings with that
/// seed.
pub(super) fn expected_with_seed(
    artifact: &Artifact<'_>,
    request: &RunRequest,
    p: &Prepared,
    seed: u64,
) -> Result<Expected, RunOnChainError> {
    let settings = Settings {
        seed,
        ..request.settings
    };
    Ok(expected(
        artifact,
        &p.expected.prompt_tokens,
        p.steps,
        settings,
        request.budget,
    )?)
}
