//! The options every command takes. Solana CLI conventions: `--url` monikers, `--keypair`,
//! `--commitment`, defaults from the Solana CLI config file, then ~/.config/solana/id.json;
//! `--program-id` (then `CURTA_PROGRAM_ID`, then the crate's id) names the Curta deployment.

use anyhow::{anyhow, bail, Context, Result};
use clap::Args;
use solana_commitment_config::CommitmentConfig;
use solana_keypair::Keypair;
use std::path::PathBuf;
use std::str::FromStr;

#[derive(Args, Debug, Clone)]
pub struct GlobalArgs {
    /// URL of the RPC endpoint, or a moniker: localhost, devnet, testnet, mainnet-beta (l, d, t, m)
    #[arg(
        short = 'u',
        long = "url",
        global = true,
        value_name = "URL_OR_MONIKER"
    )]
    pub url: Option<String>,
    /// Keypair file that signs and pays (default: the Solana CLI config's, then ~/.config/solana/id.json)
    #[arg(short = 'k', long = "keypair", global = true, value_name = "KEYPAIR")]
    pub keypair: Option<PathBuf>,
    /// Commitment level: processed, confirmed, finalized (default: the Solana CLI config's)
    #[arg(long, global = true, value_name = "COMMITMENT_LEVEL")]
    pub commitment: Option<String>,
    /// Priority fee in micro-lamports per compute unit; also sets a tight measured compute-unit limit
    #[arg(
        long = "with-compute-unit-price",
        global = true,
        value_name = "MICRO_LAMPORTS"
    )]
    pub compute_unit_price: Option<u64>,
    /// Solana CLI configuration file
    #[arg(short = 'C', long = "config", global = true, value_name = "PATH")]
    pub config: Option<PathBuf>,
    /// Most transactions in flight at once (default: 128 over RPC)
    #[arg(long = "max-in-flight", global = true, value_name = "N")]
    pub max_in_flight: Option<usize>,
    /// Output format
    #[arg(long, global = true, value_enum, default_value_t = Output::Text)]
    pub output: Output,
    /// The Curta program's address on the cluster (where you deployed curta_program.so)
    #[arg(
        long = "program-id",
        global = true,
        env = "CURTA_PROGRAM_ID",
        value_name = "PUBKEY"
    )]
    pub program_id: Option<String>,
    /// Send transactions to the leaders' TPU over QUIC (as `solana program deploy` does)
    /// instead of through the RPC node's sendTransaction
    #[arg(long = "use-tpu", global = true)]
    pub use_tpu: bool,
    /// Transaction format: legacy (1,232 bytes), v1 (SIMD-0385: 4,096 bytes, refused before
    /// anything is sent where the cluster's feature enable_tx_v1 is not active), or auto (v1
    /// where the cluster accepts it, else legacy, with a note on stderr)
    #[arg(
        long = "tx-version",
        global = true,
        value_name = "VERSION",
        default_value = "auto",
        value_parser = ["legacy", "v1", "auto"]
    )]
    pub tx_version: String,
    /// WebSocket URL of the RPC node, for --use-tpu (default: from --url, as the Solana CLI
    /// computes it: ws(s)://, the port plus one)
    #[arg(long = "ws", global = true, value_name = "URL")]
    pub websocket_url: Option<String>,
}

#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum Output {
    Text,
    Json,
}

impl GlobalArgs {
    fn config(&self) -> Result<solana_cli_config::Config> {
        let path = match &self.config {
            Some(path) => Some(path.display().to_string()),
            None => solana_cli_config::CONFIG_FILE.clone(),
        };
        match path {
            Some(path) if std::path::Path::new(&path).exists() => {
                solana_cli_config::Config::load(&path)
                    .map_err(|e| anyhow!("Solana CLI config {path}: {e}"))
            }
            Some(path) if self.config.is_some() => bail!("Solana CLI config {path}: no such file"),
            _ => Ok(solana_cli_config::Config::default()),
        }
    }

    pub fn url(&self) -> Result<String> {
        let url = match &self.url {
            Some(url) => url.clone(),
            None => self.config()?.json_rpc_url,
        };
        Ok(match url.as_str() {
            "l" | "localhost" => "http://localhost:8899".to_string(),
            "d" | "devnet" => "https://api.devnet.solana.com".to_string(),
            "t" | "testnet" => "https://api.testnet.solana.com".to_string(),
            "m" | "mainnet-beta" => "https://api.mainnet-beta.solana.com".to_string(),
            _ if url.starts_with("http://") || url.starts_with("https://") => url,
            _ => bail!("--url {url}: expected an http(s) URL or one of localhost, devnet, testnet, mainnet-beta"),
        })
    }

    /// `--ws`, else the Solana CLI's WebSocket URL for `url`.
    pub fn websocket_url(&self, url: &str) -> String {
        self.websocket_url
            .clone()
            .unwrap_or_else(|| solana_cli_config::Config::compute_websocket_url(url))
    }

    pub fn commitment(&self) -> Result<CommitmentConfig> {
        let level = match &self.commitment {
            Some(level) => level.clone(),
            None => self.config()?.commitment,
        };
        CommitmentConfig::from_str(&level).map_err(|_| {
            anyhow!("--commitment {level}: expected processed, confirmed or finalized")
        })
    }

    /// `--program-id`, else `CURTA_PROGRAM_ID`, else the program crate's id.
    pub fn program_id(&self) -> Result<solana_pubkey::Pubkey> {
        match &self.program_id {
            Some(id) => solana_pubkey::Pubkey::from_str(id).map_err(|e| {
                anyhow!("--program-id '{id}' (or CURTA_PROGRAM_ID) is not a base-58 address: {e}")
            }),
            None => Ok(curta_interface::id()),
        }
    }

    pub fn keypair_path(&self) -> Result<PathBuf> {
        if let Some(path) = &self.keypair {
            return Ok(path.clone());
        }
        let configured = self.config()?.keypair_path;
        if !configured.is_empty() {
            return Ok(PathBuf::from(configured));
        }
        let home = std::env::var_os("HOME").context("HOME is not set; pass --keypair")?;
        Ok(PathBuf::from(home).join(".config/solana/id.json"))
    }

    pub fn keypair(&self) -> Result<Keypair> {
        let path = self.keypair_path()?;
        read_keypair(&path)
    }

    /// The keypair a rehearsal signs as: `--keypair`'s (an error when it cannot be read), else
    /// the Solana CLI's where one can be read, else none (a throwaway). Signing as the real
    /// authority gives the model address `publish` will use; no lamport is touched.
    pub fn rehearsal_keypair(&self) -> Result<Option<Keypair>> {
        Ok(match &self.keypair {
            Some(_) => Some(self.keypair()?),
            None => self
                .keypair_path()
                .ok()
                .filter(|p| p.exists())
                .and_then(|p| read_keypair(&p).ok()),
        })
    }

    pub fn options(&self) -> crate::Options {
        crate::Options {
            compute_unit_price: self.compute_unit_price,
            max_in_flight: self.max_in_flight,
            progress: self.output == Output::Text,
            tx_version: self.tx_version(),
        }
    }

    /// `--tx-version`, parsed (clap admits only its three values).
    pub fn tx_version(&self) -> crate::TxVersion {
        self.tx_version
            .parse()
            .expect("clap admits legacy, v1 and auto only")
    }
}

/// Reads a Solana keypair file (a JSON array of 64 bytes), naming the file on any error.
pub fn read_keypair(path: &std::path::Path) -> Result<Keypair> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| anyhow!("keypair file {}: {e}", path.display()))?;
    let bytes: Vec<u8> = serde_json::from_str(&text).map_err(|e| {
        anyhow!(
            "keypair file {}: not a Solana keypair (expected a JSON array of 64 bytes): {e}",
            path.display()
        )
    })?;
    if bytes.len() != 64 {
        bail!(
            "keypair file {}: expected 64 bytes, found {}",
            path.display(),
            bytes.len()
        );
    }
    Keypair::try_from(bytes.as_slice()).map_err(|e| {
        anyhow!(
            "keypair file {}: not a valid ed25519 keypair: {e}",
            path.display()
        )
    })
}
