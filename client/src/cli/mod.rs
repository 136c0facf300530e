//! Command-line interface. Each subcommand parses its arguments here and calls the library.

use clap::{Parser, Subcommand};
use std::process::ExitCode;

pub mod artifact;
pub mod claim;
pub mod config;
pub mod model;
pub mod program;
pub mod run;

#[derive(Parser, Debug)]
#[command(
    name = "client",
    version,
    about = "Publish CURTAW01 model artifacts to Solana and seal them"
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
    #[command(flatten)]
    pub global: config::GlobalArgs,
}

#[derive(Subcommand, Debug)]
pub enum Command {
    /// Convert a llama2.c checkpoint and tokenizer into a CURTAW01 artifact
    Convert(artifact::ConvertArgs),
    /// Show an artifact's configuration, block offsets, sections and matrix descriptors
    Inspect(artifact::InspectArgs),
    /// Print an artifact's weights hash (64 lowercase hex characters)
    Hash(artifact::HashArgs),
    /// Create the model and weight accounts, write every section (resumable); --seal also seals
    Publish(model::PublishArgs),
    /// Drive sealing to Sealed; with --artifact, repair differing bytes first
    Seal(model::SealArgs),
    /// Show a model's state, sections, seal progress and rent held
    Status(model::StatusArgs),
    /// Compare the weight accounts with an artifact and recompute the hash off chain
    Verify(model::VerifyArgs),
    /// Close an unsealed model and recover its rent
    Close(model::CloseArgs),
    /// Publish and seal on an in-process bank running the real program: cost, transactions, time
    Rehearse(model::RehearseArgs),
    /// Convert the bundled English model (kjv), rehearse it, verify it and print the report
    Demo,
    /// Generate text from an artifact or a sealed model, in integers (docs/inference.md)
    Run(run::RunArgs),
    /// Publish and seal an artifact in an in-process bank running the real program, then run it
    /// on chain there (as `run --on-chain`): tokens, transactions, compute units, lamports
    RehearseRun(run::RehearseRunArgs),
    /// List the signer's runs of a model: nonce, address, status, tokens, rent
    Runs(run::RunsArgs),
    /// Close one of the signer's runs (running, ended, or never started) and recover its rent
    CloseRun(run::CloseRunArgs),
    /// Teacher-forced evaluation of an artifact: argmax and negative log-likelihood per position
    Perplexity(run::PerplexityArgs),
    /// Compare the executable deployed at a program id with the local build (sha256 without
    /// trailing zeros, as solana-verify computes it)
    VerifyProgram(program::VerifyProgramArgs),
    /// Open an optimistic claim of a sealed model: post an answer computed off chain with a
    /// bond, and wait until its challenge window passes
    Claim(claim::ClaimArgs),
    /// List a model's claims: state, slots, window end, bond, challenger
    Claims(claim::ClaimsArgs),
    /// Close one of the signer's claims (open, settled or resolved) and recover its rent and bond
    CloseClaim(claim::CloseClaimArgs),
    /// Watch claims: recompute every answer off chain, report it, and with --challenge dispute
    /// wrong ones on chain (runs until Ctrl-C)
    Watch(claim::WatchArgs),
}

pub fn main() -> ExitCode {
    // The in-process bank (rehearse, demo) logs every instruction at debug level unless told
    // otherwise; keep the terminal for the report. Set before any thread starts.
    if std::env::var_os("RUST_LOG").is_none() {
        std::env::set_var("RUST_LOG", "error");
    }
    let cli = Cli::parse();
    let global = cli.global;
    let result = match cli.command {
        Command::Convert(args) => artifact::convert(args, global.output),
        Command::Inspect(args) => artifact::inspect(args, global.output),
        Command::Hash(args) => artifact::hash(args, global.output),
        Command::Publish(args) => model::publish(args, global),
        Command::Seal(args) => model::seal(args, global),
        Command::Status(args) => model::status(args, global),
        Command::Verify(args) => model::verify(args, global),
        Command::Close(args) => model::close(args, global),
        Command::Rehearse(args) => model::rehearse(args, global),
        Command::Demo => model::demo(global),
        Command::Run(args) => run::run(args, global),
        Command::RehearseRun(args) => run::rehearse_run(args, global),
        Command::Perplexity(args) => run::perplexity_command(args, global),
        Command::Runs(args) => run::runs(args, global),
        Command::CloseRun(args) => run::close_run(args, global),
        Command::VerifyProgram(args) => program::verify_program(args, global),
        Command::Claim(args) => claim::claim(args, global),
        Command::Claims(args) => claim::claims(args, global),
        Command::CloseClaim(args) => claim::close_claim(args, global),
        Command::Watch(args) => claim::watch(args, global),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => {
            eprintln!("error: {err:#}");
            ExitCode::FAILURE
        }
    }
}
