//! `client run` and `client perplexity`.

use anyhow::{anyhow, bail, Context, Result};
use clap::Args;
use curta_core::convert::{LoadedFile, MappedFile};
use curta_core::infer::{parse_fixed16, Fixed16, Settings, Status, MAX_TEMPERATURE, ONE};
use curta_core::{decode, Artifact};
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::str::FromStr;

use super::artifact::emit;
use super::config::{GlobalArgs, Output};
use super::model::{rpc, runtime};
use crate::model::fetch_sealed;
use crate::run::onchain::{default_steps, OnChainRun, RunRequest};
use crate::run::{generate, perplexity, Prompt};

#[derive(Args, Debug)]
pub struct RunArgs {
    /// An artifact file, or the address of a sealed model on the cluster (`--url`,
    /// `--program-id`): its weight accounts are read and checked against the declared hash
    #[arg(required_unless_present = "from_run")]
    pub model: Option<String>,
    /// Recompute a run account off chain from its own fields (model, prompt, token count,
    /// temperature, top-p, the seed in force) and the sealed model, and say whether every
    /// token and byte of text agrees (exit status 1 when something differs)
    #[arg(long, value_name = "RUN", conflicts_with_all = ["model", "on_chain"])]
    pub from_run: Option<String>,
    #[command(flatten)]
    pub generation: GenerationArgs,
    /// Run the sealed model inside the program: a run account, a Step transaction per piece
    /// of work (the keypair pays rent, returned at close, and every fee)
    #[arg(long)]
    pub on_chain: bool,
    /// With --on-chain: leave the run account open after the last step (its rent stays in it)
    #[arg(long, requires = "on_chain")]
    pub keep: bool,
    /// With --on-chain: the run's number among your runs of this model (its account's
    /// address); the same command with the same nonce resumes an interrupted run [default: 0]
    #[arg(long, requires = "on_chain")]
    pub nonce: Option<u32>,
    /// With --on-chain: the compute units a block gives one writable account [default: read
    /// from the cluster's features: 40,000,000 with SIMD-0286, 24,000,000 with SIMD-0306,
    /// else 12,000,000]; the steps in flight are three times this over a step's 1,250,000 (a
    /// limit under a step's units: one step at a time)
    #[arg(long, requires = "on_chain", value_name = "UNITS")]
    pub account_cu_limit: Option<u64>,
    /// Off chain: the threads a matrix stage's rows and a layer's heads are split across (the
    /// same tokens for any count; more than the cores is slower) [default: the machine's cores]
    #[arg(long, value_name = "N", conflicts_with = "on_chain")]
    pub threads: Option<usize>,
}

/// `client runs`: the signer's runs of a model.
#[derive(Args, Debug)]
pub struct RunsArgs {
    /// The model's address
    pub model: String,
    /// The nonces to look at: `A..B` (B excluded) or a count from 0
    #[arg(long, default_value = "0..256", value_name = "A..B")]
    pub nonces: String,
}

/// `client close-run`: closes one of the signer's runs, every lamport back.
#[derive(Args, Debug)]
#[command(group(clap::ArgGroup::new("which").required(true).args(["run", "model"])))]
pub struct CloseRunArgs {
    /// The run account's address
    pub run: Option<String>,
    /// The model of the run (with --nonce): needed for an account StartRun never initialized
    #[arg(long, requires = "nonce", conflicts_with = "run")]
    pub model: Option<String>,
    /// The run's nonce (with --model)
    #[arg(long, requires = "model")]
    pub nonce: Option<u32>,
}

/// The generation options `run` and `rehearse-run` share.
#[derive(Args, Debug)]
pub struct GenerationArgs {
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
    /// The generator's seed (xorshift64*), not 0 [default: from the clock, printed]. On
    /// chain, a sampled run's seed in force is drawn from this seed, the run's address and the
    /// hash of the slot StartRun lands in, unless --chosen-seed
    #[arg(long)]
    pub seed: Option<u64>,
    /// On chain: --seed is the seed in force as given (a reproducible run, recorded in the run
    /// account as chosen by the runner) instead of drawn from the chain
    #[arg(long)]
    pub chosen_seed: bool,
}

#[derive(Args, Debug)]
pub struct RehearseRunArgs {
    /// The CURTAW01 artifact: published and sealed in an in-process bank running the real
    /// program, then run on chain there
    pub artifact: PathBuf,
    #[command(flatten)]
    pub generation: GenerationArgs,
    /// Leave the run account open after the last step
    #[arg(long)]
    pub keep: bool,
    /// The run's nonce [default: 0]
    #[arg(long)]
    pub nonce: Option<u32>,
}

#[derive(Args, Debug)]
pub struct PerplexityArgs {
    /// An artifact file
    pub artifact: PathBuf,
    /// A text file, tokenized with the model's tokenizer
    #[arg(long, conflicts_with = "tokens", required_unless_present = "tokens")]
    pub text: Option<PathBuf>,
    /// Token ids, comma-separated
    #[arg(long, value_name = "IDS")]
    pub tokens: Option<String>,
}

pub(super) fn parse_ids(what: &str, s: &str) -> Result<Vec<u32>> {
    s.split(',')
        .map(|t| {
            u32::from_str(t.trim()).map_err(|_| {
                anyhow!(
                    "{what}: '{}' is not a token id (comma-separated non-negative integers)",
                    t.trim()
                )
            })
        })
        .collect()
}

/// A decimal setting with 16 fractional bits, checked against its range.
fn fixed(what: &str, text: &str, min: u32, max: u32, range: &str) -> Result<u32> {
    let value = parse_fixed16(text).ok_or_else(|| {
        anyhow!("{what} '{text}' is not a decimal number (digits, an optional point, at most 12 decimals)")
    })?;
    if value < min || value > max {
        bail!("{what} {text} is out of range: {range}");
    }
    Ok(value)
}

fn settings(args: &GenerationArgs) -> Result<(Settings, u64)> {
    settings_of(&args.temperature, &args.top_p, args.seed)
}

/// `--temperature`, `--top-p` and `--seed` (from the clock when not given), checked.
pub(super) fn settings_of(
    temperature: &str,
    top_p: &str,
    seed: Option<u64>,
) -> Result<(Settings, u64)> {
    let temperature = fixed(
        "--temperature",
        temperature,
        0,
        MAX_TEMPERATURE,
        &format!("0 (greedy) to {}", Fixed16(MAX_TEMPERATURE)),
    )?;
    let top_p = fixed(
        "--top-p",
        top_p,
        1,
        ONE,
        "above 0 (at least 0.00001), at most 1",
    )?;
    let seed = match seed {
        Some(0) if temperature != 0 => {
            bail!("--seed 0 cannot sample (it is xorshift64*'s fixed point): use any other seed")
        }
        Some(seed) => seed,
        None => std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos() as u64)
            .unwrap_or(1)
            .max(1),
    };
    Ok((
        Settings {
            temperature,
            top_p,
            seed,
        },
        seed,
    ))
}

/// The artifact of a path (loaded, `curta_core::convert::LoadedFile`) or of a sealed model's
/// address (read from the cluster).
enum Source {
    File(LoadedFile, PathBuf),
    Chain(Vec<u8>, String),
}

impl Source {
    fn open(model: &str, global: &GlobalArgs) -> Result<Source> {
        let path = Path::new(model);
        if path.exists() {
            let file = LoadedFile::open(path).with_context(|| format!("artifact {model}"))?;
            return Ok(Source::File(file, path.to_path_buf()));
        }
        let address = solana_pubkey::Pubkey::from_str(model).map_err(|_| {
            anyhow!("'{model}' is neither an artifact file nor a base-58 model address")
        })?;
        let runtime = runtime()?;
        let t = rpc(global, &runtime)?;
        let (bytes, _) = runtime.block_on(fetch_sealed(&t, &address))?;
        Ok(Source::Chain(bytes, model.to_string()))
    }

    fn artifact(&self) -> Result<Artifact<'_>> {
        match self {
            Source::File(file, path) => decode(file.bytes())
                .map_err(|e| anyhow!("artifact {}: not a CURTAW01 artifact: {e}", path.display())),
            Source::Chain(bytes, model) => decode(bytes).map_err(|e| {
                anyhow!("model {model}: its sections are not a CURTAW01 artifact: {e}")
            }),
        }
    }
}

fn prompt(args: &GenerationArgs) -> Result<Prompt> {
    prompt_of(&args.prompt, &args.prompt_tokens)
}

/// `--prompt` or `--prompt-tokens` (an empty text when neither).
pub(super) fn prompt_of(text: &Option<String>, ids: &Option<String>) -> Result<Prompt> {
    Ok(match (text, ids) {
        (_, Some(ids)) => Prompt::Tokens(parse_ids("--prompt-tokens", ids)?),
        (Some(text), None) => Prompt::Text(text.clone().into_bytes()),
        (None, None) => Prompt::Text(Vec::new()),
    })
}

pub fn run(args: RunArgs, global: GlobalArgs) -> Result<()> {
    if let Some(run) = &args.from_run {
        return from_run(run, &global);
    }
    if args.on_chain {
        return run_on_chain(args, global);
    }
    let (settings, seed) = settings(&args.generation)?;
    let prompt = prompt(&args.generation)?;
    let model = args.model.as_deref().unwrap_or_default();
    let source = Source::open(model, &global)?;
    let artifact = source.artifact()?;
    let prompt_tokens = prompt.tokens(&artifact)?;
    let context = artifact.config().context_length;
    let steps = args
        .generation
        .steps
        .unwrap_or_else(|| default_steps(context, prompt_tokens.len()));
    let threads = match args.threads {
        Some(0) => bail!("--threads 0: at least 1"),
        Some(n) => n,
        None => std::thread::available_parallelism().map_or(1, |n| n.get()),
    };
    let streaming = global.output == Output::Text;
    let mut stdout = std::io::stdout().lock();
    let generation = generate(
        &artifact,
        &prompt_tokens,
        steps,
        settings,
        threads,
        |_, piece| {
            if streaming {
                // A closed pipe stops the printing, not the run.
                let _ = stdout.write_all(piece).and_then(|()| stdout.flush());
            }
        },
    )?;
    drop(stdout);
    match global.output {
        Output::Text => {
            let end = match generation.end {
                Status::EndToken => "ended by token",
                _ => "steps done",
            };
            emit("\n")?;
            eprintln!(
                "{} tokens ({end}) in {:.3} s: {:.1} tokens/s, seed {seed}, weights hash {}",
                generation.tokens.len(),
                generation.seconds,
                generation.tokens_per_second,
                generation.weights_hash
            );
        }
        Output::Json => {
            let mut json = serde_json::to_value(&generation)?;
            json["seed"] = serde_json::json!(seed);
            emit(&(serde_json::to_string_pretty(&json)? + "\n"))?;
        }
    }
    Ok(())
}

/// A token's text to stdout as it lands (a closed pipe stops the printing, not the run).
fn streamer(enabled: bool) -> impl FnMut(u32, &[u8]) {
    move |_, piece| {
        if enabled {
            let mut stdout = std::io::stdout().lock();
            let _ = stdout.write_all(piece).and_then(|()| stdout.flush());
        }
    }
}

/// The run's figures, for the text output (on stderr, after the text).
fn on_chain_summary(run: &OnChainRun) -> String {
    let end = match run.end {
        Status::EndToken => "ended by token",
        _ => "steps done",
    };
    let resumed = run
        .resumed_from
        .map_or(String::new(), |c| format!(", resumed after {c} steps"));
    let others = match run.steps_by_others {
        0 => String::new(),
        n => format!(", {n} steps sent by others"),
    };
    let others = match run.encoding_steps {
        0 => others,
        n => format!(" ({n} of them tokenized the prompt){others}"),
    };
    let rent = match run.closed {
        true => format!("rent {} lamports paid and returned at close", run.rent),
        false => format!(
            "run account kept, holding {} lamports of rent (close it: `client close-run {}`)",
            run.rent_held, run.run
        ),
    };
    let reach = match run.steps_out_of_reach {
        0 => String::new(),
        n => format!(", {n} where the run had moved past the sections they carried"),
    };
    let early = match run.steps_before_seed {
        0 => String::new(),
        n => format!(", {n} in the start slot before the seed could be drawn"),
    };
    format!(
        "{} tokens ({end}) on chain in {:.3} s: run {} (nonce {}{resumed}), {} steps sent{others}, {} after the end{reach}{early}, up to {} in flight ({} units per account and block, {}), {} {} transactions ({} failed), fees {} lamports, {rent}; the runner spent {} lamports; seed {} ({}), weights hash {}",
        run.tokens.len(),
        run.seconds,
        run.run,
        run.nonce,
        run.steps_sent,
        run.steps_after_end,
        run.window,
        run.account_limit.units,
        run.account_limit.source,
        run.transactions,
        run.tx_version,
        run.failed_transactions,
        run.fees,
        run.lamports_spent(),
        run.seed,
        match run.seed_source {
            "drawn" => format!(
                "drawn from slot {}'s hash and runner seed {}",
                run.seed_slot, run.runner_seed
            ),
            source => source.to_string(),
        },
        run.weights_hash,
    )
}

fn on_chain_json(run: &OnChainRun) -> Result<serde_json::Value> {
    let mut json = serde_json::to_value(run)?;
    json["lamports_spent"] = serde_json::json!(run.lamports_spent() as i64);
    json["end"] = serde_json::json!(match run.end {
        Status::EndToken => "end token",
        _ => "steps done",
    });
    Ok(json)
}

fn request(
    generation: &GenerationArgs,
    nonce: Option<u32>,
    keep: bool,
    global: &GlobalArgs,
) -> Result<RunRequest> {
    let (settings, _) = settings(generation)?;
    let mut request = RunRequest::new(prompt(generation)?, generation.steps, settings);
    if generation.chosen_seed {
        if settings.temperature == 0 {
            bail!("--chosen-seed is for sampled runs: a greedy run (--temperature 0) has no seed");
        }
        request.source = curta_interface::run::SeedSource::Chosen;
    }
    request.nonce = nonce.unwrap_or(0);
    request.keep = keep;
    request.compute_unit_price = global.compute_unit_price;
    request.tx_version = global.tx_version();
    Ok(request)
}

fn run_on_chain(args: RunArgs, global: GlobalArgs) -> Result<()> {
    let model = args.model.as_deref().unwrap_or_default();
    if Path::new(model).exists() {
        bail!(
            "--on-chain runs a sealed model: give its address, not the file {model} (publish and seal it with `client publish {model} --seal`, or try it in a bank with `client rehearse-run {model}`)"
        );
    }
    let address = solana_pubkey::Pubkey::from_str(model)
        .map_err(|_| anyhow!("'{model}' is not a base-58 model address"))?;
    let mut request = request(&args.generation, args.nonce, args.keep, &global)?;
    request.account_limit = args.account_cu_limit;
    let keypair = global.keypair()?;
    let runtime = runtime()?;
    let t = rpc(&global, &runtime)?;
    let streaming = global.output == Output::Text;
    if streaming {
        eprintln!(
            "running model {address} on {} (nonce {}, {}; the same command resumes it if interrupted)",
            crate::Transport::describe(&t),
            request.nonce,
            seed_line(&request)
        );
    }
    let run = runtime.block_on(crate::run::onchain::run_on_chain(
        &t,
        &keypair,
        &address,
        &request,
        streamer(streaming),
    ))?;
    match global.output {
        Output::Text => {
            emit("\n")?;
            eprintln!("{}", on_chain_summary(&run));
        }
        Output::Json => emit(&(serde_json::to_string_pretty(&on_chain_json(&run)?)? + "\n"))?,
    }
    Ok(())
}

/// How the request's seed will be in force, for the line before an on-chain run.
fn seed_line(request: &RunRequest) -> String {
    use curta_interface::run::SeedSource;
    match request.source {
        SeedSource::None => "greedy".into(),
        SeedSource::Chosen => format!("seed {}, chosen", request.settings.seed),
        SeedSource::Drawn => format!(
            "seed drawn from runner seed {} and the start slot's hash",
            request.settings.seed
        ),
    }
}

/// `client run --from-run <RUN>`.
fn from_run(run: &str, global: &GlobalArgs) -> Result<()> {
    let address = pubkey("run", run)?;
    let runtime = runtime()?;
    let t = rpc(global, &runtime)?;
    let replay = runtime.block_on(crate::run::onchain::replay(&t, &address))?;
    match global.output {
        Output::Text => emit(&replay_text(&replay))?,
        Output::Json => {
            let mut json = serde_json::to_value(&replay)?;
            json["agrees"] = serde_json::json!(replay.agrees());
            json["state"] = match &replay.state {
                Ok(()) => serde_json::json!("equal"),
                Err(what) => serde_json::json!(what),
            };
            emit(&(serde_json::to_string_pretty(&json)? + "\n"))?
        }
    }
    if !replay.agrees() {
        bail!("run {address} differs from curta-core's run of its own fields");
    }
    Ok(())
}

fn replay_text(r: &crate::run::onchain::Replay) -> String {
    let yes = |b: bool| if b { "agree" } else { "DIFFER" };
    let seed = match r.seed_source {
        "drawn" if r.seed == 0 => format!(
            "drawn, not yet (runner seed {}, start slot {})",
            r.runner_seed, r.start_slot
        ),
        "drawn" => format!(
            "{} drawn from slot {}'s hash {} and runner seed {} ({}{})",
            r.seed,
            r.seed_slot,
            r.slot_hash,
            r.runner_seed,
            match r.seed_derivation_agrees {
                Some(true) => "the hash of these fields",
                _ => "NOT the hash of these fields",
            },
            match r.slot_hash_agrees {
                Some(true) => ", the slot hash confirmed by SlotHashes",
                Some(false) => ", the slot hash DIFFERS from SlotHashes",
                None => ", the slot has left SlotHashes",
            }
        ),
        "chosen" => format!("{}, chosen by the runner", r.seed),
        _ => "none (greedy)".into(),
    };
    format!(
        "run {} of model {} by {} (nonce {}), {}\nseed: {seed}\ntemperature {}, top-p {}, prompt {:?}\nchain tokens   {:?}\ncurta-core's   {:?}\ntokens {}, text {}, state {}\ntext: {:?}\n{}\n",
        r.run,
        r.model,
        r.runner,
        r.nonce,
        r.status,
        curta_core::infer::Fixed16(r.temperature),
        curta_core::infer::Fixed16(r.top_p),
        r.prompt_tokens,
        r.chain_tokens,
        r.offline_tokens,
        yes(r.tokens_agree),
        yes(r.text_agrees),
        match &r.state {
            Ok(()) => "agrees".to_string(),
            Err(what) => format!("DIFFERS ({what})"),
        },
        String::from_utf8_lossy(&r.chain_text),
        match r.agrees() {
            true => "every token and byte agrees",
            false => "the run DIFFERS from its recomputation",
        }
    )
}

pub(super) fn pubkey(what: &str, text: &str) -> Result<solana_pubkey::Pubkey> {
    solana_pubkey::Pubkey::from_str(text)
        .map_err(|_| anyhow!("{what} '{text}' is not a base-58 address"))
}

/// `A..B` (B excluded), or a count `N` meaning `0..N`.
pub(super) fn nonce_range(text: &str) -> Result<std::ops::Range<u32>> {
    let bad = || anyhow!("--nonces '{text}': expected A..B (B excluded, A < B) or a count");
    let range = match text.split_once("..") {
        Some((a, b)) => {
            a.trim().parse().map_err(|_| bad())?..b.trim().parse().map_err(|_| bad())?
        }
        None => 0..text.trim().parse().map_err(|_| bad())?,
    };
    if range.is_empty() {
        return Err(bad());
    }
    Ok(range)
}

pub fn runs(args: RunsArgs, global: GlobalArgs) -> Result<()> {
    let model = pubkey("model", &args.model)?;
    let nonces = nonce_range(&args.nonces)?;
    let runner = global.keypair()?;
    let runtime = runtime()?;
    let t = rpc(&global, &runtime)?;
    let me = solana_signer::Signer::pubkey(&runner);
    let listed = runtime.block_on(crate::run::onchain::runs(&t, &me, &model, nonces.clone()))?;
    match global.output {
        Output::Text => {
            let mut text = format!(
                "runs of {me} on model {model} at nonces {}..{}: {}\n",
                nonces.start,
                nonces.end,
                listed.len()
            );
            for r in &listed {
                text += &format!(
                    "  nonce {:>4}  {}  {:<14} position {:>4}, {:>4} of {:>4} tokens, {:>5} steps landed, rent {} lamports\n",
                    r.nonce, r.address, r.status, r.position, r.tokens, r.steps, r.steps_landed, r.rent
                );
            }
            if !listed.is_empty() {
                text += "close one with `client close-run <ADDRESS>` (or --model M --nonce N)\n";
            }
            emit(&text)
        }
        Output::Json => emit(&(serde_json::to_string_pretty(&listed)? + "\n")),
    }
}

pub fn close_run(args: CloseRunArgs, global: GlobalArgs) -> Result<()> {
    let which = match (&args.run, &args.model, args.nonce) {
        (Some(run), _, _) => crate::run::onchain::RunRef::Address(pubkey("run", run)?),
        (None, Some(model), Some(nonce)) => crate::run::onchain::RunRef::Nonce {
            model: pubkey("model", model)?,
            nonce,
        },
        _ => bail!("give the run's address, or --model and --nonce"),
    };
    let runner = global.keypair()?;
    let runtime = runtime()?;
    let t = rpc(&global, &runtime)?;
    let closed = runtime.block_on(crate::run::onchain::close_run_in(
        &t,
        &runner,
        which,
        global.compute_unit_price,
        global.tx_version(),
    ))?;
    match global.output {
        Output::Text => emit(&format!(
            "closed run account {}: {} lamports returned, fee {} lamports (balance {} -> {})\n",
            closed.address,
            closed.returned,
            closed.fee,
            closed.balance_before,
            closed.balance_after
        )),
        Output::Json => emit(&(serde_json::to_string_pretty(&closed)? + "\n")),
    }
}

pub fn rehearse_run(args: RehearseRunArgs, global: GlobalArgs) -> Result<()> {
    let file = MappedFile::open(&args.artifact)
        .with_context(|| format!("artifact {}", args.artifact.display()))?;
    let request = request(&args.generation, args.nonce, args.keep, &global)?;
    let authority = global.rehearsal_keypair()?;
    let streaming = global.output == Output::Text;
    if streaming {
        eprintln!(
            "publishing and sealing {} in an in-process bank running the real program, then running it there (nonce {}, seed {})",
            args.artifact.display(),
            request.nonce,
            request.settings.seed
        );
    }
    let (report, run) = runtime()?.block_on(crate::rehearse::rehearse_run(
        file.bytes(),
        authority.as_ref(),
        &global.program_id()?,
        &global.options(),
        &request,
        streamer(streaming),
    ))?;
    match global.output {
        Output::Text => {
            emit("\n")?;
            eprint!("{}", report.to_text().replace("next:", "after:"));
            eprintln!("{}", on_chain_summary(&run));
            eprintln!("(in-process bank running the real program; the same transactions and lamports on a cluster)");
        }
        Output::Json => {
            let mut json = on_chain_json(&run)?;
            json["rehearsal"] = report.to_json();
            emit(&(serde_json::to_string_pretty(&json)? + "\n"))?;
        }
    }
    Ok(())
}

pub fn perplexity_command(args: PerplexityArgs, global: GlobalArgs) -> Result<()> {
    let source = Source::open(
        args.artifact
            .to_str()
            .ok_or_else(|| anyhow!("artifact path {} is not UTF-8", args.artifact.display()))?,
        &global,
    )?;
    let artifact = source.artifact()?;
    let tokens = match (&args.text, &args.tokens) {
        (Some(path), _) => {
            let text = std::fs::read(path).with_context(|| format!("text {}", path.display()))?;
            Prompt::Text(text).tokens(&artifact)?
        }
        (None, Some(ids)) => parse_ids("--tokens", ids)?,
        (None, None) => bail!("give --text FILE or --tokens IDS"),
    };
    let report = perplexity(&artifact, &tokens)?;
    match global.output {
        Output::Text => emit(&format!(
            "{} tokens, {} predicted: mean negative log-likelihood {:.4}, perplexity {:.4}\n",
            report.tokens,
            report.nll.len(),
            report.mean_nll,
            report.perplexity
        )),
        Output::Json => emit(&(serde_json::to_string_pretty(&report)? + "\n")),
    }
}
