//! `client claim`, `client claims`, `client close-claim` and `client watch`.

use anyhow::{bail, Result};
use clap::Args;
use curta_interface::claim::MIN_WINDOW;
use curta_interface::run::SeedSource;
use std::ops::ControlFlow;

use super::artifact::emit;
use super::config::{GlobalArgs, Output};
use super::model::{rpc, runtime};
use super::run::{nonce_range, prompt_of, pubkey, settings_of};
use crate::claim::{
    ClaimList, ClaimReport, ClaimRequest, ClaimStage, DisputeOptions, WatchEvent, WatchOptions,
};

/// `client claim`: open a claim, answer it, wait until it is settled.
#[derive(Args, Debug)]
pub struct ClaimArgs {
    /// The sealed model's address
    pub model: String,
    /// The prompt as text (tokenized with the model's tokenizer: token 1, a space prefix, ...)
    #[arg(long, conflicts_with = "prompt_tokens")]
    pub prompt: Option<String>,
    /// The prompt as token ids, comma-separated (e.g. 1,306,461)
    #[arg(long, value_name = "IDS")]
    pub prompt_tokens: Option<String>,
    /// Tokens to generate at most [default: 256, or what the context leaves]
    #[arg(long)]
    pub steps: Option<u32>,
    /// 0 is greedy; up to 16
    #[arg(long, default_value = "1.0")]
    pub temperature: String,
    /// The nucleus: above 0, up to 1 (1 keeps every token)
    #[arg(long, default_value = "0.9")]
    pub top_p: String,
    /// The claimer's seed, not 0 [default: from the clock, printed]: with --seed-source drawn
    /// the seed in force is drawn from it, the claim's address and the open slot's hash at
    /// AnswerClaim; with chosen it is the seed in force
    #[arg(long)]
    pub seed: Option<u64>,
    /// Where the seed in force comes from: drawn (from the chain, at the answer), chosen (--seed
    /// as given) or none (greedy: --temperature 0) [default: none when greedy, else drawn]
    #[arg(long, value_name = "SOURCE", value_parser = ["drawn", "chosen", "none"])]
    pub seed_source: Option<String>,
    /// Slots after the answer during which anyone may challenge (150 to 432,000)
    #[arg(long, value_name = "SLOTS", default_value_t = MIN_WINDOW)]
    pub window: u32,
    /// Micro-lamports per compute unit the bond covers a dispute's steps at (recorded in the
    /// claim: the bond rule prices the dispute at it) [default: --with-compute-unit-price, else 0]
    #[arg(long, value_name = "MICROLAMPORTS")]
    pub priority_price: Option<u64>,
    /// Lamports posted as the bond [default: the rule's minimum, cost::claim_bond]
    #[arg(long, value_name = "LAMPORTS")]
    pub bond: Option<u64>,
    /// The claim's number among your claims of this model (its account's address); the same
    /// command with the same nonce resumes an interrupted claim [default: the first free one]
    #[arg(long)]
    pub nonce: Option<u32>,
    /// Return once the claim is answered instead of waiting until its window passes
    #[arg(long)]
    pub no_wait: bool,
    /// The threads the off-chain run uses [default: the machine's cores]
    #[arg(long, value_name = "N")]
    pub threads: Option<usize>,
}

/// `client claims`: a model's claims.
#[derive(Args, Debug)]
pub struct ClaimsArgs {
    /// The model's address
    pub model: String,
    /// Only this claimer's claims, read at their derived addresses (`--nonces`) as `client
    /// runs` reads runs [default: every claimer's, from the program's accounts]
    #[arg(long, value_name = "PUBKEY")]
    pub claimer: Option<String>,
    /// With --claimer: the nonces to look at, `A..B` (B excluded) or a count from 0
    #[arg(
        long,
        default_value = "0..256",
        value_name = "A..B",
        requires = "claimer"
    )]
    pub nonces: String,
}

/// `client close-claim`: closes one of the signer's claims, its rent and bond back.
#[derive(Args, Debug)]
pub struct CloseClaimArgs {
    /// The claim account's address
    pub claim: String,
}

/// `client watch`: verify claims as they are answered, challenge wrong ones.
#[derive(Args, Debug)]
pub struct WatchArgs {
    /// A model whose claims are watched (repeat for more) [default: every model's]
    #[arg(long = "model", value_name = "MODEL")]
    pub models: Vec<String>,
    /// Challenge every wrong answer (the keypair posts the bond and the dispute run's rent),
    /// step the dispute run and resolve it
    #[arg(long)]
    pub challenge: bool,
    /// Milliseconds between two polls of the cluster [default: 400]
    #[arg(long, value_name = "MS")]
    pub poll_ms: Option<u64>,
    /// The threads an off-chain run uses [default: the machine's cores]
    #[arg(long, value_name = "N")]
    pub threads: Option<usize>,
    /// The compute units a block gives one writable account, for the dispute's steps in
    /// flight [default: read from the cluster's features]
    #[arg(long, value_name = "UNITS")]
    pub account_cu_limit: Option<u64>,
    /// Disputes stepped at once; the others (challenged already) wait their turn [default: 4]
    #[arg(long, value_name = "N")]
    pub max_disputes: Option<usize>,
}

fn threads(given: Option<usize>) -> Result<usize> {
    match given {
        Some(0) => bail!("--threads 0: at least 1"),
        Some(n) => Ok(n),
        None => Ok(std::thread::available_parallelism().map_or(1, |n| n.get())),
    }
}

fn request(args: &ClaimArgs, global: &GlobalArgs) -> Result<ClaimRequest> {
    let (settings, _) = settings_of(&args.temperature, &args.top_p, args.seed)?;
    let prompt = prompt_of(&args.prompt, &args.prompt_tokens)?;
    let mut request = ClaimRequest::new(prompt, args.steps, settings);
    request.source = match args.seed_source.as_deref() {
        Some("drawn") => SeedSource::Drawn,
        Some("chosen") => SeedSource::Chosen,
        Some(_) => SeedSource::None,
        None => request.source,
    };
    request.window = args.window;
    request.priority_price = args
        .priority_price
        .or(global.compute_unit_price)
        .unwrap_or(0);
    request.bond = args.bond;
    request.nonce = args.nonce;
    request.wait = !args.no_wait;
    request.compute_unit_price = global.compute_unit_price;
    request.tx_version = global.tx_version();
    request.threads = threads(args.threads)?;
    request.any_seed = args.seed.is_none();
    Ok(request)
}

/// A stage of `client claim`, on stderr.
fn stage_line(stage: &ClaimStage) -> String {
    match stage {
        ClaimStage::Opened {
            claim,
            nonce,
            slot,
            resumed,
        } => format!(
            "claim {claim} (nonce {nonce}) {} slot {slot}; if interrupted, the same command with --nonce {nonce} resumes it",
            match resumed {
                true => "found, opened in",
                false => "opened in",
            }
        ),
        ClaimStage::Computed { answer, seconds } => format!(
            "answer computed off chain in {seconds:.3} s: {} ids",
            answer.ids.len()
        ),
        ClaimStage::Answered { slot, window_end } => {
            format!("answered in slot {slot}; anyone may challenge until slot {window_end}")
        }
        ClaimStage::Challenged { challenger, run } => {
            format!("CHALLENGED by {challenger}: dispute run {run} decides it; waiting for Resolve")
        }
    }
}

fn claim_summary(r: &ClaimReport) -> String {
    let held = match r.state {
        "settled" | "upheld" => format!(
            "its rent and bond ({} lamports) stay in the claim until `client close-claim {}`",
            r.lamports_held, r.claim
        ),
        "overturned" => format!(
            "the bond went to the challenger; `client close-claim {}` returns the rent ({} lamports)",
            r.claim, r.lamports_held
        ),
        _ => format!(
            "it holds {} lamports (rent and bond) until closed after its window: `client close-claim {}`",
            r.lamports_held, r.claim
        ),
    };
    format!(
        "claim {} (nonce {}) {} at slot {}: {} ids, seed {} ({}), window {} slots from answer slot {} to slot {}, bond {} lamports (minimum {}); {} transactions ({} failed), fees {} lamports; {held}",
        r.claim,
        r.nonce,
        r.state,
        r.slot,
        r.tokens.len(),
        r.seed,
        r.seed_source,
        r.window,
        r.answer_slot,
        r.window_end,
        r.bond,
        r.minimum_bond,
        r.transactions,
        r.failed_transactions,
        r.fees
    )
}

pub fn claim(args: ClaimArgs, global: GlobalArgs) -> Result<()> {
    let model = pubkey("model", &args.model)?;
    let request = request(&args, &global)?;
    let keypair = global.keypair()?;
    let runtime = runtime()?;
    let t = rpc(&global, &runtime)?;
    let text = global.output == Output::Text;
    if text {
        eprintln!(
            "claiming on model {model} ({}; seed {} {}; window {} slots)",
            crate::Transport::describe(&t),
            request.settings.seed,
            crate::run::onchain::source_name(request.source),
            request.window
        );
    }
    let report = runtime.block_on(crate::claim::claim(&t, &keypair, &model, &request, |s| {
        if text {
            eprintln!("{}", stage_line(&s));
        }
    }))?;
    match global.output {
        Output::Text => {
            emit(&(String::from_utf8_lossy(&report.text_bytes).into_owned() + "\n"))?;
            eprintln!("{}", claim_summary(&report));
        }
        Output::Json => {
            let mut json = serde_json::to_value(&report)?;
            json["lamports_spent"] =
                serde_json::json!(report.balance_before as i64 - report.balance_after as i64);
            emit(&(serde_json::to_string_pretty(&json)? + "\n"))?;
        }
    }
    Ok(())
}

fn list_text(list: &ClaimList) -> String {
    let mut text = format!(
        "claims of model {}{} at slot {}: {}\n",
        list.model,
        list.claimer
            .as_ref()
            .map_or(String::new(), |c| format!(" by {c}")),
        list.slot,
        list.claims.len()
    );
    for c in &list.claims {
        let window = match (c.window_end, c.slots_left) {
            (Some(end), Some(0)) => format!("window ended at slot {end}"),
            (Some(end), Some(left)) => format!("window ends at slot {end} ({left} slots left)"),
            _ => format!("window {} slots after the answer", c.window),
        };
        text += &format!(
            "  {}  {:<10} claimer {} nonce {:>4}, {} of {} ids, {}, opened slot {}, answered slot {}, {window}, bond {}, {} lamports{}\n",
            c.address,
            c.state,
            c.claimer,
            c.nonce,
            c.token_count,
            c.steps,
            c.seed_source,
            c.open_slot,
            c.answer_slot,
            c.bond,
            c.lamports,
            c.challenger
                .as_ref()
                .map_or(String::new(), |ch| format!(", challenged by {ch}"))
        );
    }
    text
}

pub fn claims(args: ClaimsArgs, global: GlobalArgs) -> Result<()> {
    let model = pubkey("model", &args.model)?;
    let claimer = args
        .claimer
        .as_deref()
        .map(|c| pubkey("--claimer", c))
        .transpose()?;
    let nonces = nonce_range(&args.nonces)?;
    let runtime = runtime()?;
    let t = rpc(&global, &runtime)?;
    let list = runtime.block_on(crate::claim::claims(&t, &model, claimer.as_ref(), nonces))?;
    match global.output {
        Output::Text => emit(&list_text(&list)),
        Output::Json => emit(&(serde_json::to_string_pretty(&list)? + "\n")),
    }
}

pub fn close_claim(args: CloseClaimArgs, global: GlobalArgs) -> Result<()> {
    let claim = pubkey("claim", &args.claim)?;
    let keypair = global.keypair()?;
    let runtime = runtime()?;
    let t = rpc(&global, &runtime)?;
    let closed = runtime.block_on(crate::claim::close_claim(
        &t,
        &keypair,
        &claim,
        global.compute_unit_price,
        global.tx_version(),
    ))?;
    match global.output {
        Output::Text => emit(&format!(
            "closed claim {} ({}): {} lamports returned, fee {} lamports (balance {} -> {})\n",
            closed.address,
            closed.state,
            closed.returned,
            closed.fee,
            closed.balance_before,
            closed.balance_after
        )),
        Output::Json => emit(&(serde_json::to_string_pretty(&closed)? + "\n")),
    }
}

pub fn watch(args: WatchArgs, global: GlobalArgs) -> Result<()> {
    let models = args
        .models
        .iter()
        .map(|m| pubkey("--model", m))
        .collect::<Result<Vec<_>>>()?;
    let options = WatchOptions {
        models,
        challenge: args.challenge,
        poll: args.poll_ms.map(std::time::Duration::from_millis),
        threads: threads(args.threads)?,
        dispute: DisputeOptions {
            compute_unit_price: global.compute_unit_price,
            tx_version: global.tx_version(),
            account_limit: args.account_cu_limit,
        },
        max_disputes: args.max_disputes,
    };
    let keypair = global.keypair()?;
    let runtime = runtime()?;
    let t = rpc(&global, &runtime)?;
    let output = global.output;
    let on_event = |event: &WatchEvent| {
        let line = match output {
            Output::Text => event.to_string(),
            Output::Json => serde_json::to_string(event).unwrap_or_default(),
        };
        // A closed pipe stops the watcher.
        match emit(&(line + "\n")) {
            Ok(()) => ControlFlow::Continue(()),
            Err(_) => ControlFlow::Break(()),
        }
    };
    runtime.block_on(async {
        let stop = stop_signal()?;
        crate::claim::watch(&t, &keypair, &options, on_event, stop).await?;
        Ok(())
    })
}

/// Completes on Ctrl-C (SIGINT) or SIGTERM. The handlers are installed here, before the
/// watcher starts, so that a signal never finds the default action (killing the process
/// mid-poll) in place.
#[cfg(unix)]
fn stop_signal() -> Result<impl std::future::Future<Output = ()>> {
    use tokio::signal::unix::{signal, SignalKind};
    let mut interrupt = signal(SignalKind::interrupt())?;
    let mut terminate = signal(SignalKind::terminate())?;
    Ok(async move {
        tokio::select! {
            _ = interrupt.recv() => {}
            _ = terminate.recv() => {}
        }
    })
}

#[cfg(not(unix))]
fn stop_signal() -> Result<impl std::future::Future<Output = ()>> {
    Ok(async {
        if tokio::signal::ctrl_c().await.is_err() {
            std::future::pending::<()>().await
        }
    })
}
