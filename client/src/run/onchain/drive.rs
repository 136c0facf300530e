//! Stepping a started run to its end ([`drive`]), watching the run account against the expected
//! run, and reading it back and closing it ([`finish`]).

use super::account::{read_run, Found};
use super::context::Context;
use super::expected::{generated, point, steps_ahead, Shadow};
use super::pipeline::AccountLimit;
use super::request::RunOnChainError;
use crate::error::curta_error;
use crate::send::transport::Transport;
use crate::send::Engine;
use curta_core::infer::Model;
use curta_interface::error::CurtaError;
use curta_interface::run::RunHeader;
use solana_transaction_error::TransactionError;
use std::cell::Cell;
use std::time::Duration;

/// This client's steps the program refused because the run was not where the step was
/// planned for: someone else's steps moved it, or it cannot move yet. Each changed nothing
/// and paid its fee; the client reads the run again and goes on from what it holds, in every
/// stage that steps ([`super::start::encode`], [`super::start::draw`], [`drive`]).
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct Passed {
    /// Landed after the run ended (`RunEnded`: others' steps, or this client's own in flight,
    /// finished it).
    pub(super) after_end: u32,
    /// Landed where the run's next item reads a section they do not carry
    /// (`SectionNotLoaded`: others' steps moved the run, or the encoding they were sent to
    /// continue ended and the run's first items read another section).
    pub(super) out_of_reach: u32,
    /// Landed in a drawn run's start slot once the run had started (`SeedNotReady`: the slot's
    /// hash is made when it ends; others' steps ended the encoding they were sent to continue,
    /// or the drawing step landed in the start slot after all).
    pub(super) before_seed: u32,
}

impl Passed {
    /// Counts a refusal that only says the run was elsewhere or not ready, and says whether
    /// it was one: any other refusal stops the run ([`refused`]).
    pub(super) fn count(&mut self, error: &TransactionError) -> bool {
        match curta_error(error) {
            Some(CurtaError::RunEnded) => self.after_end += 1,
            Some(CurtaError::SectionNotLoaded) => self.out_of_reach += 1,
            Some(CurtaError::SeedNotReady) => self.before_seed += 1,
            _ => return false,
        }
        true
    }
}

/// Steps the run to its end. Each round plans from the chain's state how many steps of this
/// client's budget are left, sends them with `window` in flight, and meanwhile watches the
/// run account: its state must be curta-core's at the point it reached, and every token that
/// lands is streamed. Refusals that only say the run moved on ([`Passed`]) are counted and the
/// next round plans from the chain again (after the start slot, where a step was too early);
/// any other refusal stops the run (closed unless `--keep`). Returns the steps sent that
/// advanced the run.
pub(super) async fn drive<T: Transport>(
    engine: &mut Engine<'_, T>,
    ctx: &Context<'_>,
    model: &Model<'_>,
    shadow: &mut Shadow<'_>,
    limit: AccountLimit,
    passed: &mut Passed,
    on_token: &mut impl FnMut(u32, &[u8]),
) -> Result<u32, RunOnChainError> {
    let t = engine.transport();
    let mut streamed = 0usize;
    let mut sent = 0;
    let poll = engine.profile.poll.max(Duration::from_millis(50));
    loop {
        let header = observe(t, ctx, shadow, &mut streamed, on_token).await?;
        if point(&header.state).0 {
            return Ok(sent);
        }
        let mut reads = steps_ahead(model, &header.state, ctx.request.budget, usize::MAX)?;
        if reads.is_empty() {
            reads.push(0);
        }
        let items = ctx.next_steps(&reads, ctx.p.window(limit.units));
        let count = items.len() as u32;
        let done = Cell::new(false);
        let sending = async {
            let result = engine.send(items, ctx.p.window(limit.units), false).await;
            done.set(true);
            result.map_err(RunOnChainError::from)
        };
        let watching = async {
            loop {
                let last = done.get();
                let header = observe(t, ctx, shadow, &mut streamed, on_token).await?;
                if last || point(&header.state).0 {
                    return Ok::<(), RunOnChainError>(());
                }
                tokio::time::sleep(poll).await;
            }
        };
        let (failures, ()) = tokio::try_join!(sending, watching)?;
        sent += count - failures.len() as u32;
        let early = passed.before_seed;
        for failure in failures {
            if !passed.count(&failure.error) {
                return Err(refused(engine, ctx, &failure.error).await);
            }
        }
        if passed.before_seed > early {
            engine.transport().pass_slot(header.start_slot).await?;
        }
    }
}

/// Reads the run account, follows it with curta-core's run and streams the tokens it holds
/// that were not streamed yet.
pub(super) async fn observe<T: Transport>(
    t: &T,
    ctx: &Context<'_>,
    shadow: &mut Shadow<'_>,
    streamed: &mut usize,
    on_token: &mut impl FnMut(u32, &[u8]),
) -> Result<RunHeader, RunOnChainError> {
    let address = ctx.p.address;
    let Found::Run(header, _, _) = read_run(t, &address).await? else {
        return Err(RunOnChainError::RunAccount {
            address,
            problem: "holds no run while it is being stepped (closed by its runner?)".into(),
        });
    };
    shadow
        .follow(&header.state)
        .map_err(|what| RunOnChainError::Diverged { address, what })?;
    let count =
        curta_core::le::u32_at(&header.state, curta_core::infer::state::field::GENERATED) as usize;
    let expected = &ctx.p.expected;
    if header.text != expected.text_of(count) {
        return Err(RunOnChainError::Diverged {
            address,
            what: format!(
                "the text {:?}, curta-core's {:?}",
                String::from_utf8_lossy(&header.text),
                String::from_utf8_lossy(&expected.text_of(count))
            ),
        });
    }
    for i in *streamed..count.min(expected.tokens.len()) {
        on_token(expected.tokens[i], &expected.pieces[i]);
    }
    *streamed = (*streamed).max(count);
    Ok(*header)
}

/// A step the program refused for another reason than those of [`Passed`]: the same step on
/// the same state fails the same way, so the run cannot go on. Its rent goes back to the runner
/// (unless --keep), and the error says so, with the program's log of a simulated step.
pub(super) async fn refused<T: Transport>(
    engine: &mut Engine<'_, T>,
    ctx: &Context<'_>,
    error: &TransactionError,
) -> RunOnChainError {
    let address = ctx.p.address;
    let reads = ctx.p.last_reads.get();
    let logs = match engine.simulate(&ctx.step_item(0, reads, 0)).await {
        Ok(simulation) => simulation.logs,
        Err(_) => Vec::new(),
    };
    let after = match ctx.request.keep {
        true => format!("the run account {address} is kept (--keep), holding its rent; `client close-run {address}` returns it"),
        false => match engine.send_one(ctx.close_item(), "close run").await {
            Ok(()) => format!(
                "the run account {address} was closed and its rent returned to {}",
                ctx.runner
            ),
            Err(e) => format!("closing the run account {address} failed too ({e}); `client close-run {address}` retries"),
        },
    };
    RunOnChainError::StepRefused {
        address,
        error: crate::error::describe_transaction_error(error),
        logs,
        after: Some(after),
    }
}

/// Reads the ended run back, checks its tokens and text against the expected run, and closes it
/// (unless `--keep`). Returns the run as read, the lamports it held and the close's units.
pub(super) async fn finish<T: Transport>(
    engine: &mut Engine<'_, T>,
    ctx: &Context<'_>,
    model: &Model<'_>,
) -> Result<(RunHeader, u64, Option<u64>), RunOnChainError> {
    let address = ctx.p.address;
    let Found::Run(header, lamports, _) = read_run(engine.transport(), &address).await? else {
        return Err(RunOnChainError::RunAccount {
            address,
            problem: "vanished before it was read back".into(),
        });
    };
    let expected = &ctx.p.expected;
    let tokens = generated(model, &header.state)?;
    if tokens != expected.tokens {
        return Err(RunOnChainError::Diverged {
            address,
            what: format!(
                "the chain's tokens {tokens:?}, curta-core's {:?}",
                expected.tokens
            ),
        });
    }
    if header.text != expected.text() {
        return Err(RunOnChainError::Diverged {
            address,
            what: format!(
                "the chain's text {:?}, curta-core's {:?}",
                String::from_utf8_lossy(&header.text),
                String::from_utf8_lossy(&expected.text())
            ),
        });
    }
    let mut close_units = None;
    if !ctx.request.keep {
        let close = ctx.close_item();
        let simulation = engine.simulate(&close).await?;
        close_units = simulation.result.is_ok().then_some(simulation.units);
        engine.send_one(close, "close run").await?;
        if !matches!(
            read_run(engine.transport(), &address).await?,
            Found::Nothing
        ) {
            return Err(RunOnChainError::RunAccount {
                address,
                problem: "still exists after CloseRun landed".into(),
            });
        }
    }
    Ok((*header, lamports, close_units))
}
