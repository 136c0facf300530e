//! `verify-program`: compare the executable deployed at a program id with the local build.

use super::config::{GlobalArgs, Output};
use crate::send::transport::{ProgramSo, RpcTransport};
use anyhow::{anyhow, Context, Result};
use clap::Args;
use solana_pubkey::Pubkey;
use std::path::PathBuf;
use std::str::FromStr;

#[derive(Args, Debug)]
pub struct VerifyProgramArgs {
    /// The deployed program's id (default: --program-id, CURTA_PROGRAM_ID, the crate's id)
    pub program_id: Option<String>,
    /// The local binary to compare with (default: CURTA_PROGRAM_SO, else the one embedded in
    /// this client at build time)
    #[arg(long)]
    pub so: Option<PathBuf>,
}

pub fn verify_program(args: VerifyProgramArgs, global: GlobalArgs) -> Result<()> {
    let program_id = match &args.program_id {
        Some(s) => Pubkey::from_str(s)
            .map_err(|e| anyhow!("program id '{s}' is not a base-58 account address: {e}"))?,
        None => global.program_id()?,
    };
    let local = match &args.so {
        Some(path) => ProgramSo::find_in(std::slice::from_ref(path)),
        None => ProgramSo::find(),
    }
    .map_err(|e| anyhow!(e))?;
    let t = RpcTransport::with_program_id(&global.url()?, global.commitment()?, program_id);
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("starting the async runtime")?;
    let v = runtime.block_on(crate::verify_program(&t, &program_id, &local))?;
    match global.output {
        Output::Text => print!("{}", v.to_text()),
        Output::Json => println!(
            "{}",
            serde_json::to_string_pretty(&v.to_json()).unwrap_or_default()
        ),
    }
    if !v.ok() {
        anyhow::bail!(
            "program {program_id} is not the local build: deployed {}, local {}",
            crate::artifact::hex(&v.deployed_hash),
            crate::artifact::hex(&v.local_hash)
        );
    }
    Ok(())
}
