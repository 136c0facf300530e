//! `status`: a model's state, its sections (created, frozen, hashed), seal progress, rent held;
//! with the artifact also how many bytes of each section still differ.

use super::accounts::{self, OnChain};
use super::items::{differing_bytes, write_capacity_in};
use super::plan::{check_model, rent_table, Plan};
use super::report::State;
use crate::artifact::{hex, LocalArtifact};
use crate::send::format::{message_fee, transaction_len_in, v1_message, Format};
use crate::send::transport::Transport;
use crate::send::MAX_COMPUTE_UNITS;
use crate::Error;
use curta_interface::state::ModelState;
use solana_pubkey::Pubkey;
use std::time::Instant;

/// What is still needed to finish (publish with the artifact, then seal), counted as
/// `client publish --seal` would plan it now with one signer and no compute-budget
/// instructions. Writes (and so fees) are known only with the artifact.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Needed {
    pub create: u64,
    pub write: Option<u64>,
    pub seal: u64,
    /// A Reopen (1), when frozen sections must be rewritten; `other` in the JSON, as the
    /// reports count Reopen and Close.
    pub reopen: u64,
    pub write_bytes_min: Option<usize>,
    pub write_bytes_max: Option<usize>,
    /// Rent of the weight accounts still to create.
    pub rent: u64,
    /// Fees of all those transactions (None while the writes are unknown).
    pub fees: Option<u64>,
}

#[derive(Clone, Debug, serde::Serialize)]
pub struct SectionStatus {
    /// The section's index (0 = section zero).
    pub index: usize,
    #[serde(serialize_with = "as_base58")]
    pub address: Pubkey,
    pub length: u32,
    pub created: bool,
    pub frozen: bool,
    pub chunks: u32,
    /// Chunks of this section the seal has hashed in the current pass.
    pub chunks_hashed: u32,
    pub lamports: u64,
    /// With an artifact: bytes that still differ from it.
    pub differing_bytes: Option<u64>,
}

#[derive(Clone, Debug)]
pub struct Status {
    pub cluster: String,
    pub model: Pubkey,
    pub authority: Pubkey,
    pub weights_hash: [u8; 32],
    pub running_hash: [u8; 32],
    pub state: State,
    pub seal_pass: u32,
    pub seal_cursor: u32,
    pub total_chunks: u32,
    pub rent_held: u64,
    pub sections: Vec<SectionStatus>,
    pub needed: Needed,
    /// The transaction format `needed` is counted in.
    pub tx_version: Format,
    pub seconds: f64,
}

/// [`status_in`] counting legacy transactions.
pub async fn status<T: Transport>(
    t: &T,
    model_address: &Pubkey,
    artifact: Option<&[u8]>,
) -> Result<Status, Error> {
    status_in(t, model_address, artifact, Format::Legacy).await
}

/// The model's status, what is still needed counted in transactions of `format` (the one
/// `client publish --seal` would use: `--tx-version`, `txformat::choose`).
pub async fn status_in<T: Transport>(
    t: &T,
    model_address: &Pubkey,
    artifact: Option<&[u8]>,
    format: Format,
) -> Result<Status, Error> {
    let started = Instant::now();
    let artifact = artifact.map(LocalArtifact::decode).transpose()?;
    let model = accounts::existing_model(t, model_address).await?;
    if let Some(artifact) = &artifact {
        check_model(model_address, &model, artifact)?;
    }
    let chain = accounts::read(t, model_address, &model.authority, model.sections()).await?;
    let mut first = 0u32;
    let sections = chain
        .weights
        .iter()
        .enumerate()
        .map(|(i, w)| {
            let length = model.sections()[i];
            let chunks = curta_core::chunk_count(length as u64) as u32;
            let hashed = model.seal_cursor.saturating_sub(first).min(chunks);
            first += chunks;
            SectionStatus {
                index: i,
                address: w.address,
                length,
                created: w.account.is_some(),
                frozen: w.header.as_ref().is_some_and(|h| h.frozen),
                chunks,
                chunks_hashed: if model.state == curta_interface::state::ModelState::Sealed {
                    chunks
                } else {
                    hashed
                },
                lamports: w.lamports(),
                differing_bytes: artifact
                    .as_ref()
                    .map(|a| differing_bytes(w.bytes(), a.sections[i])),
            }
        })
        .collect();
    let needed = needed(t, &chain, &model, artifact.as_ref(), format).await?;
    Ok(Status {
        cluster: t.describe(),
        model: *model_address,
        authority: model.authority,
        weights_hash: model.weights_hash,
        running_hash: model.running_hash,
        state: State(Some(model.state)),
        seal_pass: model.seal_pass,
        seal_cursor: model.seal_cursor,
        total_chunks: model.total_chunks,
        rent_held: chain.rent_held(),
        sections,
        needed,
        tx_version: format,
        seconds: started.elapsed().as_secs_f64(),
    })
}

/// The transactions, rent and fees still needed to reach Sealed.
async fn needed<T: Transport>(
    t: &T,
    chain: &OnChain,
    model: &curta_interface::state::Model,
    artifact: Option<&LocalArtifact<'_>>,
    format: Format,
) -> Result<Needed, Error> {
    let mut n = Needed::default();
    if model.state == ModelState::Sealed {
        n.write = Some(0);
        n.fees = Some(0);
        return Ok(n);
    }
    let rents = rent_table(t, model.sections()).await?;
    let rent = |len: usize| rents[&len];
    let plan = Plan::new(
        chain,
        &model.authority,
        artifact,
        true,
        &rent,
        &|ixs| transaction_len_in(format, &model.authority, false, ixs),
        write_capacity_in(format, false),
    );
    n.create = plan.creates.len() as u64;
    n.rent = plan.rent;
    n.reopen = plan.reopen.is_some() as u64;
    n.seal = plan.seal_chunks as u64;
    if artifact.is_some() {
        n.write = Some(plan.writes.len() as u64);
        n.write_bytes_min = plan.writes.iter().map(|w| w.bytes).min();
        n.write_bytes_max = plan.writes.iter().map(|w| w.bytes).max();
        let (blockhash, _) = t.latest_blockhash().await?;
        let mut fees = 0;
        for (example, count) in plan.shapes() {
            let example = &example.instructions;
            let fee = match format {
                Format::Legacy => message_fee(t, &model.authority, example, blockhash).await?,
                // No priority fee: what a v1 message pays does not depend on its limits.
                Format::V1 => {
                    let message = v1_message(
                        &model.authority,
                        example,
                        blockhash,
                        MAX_COMPUTE_UNITS,
                        None,
                    );
                    t.fee_for_message(&message).await?
                }
            };
            fees += count * fee;
        }
        n.fees = Some(fees);
    }
    Ok(n)
}

impl Status {
    /// The `--output json` document (keys in docs/client.md).
    pub fn to_json(&self) -> serde_json::Value {
        let n = &self.needed;
        serde_json::to_value(StatusJson {
            command: "status",
            cluster: &self.cluster,
            model: self.model.to_string(),
            authority: self.authority.to_string(),
            weights_hash: hex(&self.weights_hash),
            running_hash: hex(&self.running_hash),
            state: self.state,
            seal: Seal {
                pass: self.seal_pass,
                cursor: self.seal_cursor,
                total_chunks: self.total_chunks,
            },
            sections_created: self.sections.iter().filter(|s| s.created).count(),
            sections_verified: self
                .sections
                .iter()
                .filter(|s| s.chunks_hashed == s.chunks)
                .count(),
            transactions: StillNeeded {
                create: n.create,
                write: n.write,
                seal: n.seal,
                other: n.reopen,
            },
            tx_version: self.tx_version,
            write_bytes_per_tx: match (n.write_bytes_min, n.write_bytes_max) {
                (Some(min), Some(max)) => Some(MinMax { min, max }),
                _ => None,
            },
            lamports: StatusLamports {
                rent: self.rent_held,
                rent_held: self.rent_held,
                rent_needed: n.rent,
                fees: n.fees,
            },
            seconds: self.seconds,
            sections: &self.sections,
        })
        .expect("a status serializes")
    }

    pub fn to_text(&self) -> String {
        let mut s = format!(
            "model {} on {}\nstate:        {}\nauthority:    {}\nweights hash: {}\nseal:         pass {}, chunk {} of {}\nrent held:    {} lamports ({})\n",
            self.model, self.cluster, self.state, self.authority, hex(&self.weights_hash),
            self.seal_pass, self.seal_cursor, self.total_chunks, self.rent_held, crate::error::sol(self.rent_held)
        );
        let n = &self.needed;
        let unknown = || "?".to_string();
        s += &format!(
            "to finish:    {} create, {} write, {} seal, {} reopen {} transactions; {} lamports rent + {} fees{}\n",
            n.create,
            n.write.map_or_else(unknown, |w| w.to_string()),
            n.seal,
            n.reopen,
            self.tx_version,
            n.rent,
            n.fees.map_or_else(unknown, |f| f.to_string()),
            if n.write.is_none() { " (writes: give --artifact)" } else { "" }
        );
        if self.state.0 == Some(ModelState::Mismatch) {
            s += &format!("computed:     {}\n", hex(&self.running_hash));
        }
        for x in &self.sections {
            s += &format!(
                "section {:2}: {} {:>9} bytes  {}  {}  {}/{} chunks hashed{}\n",
                x.index,
                x.address,
                x.length,
                if x.created { "created" } else { "missing" },
                if x.frozen { "frozen" } else { "open  " },
                x.chunks_hashed,
                x.chunks,
                x.differing_bytes
                    .map_or(String::new(), |d| format!(", {d} bytes differ"))
            );
        }
        s
    }
}

fn as_base58<S: serde::Serializer>(address: &Pubkey, serializer: S) -> Result<S::Ok, S::Error> {
    serializer.collect_str(address)
}

/// The JSON of `status`; `transactions`, `write_bytes_per_tx` and `lamports.fees` count what
/// is still needed to reach Sealed (writes and fees are null without the artifact).
#[derive(serde::Serialize)]
struct StatusJson<'a> {
    command: &'a str,
    cluster: &'a str,
    model: String,
    authority: String,
    weights_hash: String,
    running_hash: String,
    state: State,
    seal: Seal,
    sections_created: usize,
    sections_verified: usize,
    transactions: StillNeeded,
    /// The format `transactions` and the fees are counted in.
    tx_version: Format,
    write_bytes_per_tx: Option<MinMax>,
    lamports: StatusLamports,
    seconds: f64,
    sections: &'a [SectionStatus],
}

#[derive(serde::Serialize)]
struct Seal {
    pass: u32,
    cursor: u32,
    total_chunks: u32,
}

#[derive(serde::Serialize)]
struct StillNeeded {
    create: u64,
    write: Option<u64>,
    seal: u64,
    other: u64,
}

#[derive(serde::Serialize)]
struct MinMax {
    min: usize,
    max: usize,
}

#[derive(serde::Serialize)]
struct StatusLamports {
    rent: u64,
    rent_held: u64,
    rent_needed: u64,
    fees: Option<u64>,
}
