//! `verify`: compare the weight accounts with the artifact byte for byte, and recompute the
//! weights hash off chain from the on-chain bytes.

use super::accounts;
use super::items::differing_bytes;
use super::plan::check_model;
use super::report::State;
use crate::artifact::{hex, LocalArtifact};
use crate::send::transport::Transport;
use crate::Error;
use solana_pubkey::Pubkey;

#[derive(Clone, Debug, serde::Serialize)]
pub struct SectionCheck {
    pub index: usize,
    pub length: u32,
    pub differing_bytes: u64,
    pub first_difference: Option<usize>,
}

#[derive(Clone, Debug)]
pub struct Verification {
    pub model: Pubkey,
    pub state: State,
    pub declared: [u8; 32],
    /// The chain recomputed from the on-chain bytes (None if a weight account is missing).
    pub onchain_hash: Option<[u8; 32]>,
    pub sections: Vec<SectionCheck>,
}

impl Verification {
    /// True when every byte matches and the recomputed hash is the declared one.
    pub fn ok(&self) -> bool {
        self.onchain_hash == Some(self.declared)
            && self.sections.iter().all(|s| s.differing_bytes == 0)
    }

    /// The `--output json` document (keys in docs/client.md).
    pub fn to_json(&self) -> serde_json::Value {
        #[derive(serde::Serialize)]
        struct VerifyJson<'a> {
            command: &'a str,
            model: String,
            state: State,
            weights_hash: String,
            onchain_hash: Option<String>,
            ok: bool,
            sections: &'a [SectionCheck],
        }
        serde_json::to_value(VerifyJson {
            command: "verify",
            model: self.model.to_string(),
            state: self.state,
            weights_hash: hex(&self.declared),
            onchain_hash: self.onchain_hash.map(|h| hex(&h)),
            ok: self.ok(),
            sections: &self.sections,
        })
        .expect("a verification serializes")
    }

    pub fn to_text(&self) -> String {
        let mut s = format!("model {} ({})\n", self.model, self.state);
        for x in &self.sections {
            match x.first_difference {
                None => s += &format!("section {:2}: {} bytes match\n", x.index, x.length),
                Some(at) => {
                    s += &format!(
                        "section {:2}: {} of {} bytes differ, first at offset {at}\n",
                        x.index, x.differing_bytes, x.length
                    )
                }
            }
        }
        s += &format!("declared hash:          {}\n", hex(&self.declared));
        s += &format!(
            "recomputed from chain:  {}\n",
            self.onchain_hash
                .map_or("(a weight account is missing)".to_string(), |h| hex(&h))
        );
        s += if self.ok() {
            "verified: the on-chain weights are the artifact\n"
        } else {
            "NOT verified\n"
        };
        s
    }
}

pub async fn verify<T: Transport>(
    t: &T,
    model_address: &Pubkey,
    file: &[u8],
) -> Result<Verification, Error> {
    let artifact = LocalArtifact::decode(file)?;
    let model = accounts::existing_model(t, model_address).await?;
    check_model(model_address, &model, &artifact)?;
    let chain = accounts::read(t, model_address, &model.authority, model.sections()).await?;
    let sections = chain
        .weights
        .iter()
        .enumerate()
        .map(|(i, w)| {
            let wanted = artifact.sections[i];
            let first = match w.bytes() {
                Some(b) => b.iter().zip(wanted).position(|(a, b)| a != b),
                None => wanted.iter().position(|b| *b != 0).or(Some(0)),
            };
            SectionCheck {
                index: i,
                length: wanted.len() as u32,
                differing_bytes: differing_bytes(w.bytes(), wanted).max(first.is_some() as u64),
                first_difference: first,
            }
        })
        .collect();
    let onchain: Option<Vec<&[u8]>> = chain.weights.iter().map(|w| w.bytes()).collect();
    Ok(Verification {
        model: *model_address,
        state: State(Some(model.state)),
        declared: model.weights_hash,
        onchain_hash: onchain.map(curta_core::weights_hash),
        sections,
    })
}
