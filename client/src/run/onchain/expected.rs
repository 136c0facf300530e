//! The offline side of a run on chain: curta-core's run of the same model, prompt and settings
//! ([`Expected`]), cut as the program cuts it ([`Run::advance_by`] with a step's budget and
//! [`step_costs`]).
//!
//! Steps are order-free and anyone may send them, so the chain's run is compared by *point of
//! progress* (the state's position, stage and item), never by a count of steps: any cut of
//! the work gives the same bytes at the same point. [`Shadow`] follows the chain's run item by
//! item to whatever point it reached and compares the state's bytes there.

use curta_core::infer::state::field;
use curta_core::infer::{
    decode, state_len, Encoding, Model, Progress, Run, RunError, Settings, Stage, Status,
};
use curta_core::le::u32_at;
use curta_core::{Artifact, Metadata};
use curta_interface::cost::{encode_costs, step_costs, START_ENCODE_BUDGET};

/// curta-core's whole run, what the chain's run must hold: the tokens and their pieces, and
/// the steps this client's budget takes from the start.
#[derive(Clone, Debug)]
pub struct Expected {
    pub prompt_tokens: Vec<u32>,
    /// The state right after StartRun.
    pub start: Vec<u8>,
    pub tokens: Vec<u32>,
    /// Each generated token's piece, in order.
    pub pieces: Vec<Vec<u8>>,
    /// Steps of `budget` from the start to the end.
    pub steps: u32,
}

impl Expected {
    pub fn text(&self) -> Vec<u8> {
        self.pieces.concat()
    }

    /// The text of the first `n` generated tokens.
    pub fn text_of(&self, n: usize) -> Vec<u8> {
        self.pieces[..n.min(self.pieces.len())].concat()
    }
}

/// Runs the model offline from StartRun to the end, with `budget` per step.
pub fn expected(
    artifact: &Artifact,
    prompt: &[u32],
    steps: u32,
    settings: Settings,
    budget: u32,
) -> Result<Expected, RunError> {
    let model = Model::from_artifact(artifact)?;
    let meta = *model.metadata();
    let mut state = vec![0u8; state_len(&model.config())];
    Run::start(&mut state, &model, prompt, steps, settings)?;
    let start = state.clone();
    let (mut count, mut tokens, mut pieces) = (0u32, Vec::new(), Vec::new());
    loop {
        let mut run = Run::resume(&mut state, &model)?;
        if run.status() != Status::Running {
            break;
        }
        let (progress, _) =
            run.advance_by(&model, budget as u64, step_costs(settings.temperature))?;
        if let Progress::Token { pos, id } = progress {
            pieces.push(decode(&meta, run.token(pos - 1), id)?.bytes().to_vec());
            tokens.push(id);
        }
        count += 1;
    }
    Ok(Expected {
        prompt_tokens: prompt.to_vec(),
        start,
        tokens,
        pieces,
        steps: count,
    })
}

/// Steps of `budget` that take the run in `state` to its end (0 for an ended run).
pub fn steps_left(model: &Model, state: &[u8], budget: u32) -> Result<u32, RunError> {
    Ok(steps_ahead(model, state, budget, usize::MAX)?.len() as u32)
}

/// The steps of `budget` that take the run in `state` to its end (the first `most` of them),
/// in order, each as the sections besides zero its items read (bit s for section s): the
/// weight accounts that step must carry where it cannot carry them all.
pub fn steps_ahead(
    model: &Model,
    state: &[u8],
    budget: u32,
    most: usize,
) -> Result<Vec<u32>, RunError> {
    let mut state = state.to_vec();
    let temperature = u32_at(&state, field::TEMPERATURE);
    let mut steps = Vec::new();
    loop {
        let mut run = Run::resume(&mut state, model)?;
        if run.status() != Status::Running || steps.len() == most {
            return Ok(steps);
        }
        let mut reads = 0;
        run.advance_reading(model, budget as u64, step_costs(temperature), &mut reads)?;
        steps.push(reads);
    }
}

/// Steps of `budget` that end the text prompt's encoding a run's state buffer holds while its
/// header says it is encoding (the program's Step does `budget` of it, at least one item, and
/// the step that ends it only starts the run). `Err` when the bytes hold no encoding.
pub fn encoding_steps_left(meta: &Metadata, state: &[u8], budget: u32) -> Result<u32, String> {
    let mut state = state.to_vec();
    let mut count = 0;
    loop {
        let mut encoding = Encoding::resume(&mut state)
            .ok_or("the state buffer holds no encoding of a text prompt")?;
        if encoding.done() {
            return Ok(count);
        }
        encoding
            .advance(meta, budget as u64, encode_costs())
            .map_err(|e| e.to_string())?;
        count += 1;
    }
}

/// Steps of `budget` a StartRun that carries `text` leaves to its encoding (0 when StartRun's
/// own share, [`START_ENCODE_BUDGET`], ends it), in a state buffer of `state_len` bytes.
pub fn encoding_steps(
    meta: &Metadata,
    text: &[u8],
    state_len: usize,
    budget: u32,
) -> Result<u32, RunError> {
    let mut state = vec![0u8; state_len];
    let mut encoding = Encoding::begin(&mut state, text)?;
    encoding.advance(meta, START_ENCODE_BUDGET, encode_costs())?;
    Ok(encoding_steps_left(meta, &state, budget).unwrap_or(0))
}

/// curta-core's encoding of `text`, cut item by item to the point of progress the chain's
/// encoding (`chain`, a run's state buffer while it is encoding) reached, compared byte for
/// byte there. Any cut of the work gives the same bytes at the same point.
pub fn follow_encoding(meta: &Metadata, text: &[u8], chain: &[u8]) -> Result<(), String> {
    let mut chain_bytes = chain.to_vec();
    let theirs = Encoding::resume(&mut chain_bytes)
        .ok_or("the state buffer holds no encoding of a text prompt")?;
    if theirs.text() != text {
        return Err(format!(
            "it is tokenizing the text {:?}, not this prompt",
            String::from_utf8_lossy(theirs.text())
        ));
    }
    let target = theirs.point();
    let mut mine = vec![0u8; chain.len()];
    Encoding::begin(&mut mine, text).map_err(|e| e.to_string())?;
    loop {
        let mut encoding = Encoding::resume(&mut mine).ok_or("curta-core's encoding vanished")?;
        let here = encoding.point();
        if here == target {
            return match mine == chain {
                true => Ok(()),
                false => Err(format!(
                    "the prompt's encoding differs from curta-core's at point {here:?}"
                )),
            };
        }
        if here > target || encoding.done() {
            return Err(format!(
                "the prompt's encoding is at point {target:?}, which curta-core's encoding of it never reaches"
            ));
        }
        encoding
            .advance(meta, 1, |_, _| 1)
            .map_err(|e| e.to_string())?;
    }
}

/// A state's point of progress: ended after every running point, then the position, the
/// stage's code (in the order a token's stages run) and the item within the stage.
pub fn point(state: &[u8]) -> (bool, u32, u32, u32) {
    (
        u32_at(state, field::STATUS) != 0,
        u32_at(state, field::POSITION),
        u32_at(state, field::STAGE),
        u32_at(state, field::ITEM),
    )
}

/// The generated tokens a state holds.
pub fn generated(model: &Model, state: &[u8]) -> Result<Vec<u32>, RunError> {
    let mut state = state.to_vec();
    let run = Run::resume(&mut state, model)?;
    let first = run.prompt_len();
    Ok((first..first + run.generated())
        .map(|i| run.token(i))
        .collect())
}

/// curta-core's run, kept at the chain's point of progress.
pub struct Shadow<'m> {
    model: &'m Model<'m>,
    state: Vec<u8>,
}

impl<'m> Shadow<'m> {
    /// From the state right after StartRun.
    pub fn new(model: &'m Model<'m>, start: Vec<u8>) -> Shadow<'m> {
        Shadow {
            model,
            state: start,
        }
    }

    pub fn state(&self) -> &[u8] {
        &self.state
    }

    /// Advances the shadow item by item to the point of progress `chain` (a run account's
    /// state) reached, and compares the bytes there. `Err` says how they differ.
    pub fn follow(&mut self, chain: &[u8]) -> Result<(), String> {
        if chain.len() != self.state.len() {
            return Err(format!(
                "the state buffer is {} bytes, curta-core's {}",
                chain.len(),
                self.state.len()
            ));
        }
        let target = point(chain);
        let layers = self.model.config().layers;
        loop {
            let here = point(&self.state);
            if here == target {
                return match self.state == chain {
                    true => Ok(()),
                    false => Err(format!(
                        "the state buffer's bytes differ at position {}, stage {}, item {}",
                        here.1, here.2, here.3
                    )),
                };
            }
            if here > target || here.0 {
                return Err(format!(
                    "the chain's run is at position {}, stage {}, item {}{}, a point curta-core's run of the same inputs never reaches (it is at position {}, stage {}, item {})",
                    target.1,
                    target.2,
                    target.3,
                    if target.0 { " (ended)" } else { "" },
                    here.1,
                    here.2,
                    here.3
                ));
            }
            let (_, position, code, item) = here;
            let stage = Stage::of(code, layers)
                .ok_or_else(|| format!("curta-core's run is at stage {code}, not a stage"))?;
            let left = stage.items(&self.model.config()) - item;
            // Within the target's stage: to its item; otherwise to the stage's end.
            let items = match (position, code) == (target.1, target.2) && !target.0 {
                true => target.3 - item,
                false => left,
            };
            let mut run = Run::resume(&mut self.state, self.model).map_err(|e| e.to_string())?;
            run.advance_by(self.model, items as u64, |_, _, _| 1)
                .map_err(|e| e.to_string())?;
        }
    }
}
