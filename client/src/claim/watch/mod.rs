//! `client watch`: the service that keeps claims honest. It polls the program's claims of the
//! watched models, recomputes every answered claim still in its window off chain with the
//! native engine ([`verify`]), reports a line per claim and, with `--challenge`, challenges
//! every wrong answer, steps the dispute run pipelined, resolves it and collects. Its own
//! disputes are found on the chain (challenged claims whose challenger is its key), so a
//! restarted watcher finishes what it started; it keeps no journal.
//!
//! Disputes run beside the polling, in the watcher's task: the poll (a few reads and the
//! off-chain runs of new answers) and the disputes' steps take turns, so a dispute waits at
//! most one poll. At most [`WatchOptions::max_disputes`] are stepped at once: a wrong claim is
//! challenged as soon as it is found (the window is what is short), and its dispute waits its
//! turn. A poll that fails (a node restarting) is reported and tried again.

pub mod event;
pub mod verify;

use super::account::{claim_filters, find_claims};
use super::dispute::{challenge, finish_dispute, DisputeOptions, Resolution};
use super::request::ClaimError;
use crate::send::transport::Transport;
use crate::Error;
use curta_interface::claim::{claim_field, ClaimHeader, ClaimState};
use event::{WatchEvent, WatchSummary};
use futures::stream::{FuturesUnordered, StreamExt};
use solana_keypair::Keypair;
use solana_pubkey::Pubkey;
use solana_signer::Signer;
use std::collections::{HashMap, HashSet, VecDeque};
use std::future::Future;
use std::ops::ControlFlow;
use std::pin::Pin;
use std::time::{Duration, Instant};
use verify::{verify, Models};

/// A failed dispute is tried again after this long (each try re-reads the chain).
const RETRY_DISPUTE: Duration = Duration::from_secs(30);

/// Disputes stepped at once by default. Each keeps its run account's share of a block busy
/// (40% of it on current clusters), so a few fill the blocks; more would only queue their
/// steps behind each other (measured with 1,000 claims, 100 wrong, on the in-process bank: 84
/// disputes at once queued thousands of steps and stalled it; docs/client.md, "Load").
pub const MAX_DISPUTES: usize = 4;

/// What the watcher watches and does.
#[derive(Clone, Debug, Default)]
pub struct WatchOptions {
    /// The models whose claims are watched (empty: every model's).
    pub models: Vec<Pubkey>,
    /// Challenge every wrong answer, step its dispute and resolve it.
    pub challenge: bool,
    /// Pause between two polls (None: the transport's poll interval, at least 20 ms).
    pub poll: Option<Duration>,
    /// Threads an off-chain run uses.
    pub threads: usize,
    pub dispute: DisputeOptions,
    /// Disputes stepped at once (None: [`MAX_DISPUTES`]); the others, challenged already,
    /// wait their turn.
    pub max_disputes: Option<usize>,
}

type Dispute<'a> = Pin<Box<dyn Future<Output = (Pubkey, Result<Resolution, ClaimError>)> + 'a>>;

/// What one poll found to report, with the claim whose dispute starts after the event.
type Found = Vec<(WatchEvent, Option<Pubkey>)>;

struct Watcher<'a, T: Transport> {
    t: &'a T,
    me: &'a Keypair,
    options: &'a WatchOptions,
    models: Models,
    /// Claims (address, open slot) already judged or left alone.
    judged: HashSet<(Pubkey, u64)>,
    /// The watcher's disputes in progress or waiting their turn (`queue`), and when a failed
    /// one may be tried again.
    disputing: HashSet<Pubkey>,
    queue: VecDeque<Pubkey>,
    failed: HashMap<Pubkey, Instant>,
    summary: WatchSummary,
}

/// Watches claims until `stop` completes or `on_event` breaks, reporting every event to
/// `on_event`; returns the summary (also its last event). Disputes in progress when it stops
/// are left on chain: the next watch with the same key finishes them.
pub async fn watch<T: Transport>(
    t: &T,
    watcher: &Keypair,
    options: &WatchOptions,
    mut on_event: impl FnMut(&WatchEvent) -> ControlFlow<()>,
    stop: impl Future<Output = ()>,
) -> Result<WatchSummary, Error> {
    let started = Instant::now();
    let poll = options
        .poll
        .unwrap_or_else(|| t.profile().poll.max(Duration::from_millis(20)));
    let mut w = Watcher {
        t,
        me: watcher,
        options,
        models: Models::default(),
        judged: HashSet::new(),
        disputing: HashSet::new(),
        queue: VecDeque::new(),
        failed: HashMap::new(),
        summary: WatchSummary::default(),
    };
    let mut disputes: FuturesUnordered<Dispute<'_>> = FuturesUnordered::new();
    let most = options.max_disputes.unwrap_or(MAX_DISPUTES).max(1);
    let dispute = |claim: Pubkey| -> Dispute<'_> {
        Box::pin(async move {
            (
                claim,
                finish_dispute(t, watcher, &claim, &options.dispute).await,
            )
        })
    };
    let first = WatchEvent::Started {
        watcher: watcher.pubkey().to_string(),
        models: options.models.iter().map(Pubkey::to_string).collect(),
        challenge: options.challenge,
        slot: t.slot().await?,
    };
    let mut go = on_event(&first).is_continue();
    tokio::pin!(stop);
    while go {
        start_queued(&mut w.queue, &mut disputes, most, &dispute);
        let found = w.poll().await.unwrap_or_else(|e| {
            vec![(
                WatchEvent::Trouble {
                    error: e.to_string(),
                },
                None,
            )]
        });
        for (event, to_dispute) in found {
            if on_event(&event).is_break() {
                go = false;
                break;
            }
            if let Some(claim) = to_dispute {
                w.disputing.insert(claim);
                w.queue.push_back(claim);
            }
        }
        if !go {
            break;
        }
        start_queued(&mut w.queue, &mut disputes, most, &dispute);
        tokio::select! {
            () = &mut stop => break,
            Some((claim, result)) = disputes.next(), if !disputes.is_empty() => {
                go = on_event(&w.ended(claim, result)).is_continue();
            }
            () = tokio::time::sleep(poll) => {}
        }
    }
    w.summary.disputes_left = w.disputing.iter().map(Pubkey::to_string).collect();
    w.summary.disputes_left.sort();
    w.summary.seconds = started.elapsed().as_secs_f64();
    let _ = on_event(&WatchEvent::Stopped(w.summary.clone()));
    Ok(w.summary)
}

/// Starts the disputes waiting their turn, up to `most` at once.
fn start_queued<'a>(
    queue: &mut VecDeque<Pubkey>,
    disputes: &mut FuturesUnordered<Dispute<'a>>,
    most: usize,
    dispute: &impl Fn(Pubkey) -> Dispute<'a>,
) {
    while disputes.len() < most {
        let Some(claim) = queue.pop_front() else {
            break;
        };
        disputes.push(dispute(claim));
    }
}

/// The memcmp filters of the claims challenged by `challenger` (of `model`, or any).
fn challenged_by(model: Option<&Pubkey>, challenger: &Pubkey) -> Vec<(usize, Vec<u8>)> {
    let mut filters = claim_filters(model, None, Some(ClaimState::Challenged));
    filters.push((claim_field::CHALLENGER, challenger.to_bytes().to_vec()));
    filters
}

impl<T: Transport> Watcher<'_, T> {
    /// The answered claims of the watched models and the claims the watcher challenged.
    async fn claims(&self) -> Result<Vec<(Pubkey, ClaimHeader)>, Error> {
        let models: Vec<Option<&Pubkey>> = match self.options.models.is_empty() {
            true => vec![None],
            false => self.options.models.iter().map(Some).collect(),
        };
        let mut found = Vec::new();
        for model in models {
            let answered = claim_filters(model, None, Some(ClaimState::Answered));
            let mine = challenged_by(model, &self.me.pubkey());
            for filters in [answered, mine] {
                let claims = find_claims(self.t, &filters).await?;
                found.extend(claims.into_iter().map(|(address, h, _)| (address, h)));
            }
        }
        Ok(found)
    }

    /// One poll: every answered claim not judged yet and still in its window is verified (and
    /// challenged when wrong, with `--challenge`); every dispute of the watcher's not in
    /// progress here is resumed.
    async fn poll(&mut self) -> Result<Found, Error> {
        let claims = self.claims().await?;
        let slot = self.t.slot().await?;
        let me = self.me.pubkey();
        let mut found = Vec::new();
        for (address, header) in claims {
            match header.state {
                ClaimState::Answered => {
                    if self.judged.contains(&(address, header.open_slot)) {
                        continue;
                    }
                    if !header.settled(slot) {
                        found.extend(self.judge(address, header.clone(), slot).await?);
                    }
                    self.judged.insert((address, header.open_slot));
                }
                ClaimState::Challenged if header.challenger == me => {
                    let waiting = self
                        .failed
                        .get(&address)
                        .is_some_and(|at| at.elapsed() < RETRY_DISPUTE);
                    if !self.disputing.contains(&address) && !waiting {
                        let run = header.dispute_run.to_string();
                        let event = WatchEvent::Resumed {
                            claim: address.to_string(),
                            run,
                        };
                        found.push((event, Some(address)));
                    }
                }
                _ => {}
            }
        }
        Ok(found)
    }

    /// Verifies one answered claim, and challenges it when wrong (with `--challenge`).
    async fn judge(
        &mut self,
        address: Pubkey,
        header: ClaimHeader,
        slot: u64,
    ) -> Result<Found, Error> {
        let claim = address.to_string();
        let artifact = match self.models.get(self.t, &header.model).await? {
            Ok(artifact) => artifact,
            Err(reason) => return Ok(vec![(WatchEvent::Unverifiable { claim, reason }, None)]),
        };
        let threads = self.options.threads.max(1);
        let (mut verdict, agrees) =
            match verify(artifact.clone(), address, header.clone(), slot, threads).await {
                Ok(v) => v,
                Err(reason) => return Ok(vec![(WatchEvent::Unverifiable { claim, reason }, None)]),
            };
        let s = &mut self.summary;
        s.verified += 1;
        s.verification_seconds += verdict.seconds;
        s.claims_per_second = s.verified as f64 / s.verification_seconds.max(1e-9);
        verdict.claims_per_second = s.claims_per_second;
        match agrees {
            true => s.agreed += 1,
            false => s.disagreed += 1,
        }
        let mut found = vec![(WatchEvent::Verified(verdict), None)];
        if agrees || !self.options.challenge {
            return Ok(found);
        }
        let config = curta_core::decode(&artifact)
            .map_err(Error::Artifact)?
            .config();
        found.push(
            match challenge(
                self.t,
                self.me,
                &address,
                &header,
                &config,
                &self.options.dispute,
            )
            .await
            {
                Ok(challenged) => {
                    self.summary.challenged += 1;
                    (WatchEvent::Challenged(challenged), Some(address))
                }
                Err(e) => (
                    WatchEvent::NotChallenged {
                        claim,
                        reason: e.to_string(),
                    },
                    None,
                ),
            },
        );
        Ok(found)
    }

    /// The event of a dispute that ended (or stopped on an error, tried again later).
    fn ended(&mut self, claim: Pubkey, result: Result<Resolution, ClaimError>) -> WatchEvent {
        self.disputing.remove(&claim);
        match result {
            Ok(resolution) => {
                match resolution.outcome {
                    "overturned" => self.summary.overturned += 1,
                    _ => self.summary.upheld += 1,
                }
                WatchEvent::Resolved(resolution)
            }
            Err(error) => {
                self.failed.insert(claim, Instant::now());
                WatchEvent::DisputeFailed {
                    claim: claim.to_string(),
                    error: error.to_string(),
                }
            }
        }
    }
}
