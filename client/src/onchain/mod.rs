//! Running a sealed model on chain: the run account, StartRun, the steps and CloseRun, checked
//! against curta-core's offline run of the same model, prompt and settings.
//!
//! Steps are order-free: each advances the run from wherever it stands, anyone may send one,
//! and any cut of the work gives the same bytes at the same point of progress. So the client
//! keeps as many steps in flight as the run account can take in a block ([`pipeline`]),
//! re-plans from the chain's state after every round (how many steps of its budget are left
//! from there), treats steps it did not send as progress, and compares the chain's state with
//! curta-core's at the point the chain reached ([`plan::Shadow`]), streaming tokens as they
//! land. An interrupted run resumes from the run account at (runner, model, nonce).
//!
//! The stages of [`run_on_chain`]: [`prepare`] (the sealed model, the plan), [`existing`]
//! (what the run address holds), [`price`], [`start`], [`drive`] (the steps), [`finish`].

pub mod account;
pub mod pipeline;
pub mod plan;
pub mod replay;

use crate::engine::{Engine, Item, Kind};
use crate::error::curta_error;
use crate::progress::Progress as Bars;
use crate::run::{fetch_sealed, FetchError, Prompt};
use crate::transport::Transport;
use crate::Error;
use account::{read_run, Found};
use curta_core::infer::{Model, RunError, Settings, Status};
use curta_core::Artifact;
use curta_interface::error::CurtaError;
use curta_interface::instruction::{self as ix, OwnedPrompt};
use curta_interface::run::{
    run_address, run_len, run_seed, RunHeader, SeedSource, MAX_STEP_BUDGET,
};
use curta_interface::state::{model_bytes, MAX_MODEL_BYTES, MODEL_LEN, WEIGHT_HEADER_LEN};
use pipeline::{account_limit, step_window, AccountLimit};
use plan::{
    encoding_steps, encoding_steps_left, follow_encoding, generated, plan, point, steps_ahead,
    steps_left, Plan, Shadow,
};
use solana_instruction::error::InstructionError;
use solana_instruction::Instruction;
use solana_keypair::Keypair;
use solana_pubkey::Pubkey;
use solana_signer::Signer;
use solana_transaction_error::TransactionError;
use std::cell::Cell;
use std::time::{Duration, Instant};

pub use account::{close_run, close_run_in, runs, ClosedRun, RunListing, RunRef};
pub use replay::{replay, Replay, ReplayError};

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
    #[error("run account {address} differs from curta-core's offline run of the same model, prompt and settings: {what}")]
    Diverged { address: Pubkey, what: String },
    /// StartRun's simulation failed: nothing was sent.
    #[error("starting run {address} would fail (nothing was sent): {error}{}", logs_tail(.logs))]
    StartRefused {
        address: Pubkey,
        error: String,
        logs: Vec<String>,
    },
    #[error("a step of run {address} fails: {error}{}{}", logs_tail(.logs), .after.as_deref().map_or(String::new(), |a| format!("\n{a}")))]
    StepRefused {
        address: Pubkey,
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
    /// Where the seed in force comes from: none for a greedy run; drawn on chain from the
    /// runner's seed (`settings.seed`) and the start slot's hash; or chosen (`settings.seed`
    /// as it is, a reproducible run).
    pub source: SeedSource,
    /// The run's number among the runner's runs of the model (its address's seed).
    pub nonce: u32,
    /// Leave the run account open after the last step (its rent stays in it).
    pub keep: bool,
    /// Estimated compute units per step (at most [`MAX_STEP_BUDGET`]).
    pub budget: u32,
    /// Micro-lamports per compute unit, if any.
    pub compute_unit_price: Option<u64>,
    /// The transaction format asked for (auto: version 1 where the cluster accepts it).
    pub tx_version: crate::txformat::TxVersion,
    /// The cluster's per-account compute-unit limit per block (None: read from its features,
    /// [`pipeline::account_limit`]); the steps in flight are this over a step's units.
    pub account_limit: Option<u64>,
}

impl RunRequest {
    pub fn new(prompt: Prompt, steps: Option<u32>, settings: Settings) -> RunRequest {
        RunRequest {
            prompt,
            steps,
            source: match settings.temperature {
                0 => SeedSource::None,
                _ => SeedSource::Drawn,
            },
            settings,
            nonce: 0,
            keep: false,
            budget: MAX_STEP_BUDGET,
            compute_unit_price: None,
            tx_version: crate::txformat::TxVersion::Auto,
            account_limit: None,
        }
    }
}

/// The default token count of a run: 256, or what the context leaves after the prompt.
pub fn default_steps(context: u32, prompt_len: usize) -> u32 {
    256.min((context + 1).saturating_sub(prompt_len as u32))
        .max(1)
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
    /// The seed in force (drawn, chosen, or 0 for a greedy run).
    pub seed: u64,
    /// "none", "drawn" or "chosen".
    pub seed_source: &'static str,
    /// The runner's seed StartRun carried, and the slot it landed in.
    pub runner_seed: u64,
    pub start_slot: u64,
    /// The slot whose hash a drawn seed came from (0 otherwise).
    pub seed_slot: u64,
    pub model: String,
    pub run: String,
    pub nonce: u32,
    /// How StartRun carried a text prompt: "text" (tokenized by the program) or "tokens"
    /// (the client's ids, when the text's StartRun would not fit a packet or the compute
    /// limit); "tokens" for ids; null when resumed.
    pub prompt_sent_as: Option<&'static str>,
    /// Steps of this client's budget the whole run takes from its start.
    pub steps: u32,
    /// Steps this call sent that advanced the run.
    pub steps_sent: u32,
    /// Of those, the steps that continued the text prompt's tokenization (a long text: what
    /// StartRun's compute units left of it).
    pub encoding_steps: u32,
    /// Steps this call sent that landed after the run had ended (refused with RunEnded: each
    /// paid its fee and changed nothing).
    pub steps_after_end: u32,
    /// Steps this call sent that landed where the run's next item reads a section they did
    /// not carry (refused with SectionNotLoaded, each paid its fee and changed nothing: a model
    /// too large for a step to carry every section, whose run others' steps moved on).
    pub steps_out_of_reach: u32,
    /// Steps that landed that this call did not send (anyone may step a run; 0 when resumed,
    /// where the earlier steps are not told apart).
    pub steps_by_others: u32,
    /// The steps landed on chain in all (the run header's count).
    pub steps_landed: u32,
    /// Steps in flight at once, and the per-account limit it came from.
    pub window: usize,
    pub account_limit: AccountLimit,
    /// The compute units each step requested.
    pub step_unit_limit: u32,
    /// The steps landed when the run was resumed (None: started by this call).
    pub resumed_from: Option<u32>,
    /// Transactions that landed: start, steps, close (failed ones included).
    pub transactions: u64,
    pub failed_transactions: u64,
    /// Compute units of the start and the close, measured by simulating each just before it
    /// was sent.
    pub start_units: Option<u64>,
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
    /// The format the run's transactions went in ("legacy" or "v1").
    pub tx_version: crate::txformat::Format,
    #[serde(skip)]
    pub text_bytes: Vec<u8>,
    #[serde(skip)]
    pub end: Status,
}

impl OnChainRun {
    pub fn lamports_spent(&self) -> i128 {
        self.balance_before as i128 - self.balance_after as i128
    }
}

/// Everything fixed before anything is sent: the sealed model, the plan, the run's address.
struct Prepared {
    hash: [u8; 32],
    weights: Vec<Pubkey>,
    /// Each section's length, as the model records them.
    lengths: Vec<u32>,
    /// Whether the model's accounts and the run fit what one transaction may load: then every
    /// step carries every section, else each carries the sections its items read.
    carries_all: bool,
    /// The sections (bit s for section s) the first step of the last round read: what a step
    /// simulated to explain a refusal carries.
    last_reads: Cell<u32>,
    plan: Plan,
    steps: u32,
    address: Pubkey,
    len: usize,
    /// The last step ticket used. Tickets only make each step transaction unique: they start
    /// from the clock, where no earlier call of this runner is likely to have been.
    tickets: Cell<u32>,
}

impl Prepared {
    /// Steps in flight under a per-account limit of `limit` units: three blocks' worth
    /// ([`step_window`]) when every step carries every section, so that any step does any
    /// item wherever it lands; one block's worth otherwise: a step carries the sections of the
    /// steps planned around it, and the further ahead steps are sent, the more of them land
    /// where the run needs a section they do not carry (refused, `SectionNotLoaded`, and sent
    /// again).
    fn window(&self, limit: u64) -> usize {
        match self.carries_all {
            true => step_window(limit),
            false => (step_window(limit) / pipeline::BLOCKS_IN_FLIGHT as usize).max(1),
        }
    }
}

/// What the run address holds, checked against this request.
enum Existing {
    /// Nothing, or lamports someone sent there (the start tops them up instead of creating).
    Fresh { funded: u64 },
    /// This very run, at the steps that landed so far.
    Resume(Box<RunHeader>),
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
    let choice = crate::txformat::choose_noted(t, request.tx_version).await?;
    let mut engine = Engine::new(
        t,
        runner,
        request.compute_unit_price,
        Some(p.window(limit.units)),
        Bars::hidden(),
    )
    .with_format(choice.format);
    let ctx = Context {
        program: t.program_id(),
        runner: runner.pubkey(),
        model: *model_address,
        request,
        p: &p,
    };
    let (rent, balance_before) = price(&mut engine, &ctx, &existing, &model).await?;
    let started = Instant::now();
    let (resumed_from, start) = match &existing {
        Existing::Resume(header) => (Some(header.steps_landed), None),
        Existing::Fresh { funded } => (None, Some(start(&mut engine, &ctx, *funded).await?)),
    };
    let encoding_steps = encode(&mut engine, &ctx, &model, limit).await?;
    let mut drawing_steps = 0;
    if request.source == SeedSource::Drawn {
        let (seed, sent) = draw(&mut engine, &ctx, &model).await?;
        drawing_steps = sent;
        p.plan = replan(&artifact, request, &p, seed)?;
    }
    let ctx = Context {
        program: t.program_id(),
        runner: runner.pubkey(),
        model: *model_address,
        request,
        p: &p,
    };
    let mut shadow = Shadow::new(&model, p.plan.start.clone());
    let driven = drive(&mut engine, &ctx, &model, &mut shadow, limit, &mut on_token).await?;
    let generation_seconds = started.elapsed().as_secs_f64();
    let (header, lamports, close_units) = finish(&mut engine, &ctx, &model).await?;
    let steps_landed = header.steps_landed;
    let tokens = generated(&model, &header.state)?;
    Ok(OnChainRun {
        prompt_tokens: p.plan.prompt_tokens.clone(),
        tokens_per_second: tokens.len() as f64 / generation_seconds.max(1e-9),
        tokens,
        text: String::from_utf8_lossy(&header.text).into_owned(),
        weights_hash: crate::artifact::hex(&p.hash),
        seed: header.seed,
        seed_source: source_name(header.seed_source),
        runner_seed: header.runner_seed,
        start_slot: header.start_slot,
        seed_slot: header.seed_slot,
        model: model_address.to_string(),
        run: p.address.to_string(),
        nonce: request.nonce,
        prompt_sent_as: start.map(|(sent_as, _)| sent_as),
        steps: p.plan.steps,
        steps_sent: driven.sent + drawing_steps + encoding_steps,
        encoding_steps,
        steps_after_end: driven.after_end,
        steps_out_of_reach: driven.out_of_reach,
        steps_by_others: match resumed_from {
            None => steps_landed.saturating_sub(driven.sent + drawing_steps + encoding_steps),
            Some(_) => 0,
        },
        steps_landed,
        window: p.window(limit.units),
        account_limit: limit,
        step_unit_limit: pipeline::STEP_UNITS,
        resumed_from,
        transactions: engine.tally.landed(),
        failed_transactions: engine.tally.failed,
        start_units: start.map(|(_, units)| units),
        close_units,
        fees: engine.tally.fees,
        rent,
        rent_held: if request.keep { lamports } else { 0 },
        balance_before,
        balance_after: t.balance(&ctx.runner).await?,
        closed: !request.keep,
        seconds: started.elapsed().as_secs_f64(),
        tx_version: engine.format(),
        end: match curta_core::le::u32_at(&header.state, curta_core::infer::state::field::STATUS) {
            1 => Status::EndToken,
            _ => Status::Done,
        },
        text_bytes: header.text,
    })
}

/// What every stage reads.
struct Context<'a> {
    program: Pubkey,
    runner: Pubkey,
    model: Pubkey,
    request: &'a RunRequest,
    p: &'a Prepared,
}

impl Context<'_> {
    /// A step that reads the sections `reads` (bit s for section s; section zero always) and
    /// also carries those of `near` that fit.
    fn step_item(&self, ticket: u32, reads: u32, near: u32) -> Item {
        self.step_carrying(ticket, &self.step_weights(reads, near).0)
    }

    /// A step carrying `weights`.
    fn step_carrying(&self, ticket: u32, weights: &[Pubkey]) -> Item {
        Item::model(
            Kind::Step,
            vec![ix::step(
                &self.program,
                &self.p.address,
                &self.model,
                weights,
                ticket,
                self.request.budget,
            )],
        )
    }

    /// The weight accounts a step carries: every section's where the model's accounts and the
    /// run fit what one transaction may load (so that any step in flight can do any item),
    /// else section zero's, those of `reads` and then those of `near` (the sections of the
    /// steps planned around it: a step that lands before or after its neighbour still finds
    /// what it reads), in section order, as many as fit together. `false` when some of
    /// `reads` did not fit: the step stops before the first item that reads one.
    fn step_weights(&self, reads: u32, near: u32) -> (Vec<Pubkey>, bool) {
        let p = self.p;
        if p.carries_all {
            return (p.weights.clone(), true);
        }
        let account = |s: usize| WEIGHT_HEADER_LEN as u64 + p.lengths[s] as u64;
        let mut loaded = MODEL_LEN as u64 + p.len as u64 + account(0);
        let mut carried = 1u32;
        let mut complete = true;
        for wanted in [reads, near] {
            for s in 1..p.weights.len() {
                if wanted & !carried & (1 << s) == 0 {
                    continue;
                }
                if loaded + account(s) <= MAX_MODEL_BYTES {
                    loaded += account(s);
                    carried |= 1 << s;
                } else if wanted == reads {
                    complete = false;
                }
            }
        }
        let weights = (0..p.weights.len())
            .filter(|s| carried & (1 << s) != 0)
            .map(|s| p.weights[s])
            .collect();
        (weights, complete)
    }

    /// Step transactions under fresh tickets, one per entry of `reads` (the sections each
    /// step's items read, in the order planned), up to the first that cannot carry all of
    /// them: the steps after it would start elsewhere than planned, so the next round plans
    /// them from the chain. Each also carries what the steps planned within `window` of it
    /// read, where that fits: steps in flight together may land in any order.
    fn next_steps(&self, reads: &[u32], window: usize) -> Vec<Item> {
        self.p.last_reads.set(reads.first().copied().unwrap_or(0));
        let mut items = Vec::with_capacity(reads.len());
        for (k, &step) in reads.iter().enumerate() {
            let around = reads[k.saturating_sub(window)..(k + window + 1).min(reads.len())].iter();
            let near = around.fold(0, |all, r| all | r);
            let ticket = self.p.tickets.get().wrapping_add(1);
            self.p.tickets.set(ticket);
            let (weights, complete) = self.step_weights(step, near);
            items.push(self.step_carrying(ticket, &weights));
            if !complete {
                break;
            }
        }
        items
    }

    fn close_item(&self) -> Item {
        Item::model(
            Kind::CloseRun,
            vec![ix::close_run(&self.program, &self.p.address, &self.runner)],
        )
    }

    /// The run account's creation (or, where someone funded the address, the top-up, the
    /// allocation with the seed and the assignment) and StartRun, in one transaction.
    fn start_item(&self, prompt: OwnedPrompt, rent: u64, funded: u64) -> Item {
        let (me, address, len) = (&self.runner, &self.p.address, self.p.len as u64);
        let seed = run_seed(&self.model, self.request.nonce);
        let mut instructions: Vec<Instruction> = Vec::with_capacity(4);
        if funded == 0 {
            instructions.push(
                solana_system_interface::instruction::create_account_with_seed(
                    me,
                    address,
                    me,
                    &seed,
                    rent,
                    len,
                    &self.program,
                ),
            );
        } else {
            // create_account_with_seed refuses an address that holds lamports.
            if rent > funded {
                instructions.push(solana_system_interface::instruction::transfer(
                    me,
                    address,
                    rent - funded,
                ));
            }
            instructions.push(solana_system_interface::instruction::allocate_with_seed(
                address,
                me,
                &seed,
                len,
                &self.program,
            ));
        }
        instructions.push(ix::start_run(
            &self.program,
            address,
            me,
            &self.model,
            &self.p.weights[0],
            self.request.nonce,
            self.p.steps,
            &self.request.settings,
            self.request.source,
            prompt,
        ));
        Item::model(Kind::StartRun, instructions)
    }
}

/// The sealed model's accounts, the prompt's tokens, the plan and the run's address.
async fn prepare<T: Transport>(
    t: &T,
    runner: &Keypair,
    model_address: &Pubkey,
    request: &RunRequest,
    artifact: &Artifact<'_>,
    hash: [u8; 32],
) -> Result<Prepared, RunOnChainError> {
    let sealed = crate::chain::existing_model(t, model_address).await?;
    let weights: Vec<Pubkey> = sealed.weight_accounts[..sealed.sections().len()].to_vec();
    let lengths: Vec<u32> = sealed.section_lengths[..weights.len()].to_vec();
    let config = artifact.config();
    let prompt_tokens = request.prompt.tokens(artifact)?;
    let steps = request
        .steps
        .unwrap_or_else(|| default_steps(config.context_length, prompt_tokens.len()));
    let mut plan = plan(
        artifact,
        &prompt_tokens,
        steps,
        request.settings,
        request.budget,
    )?;
    if request.source == SeedSource::Drawn {
        // StartRun leaves a drawn run's generator at 0 until its first step draws the seed;
        // what follows is planned again once the seed is known ([`replan`]).
        plan.start[curta_core::infer::state::field::RNG..][..8].fill(0);
    }
    let len = run_len(&config, steps);
    Ok(Prepared {
        hash,
        carries_all: model_bytes(lengths.iter().copied()) + len <= MAX_MODEL_BYTES,
        weights,
        lengths,
        last_reads: Cell::new(0),
        plan,
        steps,
        address: run_address(
            &t.program_id(),
            &runner.pubkey(),
            model_address,
            request.nonce,
        ),
        len: len as usize,
        tickets: Cell::new(
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.subsec_nanos()),
        ),
    })
}

/// What the run address holds: nothing (or someone's lamports), or this very run (the same
/// model, runner, nonce, token count, and a state curta-core's run of this prompt and these
/// settings reaches). Anything else is refused with the command that frees the nonce.
async fn existing<T: Transport>(
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
                p.plan = replan(artifact, request, p, header.seed)?;
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
            let mut shadow = Shadow::new(model, p.plan.start.clone());
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
async fn price<T: Transport>(
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
                + ctx.p.plan.steps,
            0,
            None,
        ),
        Existing::Resume(header) => (steps_left(model, &header.state, budget)?, 0, None),
        Existing::Fresh { funded } => {
            let encoding = match &ctx.request.prompt {
                Prompt::Text(text) => {
                    encoding_steps(model.metadata(), text, ctx.p.plan.start.len(), budget)?
                }
                Prompt::Tokens(_) => 0,
            };
            let start = ctx.start_item(
                OwnedPrompt::Tokens(ctx.p.plan.prompt_tokens.clone()),
                rent_minimum,
                *funded,
            );
            (
                encoding + ctx.p.plan.steps,
                rent_minimum.saturating_sub(*funded),
                Some(start),
            )
        }
    };
    let mut fees = left as u64
        * engine
            .fee(Kind::Step, &ctx.step_item(0, 0, 0).instructions)
            .await?;
    if let Some(start) = start {
        fees += engine.fee(Kind::StartRun, &start.instructions).await?;
    }
    if !ctx.request.keep {
        fees += engine
            .fee(Kind::CloseRun, &ctx.close_item().instructions)
            .await?;
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
async fn start<T: Transport>(
    engine: &mut Engine<'_, T>,
    ctx: &Context<'_>,
    funded: u64,
) -> Result<(&'static str, u64), RunOnChainError> {
    let rent = engine.transport().rent_minimum(ctx.p.len).await?;
    let ids = || OwnedPrompt::Tokens(ctx.p.plan.prompt_tokens.clone());
    let mut tries = match &ctx.request.prompt {
        Prompt::Text(text) => vec![("text", OwnedPrompt::Text(text.clone())), ("tokens", ids())],
        Prompt::Tokens(_) => vec![("tokens", ids())],
    };
    let mut last = None;
    for (sent_as, prompt) in tries.drain(..) {
        let item = ctx.start_item(prompt, rent, funded);
        // The largest form of the item in the engine's format (a price's compute-budget
        // instructions counted whether set or not).
        let len = crate::engine::transaction_len_in(
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
                engine.run_one(item, "start run").await?;
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

fn over_compute_limit(error: &TransactionError, logs: &[String]) -> bool {
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
/// (0 when the prompt went as ids, or StartRun's share ended the encoding).
async fn encode<T: Transport>(
    engine: &mut Engine<'_, T>,
    ctx: &Context<'_>,
    model: &Model<'_>,
    limit: AccountLimit,
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
        let failures = engine.run(items, ctx.p.window(limit.units), false).await?;
        sent += left.max(1) - failures.len() as u32;
        // A step of ours that landed after the encoding ended (a stranger's steps did part of
        // it) steps the run itself: refused with SectionNotLoaded where it carries section
        // zero only, and after a very short run's end with RunEnded.
        if let Some(failure) = failures.iter().find(|f| !passed_by(&f.error)) {
            return Err(refused(engine, ctx, &failure.error).await);
        }
    }
}

/// How many steps [`draw`] sends at most before giving up on a seed (each waits for the
/// cluster to pass the start slot first, so a second is rare).
const DRAW_TRIES: u32 = 8;

/// Draws a drawn run's seed: once the cluster is past the slot StartRun landed in, one step
/// (the program refuses a step in the start slot with SeedNotReady: tried again after the next
/// slot). Returns the seed in force, read from the run's header, and the steps this call
/// sent that advanced the run (0 when the seed was drawn already, by anyone).
async fn draw<T: Transport>(
    engine: &mut Engine<'_, T>,
    ctx: &Context<'_>,
    model: &Model<'_>,
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
        let failures = engine.run(ctx.next_steps(&[first], 0), 1, false).await?;
        match failures.first() {
            None => sent += 1,
            Some(failure) if curta_error(&failure.error) == Some(CurtaError::SeedNotReady) => {}
            Some(failure) => return Err(refused(engine, ctx, &failure.error).await),
        }
    }
    Err(RunOnChainError::RunAccount {
        address,
        problem: format!("its seed was still not drawn after {DRAW_TRIES} steps"),
    })
}

/// The plan of a drawn run once its seed is known: the request's settings with that seed.
fn replan(
    artifact: &Artifact<'_>,
    request: &RunRequest,
    p: &Prepared,
    seed: u64,
) -> Result<Plan, RunOnChainError> {
    let settings = Settings {
        seed,
        ..request.settings
    };
    Ok(plan(
        artifact,
        &p.plan.prompt_tokens,
        p.steps,
        settings,
        request.budget,
    )?)
}

/// A seed source's name in reports and errors.
pub fn source_name(source: SeedSource) -> &'static str {
    match source {
        SeedSource::None => "none",
        SeedSource::Drawn => "drawn",
        SeedSource::Chosen => "chosen",
    }
}

/// What [`drive`] sent.
struct Driven {
    sent: u32,
    after_end: u32,
    out_of_reach: u32,
}

/// Steps the run to its end. Each round plans from the chain's state how many steps of this
/// client's budget are left, sends them with `window` in flight, and meanwhile watches the
/// run account: its state must be curta-core's at the point it reached, and every token that
/// lands is streamed. Steps that land after the run ended are refused by the program
/// (RunEnded) and counted; any other refusal stops the run (closed unless `--keep`).
async fn drive<T: Transport>(
    engine: &mut Engine<'_, T>,
    ctx: &Context<'_>,
    model: &Model<'_>,
    shadow: &mut Shadow<'_>,
    limit: AccountLimit,
    on_token: &mut impl FnMut(u32, &[u8]),
) -> Result<Driven, RunOnChainError> {
    let t = engine.transport();
    let mut streamed = 0usize;
    let mut driven = Driven {
        sent: 0,
        after_end: 0,
        out_of_reach: 0,
    };
    let poll = engine.profile.poll.max(Duration::from_millis(50));
    loop {
        let header = observe(t, ctx, shadow, &mut streamed, on_token).await?;
        if point(&header.state).0 {
            return Ok(driven);
        }
        let mut reads = steps_ahead(model, &header.state, ctx.request.budget, usize::MAX)?;
        if reads.is_empty() {
            reads.push(0);
        }
        let items = ctx.next_steps(&reads, ctx.p.window(limit.units));
        let count = items.len() as u32;
        let done = Cell::new(false);
        let sending = async {
            let result = engine.run(items, ctx.p.window(limit.units), false).await;
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
        driven.sent += count - failures.len() as u32;
        for failure in failures {
            match curta_error(&failure.error) {
                Some(CurtaError::RunEnded) => driven.after_end += 1,
                Some(CurtaError::SectionNotLoaded) => driven.out_of_reach += 1,
                _ => return Err(refused(engine, ctx, &failure.error).await),
            }
        }
    }
}

/// Reads the run account, follows it with curta-core's run and streams the tokens it holds
/// that were not streamed yet.
async fn observe<T: Transport>(
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
    let plan = &ctx.p.plan;
    if header.text != plan.text_of(count) {
        return Err(RunOnChainError::Diverged {
            address,
            what: format!(
                "the text {:?}, curta-core's {:?}",
                String::from_utf8_lossy(&header.text),
                String::from_utf8_lossy(&plan.text_of(count))
            ),
        });
    }
    for i in *streamed..count.min(plan.tokens.len()) {
        on_token(plan.tokens[i], &plan.pieces[i]);
    }
    *streamed = (*streamed).max(count);
    Ok(*header)
}

/// Whether a step's refusal only says that the run moved past what the step was planned for:
/// it ended (`RunEnded`), or its next item reads a section the step does not carry
/// (`SectionNotLoaded`, where steps carry only the sections they read).
fn passed_by(error: &TransactionError) -> bool {
    matches!(
        curta_error(error),
        Some(CurtaError::RunEnded | CurtaError::SectionNotLoaded)
    )
}

/// A step the program refused for another reason than the run's end: the same step on the
/// same state fails the same way, so the run cannot go on. Its rent goes back to the runner
/// (unless --keep), and the error says so, with the program's log of a simulated step.
async fn refused<T: Transport>(
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
        false => match engine.run_one(ctx.close_item(), "close run").await {
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

/// Reads the ended run back, checks its tokens and text against the plan, and closes it
/// (unless `--keep`). Returns the run as read, the lamports it held and the close's units.
async fn finish<T: Transport>(
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
    let plan = &ctx.p.plan;
    let tokens = generated(model, &header.state)?;
    if tokens != plan.tokens {
        return Err(RunOnChainError::Diverged {
            address,
            what: format!(
                "the chain's tokens {tokens:?}, curta-core's {:?}",
                plan.tokens
            ),
        });
    }
    if header.text != plan.text() {
        return Err(RunOnChainError::Diverged {
            address,
            what: format!(
                "the chain's text {:?}, curta-core's {:?}",
                String::from_utf8_lossy(&header.text),
                String::from_utf8_lossy(&plan.text())
            ),
        });
    }
    let mut close_units = None;
    if !ctx.request.keep {
        let close = ctx.close_item();
        let simulation = engine.simulate(&close).await?;
        close_units = simulation.result.is_ok().then_some(simulation.units);
        engine.run_one(close, "close run").await?;
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
