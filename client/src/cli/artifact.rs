//! `client convert`, `client inspect`, `client hash`.

use anyhow::{anyhow, Context};
use clap::Args;
use curta_core::convert::{convert_file, MappedFile};
use curta_core::{decode, weights_hash, Artifact, Config};
use serde::Serialize;
use std::fmt::Write as _;
use std::io::Write as _;
use std::path::{Path, PathBuf};

use super::config::Output;
use crate::artifact::hex;

#[derive(Args, Debug)]
pub struct ConvertArgs {
    /// llama2.c checkpoint (legacy 28-byte header)
    pub checkpoint: PathBuf,
    /// llama2.c tokenizer file
    pub tokenizer: PathBuf,
    /// Where to write the artifact (`--out`: the global `--output` is the output format)
    #[arg(short = 'o', long = "out", value_name = "OUT")]
    pub out: PathBuf,
}

#[derive(Args, Debug)]
pub struct InspectArgs {
    pub artifact: PathBuf,
    /// The same as `--output json`
    #[arg(long)]
    pub json: bool,
}

#[derive(Args, Debug)]
pub struct HashArgs {
    pub artifact: PathBuf,
}

/// Writes `text` to stdout; a closed pipe (`| head`) is not an error.
pub(super) fn emit(text: &str) -> anyhow::Result<()> {
    let mut out = std::io::stdout().lock();
    match out.write_all(text.as_bytes()).and_then(|()| out.flush()) {
        Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => {
            Err(anyhow!("writing to stdout: {e}"))
        }
        _ => Ok(()),
    }
}

/// `value` as pretty JSON, or `text`, on stdout.
fn emit_as(output: Output, text: &str, value: &impl Serialize) -> anyhow::Result<()> {
    match output {
        Output::Text => emit(text),
        Output::Json => emit(&(serde_json::to_string_pretty(value)? + "\n")),
    }
}

#[derive(Serialize)]
struct JsonConvert {
    out: String,
    bytes: u64,
    section_lengths: Vec<u64>,
    weights_hash: String,
}

pub fn convert(args: ConvertArgs, output: Output) -> anyhow::Result<()> {
    let summary = convert_file(&args.checkpoint, &args.tokenizer, &args.out)?;
    let json = JsonConvert {
        out: args.out.display().to_string(),
        bytes: summary.bytes,
        section_lengths: summary.section_lengths.clone(),
        weights_hash: hex(&summary.weights_hash),
    };
    let mut text = String::new();
    let sections = summary.section_lengths.len();
    writeln!(
        text,
        "wrote {}: {} bytes in {sections} sections",
        args.out.display(),
        summary.bytes
    )?;
    for (i, length) in summary.section_lengths.iter().enumerate() {
        writeln!(text, "section {i}: {length} bytes")?;
    }
    writeln!(text, "weights hash: {}", hex(&summary.weights_hash))?;
    emit_as(output, &text, &json)
}

/// Maps and decodes an artifact; errors name the file.
fn with_artifact<T>(path: &Path, f: impl FnOnce(&Artifact) -> T) -> anyhow::Result<T> {
    let file = MappedFile::open(path).with_context(|| format!("{}", path.display()))?;
    let artifact = decode(file.bytes()).map_err(|e| anyhow!("{}: {e}", path.display()))?;
    Ok(f(&artifact))
}

#[derive(Serialize)]
struct JsonConfig {
    dim: u32,
    hidden_dim: u32,
    layers: u32,
    heads: u32,
    kv_heads: u32,
    vocab_size: u32,
    context_length: u32,
}

impl From<Config> for JsonConfig {
    fn from(c: Config) -> Self {
        JsonConfig {
            dim: c.dim,
            hidden_dim: c.hidden_dim,
            layers: c.layers,
            heads: c.heads,
            kv_heads: c.kv_heads,
            vocab_size: c.vocab_size,
            context_length: c.context_length,
        }
    }
}

#[derive(Serialize)]
struct JsonBlocks {
    norm: u32,
    rotary: u32,
    exp: u32,
    silu: u32,
    token_entries: u32,
    sorted_ids: u32,
    token_strings: u32,
}

#[derive(Serialize)]
struct JsonSection {
    offset: u64,
    length: u64,
}

#[derive(Serialize)]
struct JsonMatrix {
    section: u32,
    columns: u32,
    rows: u32,
    row_bytes: u32,
    offset: u64,
}

#[derive(Serialize)]
struct JsonInspect {
    config: JsonConfig,
    blocks: JsonBlocks,
    sections: Vec<JsonSection>,
    matrices: Vec<JsonMatrix>,
    weights_hash: String,
}

fn describe(a: &Artifact) -> JsonInspect {
    let meta = a.metadata();
    let b = meta.blocks();
    JsonInspect {
        config: a.config().into(),
        blocks: JsonBlocks {
            norm: b.norm,
            rotary: b.rotary,
            exp: b.exp,
            silu: b.silu,
            token_entries: b.token_entries,
            sorted_ids: b.sorted_ids,
            token_strings: b.token_strings,
        },
        sections: meta
            .sections()
            .map(|s| JsonSection {
                offset: s.offset,
                length: s.length,
            })
            .collect(),
        matrices: meta
            .matrices()
            .map(|d| JsonMatrix {
                section: d.section,
                columns: d.columns,
                rows: d.rows,
                row_bytes: d.row_bytes,
                offset: d.offset,
            })
            .collect(),
        weights_hash: hex(&weights_hash(a.sections())),
    }
}

pub fn inspect(args: InspectArgs, output: Output) -> anyhow::Result<()> {
    let d = with_artifact(&args.artifact, describe)?;
    if args.json || output == Output::Json {
        return emit_as(Output::Json, "", &d);
    }
    let mut text = String::new();
    let c = &d.config;
    writeln!(text, "{}", args.artifact.display())?;
    writeln!(
            text,
        "config: dim {} hidden_dim {} layers {} heads {} kv_heads {} vocab_size {} context_length {}",
        c.dim, c.hidden_dim, c.layers, c.heads, c.kv_heads, c.vocab_size, c.context_length
    )?;
    let b = &d.blocks;
    writeln!(text, "blocks (offsets in section 0):")?;
    for (name, offset) in [
        ("normalization coefficients", b.norm),
        ("rotary coefficients", b.rotary),
        ("exponential table", b.exp),
        ("SiLU table", b.silu),
        ("tokenizer entries", b.token_entries),
        ("sorted token ids", b.sorted_ids),
        ("token strings", b.token_strings),
    ] {
        writeln!(text, "  {name:<28} {offset}")?;
    }
    writeln!(text, "sections:")?;
    for (i, s) in d.sections.iter().enumerate() {
        writeln!(
            text,
            "  {i:>2}  offset {:>10}  length {:>9}",
            s.offset, s.length
        )?;
    }
    writeln!(text, "matrices:")?;
    for (i, m) in d.matrices.iter().enumerate() {
        writeln!(
            text,
            "  {i:>3} {:<18} section {:>2}  rows {:>5}  columns {:>4}  row_bytes {:>4}  offset {:>8}",
            Config::matrix_name(i),
            m.section,
            m.rows,
            m.columns,
            m.row_bytes,
            m.offset
        )?;
    }
    writeln!(text, "weights hash: {}", d.weights_hash)?;
    emit(&text)
}

#[derive(Serialize)]
struct JsonHash {
    weights_hash: String,
}

pub fn hash(args: HashArgs, output: Output) -> anyhow::Result<()> {
    let hash = hex(&with_artifact(&args.artifact, |a| {
        weights_hash(a.sections())
    })?);
    emit_as(
        output,
        &(hash.clone() + "\n"),
        &JsonHash { weights_hash: hash },
    )
}
