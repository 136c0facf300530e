//! The model commands, their arguments and processing: publish, seal, status, verify, close,
//! rehearse, demo.

use super::config::{GlobalArgs, Output};
use crate::send::transport::RpcTransport;
use anyhow::{anyhow, Context, Result};
use clap::Args;
use curta_core::convert::MappedFile;
use solana_pubkey::Pubkey;
use std::path::{Path, PathBuf};
use std::str::FromStr;

#[derive(Args, Debug)]
pub struct PublishArgs {
    /// The CURTAW01 artifact to publish
    pub artifact: PathBuf,
    /// Also seal the model once every byte is written
    #[arg(long)]
    pub seal: bool,
}

#[derive(Args, Debug)]
pub struct SealArgs {
    /// Model account address
    pub model: String,
    /// The artifact: find and rewrite bytes that differ on chain (reopening if needed), then seal
    #[arg(long)]
    pub artifact: Option<PathBuf>,
}

#[derive(Args, Debug)]
pub struct StatusArgs {
    /// Model account address
    pub model: String,
    /// Also count the bytes of each section that still differ from this artifact
    #[arg(long)]
    pub artifact: Option<PathBuf>,
}

#[derive(Args, Debug)]
pub struct VerifyArgs {
    /// Model account address
    pub model: String,
    /// The artifact to compare with
    pub artifact: PathBuf,
}

#[derive(Args, Debug)]
pub struct CloseArgs {
    /// Model account address
    pub model: String,
    /// Where the recovered rent goes (default: the authority)
    #[arg(long)]
    pub destination: Option<String>,
}

#[derive(Args, Debug)]
pub struct RehearseArgs {
    /// The CURTAW01 artifact to rehearse
    pub artifact: PathBuf,
}

pub(super) fn runtime() -> Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("starting the async runtime")
}

/// Maps the artifact file; the operation decodes it once (its errors are named with the file
/// by [`named`]).
fn map_artifact(path: &Path) -> Result<MappedFile> {
    MappedFile::open(path).map_err(|e| anyhow!("artifact {}: {e}", path.display()))
}

/// An operation's error, with the artifact's path in front of a format error.
fn named(path: Option<&Path>) -> impl FnOnce(crate::Error) -> anyhow::Error + '_ {
    move |err| match (err, path) {
        (crate::Error::Artifact(e), Some(path)) => {
            anyhow!("artifact {}: not a CURTAW01 artifact: {e}", path.display())
        }
        (err, _) => err.into(),
    }
}

fn parse_address(what: &str, s: &str) -> Result<Pubkey> {
    Pubkey::from_str(s).map_err(|e| anyhow!("{what} '{s}' is not a base-58 account address: {e}"))
}

/// The RPC transport of `global`: its URL, commitment and program id; with `--use-tpu`,
/// sending to the leaders' TPU over QUIC (found through the WebSocket URL).
pub(super) fn rpc(global: &GlobalArgs, runtime: &tokio::runtime::Runtime) -> Result<RpcTransport> {
    let url = global.url()?;
    let t = RpcTransport::with_program_id(&url, global.commitment()?, global.program_id()?);
    if !global.use_tpu {
        return Ok(t);
    }
    let websocket = global.websocket_url(&url);
    Ok(runtime.block_on(t.with_tpu(&websocket))?)
}

fn print(output: Output, text: String, json: serde_json::Value) {
    match output {
        Output::Text => print!("{text}"),
        Output::Json => println!(
            "{}",
            serde_json::to_string_pretty(&json).unwrap_or_default()
        ),
    }
}

pub fn publish(args: PublishArgs, global: GlobalArgs) -> Result<()> {
    let artifact = map_artifact(&args.artifact)?;
    let keypair = global.keypair()?;
    let runtime = runtime()?;
    let t = rpc(&global, &runtime)?;
    let report = runtime
        .block_on(crate::publish(
            &t,
            &keypair,
            artifact.bytes(),
            args.seal,
            &global.options(),
        ))
        .map_err(named(Some(&args.artifact)))?;
    print(global.output, report.to_text(), report.to_json());
    Ok(())
}

pub fn seal(args: SealArgs, global: GlobalArgs) -> Result<()> {
    let model = parse_address("model", &args.model)?;
    let artifact = args.artifact.as_deref().map(map_artifact).transpose()?;
    let keypair = global.keypair()?;
    let runtime = runtime()?;
    let t = rpc(&global, &runtime)?;
    let report = runtime
        .block_on(crate::seal(
            &t,
            &keypair,
            &model,
            artifact.as_ref().map(MappedFile::bytes),
            &global.options(),
        ))
        .map_err(named(args.artifact.as_deref()))?;
    print(global.output, report.to_text(), report.to_json());
    Ok(())
}

pub fn status(args: StatusArgs, global: GlobalArgs) -> Result<()> {
    let model = parse_address("model", &args.model)?;
    let artifact = args.artifact.as_deref().map(map_artifact).transpose()?;
    let runtime = runtime()?;
    let t = rpc(&global, &runtime)?;
    let status = runtime
        .block_on(async {
            let format = crate::send::format::choose_noted(&t, global.tx_version())
                .await?
                .format;
            crate::status_in(&t, &model, artifact.as_ref().map(MappedFile::bytes), format).await
        })
        .map_err(named(args.artifact.as_deref()))?;
    print(global.output, status.to_text(), status.to_json());
    Ok(())
}

pub fn verify(args: VerifyArgs, global: GlobalArgs) -> Result<()> {
    let model = parse_address("model", &args.model)?;
    let artifact = map_artifact(&args.artifact)?;
    let runtime = runtime()?;
    let t = rpc(&global, &runtime)?;
    let verification = runtime
        .block_on(crate::verify(&t, &model, artifact.bytes()))
        .map_err(named(Some(&args.artifact)))?;
    print(
        global.output,
        verification.to_text(),
        verification.to_json(),
    );
    if !verification.ok() {
        anyhow::bail!("model {model} does not match {}", args.artifact.display());
    }
    Ok(())
}

pub fn close(args: CloseArgs, global: GlobalArgs) -> Result<()> {
    let model = parse_address("model", &args.model)?;
    let destination = args
        .destination
        .as_deref()
        .map(|d| parse_address("destination", d))
        .transpose()?;
    let keypair = global.keypair()?;
    let runtime = runtime()?;
    let t = rpc(&global, &runtime)?;
    let report = runtime.block_on(crate::close(
        &t,
        &keypair,
        &model,
        destination,
        &global.options(),
    ))?;
    print(global.output, report.to_text(), report.to_json());
    Ok(())
}

pub fn rehearse(args: RehearseArgs, global: GlobalArgs) -> Result<()> {
    let artifact = map_artifact(&args.artifact)?;
    let authority = global.rehearsal_keypair()?;
    let report = runtime()?
        .block_on(crate::rehearse(
            artifact.bytes(),
            authority.as_ref(),
            &global.program_id()?,
            &global.options(),
        ))
        .map_err(named(Some(&args.artifact)))?;
    // The bank accepts version 1 transactions: its figures hold on a cluster that does too.
    let cluster = match report.format {
        crate::Format::V1 => {
            "a cluster that accepts version 1 transactions (--tx-version legacy to rehearse for one that does not)"
        }
        crate::Format::Legacy => "a cluster",
    };
    let text = format!(
        "{}(in-process bank running the real program; the same transactions and lamports on {cluster})\nnext:           client publish {} --keypair <KEYPAIR> --url <URL> --seal\n",
        report.to_text().replace("next:", "after:"),
        args.artifact.display()
    );
    print(global.output, text, report.to_json());
    Ok(())
}

pub fn demo(global: GlobalArgs) -> Result<()> {
    let demo = runtime()?.block_on(crate::demo(&global.options()))?;
    let text = format!(
        "converted the bundled kjv + tok1024 (trained on the King James Bible) into a {} byte artifact in {:.2} s\n{}{}",
        demo.artifact_bytes,
        demo.convert_seconds,
        demo.report.to_text(),
        demo.verification.to_text()
    );
    let g = &demo.generation;
    let text = format!(
        "{text}ran the sealed model from the bank (greedy, {} tokens after \"{}\", {:.0} tokens/s):\nprompt tokens:  {:?}\ntokens:         {:?}\ntext:           {:?}\n",
        g.tokens.len(),
        crate::rehearse::DEMO_PROMPT,
        g.tokens_per_second,
        g.prompt_tokens,
        g.tokens,
        g.text,
    );
    let c = &demo.on_chain;
    let text = format!(
        "{text}ran it again inside the program (run --on-chain on the bank): the same text{}\n  {} transactions (start, {} steps of at most 1,250,000 compute units each, up to {} in flight; close), start {} and close {} compute units (simulated), fees {} lamports, rent {} lamports returned at close; the runner spent {} lamports\n",
        if c.text == g.text { ", byte for byte" } else { " (differs!)" },
        c.transactions,
        c.steps_sent,
        c.window,
        c.start_units.unwrap_or(0),
        c.close_units.unwrap_or(0),
        c.fees,
        c.rent,
        c.lamports_spent(),
    );
    let mut json = demo.report.to_json();
    json["verified"] = serde_json::Value::Bool(demo.verification.ok());
    json["convert_seconds"] = serde_json::json!(demo.convert_seconds);
    json["run"] = serde_json::to_value(g).unwrap_or_default();
    json["run_on_chain"] = serde_json::to_value(c).unwrap_or_default();
    json["run_on_chain"]["lamports_spent"] = serde_json::json!(c.lamports_spent() as i64);
    print(global.output, text, json);
    if !demo.verification.ok() {
        anyhow::bail!("the demo model does not verify");
    }
    Ok(())
}
