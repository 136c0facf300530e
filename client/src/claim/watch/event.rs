//! What the watcher reports: one event per claim verified, challenge made, dispute resolved,
//! and a summary when it stops ([`WatchEvent`]), as a line of text or a JSON line.

use crate::claim::dispute::{Challenged, Resolution};
use std::fmt;

/// One claim recomputed off chain.
#[derive(Clone, Debug, serde::Serialize)]
pub struct Verdict {
    pub claim: String,
    pub model: String,
    pub claimer: String,
    pub nonce: u32,
    /// "agrees" or "disagrees".
    pub verdict: &'static str,
    pub seed_source: &'static str,
    pub seed: u64,
    /// The claim's token count and answer hash, and curta-core's.
    pub claimed_tokens: u32,
    pub claimed_hash: String,
    pub computed_tokens: u32,
    pub computed_hash: String,
    pub answer_slot: u64,
    pub window_end: u64,
    /// The slot the claim was read at.
    pub slot: u64,
    /// Seconds of this claim's off-chain run, and the watcher's verification rate so far
    /// (claims verified over the seconds their runs took).
    pub seconds: f64,
    pub claims_per_second: f64,
}

/// What the watcher counted, at its end.
#[derive(Clone, Debug, Default, serde::Serialize)]
pub struct WatchSummary {
    pub verified: u64,
    pub agreed: u64,
    pub disagreed: u64,
    pub challenged: u64,
    pub overturned: u64,
    pub upheld: u64,
    /// Seconds the off-chain runs took in all, and claims verified per second of them.
    pub verification_seconds: f64,
    pub claims_per_second: f64,
    /// Disputes of the watcher's still open when it stopped (the next `client watch` with the
    /// same key finishes them).
    pub disputes_left: Vec<String>,
    pub seconds: f64,
}

/// What the watcher reports.
#[derive(Clone, Debug, serde::Serialize)]
#[serde(tag = "event", rename_all = "snake_case")]
pub enum WatchEvent {
    Started {
        watcher: String,
        /// The models watched (empty: every model of the program).
        models: Vec<String>,
        challenge: bool,
        slot: u64,
    },
    Verified(Verdict),
    /// A claim that cannot be verified (its model cannot be read or run).
    Unverifiable {
        claim: String,
        reason: String,
    },
    Challenged(Challenged),
    /// A wrong claim the watcher did not challenge: someone else did first, its window
    /// passed, or the watcher cannot pay.
    NotChallenged {
        claim: String,
        reason: String,
    },
    /// A dispute of the watcher's found challenged (after a restart): it is stepped and
    /// resolved.
    Resumed {
        claim: String,
        run: String,
    },
    Resolved(Resolution),
    DisputeFailed {
        claim: String,
        error: String,
    },
    /// A poll of the cluster failed: the watcher tries again at the next one.
    Trouble {
        error: String,
    },
    Stopped(WatchSummary),
}

fn short(hash: &str) -> &str {
    &hash[..hash.len().min(16)]
}

impl fmt::Display for WatchEvent {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            WatchEvent::Started { watcher, models, challenge, slot } => write!(
                f,
                "watching {} as {watcher} from slot {slot}{}",
                match models.is_empty() {
                    true => "every model's claims".to_string(),
                    false => format!("the claims of {}", models.join(", ")),
                },
                match challenge {
                    true => ", challenging every wrong answer",
                    false => " (--challenge not given: wrong answers are reported only)",
                }
            ),
            WatchEvent::Verified(v) => write!(
                f,
                "claim {} {}: {} ids, hash {}{} (model {}, claimer {}, nonce {}, seed {} {}); window ends at slot {} (now {}); verified in {:.3} s, {:.1} claims/s",
                v.claim,
                match v.verdict {
                    "agrees" => "agrees",
                    _ => "DISAGREES",
                },
                v.claimed_tokens,
                short(&v.claimed_hash),
                match v.verdict {
                    "agrees" => String::new(),
                    _ => format!(
                        "; curta-core computes {} ids, hash {}",
                        v.computed_tokens,
                        short(&v.computed_hash)
                    ),
                },
                v.model,
                v.claimer,
                v.nonce,
                v.seed,
                v.seed_source,
                v.window_end,
                v.slot,
                v.seconds,
                v.claims_per_second
            ),
            WatchEvent::Unverifiable { claim, reason } => {
                write!(f, "claim {claim} cannot be verified: {reason}")
            }
            WatchEvent::Challenged(c) => write!(
                f,
                "claim {} challenged: dispute run {} (nonce {}), bond {} lamports, rent {} lamports, fee {}",
                c.claim, c.run, c.nonce, c.bond, c.rent, c.fee
            ),
            WatchEvent::NotChallenged { claim, reason } => {
                write!(f, "claim {claim} not challenged: {reason}")
            }
            WatchEvent::Resumed { claim, run } => write!(
                f,
                "claim {claim}: resuming the watcher's dispute run {run} (step it, then resolve)"
            ),
            WatchEvent::Resolved(r) => write!(
                f,
                "claim {} {}: dispute run {} ended after {} steps ({} sent by the watcher, fees {}){}; the run's rent and the bond came back, gain {} lamports",
                r.claim,
                r.outcome.to_uppercase(),
                r.run,
                r.steps_landed,
                r.steps_sent,
                r.fees,
                match r.resolved_here {
                    true => "",
                    false => ", resolved by someone else",
                },
                r.gain
            ),
            WatchEvent::DisputeFailed { claim, error } => {
                write!(f, "claim {claim}: the dispute stopped: {error}")
            }
            WatchEvent::Trouble { error } => {
                write!(f, "polling failed (trying again): {error}")
            }
            WatchEvent::Stopped(s) => write!(
                f,
                "stopped after {:.1} s: {} claims verified ({} agree, {} disagree) at {:.1} claims/s ({:.3} s of off-chain runs); {} challenged, {} overturned, {} upheld{}",
                s.seconds,
                s.verified,
                s.agreed,
                s.disagreed,
                s.claims_per_second,
                s.verification_seconds,
                s.challenged,
                s.overturned,
                s.upheld,
                match s.disputes_left.is_empty() {
                    true => String::new(),
                    false => format!(
                        "; disputes left to the next start: {}",
                        s.disputes_left.join(", ")
                    ),
                }
            ),
        }
    }
}
