//! The `curta-core` binary: the artifact commands alone (convert, inspect, hash), under the name
//! the format documentation uses (`curta-core inspect ARTIFACT`). Same arguments and output as
//! `client convert`, `client inspect` and `client hash`.

use clap::{Parser, Subcommand};
use curta_client::cli::artifact;
use curta_client::cli::config::Output;
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
    /// Output format
    #[arg(long, global = true, value_enum, default_value_t = Output::Text)]
    output: Output,
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
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Convert(args) => artifact::convert(args, cli.output),
        Command::Inspect(args) => artifact::inspect(args, cli.output),
        Command::Hash(args) => artifact::hash(args, cli.output),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => {
            eprintln!("error: {err:#}");
            ExitCode::FAILURE
        }
    }
}
