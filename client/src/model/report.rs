//! What publish, seal and rehearse did: the report printed as text or JSON (`--output json`),
//! with the transactions counted by kind ([`Counts`]) and the model's state ([`State`]).

use super::items::{write_capacity_in, CREATE, SEAL, WRITE};
use crate::artifact::hex;
use crate::error::sol;
use crate::send::{Format, Tally};
use curta_interface::state::ModelState;
use serde::Serialize;
use serde_json::Value;
use solana_pubkey::Pubkey;

/// A model's state as reports show it, `None` when there is no model ("absent"). It
/// compares equal to its name (`report.state == "Sealed"`) and serializes as it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct State(pub Option<ModelState>);

impl State {
    pub fn as_str(&self) -> &'static str {
        match self.0 {
            None => "absent",
            Some(ModelState::Open) => "Open",
            Some(ModelState::Sealing) => "Sealing",
            Some(ModelState::Mismatch) => "Mismatch",
            Some(ModelState::Sealed) => "Sealed",
        }
    }
}

impl std::fmt::Display for State {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl PartialEq<&str> for State {
    fn eq(&self, name: &&str) -> bool {
        self.as_str() == *name
    }
}

impl serde::Serialize for State {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.as_str())
    }
}

/// A model operation's transactions: what landed by kind, the fees, the Writes' bytes.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Counts {
    pub create: u64,
    pub write: u64,
    pub seal: u64,
    /// Reopen and Close.
    pub other: u64,
    /// Landed with an error (the fee is charged all the same).
    pub failed: u64,
    pub fees: u64,
    pub write_bytes_min: Option<usize>,
    pub write_bytes_max: usize,
    pub bytes_written: u64,
    /// Signings that never landed (dropped, or their blockhash expired) and were re-signed.
    pub resigned: u64,
}

impl Counts {
    /// The counts of an engine's tally, by the labels of a model's items.
    pub fn of(tally: &Tally) -> Counts {
        let (create, write, seal) = (tally.of(CREATE), tally.of(WRITE), tally.of(SEAL));
        Counts {
            create,
            write,
            seal,
            other: tally.landed() - tally.failed - create - write - seal,
            failed: tally.failed,
            fees: tally.fees,
            write_bytes_min: tally.bytes_min,
            write_bytes_max: tally.bytes_max,
            bytes_written: tally.bytes,
            resigned: tally.resigned,
        }
    }

    /// Every transaction that landed, failed ones included.
    pub fn landed(&self) -> u64 {
        self.create + self.write + self.seal + self.other + self.failed
    }
}

#[derive(Clone, Debug)]
pub struct Report {
    /// "publish", "seal", "rehearse".
    pub command: &'static str,
    pub cluster: String,
    pub model: Pubkey,
    pub weights_hash: [u8; 32],
    /// Final state.
    pub state: State,
    pub sections: usize,
    pub artifact_bytes: u64,
    pub counts: Counts,
    /// Rent moved into accounts by this run (measured on chain: held after - held before).
    pub rent: u64,
    /// Rent the model and its weight accounts hold now.
    pub rent_held: u64,
    pub balance_before: u64,
    pub balance_after: u64,
    pub seconds: f64,
    /// The command to run next, if any.
    pub next: Option<String>,
    /// The format the transactions went in.
    pub format: Format,
    /// Why: set when `--tx-version auto` found the cluster without version 1 transactions.
    pub format_note: Option<String>,
}

impl Report {
    pub fn transactions(&self) -> u64 {
        self.counts.landed()
    }

    /// The `--output json` document (keys in docs/client.md).
    pub fn to_json(&self) -> Value {
        let t = &self.counts;
        serde_json::to_value(ReportJson {
            command: self.command,
            cluster: &self.cluster,
            model: self.model.to_string(),
            weights_hash: hex(&self.weights_hash),
            state: self.state,
            sections: self.sections,
            artifact_bytes: self.artifact_bytes,
            tx_version: self.format,
            tx_version_note: self.format_note.as_deref(),
            transactions: Transactions {
                create: t.create,
                write: t.write,
                seal: t.seal,
                other: t.other,
                failed: t.failed,
                total: t.landed(),
                resigned: t.resigned,
            },
            write_bytes_per_tx: WriteBytes {
                min: t.write_bytes_min.unwrap_or(0),
                max: t.write_bytes_max,
                capacity: write_capacity_in(self.format, false),
                capacity_with_compute_budget: write_capacity_in(self.format, true),
            },
            bytes_written: t.bytes_written,
            lamports: Lamports {
                rent: self.rent,
                fees: t.fees,
                rent_held: self.rent_held,
                balance_before: self.balance_before,
                balance_after: self.balance_after,
            },
            seconds: self.seconds,
            transactions_per_second: self.tps(),
            next: self.next.as_deref(),
        })
        .expect("a report serializes")
    }

    fn tps(&self) -> f64 {
        if self.seconds > 0.0 {
            self.counts.landed() as f64 / self.seconds
        } else {
            0.0
        }
    }

    pub fn to_text(&self) -> String {
        let t = &self.counts;
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
            "tx version:     {}{}\n",
            self.format,
            match self.format {
                Format::Legacy => " (1,232 bytes)",
                Format::V1 => " (4,096 bytes)",
            }
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
            "write capacity: {} bytes, {} with {}\n",
            write_capacity_in(self.format, false),
            write_capacity_in(self.format, true),
            match self.format {
                Format::Legacy => "compute-budget instructions",
                Format::V1 => "a priority fee",
            }
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

/// The JSON report of publish, seal and rehearse.
#[derive(Serialize)]
struct ReportJson<'a> {
    command: &'a str,
    cluster: &'a str,
    model: String,
    weights_hash: String,
    state: State,
    sections: usize,
    artifact_bytes: u64,
    /// "legacy" or "v1".
    tx_version: Format,
    /// Set when auto fell back to legacy, saying why.
    tx_version_note: Option<&'a str>,
    transactions: Transactions,
    /// Payload bytes of the writes sent; and the most a Write carries in the format used
    /// with one signer, without and with a compute-unit price (legacy: the two
    /// compute-budget instructions; v1: its priority fee).
    write_bytes_per_tx: WriteBytes,
    bytes_written: u64,
    lamports: Lamports,
    seconds: f64,
    transactions_per_second: f64,
    next: Option<&'a str>,
}

#[derive(Serialize)]
struct Transactions {
    create: u64,
    write: u64,
    seal: u64,
    other: u64,
    failed: u64,
    total: u64,
    resigned: u64,
}

#[derive(Serialize)]
struct WriteBytes {
    min: usize,
    max: usize,
    capacity: usize,
    capacity_with_compute_budget: usize,
}

#[derive(Serialize)]
struct Lamports {
    rent: u64,
    fees: u64,
    rent_held: u64,
    balance_before: u64,
    balance_after: u64,
}
