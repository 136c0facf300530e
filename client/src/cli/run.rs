//! `client run` and `client perplexity`.

use anyhow::{anyhow, bail, Context, Result};
use clap::Args;
use curta_core::convert::MappedFile;
use curta_core::infer::{parse_fixed16, Fixed16, Settings, Status, MAX_TEMPERATURE, ONE};
use curta_core::{decode, Artifact};
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::str::FromStr;

use super::artifact::emit;
use super::chain::{rpc, runtime};
use super::config::{GlobalArgs, Output};
use crate::run::{fetch_sealed, generate, perplexity, Prompt};

#[derive(Args, Debug)]
pub struct RunArgs {
    /// An artifact file, or the address of a sealed model on the cluster (`--url`,
    /// `--program-id`): its weight accounts are read and checked against the declared hash
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
    /// The generator's seed (xorshift64*), not 0 [default: from the clock, printed]
    #[arg(long)]
    pub seed: Option<u64>,
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

fn parse_ids(what: &str, s: &str) -> Result<Vec<u32>> {
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

fn settings(args: &RunArgs) -> Result<(Settings, u64)> {
    let temperature = fixed(
        "--temperature",
        &args.temperature,
        0,
        MAX_TEMPERATURE,
        &format!("0 (greedy) to {}", Fixed16(MAX_TEMPERATURE)),
    )?;
    let top_p = fixed(
        "--top-p",
        &args.top_p,
        1,
        ONE,
        "above 0 (at least 0.00001), at most 1",
    )?;
    let seed = match args.seed {
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

/// The artifact of a path (mapped) or of a sealed model's address (read from the cluster).
enum Source {
    File(MappedFile, PathBuf),
    Chain(Vec<u8>, String),
}

impl Source {
    fn open(model: &str, global: &GlobalArgs) -> Result<Source> {
        let path = Path::new(model);
        if path.exists() {
            let file = MappedFile::open(path).with_context(|| format!("artifact {model}"))?;
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

pub fn run(args: RunArgs, global: GlobalArgs) -> Result<()> {
    let (settings, seed) = settings(&args)?;
    let prompt = match (&args.prompt, &args.prompt_tokens) {
        (_, Some(ids)) => Prompt::Tokens(parse_ids("--prompt-tokens", ids)?),
        (Some(text), None) => Prompt::Text(text.clone().into_bytes()),
        (None, None) => Prompt::Text(Vec::new()),
    };
    let source = Source::open(&args.model, &global)?;
    let artifact = source.artifact()?;
    let prompt_tokens = prompt.tokens(&artifact)?;
    let context = artifact.config().context_length;
    let steps = args.steps.unwrap_or_else(|| {
        256.min((context + 1).saturating_sub(prompt_tokens.len() as u32))
            .max(1)
    });
    let streaming = global.output == Output::Text;
    let mut stdout = std::io::stdout().lock();
    let generation = generate(&artifact, &prompt_tokens, steps, settings, |_, piece| {
        if streaming {
            // A closed pipe stops the printing, not the run.
            let _ = stdout.write_all(piece).and_then(|()| stdout.flush());
        }
    })?;
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
