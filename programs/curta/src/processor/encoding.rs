//! A text prompt's encoding, continued from the run account's bytes (docs/program.md, "Text
//! prompts cost compute on chain"), and the start of the run's engine: shared by StartRun (which
//! begins the encoding and does [`curta_interface::cost::START_ENCODE_BUDGET`] of it) and by every Step
//! while the run is encoding.

use curta_core::infer::{Encoding, Model, Run, Settings};
use pinocchio::ProgramResult;

use super::shared::{error_code, from_code, log_run_error, prompt_buffer};
use crate::error::CurtaError;
use crate::run::{RunAccount, SeedSource};
use curta_interface::cost::encode_costs;

/// Continues the encoding the run's state buffer holds by `budget`
/// ([`curta_interface::cost::encode_cost`]'s units, at least one item); when it ends, starts the
/// run with its ids ([`start_engine`]), else records that the run is still encoding. Its own frame, called from StartRun and Step:
/// one copy of the encoder in the binary (the error code out, 0 for success).
#[inline(never)]
pub(super) fn continue_encoding(run: &mut RunAccount, model: &Model, budget: u64) -> u64 {
    error_code(encode(run, model, budget))
}

#[inline(always)]
fn encode(run: &mut RunAccount, model: &Model, budget: u64) -> ProgramResult {
    let tokens = prompt_buffer();
    let (state, _) = run.state_and_text();
    let mut encoding = Encoding::resume(state).ok_or(CurtaError::InvalidRun)?;
    encoding
        .advance(model.metadata(), budget, encode_costs())
        .map_err(log_run_error)?;
    let done = encoding.done();
    let count = encoding.ids(tokens);
    run.set_encoding(!done);
    if !done {
        return Ok(());
    }
    from_code(start_engine(run, model, &tokens[..count]))
}

/// `Run::start` of `tokens` with the settings StartRun recorded in the run's header: the same
/// state bytes whether StartRun or the Step that ends an encoding does it. A drawn seed is not
/// known yet (it is drawn by the first step after the start slot once the run has started): the
/// generator starts at 1 to pass `Run::start`'s check and is set to 0 until then; a dispute
/// run's is its claim's, preset in the header by Challenge.
/// Its own frame, called from StartRun (ids sent as tokens) and [`continue_encoding`].
#[inline(never)]
pub(super) fn start_engine(run: &mut RunAccount, model: &Model, tokens: &[u32]) -> u64 {
    error_code(start(run, model, tokens))
}

#[inline(always)]
fn start(run: &mut RunAccount, model: &Model, tokens: &[u32]) -> ProgramResult {
    let steps = run.steps();
    let source = run.seed_source();
    let (temperature, top_p, seed) = run.settings();
    let settings = engine_settings(
        Settings {
            temperature,
            top_p,
            seed,
        },
        source,
    );
    // A drawn seed is 0 here unless Challenge preset a claim's.
    let drawn = run.seed();
    let (state, _) = run.state_and_text();
    Run::start(state, model, tokens, steps, settings).map_err(log_run_error)?;
    if source == SeedSource::Drawn {
        state[curta_core::infer::state::field::RNG..][..8].copy_from_slice(&drawn.to_le_bytes());
    }
    Ok(())
}

/// The settings `Run::start` takes for StartRun's: a drawn seed is not known yet, so the
/// generator starts at 1 (to pass `Run::start`'s check) and is set to 0 until it is drawn.
#[inline(always)]
pub(super) fn engine_settings(settings: Settings, source: SeedSource) -> Settings {
    match source {
        SeedSource::Drawn => Settings {
            seed: 1,
            ..settings
        },
        SeedSource::None | SeedSource::Chosen => settings,
    }
}
