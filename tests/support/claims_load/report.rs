//! What the load measured and whether it held ([`LoadReport`]): every wrong claim overturned,
//! no honest one overturned, and every lamport of the claimers and watchers accounted for by
//! the fees of the transactions they paid for and the bonds they won and lost.

use super::claimer::Posted;
use super::counting::Costs;
use super::specs::Mode;
use super::watchers::{Ended, Kill, Seen};
use super::{Keys, LoadOptions};
use curta_client::claim::WatchEvent;
use curta_interface::claim::{ClaimHeader, ClaimState};
use solana_pubkey::Pubkey;
use solana_signer::Signer;
use std::collections::BTreeMap;
use std::fmt;

/// What the claims' phase left: the claims posted, the watchers' events and ends, the kill.
pub struct Phase {
    pub posted: Vec<Posted>,
    pub events: Vec<Seen>,
    pub ended: Vec<Ended>,
    pub kill: Option<Kill>,
    /// Seconds until the last claim was answered, and of the claimers' off-chain runs.
    pub claim_seconds: f64,
    pub compute_seconds: f64,
    /// Seconds until the watchers stopped.
    pub seconds: f64,
}

/// The balances the accounting compares: the claimers' then the watchers' before; after, the
/// same, then every claim's, then every dispute run's; what closing each claim returned.
pub struct Parties<'a> {
    pub keys: &'a Keys,
    pub before: Vec<u64>,
    pub after: Vec<u64>,
    pub returned: Vec<u64>,
}

/// The dispute runs of the challenged claims.
pub fn dispute_runs(headers: &[ClaimHeader]) -> Vec<Pubkey> {
    let mut runs: Vec<Pubkey> = headers
        .iter()
        .filter(|h| h.challenger != Pubkey::default())
        .map(|h| h.dispute_run)
        .collect();
    runs.sort();
    runs.dedup();
    runs
}

/// One watcher's run (a start of it: a killed watcher has two).
#[derive(Clone, Debug, serde::Serialize)]
pub struct WatcherFigures {
    pub watcher: usize,
    pub start: usize,
    pub killed: bool,
    pub verified: u64,
    pub disagreed: u64,
    pub challenged: u64,
    pub overturned: u64,
    pub upheld: u64,
    pub verification_seconds: f64,
    pub claims_per_second: f64,
    pub seconds: f64,
}

/// The disputes: how many, their steps, the challenges that lost the race.
#[derive(Clone, Debug, Default, serde::Serialize)]
pub struct DisputeFigures {
    pub disputes: u64,
    pub overturned: u64,
    pub upheld: u64,
    /// Steps of the dispute runs (all that landed), and those their challengers sent.
    pub steps: u64,
    pub steps_sent: u64,
    /// Challenges refused by the program or not made (another watcher was first).
    pub challenges_lost: u64,
    /// Seconds from the first challenge to the last resolution.
    pub seconds: f64,
}

/// The claims' states at the end.
#[derive(Clone, Debug, Default, serde::Serialize)]
pub struct Outcome {
    pub wrong_overturned: u64,
    pub wrong_not_overturned: u64,
    /// Honest claims settled unchallenged, upheld after a challenge, overturned, or anything
    /// else (still challenged, not settled).
    pub honest_settled: u64,
    pub honest_upheld: u64,
    pub honest_overturned: u64,
    pub honest_other: u64,
}

/// The lamports of the claimers and watchers.
#[derive(Clone, Debug, Default, serde::Serialize)]
pub struct Lamports {
    pub before: u64,
    /// The parties' and every claim and dispute run's (closed: 0).
    pub after: u64,
    pub fees_claimers: u64,
    pub fees_watchers: u64,
    /// Bonds the watchers won (overturned claims) and lost (upheld ones).
    pub bonds_won: u64,
    pub bonds_lost: u64,
    /// Rent and bonds the claims held, and the dispute runs' rent (all back by the end).
    pub claims_held: u64,
    pub dispute_rent: u64,
    /// before - after - fees: 0 when every lamport is accounted for.
    pub unaccounted: i128,
}

#[derive(Clone, Debug, serde::Serialize)]
pub struct LoadReport {
    pub transport: String,
    pub model: String,
    pub claims: usize,
    pub claimers: usize,
    pub watchers: usize,
    pub tokens: u32,
    pub window: u32,
    pub wrong: usize,
    pub forgeries: BTreeMap<&'static str, u64>,
    pub modes: BTreeMap<&'static str, u64>,
    /// Seconds to open and answer every claim, the rate, and the claimers' off-chain runs.
    pub claim_seconds: f64,
    pub claims_per_second: f64,
    pub claimer_compute_seconds: f64,
    /// Disputes a watcher steps at once, and the per-account limit their steps in flight are
    /// counted from (None: the cluster's).
    pub max_disputes: usize,
    pub account_limit: Option<u64>,
    pub watcher_runs: Vec<WatcherFigures>,
    /// Claims verified over the seconds their off-chain runs took, all watchers together.
    pub verification_rate: f64,
    pub disputes: DisputeFigures,
    pub kill: Option<Kill>,
    pub outcome: Outcome,
    /// Transactions that landed, by instruction: [succeeded, failed].
    pub transactions: BTreeMap<&'static str, (u64, u64)>,
    pub dropped: u64,
    pub lamports: Lamports,
    /// Seconds of the claims' phase: until the watchers stopped, every dispute resolved.
    pub load_seconds: f64,
    pub settle_seconds: f64,
    pub close_seconds: f64,
    pub seconds: f64,
    /// What did not hold (empty: the load passed).
    pub failures: Vec<String>,
}

/// The report of the load, its checks made.
#[allow(clippy::too_many_arguments)]
pub fn assemble(
    transport: &str,
    model: &Pubkey,
    o: &LoadOptions,
    phase: &Phase,
    headers: &[ClaimHeader],
    slot: u64,
    costs: &Costs,
    parties: &Parties,
    (settle_seconds, close_seconds, seconds): (f64, f64, f64),
) -> LoadReport {
    let mut failures = Vec::new();
    let outcome = outcome(phase, headers, slot, &mut failures);
    let lamports = lamports(phase, headers, costs, parties, &mut failures);
    let watcher_runs: Vec<WatcherFigures> = phase.ended.iter().map(watcher_figures).collect();
    let verified: u64 = watcher_runs.iter().map(|w| w.verified).sum();
    let verifying: f64 = watcher_runs.iter().map(|w| w.verification_seconds).sum();
    if o.kill {
        check_kill(phase.kill.as_ref(), &mut failures);
    }
    let mut forgeries = BTreeMap::new();
    let mut modes = BTreeMap::new();
    for p in &phase.posted {
        if let Some(f) = p.forgery {
            *forgeries.entry(f.name()).or_default() += 1;
        }
        let mode = match p.mode {
            Mode::Greedy => "greedy",
            Mode::Drawn => "drawn",
            Mode::Chosen => "chosen",
        };
        *modes.entry(mode).or_default() += 1;
    }
    LoadReport {
        transport: transport.to_string(),
        model: model.to_string(),
        claims: phase.posted.len(),
        claimers: o.claimers,
        watchers: o.watchers,
        tokens: o.tokens,
        window: o.window,
        wrong: phase.posted.iter().filter(|p| p.forgery.is_some()).count(),
        forgeries,
        modes,
        claim_seconds: phase.claim_seconds,
        claims_per_second: phase.posted.len() as f64 / phase.claim_seconds.max(1e-9),
        claimer_compute_seconds: phase.compute_seconds,
        max_disputes: o
            .max_disputes
            .unwrap_or(curta_client::claim::watch::MAX_DISPUTES),
        account_limit: o.account_limit,
        watcher_runs,
        verification_rate: verified as f64 / verifying.max(1e-9),
        disputes: dispute_figures(&phase.events),
        kill: phase.kill.clone(),
        outcome,
        transactions: costs.transactions.clone(),
        dropped: costs.dropped,
        lamports,
        load_seconds: phase.seconds,
        settle_seconds,
        close_seconds,
        seconds,
        failures,
    }
}

fn watcher_figures(e: &Ended) -> WatcherFigures {
    let s = &e.summary;
    WatcherFigures {
        watcher: e.watcher,
        start: e.start,
        killed: e.killed,
        verified: s.verified,
        disagreed: s.disagreed,
        challenged: s.challenged,
        overturned: s.overturned,
        upheld: s.upheld,
        verification_seconds: s.verification_seconds,
        claims_per_second: s.claims_per_second,
        seconds: s.seconds,
    }
}

fn check_kill(kill: Option<&Kill>, failures: &mut Vec<String>) {
    match kill {
        None => failures.push("no watcher was killed during a dispute".into()),
        Some(k) => {
            if !(k.left_on_chain && k.resumed && k.outcome.as_deref() == Some("overturned")) {
                failures.push(format!(
                    "the killed watcher's dispute of claim {}: left on chain {}, resumed {}, {} steps sent after the restart, outcome {:?}",
                    k.claim, k.left_on_chain, k.resumed, k.steps_after_restart, k.outcome
                ));
            }
        }
    }
}

fn dispute_figures(events: &[Seen]) -> DisputeFigures {
    let mut d = DisputeFigures::default();
    let (mut first, mut last) = (f64::MAX, 0.0f64);
    for seen in events {
        match &seen.event {
            WatchEvent::Challenged(_) => first = first.min(seen.at),
            WatchEvent::NotChallenged { .. } => d.challenges_lost += 1,
            WatchEvent::Resolved(r) => {
                last = last.max(seen.at);
                d.disputes += 1;
                match r.outcome {
                    "overturned" => d.overturned += 1,
                    _ => d.upheld += 1,
                }
                d.steps += r.steps_landed as u64;
                d.steps_sent += r.steps_sent as u64;
            }
            _ => {}
        }
    }
    d.seconds = if d.disputes > 0 { last - first } else { 0.0 };
    d
}

/// The claims' states: every wrong one overturned, every honest one settled or upheld.
fn outcome(
    phase: &Phase,
    headers: &[ClaimHeader],
    slot: u64,
    failures: &mut Vec<String>,
) -> Outcome {
    let mut o = Outcome::default();
    for (p, h) in phase.posted.iter().zip(headers) {
        let state = curta_client::claim::state_at(h, slot);
        match (p.forgery, h.state) {
            (Some(_), ClaimState::Overturned) => o.wrong_overturned += 1,
            (Some(f), _) => {
                o.wrong_not_overturned += 1;
                failures.push(format!(
                    "wrong claim {} ({}) is {state}",
                    p.address,
                    f.name()
                ));
            }
            (None, ClaimState::Answered) if h.settled(slot) => o.honest_settled += 1,
            (None, ClaimState::Upheld) => o.honest_upheld += 1,
            (None, ClaimState::Overturned) => {
                o.honest_overturned += 1;
                failures.push(format!("honest claim {} was overturned", p.address));
            }
            (None, _) => {
                o.honest_other += 1;
                failures.push(format!("honest claim {} is {state}", p.address));
            }
        }
        if h.token_count != p.posted.token_count() || h.answer_hash != p.posted.hash {
            failures.push(format!("claim {} does not hold what was posted", p.address));
        }
    }
    o
}

/// Every lamport: each claimer holds what it held less its fees and the bonds of its
/// overturned claims (plus the challengers' bonds of its upheld ones); each watcher what it
/// held less its fees plus the bonds it won (less those it lost); every claim and dispute run
/// is closed; and in all, before = after + fees.
fn lamports(
    phase: &Phase,
    headers: &[ClaimHeader],
    costs: &Costs,
    parties: &Parties,
    failures: &mut Vec<String>,
) -> Lamports {
    let keys = parties.keys;
    let (nc, nw) = (keys.claimers.len(), keys.watchers.len());
    let mut change = vec![0i128; nc + nw];
    let mut l = Lamports::default();
    for (p, h) in phase.posted.iter().zip(headers) {
        l.claims_held += p.rent + p.bond;
        let challenger = keys
            .watchers
            .iter()
            .position(|k| k.pubkey() == h.challenger);
        let moved = match h.state {
            ClaimState::Overturned => h.bond as i128,
            ClaimState::Upheld => -(h.bond as i128),
            _ => continue,
        };
        match challenger {
            Some(w) => change[nc + w] += moved,
            None => failures.push(format!("claim {} challenged by a stranger", p.address)),
        }
        change[p.claimer] -= moved;
        match moved > 0 {
            true => l.bonds_won += h.bond,
            false => l.bonds_lost += h.bond,
        }
    }
    for seen in &phase.events {
        if let WatchEvent::Challenged(c) = &seen.event {
            l.dispute_rent += c.rent;
        }
    }
    let all = keys.claimers.iter().chain(&keys.watchers);
    for (i, key) in all.enumerate() {
        let fees = costs.fees_of(&key.pubkey());
        match i < nc {
            true => l.fees_claimers += fees,
            false => l.fees_watchers += fees,
        }
        let expected = parties.before[i] as i128 + change[i] - fees as i128;
        if expected != parties.after[i] as i128 {
            failures.push(format!(
                "{} holds {} lamports, not the {expected} its fees and bonds leave",
                key.pubkey(),
                parties.after[i]
            ));
        }
    }
    let left: u64 = parties.after[nc + nw..].iter().sum();
    if left != 0 {
        failures.push(format!(
            "{left} lamports are left in claim or dispute run accounts"
        ));
    }
    l.before = parties.before.iter().sum();
    l.after = parties.after.iter().sum();
    let fees = (l.fees_claimers + l.fees_watchers) as i128;
    l.unaccounted = l.before as i128 - l.after as i128 - fees;
    if l.unaccounted != 0 {
        failures.push(format!("{} lamports unaccounted for", l.unaccounted));
    }
    let returned: u64 = parties.returned.iter().sum();
    let kept: u64 = phase
        .posted
        .iter()
        .zip(headers)
        .map(|(p, h)| match h.state {
            ClaimState::Overturned => p.rent,
            _ => p.rent + p.bond,
        })
        .sum();
    if returned != kept {
        failures.push(format!(
            "closing the claims returned {returned} lamports, not their rents and unforfeited bonds, {kept}"
        ));
    }
    l
}

fn sol(lamports: u64) -> String {
    format!("{:.6} SOL", lamports as f64 / 1e9)
}

impl LoadReport {
    /// The claims, the watchers, the disputes and the kill.
    fn fmt_load(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let kinds: Vec<String> = self
            .forgeries
            .iter()
            .map(|(k, n)| format!("{n} {k}"))
            .collect();
        let modes: Vec<String> = self.modes.iter().map(|(k, n)| format!("{n} {k}")).collect();
        writeln!(
            f,
            "{} claims of {} tokens ({}) by {} claimers on {}, window {} slots; {} wrong ({})",
            self.claims,
            self.tokens,
            modes.join(", "),
            self.claimers,
            self.transport,
            self.window,
            self.wrong,
            kinds.join(", ")
        )?;
        writeln!(
            f,
            "claims: opened and answered in {:.1} s, {:.1} claims/s (the claimers' off-chain answers {:.1} s)",
            self.claim_seconds, self.claims_per_second, self.claimer_compute_seconds
        )?;
        let limit = match self.account_limit {
            Some(units) => format!("{units} units"),
            None => "the cluster's limit".into(),
        };
        writeln!(
            f,
            "watchers: {:.1} claims verified/s off chain in all; each steps at most {} disputes at once, their steps in flight counted from {limit} an account",
            self.verification_rate, self.max_disputes
        )?;
        for w in &self.watcher_runs {
            writeln!(
                f,
                "  watcher {}{}: {} verified ({} disagree) at {:.1} claims/s ({:.2} s of runs); {} challenged, {} overturned, {} upheld{}",
                w.watcher,
                if w.start > 0 { " (started again)" } else { "" },
                w.verified,
                w.disagreed,
                w.claims_per_second,
                w.verification_seconds,
                w.challenged,
                w.overturned,
                w.upheld,
                if w.killed { "; killed" } else { "" }
            )?;
        }
        let d = &self.disputes;
        writeln!(
            f,
            "disputes: {} ({} overturned, {} upheld), {} steps landed ({} sent by the challengers), {} challenges lost the race; {:.1} s from the first challenge to the last resolution",
            d.disputes, d.overturned, d.upheld, d.steps, d.steps_sent, d.challenges_lost, d.seconds
        )?;
        if let Some(k) = &self.kill {
            writeln!(
                f,
                "kill: watcher {} stopped during its dispute of claim {} as it sent the run's step {}; started again, it {}, sent {} of the run's {} steps and resolved it ({}) {:.1} s after the kill",
                k.watcher,
                k.claim,
                k.steps_at_kill,
                if k.resumed { "resumed it" } else { "did NOT resume it" },
                k.steps_after_restart,
                k.steps,
                k.outcome.as_deref().unwrap_or("unresolved"),
                k.seconds_to_resolve
            )?;
        }
        Ok(())
    }

    /// The outcome, the transactions, the lamports, the times and the verdict.
    fn fmt_checks(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let o = &self.outcome;
        writeln!(
            f,
            "outcome: {}/{} wrong claims overturned; honest: {} settled unchallenged, {} upheld, {} overturned, {} other",
            o.wrong_overturned,
            self.wrong,
            o.honest_settled,
            o.honest_upheld,
            o.honest_overturned,
            o.honest_other
        )?;
        let txs: Vec<String> = self
            .transactions
            .iter()
            .map(|(k, (ok, failed))| match failed {
                0 => format!("{ok} {k}"),
                _ => format!("{ok} {k} (+{failed} failed)"),
            })
            .collect();
        writeln!(
            f,
            "transactions: {}; {} dropped (never executed: a blockhash that expired first, or the killed watcher's last batch)",
            txs.join(", "),
            self.dropped
        )?;
        let l = &self.lamports;
        writeln!(
            f,
            "lamports: claimers and watchers {} before, {} after; fees {} (claimers {}, watchers {}); bonds won by the watchers {}, lost {}; held and returned: claims {}, dispute runs {}; unaccounted {}",
            l.before,
            l.after,
            sol(l.fees_claimers + l.fees_watchers),
            sol(l.fees_claimers),
            sol(l.fees_watchers),
            sol(l.bonds_won),
            sol(l.bonds_lost),
            sol(l.claims_held),
            sol(l.dispute_rent),
            l.unaccounted
        )?;
        writeln!(
            f,
            "seconds: claims and disputes {:.1}, windows {:.1}, closing {:.1}, in all {:.1}",
            self.load_seconds, self.settle_seconds, self.close_seconds, self.seconds
        )?;
        match self.failures.is_empty() {
            true => write!(
                f,
                "PASSED: every wrong claim overturned, no honest one, every lamport accounted for"
            ),
            false => write!(f, "FAILED:\n  {}", self.failures.join("\n  ")),
        }
    }
}

impl fmt::Display for LoadReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.fmt_load(f)?;
        self.fmt_checks(f)
    }
}
