//! The `curta-core` binary: the artifact commands alone (convert, inspect, hash), under the name
//! the format documentation uses (`curta-core inspect ARTIFACT`). Same arguments and output as
//! `client convert`, `client inspect` and `client hash`.

use clap::{Parser, Subcommand};
use curta_client::cli::artifact;
use std::process::ExitCode;

#[derive(Parser, Debug)]
#[command(
    name = "curta-core",
    version,
    about = "Convert, inspect and hash CURTAW01 model artifacts"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Convert a llama2.c checkpoint and tokenizer into a CURTAW01 artifact
    Convert(artifact::ConvertArgs),
    /// Show an artifact's configuration, block offsets, sections and matrix descriptors
    Inspect(artifact::InspectArgs),
    /// Print an artifact's weights hash (64 lowercase hex characters)
    Hash(artifact::HashArgs),
}

fn main() -> ExitCode {
    let result = match Cli::parse().command {
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
