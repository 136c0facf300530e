//! What an operation did: the report printed as text or JSON (`--output json`).

use crate::artifact::hex;
use crate::engine::{write_capacity, Tally};
use crate::error::sol;
use serde_json::{json, Value};
use solana_pubkey::Pubkey;

#[derive(Clone, Debug)]
pub struct Report {
    /// "publish", "seal", "rehearse".
    pub command: &'static str,
    pub cluster: String,
    pub model: Pubkey,
    pub weights_hash: [u8; 32],
    /// Final state: "Open", "Sealing", "Mismatch", "Sealed".
    pub state: String,
    pub sections: usize,
    pub artifact_bytes: u64,
    pub tally: Tally,
    /// Rent moved into accounts by this run (measured on chain: held after - held before).
    pub rent: u64,
    /// Rent the model and its weight accounts hold now.
    pub rent_held: u64,
    pub balance_before: u64,
    pub balance_after: u64,
    pub seconds: f64,
    /// The command to run next, if any.
    pub next: Option<String>,
}

impl Report {
    pub fn transactions(&self) -> u64 {
        self.tally.landed()
    }

    pub fn to_json(&self) -> Value {
        let t = &self.tally;
        json!({
            "command": self.command,
            "cluster": self.cluster,
            "model": self.model.to_string(),
            "weights_hash": hex(&self.weights_hash),
            "state": self.state,
            "sections": self.sections,
            "artifact_bytes": self.artifact_bytes,
            "transactions": {
                "create": t.create, "write": t.write, "seal": t.seal, "other": t.other,
                "failed": t.failed, "total": t.landed(), "resigned": t.resigned,
            },
            // Payload bytes of the writes sent; and the most a Write carries with one signer,
            // without and with the two compute-budget instructions a price adds.
            "write_bytes_per_tx": {
                "min": t.write_bytes_min.unwrap_or(0), "max": t.write_bytes_max,
                "capacity": write_capacity(false),
                "capacity_with_compute_budget": write_capacity(true),
            },
            "bytes_written": t.bytes_written,
            "lamports": {
                "rent": self.rent, "fees": t.fees, "rent_held": self.rent_held,
                "balance_before": self.balance_before, "balance_after": self.balance_after,
            },
            "seconds": self.seconds,
            "transactions_per_second": self.tps(),
            "next": self.next,
        })
    }

    fn tps(&self) -> f64 {
        if self.seconds > 0.0 {
            self.tally.landed() as f64 / self.seconds
        } else {
            0.0
        }
    }

    pub fn to_text(&self) -> String {
        let t = &self.tally;
        let mut s = String::new();
        s += &format!("{} on {}\n", self.command, self.cluster);
        s += &format!("model:          {}\n", self.model);
        s += &format!("weights hash:   {}\n", hex(&self.weights_hash));
        s += &format!("state:          {}\n", self.state);
        s += &format!(
            "artifact:       {} bytes in {} sections\n",
            self.artifact_bytes, self.sections
        );
        s += &format!(
            "transactions:   {} ({} create, {} write, {} seal, {} other, {} failed; {} re-signed)\n",
            t.landed(), t.create, t.write, t.seal, t.other, t.failed, t.resigned
        );
        if t.write > 0 {
            s += &format!(
                "write tx bytes: {} min, {} max ({} bytes written)\n",
                t.write_bytes_min.unwrap_or(0),
                t.write_bytes_max,
                t.bytes_written
            );
        }
        s += &format!(
            "write capacity: {} bytes, {} with compute-budget instructions\n",
            write_capacity(false),
            write_capacity(true)
        );
        s += &format!(
            "lamports:       {} rent + {} fees = {} spent ({}); rent held {}\n",
            self.rent,
            t.fees,
            self.rent + t.fees,
            sol(self.rent + t.fees),
            sol(self.rent_held)
        );
        s += &format!(
            "time:           {:.2} s ({:.0} tx/s)\n",
            self.seconds,
            self.tps()
        );
        if let Some(next) = &self.next {
            s += &format!("next:           {next}\n");
        }
        s
    }
}
