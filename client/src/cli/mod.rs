//! Command-line interface. Each subcommand parses its arguments here and calls the library.

use clap::{Parser, Subcommand};
use std::process::ExitCode;

pub mod artifact;

#[derive(Parser, Debug)]
#[command(name = "client", version, about = "Publish CURTAW01 model artifacts to Solana and seal them")]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Subcommand, Debug)]
pub enum Command {
    /// Convert a llama2.c checkpoint and tokenizer into a CURTAW01 artifact
    Convert(artifact::ConvertArgs),
    /// Show an artifact's configuration, block offsets, sections and matrix descriptors
    Inspect(artifact::InspectArgs),
    /// Print an artifact's weights hash (64 lowercase hex characters)
    Hash(artifact::HashArgs),
}

pub fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Convert(args) => artifact::convert(args),
        Command::Inspect(args) => artifact::inspect(args),
        Command::Hash(args) => artifact::hash(args),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => {
            eprintln!("error: {err:#}");
            ExitCode::FAILURE
        }
    }
}
