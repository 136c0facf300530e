//! The local solana-test-validator the validator benchmarks drive, through
//! `scripts/local-validator` (port `port`, ledger target/bench-ledger, the program at
//! `program_id`).

use curta_client::RpcTransport;
use solana_client::nonblocking::rpc_client::RpcClient;
use solana_commitment_config::CommitmentConfig;
use solana_pubkey::Pubkey;
use std::process::Command;
use std::time::Duration;

const SOL: u64 = 1_000_000_000;

pub struct Node {
    pub port: u16,
    pub program_id: Pubkey,
}

impl Node {
    pub fn url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    pub fn websocket(&self) -> String {
        format!("ws://127.0.0.1:{}", self.port + 1)
    }

    pub fn script(&self, command: &str) {
        let status = Command::new("scripts/local-validator")
            .arg(command)
            .arg(self.program_id.to_string())
            .env("CURTA_RPC_PORT", self.port.to_string())
            .env("CURTA_LEDGER", "target/bench-ledger")
            .stdout(std::process::Stdio::null())
            .status()
            .expect("scripts/local-validator");
        assert!(status.success(), "scripts/local-validator {command}");
    }

    pub fn rpc(&self) -> RpcClient {
        RpcClient::new_with_commitment(self.url(), CommitmentConfig::confirmed())
    }

    pub fn transport(&self) -> RpcTransport {
        RpcTransport::with_program_id(&self.url(), CommitmentConfig::confirmed(), self.program_id)
    }

    /// A fresh ledger with the program at `program_id`, and `payer` funded with 500 SOL.
    pub async fn reset(&self, payer: &Pubkey) -> RpcClient {
        self.script("stop");
        self.script("start");
        self.fund(payer).await;
        self.rpc()
    }

    /// 500 SOL from the faucet.
    pub async fn fund(&self, payer: &Pubkey) {
        let rpc = self.rpc();
        let airdrop = rpc.request_airdrop(payer, 500 * SOL).await.unwrap();
        while !rpc.confirm_transaction(&airdrop).await.unwrap() {
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }
}
