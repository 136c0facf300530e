//! `client convert`, `client inspect`, `client hash`.

use clap::Args;
use std::path::PathBuf;

#[derive(Args, Debug)]
pub struct ConvertArgs {
    /// llama2.c checkpoint (legacy 28-byte header)
    pub checkpoint: PathBuf,
    /// llama2.c tokenizer file
    pub tokenizer: PathBuf,
    /// Where to write the artifact
    #[arg(short, long)]
    pub output: PathBuf,
}

#[derive(Args, Debug)]
pub struct InspectArgs {
    pub artifact: PathBuf,
    /// Print JSON instead of text
    #[arg(long)]
    pub json: bool,
}

#[derive(Args, Debug)]
pub struct HashArgs {
    pub artifact: PathBuf,
}

pub fn convert(_args: ConvertArgs) -> anyhow::Result<()> {
    anyhow::bail!("not yet implemented")
}

pub fn inspect(_args: InspectArgs) -> anyhow::Result<()> {
    anyhow::bail!("not yet implemented")
}

pub fn hash(_args: HashArgs) -> anyhow::Result<()> {
    anyhow::bail!("not yet implemented")
}
