//! A claim recomputed off chain by the watcher: the sealed model read once per model
//! ([`Models`]), the claim's answer computed with its own prompt, settings and seed in force,
//! and compared with the token count and answer hash it posted ([`verify`]).

use super::event::Verdict;
use crate::claim::answer::{claim_prompt, claim_settings, compute, hex};
use crate::model::{fetch_sealed, FetchError};
use crate::run::onchain::source_name;
use crate::send::transport::Transport;
use crate::Error;
use curta_interface::claim::ClaimHeader;
use solana_pubkey::Pubkey;
use std::collections::HashMap;
use std::sync::Arc;

/// The sealed models' artifacts, read from their weight accounts (checked against their
/// declared hashes) the first time a claim of each is seen. A sealed model never changes.
#[derive(Default)]
pub struct Models(HashMap<Pubkey, Arc<Vec<u8>>>);

impl Models {
    /// The artifact of `model`: `Ok(Err(reason))` when the model cannot be run (not sealed,
    /// not at its address, its accounts not hashing to its declared hash: permanent); `Err`
    /// when the cluster could not be read (tried again at the next poll).
    pub async fn get<T: Transport>(
        &mut self,
        t: &T,
        model: &Pubkey,
    ) -> Result<Result<Arc<Vec<u8>>, String>, Error> {
        if let Some(bytes) = self.0.get(model) {
            return Ok(Ok(bytes.clone()));
        }
        match fetch_sealed(t, model).await {
            Ok((bytes, _)) => {
                if let Err(e) = curta_core::decode(&bytes) {
                    return Ok(Err(format!(
                        "model {model}'s sections are no artifact: {e}"
                    )));
                }
                let bytes = Arc::new(bytes);
                self.0.insert(*model, bytes.clone());
                Ok(Ok(bytes))
            }
            Err(FetchError::Client(e)) => Err(e),
            Err(e) => Ok(Err(e.to_string())),
        }
    }
}

/// The claim's answer recomputed (on a blocking thread: a large model's run takes seconds):
/// the verdict (its rate left at 0 for the caller to fill) and whether it agrees; `Err` when
/// curta-core refuses the claim's inputs (which OpenClaim checked: a program bug).
pub async fn verify(
    artifact: Arc<Vec<u8>>,
    address: Pubkey,
    header: ClaimHeader,
    slot: u64,
    threads: usize,
) -> Result<(Verdict, bool), String> {
    let work = move || {
        let artifact = curta_core::decode(&artifact).map_err(|e| e.to_string())?;
        let prompt = claim_prompt(&header).ok_or("its prompt is not one")?;
        let settings = claim_settings(&header);
        let (answer, seconds) = compute(&artifact, &prompt, header.steps, settings, threads)
            .map_err(|e| format!("curta-core refuses its inputs: {e}"))?;
        let agrees =
            header.token_count == answer.token_count() && header.answer_hash == answer.hash;
        let verdict = Verdict {
            claim: address.to_string(),
            model: header.model.to_string(),
            claimer: header.claimer.to_string(),
            nonce: header.nonce,
            verdict: if agrees { "agrees" } else { "disagrees" },
            seed_source: source_name(header.seed_source),
            seed: settings.seed,
            claimed_tokens: header.token_count,
            claimed_hash: hex(&header.answer_hash),
            computed_tokens: answer.token_count(),
            computed_hash: hex(&answer.hash),
            answer_slot: header.answer_slot,
            window_end: header.answer_slot.saturating_add(header.window as u64),
            slot,
            seconds,
            claims_per_second: 0.0,
        };
        Ok((verdict, agrees))
    };
    tokio::task::spawn_blocking(work)
        .await
        .map_err(|e| format!("the off-chain run stopped: {e}"))?
}
