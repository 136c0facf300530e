//! Running a sealed model on chain (issue 19): the run account, StartRun, the steps and
//! CloseRun, driven from curta-core's offline run of the same model, prompt and settings.
//!
//! A step does whole items while their estimated cost ([`step_costs`]) fits its budget and stops
//! at each generated token, exactly as [`Run::advance_by`] does off chain; so the client runs
//! the model offline first and knows every step, every token and the state after each step
//! before it sends anything. That plan prices the run, and the chain is checked against it as
//! the run goes: after each step that produced a token the run account is read, its state must
//! hash to the plan's state after that step and its text must be the plan's text so far. An
//! interrupted run resumes from the chain: the run account at the address of (runner, model,
//! nonce) names its cursor, and its state must be the plan's state at that cursor.

use crate::engine::{Engine, Item, Kind};
use crate::error::curta_error;
use crate::progress::Progress as Bars;
use crate::run::{fetch_sealed, FetchError, Prompt};
use crate::transport::Transport;
use crate::Error;
use curta_core::infer::{decode, state_len, Model, Progress, Run, RunError, Settings, Status};
use curta_core::Artifact;
use curta_program::error::CurtaError;
use curta_program::instruction::{self as ix, OwnedPrompt};
use curta_program::run::{run_address, run_len, run_seed, step_costs, RunHeader, MAX_STEP_BUDGET};
use sha2::{Digest, Sha256};
use solana_instruction::error::InstructionError;
use solana_keypair::Keypair;
use solana_pubkey::Pubkey;
use solana_signer::Signer;
use solana_transaction_error::TransactionError;
use std::time::Instant;

/// Why a run on chain did not complete.
#[derive(Debug, thiserror::Error)]
pub enum RunOnChainError {
    #[error(transparent)]
    Fetch(#[from] FetchError),
    #[error(transparent)]
    Client(#[from] Error),
    /// The offline run refused the prompt or settings: nothing was sent.
    #[error("{0}")]
    Refused(#[from] RunError),
    #[error("a step's budget is 1 to {MAX_STEP_BUDGET} estimated compute units, not {0}")]
    Budget(u32),
    #[error("the StartRun transaction with this prompt is {bytes} bytes, over the {most}-byte packet: shorten the prompt (text goes as its bytes, token ids as 4 bytes each)")]
    PromptTooLong { bytes: usize, most: usize },
    #[error("run account {address}: {problem}")]
    RunAccount { address: Pubkey, problem: String },
    /// The chain's run differs from curta-core's offline run of the same inputs.
    #[error("run account {address} after step {cursor} differs from curta-core's offline run of the same model, prompt and settings: {what}")]
    Diverged {
        address: Pubkey,
        cursor: u32,
        what: String,
    },
    /// StartRun's simulation failed: nothing was sent.
    #[error("starting run {address} would fail (nothing was sent): {error}{}", logs_tail(.logs))]
    StartRefused {
        address: Pubkey,
        error: String,
        logs: Vec<String>,
    },
    #[error("step {cursor} of run {address} would fail: {error}{}{}", logs_tail(.logs), .after.as_deref().map_or(String::new(), |a| format!("\n{a}")))]
    StepRefused {
        address: Pubkey,
        cursor: u32,
        error: String,
        logs: Vec<String>,
        /// What the client did about the run then (closed it, or left it).
        after: Option<String>,
    },
}

fn logs_tail(logs: &[String]) -> String {
    let tail: Vec<&str> = logs
        .iter()
        .rev()
        .take(6)
        .rev()
        .map(String::as_str)
        .collect();
    match tail.is_empty() {
        true => String::new(),
        false => format!("\nprogram log:\n  {}", tail.join("\n  ")),
    }
}

/// One run's inputs.
#[derive(Clone, Debug)]
pub struct RunRequest {
    pub prompt: Prompt,
    /// Tokens to generate at most (None: 256, or what the context leaves).
    pub steps: Option<u32>,
    pub settings: Settings,
    /// The run's number among the runner's runs of the model (its address's seed).
    pub nonce: u32,
    /// Leave the run account open after the last step (its rent stays in it).
    pub keep: bool,
    /// Estimated compute units per step (at most [`MAX_STEP_BUDGET`]).
    pub budget: u32,
    /// Micro-lamports per compute unit, if any.
    pub compute_unit_price: Option<u64>,
}

impl RunRequest {
    pub fn new(prompt: Prompt, steps: Option<u32>, settings: Settings) -> RunRequest {
        RunRequest {
            prompt,
            steps,
            settings,
            nonce: 0,
            keep: false,
            budget: MAX_STEP_BUDGET,
            compute_unit_price: None,
        }
    }
}

/// The default token count of a run: 256, or what the context leaves after the prompt.
pub fn default_steps(context: u32, prompt_len: usize) -> u32 {
    256.min((context + 1).saturating_sub(prompt_len as u32))
        .max(1)
}

/// One step of the offline run.
#[derive(Clone, Debug)]
pub struct PlannedStep {
    /// The token this step generates, if it completes one.
    pub token: Option<u32>,
    /// SHA-256 of the state buffer after the step.
    pub state_hash: [u8; 32],
}

/// curta-core's run with the program's budget and cost: every step the chain will do.
#[derive(Clone, Debug)]
pub struct Plan {
    pub prompt_tokens: Vec<u32>,
    pub steps: Vec<PlannedStep>,
    /// SHA-256 of the state right after StartRun (cursor 0).
    pub start_hash: [u8; 32],
    pub tokens: Vec<u32>,
    /// Each generated token's piece, in order.
    pub pieces: Vec<Vec<u8>>,
    pub end: Status,
}

impl Plan {
    /// The state's hash at `cursor` (steps landed).
    pub fn state_hash(&self, cursor: u32) -> Option<[u8; 32]> {
        match cursor {
            0 => Some(self.start_hash),
            c => self.steps.get(c as usize - 1).map(|s| s.state_hash),
        }
    }

    /// Tokens generated once `cursor` steps landed.
    pub fn tokens_at(&self, cursor: u32) -> usize {
        self.steps[..cursor as usize]
            .iter()
            .filter(|s| s.token.is_some())
            .count()
    }

    pub fn text(&self) -> Vec<u8> {
        self.pieces.concat()
    }
}

fn sha256(bytes: &[u8]) -> [u8; 32] {
    Sha256::digest(bytes).into()
}

/// Runs the model offline, step by step as the program will ([`Run::advance_by`] with
/// `budget` and [`step_costs`] of its temperature).
pub fn plan(
    artifact: &Artifact,
    prompt: &[u32],
    steps: u32,
    settings: Settings,
    budget: u32,
) -> Result<Plan, RunError> {
    let model = Model::from_artifact(artifact)?;
    let meta = *model.metadata();
    let mut state = vec![0u8; state_len(&model.config())];
    Run::start(&mut state, &model, prompt, steps, settings)?;
    let start_hash = sha256(&state);
    let (mut planned, mut tokens, mut pieces) = (Vec::new(), Vec::new(), Vec::new());
    let end = loop {
        let mut run = Run::resume(&mut state, &model)?;
        if run.status() != Status::Running {
            break run.status();
        }
        let (progress, _) =
            run.advance_by(&model, budget as u64, step_costs(settings.temperature))?;
        let token = match progress {
            Progress::Token { pos, id } => {
                pieces.push(decode(&meta, run.token(pos - 1), id)?.bytes().to_vec());
                tokens.push(id);
                Some(id)
            }
            _ => None,
        };
        planned.push(PlannedStep {
            token,
            state_hash: sha256(&state),
        });
    };
    Ok(Plan {
        prompt_tokens: prompt.to_vec(),
        steps: planned,
        start_hash,
        tokens,
        pieces,
        end,
    })
}

/// What a run on chain did.
#[derive(Clone, Debug, serde::Serialize)]
pub struct OnChainRun {
    pub prompt_tokens: Vec<u32>,
    /// The generated ids read back from the run account (the last may be 1 or 2).
    pub tokens: Vec<u32>,
    /// The run account's text (invalid UTF-8 replaced).
    pub text: String,
    pub tokens_per_second: f64,
    pub weights_hash: String,
    pub seed: u64,
    pub model: String,
    pub run: String,
    pub nonce: u32,
    /// How StartRun carried a text prompt: "text" (tokenized by the program) or "tokens"
    /// (the client's ids, when the text's StartRun would not fit a packet or the compute
    /// limit); "tokens" for ids; null when resumed.
    pub prompt_sent_as: Option<&'static str>,
    /// Step transactions the run takes in all.
    pub steps: u32,
    /// The cursor found on chain when the run was resumed (None: started by this call).
    pub resumed_from: Option<u32>,
    /// Transactions that landed: start, steps, close (failed ones included).
    pub transactions: u64,
    pub failed_transactions: u64,
    /// Compute units of each transaction sent, measured by simulating it just before it was
    /// sent (the same state, so the same units): the start, every step, the close.
    pub start_units: Option<u64>,
    pub step_units: Vec<u64>,
    pub close_units: Option<u64>,
    /// Fees of every transaction that landed.
    pub fees: u64,
    /// Rent put into the run account by this call (0 when resumed).
    pub rent: u64,
    /// The rent the run account holds at the end (0 when closed).
    pub rent_held: u64,
    /// The runner's balance before and after.
    pub balance_before: u64,
    pub balance_after: u64,
    pub closed: bool,
    pub seconds: f64,
    #[serde(skip)]
    pub text_bytes: Vec<u8>,
    #[serde(skip)]
    pub end: Status,
}

impl OnChainRun {
    pub fn lamports_spent(&self) -> i128 {
        self.balance_before as i128 - self.balance_after as i128
    }

    pub fn total_units(&self) -> u64 {
        self.start_units.unwrap_or(0)
            + self.step_units.iter().sum::<u64>()
            + self.close_units.unwrap_or(0)
    }
}

/// What the run account at a run's address holds.
enum Found {
    Nothing,
    /// The run, its lamports and its data length.
    Run(RunHeader, u64, usize),
}

async fn read_run<T: Transport>(t: &T, address: &Pubkey) -> Result<Found, RunOnChainError> {
    let account = t.get_accounts(&[*address]).await?.remove(0);
    let Some(account) = account else {
        return Ok(Found::Nothing);
    };
    if account.lamports == 0 {
        return Ok(Found::Nothing);
    }
    let problem = |problem: String| RunOnChainError::RunAccount {
        address: *address,
        problem,
    };
    if account.owner != t.program_id() {
        return Err(problem(format!(
            "holds {} lamports and {} bytes owned by {}, not a run of program {}: the run cannot be created there; pass another --nonce",
            account.lamports,
            account.data.len(),
            account.owner,
            t.program_id()
        )));
    }
    let header = RunHeader::unpack(&account.data).map_err(|e| {
        problem(format!(
            "is owned by the program but is not a run ({e:?}, {} bytes)",
            account.data.len()
        ))
    })?;
    Ok(Found::Run(header, account.lamports, account.data.len()))
}

/// The generated tokens a run account's state holds.
fn generated(model: &Model, state: &[u8]) -> Result<Vec<u32>, RunError> {
    let mut state = state.to_vec();
    let run = Run::resume(&mut state, model)?;
    let first = run.prompt_len();
    Ok((first..first + run.generated())
        .map(|i| run.token(i))
        .collect())
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
    let sealed = crate::chain::existing_model(t, model_address).await?;
    let weights: Vec<Pubkey> = sealed.weight_accounts[..sealed.sections().len()].to_vec();
    let artifact = curta_core::decode(&file).map_err(Error::Artifact)?;
    let model = Model::from_artifact(&artifact)?;
    let config = artifact.config();
    let prompt_tokens = request.prompt.tokens(&artifact)?;
    let steps = request
        .steps
        .unwrap_or_else(|| default_steps(config.context_length, prompt_tokens.len()));
    let plan = plan(
        &artifact,
        &prompt_tokens,
        steps,
        request.settings,
        request.budget,
    )?;
    let program = t.program_id();
    let me = runner.pubkey();
    let address = run_address(&program, &me, model_address, request.nonce);
    let len = run_len(&config, steps) as usize;

    // What the chain holds already.
    let mut cursor = 0u32;
    let mut fresh = true;
    match read_run(t, &address).await? {
        Found::Nothing => {}
        Found::Run(header, _, data_len) => {
            let problem = |problem: String| RunOnChainError::RunAccount { address, problem };
            if header.model != *model_address
                || header.runner != me
                || header.nonce != request.nonce
            {
                return Err(problem(format!(
                    "is a run of model {} by {} (nonce {}), not of model {model_address} by {me} (nonce {})",
                    header.model, header.runner, header.nonce, request.nonce
                )));
            }
            if data_len != len {
                return Err(problem(format!(
                    "was started with another token count ({data_len} bytes, not the {len} of --steps {steps}): run the same command with its --steps, or pass another --nonce"
                )));
            }
            if plan.state_hash(header.cursor) != Some(sha256(&header.state)) {
                return Err(problem(format!(
                    "at cursor {} holds another run than this prompt and these settings (prompt, --temperature, --top-p and --seed must be the ones it was started with): run the same command as started it, or pass another --nonce",
                    header.cursor
                )));
            }
            cursor = header.cursor;
            fresh = false;
        }
    }
    let resumed_from = (!fresh).then_some(cursor);

    // The price: rent (returned at close) and the fee of every transaction to send.
    let mut engine = Engine::new(
        t,
        runner,
        request.compute_unit_price,
        Some(1),
        Bars::hidden(),
    );
    let rent_minimum = t.rent_minimum(len).await?;
    let create = solana_system_interface::instruction::create_account_with_seed(
        &me,
        &address,
        &me,
        &run_seed(model_address, request.nonce),
        rent_minimum,
        len as u64,
        &program,
    );
    let start_item = |prompt: OwnedPrompt| {
        let start = ix::start_run(
            &program,
            &address,
            &me,
            model_address,
            &weights[0],
            request.nonce,
            steps,
            &request.settings,
            prompt,
        );
        Item::model(Kind::StartRun, vec![create.clone(), start])
    };
    let as_ids = || OwnedPrompt::Tokens(plan.prompt_tokens.clone());
    // A text prompt goes as text (the program tokenizes it from section zero) unless that
    // StartRun does not fit a packet or the compute limit; then as the ids the client
    // tokenized, which give the same state (checked against the plan once it lands).
    let (mut start_tx, mut prompt_sent_as) = match &request.prompt {
        Prompt::Text(text) => (start_item(OwnedPrompt::Text(text.clone())), "text"),
        Prompt::Tokens(_) => (start_item(as_ids()), "tokens"),
    };
    let step_item = |cursor: u32| {
        Item::model(
            Kind::Step,
            vec![ix::step(
                &program,
                &address,
                model_address,
                &weights,
                cursor,
                request.budget,
            )],
        )
    };
    let close_item = Item::model(Kind::CloseRun, vec![ix::close_run(&program, &address, &me)]);
    let remaining = plan.steps.len() as u64 - cursor as u64;
    let mut fees = remaining
        * engine
            .fee(Kind::Step, &step_item(cursor).instructions)
            .await?;
    let rent = if fresh {
        fees += engine.fee(Kind::StartRun, &start_tx.instructions).await?;
        rent_minimum
    } else {
        0
    };
    if !request.keep {
        fees += engine.fee(Kind::CloseRun, &close_item.instructions).await?;
    }
    let balance_before = t.balance(&me).await?;
    let reserve = t.rent_minimum(0).await?;
    let needed = rent + fees + reserve;
    if balance_before < needed {
        return Err(Error::InsufficientFunds {
            payer: me,
            balance: balance_before,
            needed,
            rent,
            fees,
            reserve,
        }
        .into());
    }

    let mut start_units = None;
    if fresh {
        let fits = |item: &Item| {
            crate::engine::transaction_len(&me, true, &item.instructions)
                <= crate::engine::PACKET_LEN
        };
        let mut simulation = None;
        if fits(&start_tx) {
            simulation = Some(engine.simulate(&start_tx).await?);
        }
        let over_limit = |s: &Option<crate::Simulation>| match s {
            None => true,
            Some(s) => {
                matches!(
                    s.result,
                    Err(TransactionError::InstructionError(
                        _,
                        InstructionError::ComputationalBudgetExceeded
                    ))
                ) || (s.result.is_err() && s.logs.iter().any(|l| l.contains("exceeded CUs meter")))
            }
        };
        if prompt_sent_as == "text" && over_limit(&simulation) {
            start_tx = start_item(as_ids());
            prompt_sent_as = "tokens";
            simulation = None;
            if fits(&start_tx) {
                simulation = Some(engine.simulate(&start_tx).await?);
            }
        }
        let Some(simulation) = simulation else {
            return Err(RunOnChainError::PromptTooLong {
                bytes: crate::engine::transaction_len(&me, true, &start_tx.instructions),
                most: crate::engine::PACKET_LEN,
            });
        };
        if let Err(error) = simulation.result {
            return Err(RunOnChainError::StartRefused {
                address,
                error: crate::error::describe_transaction_error(&error),
                logs: simulation.logs,
            });
        }
        start_units = Some(simulation.units);
    }
    let started = Instant::now();
    if fresh {
        engine.run_one(start_tx, "start run").await?;
        check_state(t, &address, &plan, 0).await?;
    }

    // Tokens already on chain (a resumed run) go out first.
    let mut streamed = 0usize;
    let mut emit = |upto: usize, streamed: &mut usize| {
        for i in *streamed..upto {
            on_token(plan.tokens[i], &plan.pieces[i]);
        }
        *streamed = upto.max(*streamed);
    };
    emit(plan.tokens_at(cursor), &mut streamed);

    let mut step_units = Vec::new();
    while (cursor as usize) < plan.steps.len() {
        let item = step_item(cursor);
        let simulation = engine.simulate(&item).await?;
        if let Err(error) = &simulation.result {
            if curta_error(error) == Some(CurtaError::StaleCursor) {
                // Someone else stepped the run (anyone may): go on from its cursor.
                cursor = check_state(t, &address, &plan, cursor).await?;
                emit(plan.tokens_at(cursor), &mut streamed);
                continue;
            }
            // The same step on the same state fails the same way: the run cannot go on. Its
            // rent goes back to the runner (unless --keep), and the error says so.
            let after = match request.keep {
                true => format!("the run account {address} is kept (--keep), holding its rent; the same command without --keep closes it"),
                false => match engine.run_one(close_item.clone(), "close run").await {
                    Ok(()) => format!("the run account {address} was closed and its rent returned to {me}"),
                    Err(e) => format!("closing the run account {address} failed too: {e}"),
                },
            };
            return Err(RunOnChainError::StepRefused {
                address,
                cursor,
                error: crate::error::describe_transaction_error(error),
                logs: simulation.logs,
                after: Some(after),
            });
        }
        match engine.run_one(item, "step").await {
            Ok(()) => {}
            Err(Error::Transaction { error, .. })
                if curta_error(&error) == Some(CurtaError::StaleCursor) =>
            {
                cursor = check_state(t, &address, &plan, cursor).await?;
                emit(plan.tokens_at(cursor), &mut streamed);
                continue;
            }
            Err(e) => return Err(e.into()),
        }
        step_units.push(simulation.units);
        cursor += 1;
        let last = cursor as usize == plan.steps.len();
        if plan.steps[cursor as usize - 1].token.is_some() || last {
            check_state(t, &address, &plan, cursor).await?;
            emit(plan.tokens_at(cursor), &mut streamed);
        }
    }

    // The tokens and text read back, against the plan.
    let Found::Run(header, lamports, _) = read_run(t, &address).await? else {
        return Err(RunOnChainError::RunAccount {
            address,
            problem: "vanished before it was read back".into(),
        });
    };
    let tokens = generated(&model, &header.state)?;
    if tokens != plan.tokens {
        return Err(RunOnChainError::Diverged {
            address,
            cursor,
            what: format!(
                "the chain's tokens {tokens:?}, curta-core's {:?}",
                plan.tokens
            ),
        });
    }
    let text = plan.text();
    if header.text != text {
        return Err(RunOnChainError::Diverged {
            address,
            cursor,
            what: format!(
                "the chain's text {:?}, curta-core's {:?}",
                String::from_utf8_lossy(&header.text),
                String::from_utf8_lossy(&text)
            ),
        });
    }
    let generation_seconds = started.elapsed().as_secs_f64();

    let mut close_units = None;
    let closed = !request.keep;
    if closed {
        let simulation = engine.simulate(&close_item).await?;
        close_units = simulation.result.is_ok().then_some(simulation.units);
        engine.run_one(close_item, "close run").await?;
        if let Found::Run(..) = read_run(t, &address).await? {
            return Err(RunOnChainError::RunAccount {
                address,
                problem: "still exists after CloseRun landed".into(),
            });
        }
    }
    let balance_after = t.balance(&me).await?;
    Ok(OnChainRun {
        prompt_tokens: plan.prompt_tokens.clone(),
        tokens_per_second: tokens.len() as f64 / generation_seconds.max(1e-9),
        tokens,
        text: String::from_utf8_lossy(&header.text).into_owned(),
        weights_hash: crate::artifact::hex(&hash),
        seed: request.settings.seed,
        model: model_address.to_string(),
        run: address.to_string(),
        nonce: request.nonce,
        prompt_sent_as: fresh.then_some(prompt_sent_as),
        steps: plan.steps.len() as u32,
        resumed_from,
        transactions: engine.tally.landed(),
        failed_transactions: engine.tally.failed,
        start_units,
        step_units,
        close_units,
        fees: engine.tally.fees,
        rent,
        rent_held: if closed { 0 } else { lamports },
        balance_before,
        balance_after,
        closed,
        seconds: started.elapsed().as_secs_f64(),
        text_bytes: header.text,
        end: plan.end,
    })
}

/// Reads the run account and checks it against the plan at its cursor (at least `least`):
/// the state's hash and the text so far. Returns the cursor.
async fn check_state<T: Transport>(
    t: &T,
    address: &Pubkey,
    plan: &Plan,
    least: u32,
) -> Result<u32, RunOnChainError> {
    let Found::Run(header, _, _) = read_run(t, address).await? else {
        return Err(RunOnChainError::RunAccount {
            address: *address,
            problem: "no run account after its transaction landed".into(),
        });
    };
    let cursor = header.cursor;
    let diverged = |what: String| RunOnChainError::Diverged {
        address: *address,
        cursor,
        what,
    };
    if cursor < least || cursor as usize > plan.steps.len() {
        return Err(diverged(format!(
            "its cursor is {cursor}, the run has {} steps and {least} landed",
            plan.steps.len()
        )));
    }
    if plan.state_hash(cursor) != Some(sha256(&header.state)) {
        return Err(diverged("the state buffer's bytes differ".into()));
    }
    let n = plan.tokens_at(cursor);
    let text = plan.pieces[..n].concat();
    if header.text != text {
        return Err(diverged(format!(
            "the text {:?}, curta-core's {:?}",
            String::from_utf8_lossy(&header.text),
            String::from_utf8_lossy(&text)
        )));
    }
    Ok(cursor)
}
