//! The load's watchers (`claim::watch::watch` with `--challenge`, each its own keypair) and
//! the director beside them. The first watcher to send a dispute run's n-th step is killed
//! there (the transport raises its kill signal: its `watch` stops, the dispute dropped midway,
//! its steps in flight), starts again with the same key (it finds the dispute on the chain and finishes
//! it), and stops every watcher once each wrong claim is resolved and no dispute is left.

use super::claimer::Posted;
use curta_client::claim::{watch, WatchEvent, WatchOptions, WatchSummary};
use curta_client::Transport;
use solana_keypair::Keypair;
use solana_pubkey::Pubkey;
use std::cell::RefCell;
use std::collections::HashMap;
use std::ops::ControlFlow;
use std::time::{Duration, Instant};
use tokio::sync::watch as signal;

/// How long a killed watcher stays down.
const DOWN: Duration = Duration::from_millis(500);

/// How often the director looks.
const TICK: Duration = Duration::from_millis(10);

/// A watcher's event.
#[derive(Clone, Debug)]
pub struct Seen {
    pub watcher: usize,
    /// The watcher's start: 0 first, 1 after the kill.
    pub start: usize,
    /// Seconds since the load began.
    pub at: f64,
    pub event: WatchEvent,
}

/// What the claimers and the watchers report as they go, read by the director.
pub struct Board {
    pub started: Instant,
    pub events: Vec<Seen>,
    /// Every watch that ended, with its summary.
    pub ended: Vec<Ended>,
    pub posted: Vec<Posted>,
    /// Claimers that finished, and the first error of one that did not.
    pub claimers_done: usize,
    pub failure: Option<String>,
}

impl Board {
    pub fn new(started: Instant) -> Board {
        Board {
            started,
            events: Vec::new(),
            ended: Vec::new(),
            posted: Vec::new(),
            claimers_done: 0,
            failure: None,
        }
    }
}

/// A watch that ended.
#[derive(Clone, Debug, serde::Serialize)]
pub struct Ended {
    pub watcher: usize,
    pub start: usize,
    pub killed: bool,
    pub summary: WatchSummary,
}

/// The watcher killed during a dispute, and what became of the dispute.
#[derive(Clone, Debug, Default, serde::Serialize)]
pub struct Kill {
    pub watcher: usize,
    pub claim: String,
    pub run: String,
    /// Steps of the dispute run the watcher had sent when it was told to stop.
    pub steps_at_kill: u32,
    /// Steps the started-again watcher sent to finish the run, and the run's steps in all.
    pub steps_after_restart: u32,
    pub steps: u32,
    /// The stopped watcher named the dispute among those it left on chain.
    pub left_on_chain: bool,
    /// The started-again watcher found it (a `resumed` event) and resolved it: the outcome.
    pub resumed: bool,
    pub outcome: Option<String>,
    /// Seconds from the stop to the dispute's resolution.
    pub seconds_to_resolve: f64,
}

/// Runs watcher `index` until the director stops it; started again (same key) after a kill.
#[allow(clippy::too_many_arguments)]
pub async fn watcher<T: Transport>(
    t: &T,
    keypair: &Keypair,
    options: &WatchOptions,
    index: usize,
    board: &RefCell<Board>,
    kills: signal::Receiver<usize>,
    stop: signal::Receiver<bool>,
    log: &dyn Fn(&str),
    verbose: bool,
) -> Result<(), String> {
    for start in 0.. {
        let (mut kills_now, mut stop_now) = (kills.clone(), stop.clone());
        let stopper = async move {
            tokio::select! {
                _ = kills_now.wait_for(|k| *k > start) => {}
                _ = stop_now.wait_for(|s| *s) => {}
            }
        };
        let on_event = |e: &WatchEvent| {
            let quiet = matches!(
                e,
                WatchEvent::Verified(_)
                    | WatchEvent::Started { .. }
                    | WatchEvent::Challenged(_)
                    | WatchEvent::NotChallenged { .. }
                    | WatchEvent::Resolved(_)
            );
            if verbose || !quiet {
                log(&format!("watcher {index}.{start}: {e}"));
            }
            let mut b = board.borrow_mut();
            let at = b.started.elapsed().as_secs_f64();
            b.events.push(Seen {
                watcher: index,
                start,
                at,
                event: e.clone(),
            });
            ControlFlow::Continue(())
        };
        let summary = watch(t, keypair, options, on_event, stopper)
            .await
            .map_err(|e| format!("watcher {index}: {e}"))?;
        let killed = *kills.borrow() > start && !*stop.borrow();
        board.borrow_mut().ended.push(Ended {
            watcher: index,
            start,
            killed,
            summary,
        });
        if !killed {
            break;
        }
        log(&format!(
            "watcher {index} killed; starting it again in {} ms",
            DOWN.as_millis()
        ));
        tokio::time::sleep(DOWN).await;
    }
    Ok(())
}

/// Where the director is with the kill.
enum Phase {
    /// Waiting for the kill to trip (a watcher's n-th step of a dispute run).
    Waiting,
    /// The watcher was stopped during this dispute: waiting for it to be resolved.
    Killed(Kill, Pubkey, Instant),
    /// Done (or never possible: no dispute had its steps).
    Over(Option<Kill>),
}

/// What the events say so far: each dispute's watcher and run, and each resolution.
#[derive(Default)]
struct Disputes {
    challenged: HashMap<Pubkey, (usize, Pubkey)>,
    resolved: HashMap<Pubkey, &'static str>,
}

fn disputes(board: &Board) -> Disputes {
    let mut d = Disputes::default();
    for seen in &board.events {
        match &seen.event {
            WatchEvent::Challenged(c) => {
                let (claim, run) = (c.claim.parse().unwrap(), c.run.parse().unwrap());
                d.challenged.insert(claim, (seen.watcher, run));
            }
            WatchEvent::Resolved(r) => {
                d.resolved.insert(r.claim.parse().unwrap(), r.outcome);
            }
            _ => {}
        }
    }
    d
}

/// Follows the kill (tripped by the transport: `tripped` says which watcher, run and steps)
/// and stops the watchers when the load is over: every claim posted, every wrong one resolved,
/// no dispute left. `claims` and `claimers` are the load's counts; the watchers stop on an
/// error or past `deadline` too. Returns the kill.
pub async fn direct(
    board: &RefCell<Board>,
    (claims, claimers): (usize, usize),
    kill: bool,
    tripped: &dyn Fn() -> Option<(usize, Pubkey, u64)>,
    stop: &signal::Sender<bool>,
    deadline: Instant,
    log: &dyn Fn(&str),
) -> Result<Option<Kill>, String> {
    let mut phase = if kill {
        Phase::Waiting
    } else {
        Phase::Over(None)
    };
    loop {
        tokio::time::sleep(TICK).await;
        let (d, over, failure) = {
            let b = board.borrow();
            let d = disputes(&b);
            let wrong: Vec<Pubkey> = b
                .posted
                .iter()
                .filter(|p| p.forgery.is_some())
                .map(|p| p.address)
                .collect();
            let over = b.claimers_done == claimers
                && b.posted.len() == claims
                && wrong.iter().all(|c| d.resolved.contains_key(c))
                && d.challenged.keys().all(|c| d.resolved.contains_key(c));
            (d, over, b.failure.clone())
        };
        if let Some(failure) = failure {
            let _ = stop.send(true);
            return Err(failure);
        }
        if Instant::now() > deadline {
            let _ = stop.send(true);
            return Err(format!(
                "timed out: {} disputes started, {} resolved",
                d.challenged.len(),
                d.resolved.len()
            ));
        }
        phase = next_phase(board, phase, &d, tripped, log);
        match (&phase, over) {
            (Phase::Over(kill), true) => {
                let _ = stop.send(true);
                return Ok(kill.clone());
            }
            (Phase::Waiting, true) => {
                log("no watcher could be killed during a dispute");
                phase = Phase::Over(None);
            }
            _ => {}
        }
    }
}

/// One step of the kill.
fn next_phase(
    board: &RefCell<Board>,
    phase: Phase,
    d: &Disputes,
    tripped: &dyn Fn() -> Option<(usize, Pubkey, u64)>,
    log: &dyn Fn(&str),
) -> Phase {
    match phase {
        Phase::Waiting => {
            let Some((watcher, run, steps)) = tripped() else {
                return Phase::Waiting;
            };
            let claim = d
                .challenged
                .iter()
                .find(|(_, (w, r))| *w == watcher && *r == run)
                .map(|(claim, _)| *claim);
            let Some(claim) = claim else {
                // Its challenge's event comes first; not seen yet.
                return Phase::Waiting;
            };
            log(&format!(
                "killed watcher {watcher} during its dispute of claim {claim} (run {run}), as it sent step {steps}"
            ));
            let kill = Kill {
                watcher,
                claim: claim.to_string(),
                run: run.to_string(),
                steps_at_kill: steps as u32,
                ..Kill::default()
            };
            Phase::Killed(kill, claim, Instant::now())
        }
        Phase::Killed(mut kill, claim, at) => match d.resolved.get(&claim) {
            None => Phase::Killed(kill, claim, at),
            Some(outcome) => {
                let b = board.borrow();
                let address = claim.to_string();
                kill.left_on_chain = b.ended.iter().any(|e| {
                    e.killed
                        && e.watcher == kill.watcher
                        && e.summary.disputes_left.contains(&address)
                });
                let again = |s: &&Seen| s.watcher == kill.watcher && s.start > 0;
                kill.resumed = b.events.iter().filter(again).any(
                    |s| matches!(&s.event, WatchEvent::Resumed { claim, .. } if *claim == address),
                );
                for s in b.events.iter().filter(again) {
                    if let WatchEvent::Resolved(r) = &s.event {
                        if r.claim == address {
                            kill.steps_after_restart = r.steps_sent;
                            kill.steps = r.steps_landed;
                        }
                    }
                }
                kill.outcome = Some(outcome.to_string());
                kill.seconds_to_resolve = at.elapsed().as_secs_f64();
                log(&format!(
                    "claim {claim}: the restarted watcher {} resolved the dispute ({outcome}) {:.1} s after the kill",
                    kill.watcher, kill.seconds_to_resolve
                ));
                Phase::Over(Some(kill))
            }
        },
        over @ Phase::Over(_) => over,
    }
}
