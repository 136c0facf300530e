//! `status`: a model's state, its sections (created, frozen, hashed), seal progress, rent held;
//! with the artifact also how many bytes of each section still differ.

use crate::artifact::{hex, LocalArtifact};
use crate::chain;
use crate::plan::differing_bytes;
use crate::publish::{check_model, state_name};
use crate::transport::Transport;
use crate::Error;
use serde_json::json;
use solana_pubkey::Pubkey;

#[derive(Clone, Debug)]
pub struct SectionStatus {
    pub index: usize,
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
    pub state: String,
    pub seal_pass: u32,
    pub seal_cursor: u32,
    pub total_chunks: u32,
    pub rent_held: u64,
    pub sections: Vec<SectionStatus>,
}

pub async fn status<T: Transport>(
    t: &T,
    model_address: &Pubkey,
    artifact: Option<&[u8]>,
) -> Result<Status, Error> {
    let artifact = artifact.map(LocalArtifact::decode).transpose()?;
    let (model, _) = chain::read_model(t, model_address)
        .await?
        .ok_or(Error::ModelNotFound(*model_address))?;
    if let Some(artifact) = &artifact {
        check_model(model_address, &model, artifact)?;
    }
    let chain = chain::read(t, model_address, &model.authority, model.sections()).await?;
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
                chunks_hashed: if model.state == curta_program::state::ModelState::Sealed {
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
    Ok(Status {
        cluster: t.describe(),
        model: *model_address,
        authority: model.authority,
        weights_hash: model.weights_hash,
        running_hash: model.running_hash,
        state: state_name(Some(model.state)),
        seal_pass: model.seal_pass,
        seal_cursor: model.seal_cursor,
        total_chunks: model.total_chunks,
        rent_held: chain.rent_held(),
        sections,
    })
}

impl Status {
    pub fn to_json(&self) -> serde_json::Value {
        json!({
            "command": "status", "cluster": self.cluster, "model": self.model.to_string(),
            "authority": self.authority.to_string(), "weights_hash": hex(&self.weights_hash),
            "running_hash": hex(&self.running_hash), "state": self.state,
            "seal": { "pass": self.seal_pass, "cursor": self.seal_cursor, "total_chunks": self.total_chunks },
            "sections_created": self.sections.iter().filter(|s| s.created).count(),
            "sections_verified": self.sections.iter().filter(|s| s.chunks_hashed == s.chunks).count(),
            "lamports": { "rent_held": self.rent_held },
            "sections": self.sections.iter().map(|s| json!({
                "index": s.index, "address": s.address.to_string(), "length": s.length,
                "created": s.created, "frozen": s.frozen, "chunks": s.chunks,
                "chunks_hashed": s.chunks_hashed, "lamports": s.lamports,
                "differing_bytes": s.differing_bytes,
            })).collect::<Vec<_>>(),
        })
    }

    pub fn to_text(&self) -> String {
        let mut s = format!(
            "model {} on {}\nstate:        {}\nauthority:    {}\nweights hash: {}\nseal:         pass {}, chunk {} of {}\nrent held:    {} lamports ({})\n",
            self.model, self.cluster, self.state, self.authority, hex(&self.weights_hash),
            self.seal_pass, self.seal_cursor, self.total_chunks, self.rent_held, crate::error::sol(self.rent_held)
        );
        if self.state == "Mismatch" {
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
