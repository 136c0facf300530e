//! The load test of claims (issue 40), written once over `Transport`: the in-process bank
//! running the SBF program (the integration test `client::claims_load`, and
//! `client/examples/bench_claims.rs` by default) and a validator over RPC
//! (`scripts/bench-validator claims`).
//!
//! Claimers (each its own keypair) open and answer claims of stories260K a batch at a time with
//! the stages of `client claim`, a tenth of them (`wrong_percent`) answered wrongly in varied
//! ways ([`specs::Forgery`]); watchers (`client watch --challenge`, each its own keypair) race
//! to verify every answer off chain and challenge, step and resolve the wrong ones; one of them
//! is killed during a dispute and started again, and finishes it ([`watchers`]). Then the
//! windows pass, every claim is closed, and [`report`] checks the outcome (every wrong claim
//! overturned, no honest one overturned) and the lamports: what the claimers and watchers held
//! before is what they hold after plus the fees of every transaction they paid for, counted
//! one by one ([`counting`]), and each party's share of it is its bonds won and lost.

pub mod claimer;
pub mod counting;
pub mod report;
pub mod specs;
pub mod watchers;

use claimer::{run_claimer, Posted};
use counting::Counting;
use curta_client::claim::answer::owned_prompt;
use curta_client::claim::{close_claim, DisputeOptions, WatchOptions};
use curta_client::send::{Engine, Item, Progress, Units};
use curta_client::{Options, Transport, TxVersion};
use curta_interface::claim::{claim_len, prompt_bytes, ClaimHeader};
use curta_interface::cost::{claim_bond, dispute_transactions};
use futures::future::{join_all, try_join_all};
use report::{LoadReport, Parties, Phase};
use solana_keypair::Keypair;
use solana_pubkey::Pubkey;
use solana_signer::Signer;
use specs::ClaimSpec;
use std::cell::RefCell;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::sync::watch as signal;
use watchers::{direct, watcher, Board};

/// The dispute step at which a watcher is killed: the one that sends it stops right after.
pub const KILL_AT_STEP: u64 = 3;

/// The load's size and pace.
#[derive(Clone, Debug)]
pub struct LoadOptions {
    pub claims: usize,
    pub claimers: usize,
    /// Percent of the claims answered wrongly.
    pub wrong_percent: f64,
    pub watchers: usize,
    /// Tokens each claim generates.
    pub tokens: u32,
    /// The claims' challenge window (slots).
    pub window: u32,
    /// Claims a claimer has in flight at once.
    pub batch: usize,
    /// The watchers' poll (None: the transport's).
    pub poll: Option<Duration>,
    /// Threads a watcher's off-chain run uses.
    pub threads: usize,
    /// The per-account compute-unit limit the watchers count their steps in flight from
    /// (`client watch --account-cu-limit`; None: the cluster's).
    pub account_limit: Option<u64>,
    /// Disputes a watcher steps at once (`client watch --max-disputes`; None: its default).
    pub max_disputes: Option<usize>,
    /// Kill a watcher during a dispute and start it again.
    pub kill: bool,
    /// Give up after this long (the claims' phase to the last dispute).
    pub timeout: Duration,
    /// Print every watcher event.
    pub verbose: bool,
}

impl Default for LoadOptions {
    fn default() -> Self {
        LoadOptions {
            claims: 1000,
            claimers: 4,
            wrong_percent: 10.0,
            watchers: 2,
            tokens: 64,
            window: curta_interface::claim::MIN_WINDOW,
            batch: 25,
            poll: None,
            threads: 1,
            account_limit: None,
            max_disputes: None,
            kill: true,
            timeout: Duration::from_secs(3600),
            verbose: false,
        }
    }
}

/// The model the claims are of.
pub enum ModelSource {
    /// Publish and seal this artifact (the funder its authority).
    Publish(Vec<u8>),
    /// A sealed model already on the cluster.
    Sealed(Pubkey),
}

/// The claimers' and the watchers' keypairs.
pub struct Keys {
    pub claimers: Vec<Keypair>,
    pub watchers: Vec<Keypair>,
}

/// Runs the load on `inner` (the funder pays for the model and funds every claimer and
/// watcher) and checks it: the report says what was measured and `failures` what did not
/// hold.
pub async fn run<T: Transport>(
    inner: &T,
    funder: &Keypair,
    source: ModelSource,
    o: &LoadOptions,
    log: &dyn Fn(&str),
) -> Result<LoadReport, String> {
    let started = Instant::now();
    let t = Counting::new(inner);
    let (model, artifact) = model(&t, funder, source).await?;
    let config = curta_core::decode(&artifact)
        .map_err(|e| e.to_string())?
        .config();
    let specs = specs::specs(o.claims, o.claimers, o.wrong_percent);
    let keys = Keys {
        claimers: (0..o.claimers).map(|_| Keypair::new()).collect(),
        watchers: (0..o.watchers).map(|_| Keypair::new()).collect(),
    };
    let needs = funding(&t, &config, &specs, &keys, o).await?;
    fund(&t, funder, &needs).await?;
    log(&format!(
        "{}: model {model}; {} claims of {} tokens by {} claimers, {} wrong; {} watchers",
        t.describe(),
        o.claims,
        o.tokens,
        o.claimers,
        specs::wrong_count(o.claims, o.wrong_percent),
        o.watchers
    ));
    let parties: Vec<Pubkey> = keys
        .claimers
        .iter()
        .chain(&keys.watchers)
        .map(|k| k.pubkey())
        .collect();
    let before = balances(&t, &parties).await?;
    let phase = load_phase(&t, &model, &Arc::new(artifact), &specs, &keys, o, log).await?;
    let settle_started = Instant::now();
    let slot = settle_windows(&t, &phase.posted).await?;
    let headers = headers(&t, &phase.posted).await?;
    let settle_seconds = settle_started.elapsed().as_secs_f64();
    let close_started = Instant::now();
    let returned = close_all(&t, &keys, &phase.posted, o.batch).await?;
    let close_seconds = close_started.elapsed().as_secs_f64();
    let costs = t
        .costs(Duration::from_secs(300))
        .await
        .map_err(|e| e.to_string())?;
    let mut accounts = parties.clone();
    accounts.extend(phase.posted.iter().map(|p| p.address));
    accounts.extend(report::dispute_runs(&headers));
    let after = balances(&t, &accounts).await?;
    let parties = Parties {
        keys: &keys,
        before,
        after,
        returned,
    };
    let times = (
        settle_seconds,
        close_seconds,
        started.elapsed().as_secs_f64(),
    );
    Ok(report::assemble(
        &t.describe(),
        &model,
        o,
        &phase,
        &headers,
        slot,
        &costs,
        &parties,
        times,
    ))
}

/// The model: published and sealed by the funder, or read from the cluster.
async fn model<T: Transport>(
    t: &T,
    funder: &Keypair,
    source: ModelSource,
) -> Result<(Pubkey, Vec<u8>), String> {
    match source {
        ModelSource::Publish(artifact) => {
            let report = curta_client::publish(t, funder, &artifact, true, &Options::default())
                .await
                .map_err(|e| format!("publishing the model: {e}"))?;
            Ok((report.model, artifact))
        }
        ModelSource::Sealed(model) => {
            let (bytes, _) = curta_client::model::fetch_sealed(t, &model)
                .await
                .map_err(|e| format!("model {model}: {e}"))?;
            Ok((model, bytes))
        }
    }
}

/// Lamports the funder needs for a load of `o` on `artifact`: publishing the model (its rent
/// and fees, with a margin) and funding every claimer and watcher.
pub async fn budget<T: Transport>(t: &T, artifact: &[u8], o: &LoadOptions) -> Result<u64, String> {
    let config = curta_core::decode(artifact)
        .map_err(|e| e.to_string())?
        .config();
    let specs = specs::specs(o.claims, o.claimers, o.wrong_percent);
    let keys = Keys {
        claimers: (0..o.claimers).map(|_| Keypair::new()).collect(),
        watchers: (0..o.watchers).map(|_| Keypair::new()).collect(),
    };
    let needs = funding(t, &config, &specs, &keys, o).await?;
    let publish = t
        .rent_minimum(artifact.len())
        .await
        .map_err(|e| e.to_string())?;
    Ok(needs.iter().map(|(_, n)| n).sum::<u64>() + 2 * publish + 10_000_000_000)
}

/// Lamports each claimer and watcher needs: a claimer, the rent and bond of each of its claims
/// and their three fees; a watcher, the bond, the dispute run's rent and the dispute's fees of
/// every wrong claim at once (it may challenge them all, and each is held until Resolve), and
/// a challenge's fee for every claim; each with a margin of 0.1 SOL and its rent-exempt minimum.
async fn funding<T: Transport>(
    t: &T,
    config: &curta_core::Config,
    specs: &[ClaimSpec],
    keys: &Keys,
    o: &LoadOptions,
) -> Result<Vec<(Pubkey, u64)>, String> {
    const FEE: u64 = 10_000;
    const MARGIN: u64 = 100_000_000;
    let e = |e: curta_client::Error| e.to_string();
    let reserve = t.rent_minimum(0).await.map_err(e)?;
    let run_rent = t
        .rent_minimum(curta_interface::run::run_len(config, o.tokens) as usize)
        .await
        .map_err(e)?;
    let mut claimers = vec![reserve + MARGIN; keys.claimers.len()];
    let mut watcher = reserve + MARGIN + FEE * specs.len() as u64;
    for spec in specs {
        let wire = owned_prompt(&spec.prompt);
        let temperature = spec.settings().temperature;
        let bond = claim_bond(config, &wire.as_wire(), o.tokens, temperature, 0)
            .ok_or("the bond of a claim does not fit a u64")?;
        let len = claim_len(prompt_bytes(&wire.as_wire()).len());
        claimers[spec.claimer] += t.rent_minimum(len).await.map_err(e)? + bond + 3 * FEE;
        if spec.wrong.is_some() {
            let dispute = dispute_transactions(config, &wire.as_wire(), o.tokens, temperature);
            watcher += bond + run_rent + (dispute + 2) * FEE;
        }
    }
    let mut needs: Vec<(Pubkey, u64)> = keys
        .claimers
        .iter()
        .map(Keypair::pubkey)
        .zip(claimers)
        .collect();
    needs.extend(keys.watchers.iter().map(|k| (k.pubkey(), watcher)));
    Ok(needs)
}

/// Transfers each `(address, lamports)` from the funder.
async fn fund<T: Transport>(
    t: &T,
    funder: &Keypair,
    needs: &[(Pubkey, u64)],
) -> Result<(), String> {
    let units = Units::Measured {
        fallback: 200_000,
        floor: 0,
    };
    let items: Vec<Item> = needs
        .iter()
        .map(|(to, lamports)| {
            let transfer =
                solana_system_interface::instruction::transfer(&funder.pubkey(), to, *lamports);
            Item::new("fund", units, vec![transfer])
        })
        .collect();
    let mut engine = Engine::new(t, funder, None, None, Progress::hidden());
    let window = engine.profile.window;
    let failures = engine
        .send(items, window, false)
        .await
        .map_err(|e| format!("funding: {e}"))?;
    match failures.first() {
        None => Ok(()),
        Some(f) => Err(format!("funding: {:?}", f.error)),
    }
}

async fn balances<T: Transport>(t: &T, addresses: &[Pubkey]) -> Result<Vec<u64>, String> {
    let mut out = Vec::with_capacity(addresses.len());
    for chunk in addresses.chunks(100) {
        let accounts = t.get_accounts(chunk).await.map_err(|e| e.to_string())?;
        out.extend(
            accounts
                .iter()
                .map(|a| a.as_ref().map_or(0, |a| a.lamports)),
        );
    }
    Ok(out)
}

/// The claimers, the watchers and the director, side by side until every wrong claim is
/// resolved.
async fn load_phase<T: Transport>(
    t: &Counting<'_, T>,
    model: &Pubkey,
    artifact: &Arc<Vec<u8>>,
    specs: &[ClaimSpec],
    keys: &Keys,
    o: &LoadOptions,
    log: &dyn Fn(&str),
) -> Result<Phase, String> {
    let format = curta_client::send::format::choose(t, TxVersion::Auto)
        .await
        .map_err(|e| e.to_string())?
        .format;
    let started = Instant::now();
    let board = RefCell::new(Board::new(started));
    let (stop, stopped) = signal::channel(false);
    let kills: Vec<_> = (0..o.watchers).map(|_| signal::channel(0usize)).collect();
    if o.kill {
        let armed = keys.watchers.iter().map(Keypair::pubkey);
        t.arm(
            KILL_AT_STEP,
            armed.zip(kills.iter().map(|(s, _)| s.clone())).collect(),
        );
    }
    let options = watch_options(model, o);
    let every = (o.claims / 10).max(1);
    let on_posted = |p: &Posted| {
        let mut b = board.borrow_mut();
        b.posted.push(p.clone());
        let n = b.posted.len();
        if n.is_multiple_of(every) {
            let rate = n as f64 / started.elapsed().as_secs_f64();
            log(&format!(
                "{n} claims opened and answered ({rate:.1} claims/s)"
            ));
        }
    };
    let claiming = join_all(keys.claimers.iter().enumerate().map(|(c, kp)| {
        let mine: Vec<ClaimSpec> = specs.iter().filter(|s| s.claimer == c).cloned().collect();
        let (board, on_posted) = (&board, &on_posted);
        async move {
            let pace = (o.tokens, o.window, o.batch);
            let done = run_claimer(t, kp, model, artifact, &mine, pace, format, on_posted).await;
            let mut b = board.borrow_mut();
            match &done {
                Ok(_) => b.claimers_done += 1,
                Err(e) => {
                    b.failure.get_or_insert_with(|| format!("claimer {c}: {e}"));
                }
            }
            (done, started.elapsed().as_secs_f64())
        }
    }));
    let watching = join_all(keys.watchers.iter().enumerate().map(|(w, kp)| {
        let (kills, stopped) = (kills[w].1.clone(), stopped.clone());
        let (options, board) = (&options, &board);
        watcher(t, kp, options, w, board, kills, stopped, log, o.verbose)
    }));
    let deadline = Instant::now() + o.timeout;
    let counts = (o.claims, o.claimers);
    let tripped = || t.tripped();
    let directing = direct(&board, counts, o.kill, &tripped, &stop, deadline, log);
    let settling = settle_after_kill(t, &board, stopped.clone());
    let (claimed, watched, kill, settled) = tokio::join!(claiming, watching, directing, settling);
    let kill = kill?;
    settled.map_err(|e| format!("after the kill: {e}"))?;
    watched.into_iter().collect::<Result<Vec<()>, String>>()?;
    let mut compute_seconds = 0.0;
    let mut claim_seconds: f64 = 0.0;
    for (done, seconds) in claimed {
        compute_seconds += done?.compute_seconds;
        claim_seconds = claim_seconds.max(seconds);
    }
    let board = board.into_inner();
    Ok(Phase {
        posted: board.posted,
        events: board.events,
        ended: board.ended,
        kill,
        claim_seconds,
        compute_seconds,
        seconds: started.elapsed().as_secs_f64(),
    })
}

/// What each watcher is started with: `client watch --model MODEL --challenge`.
fn watch_options(model: &Pubkey, o: &LoadOptions) -> WatchOptions {
    WatchOptions {
        models: vec![*model],
        challenge: true,
        poll: o.poll,
        threads: o.threads,
        dispute: DisputeOptions {
            account_limit: o.account_limit,
            ..DisputeOptions::default()
        },
        max_disputes: o.max_disputes,
    }
}

/// Once a watcher is killed, looks up what it had in flight while the cluster still keeps the
/// statuses (over RPC, a minute or two): its engines, dropped, never read them. Returns at
/// once when the load stops without a kill.
async fn settle_after_kill<T: Transport>(
    t: &Counting<'_, T>,
    board: &RefCell<Board>,
    mut stopped: signal::Receiver<bool>,
) -> Result<(), curta_client::Error> {
    loop {
        if board.borrow().ended.iter().any(|e| e.killed) {
            let mark = t.mark();
            return t.settle(mark, Duration::from_secs(180)).await;
        }
        let wait = tokio::time::sleep(Duration::from_millis(50));
        tokio::select! {
            () = wait => {}
            _ = stopped.wait_for(|s| *s) => return Ok(()),
        }
    }
}

/// Moves the cluster past every claim's window (the bank a slot at a time; over RPC, waiting
/// for it); returns the slot then.
async fn settle_windows<T: Transport>(t: &T, posted: &[Posted]) -> Result<u64, String> {
    let e = |e: curta_client::Error| e.to_string();
    let end = headers(t, posted)
        .await?
        .iter()
        .map(|h| h.answer_slot + h.window as u64)
        .max()
        .unwrap_or(0);
    loop {
        let slot = t.slot().await.map_err(e)?;
        if slot > end {
            return Ok(slot);
        }
        t.pass_slot(slot).await.map_err(e)?;
        if t.slot().await.map_err(e)? == slot {
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }
}

/// The claims as the cluster holds them, in `posted`'s order.
async fn headers<T: Transport>(t: &T, posted: &[Posted]) -> Result<Vec<ClaimHeader>, String> {
    let mut out = Vec::with_capacity(posted.len());
    for chunk in posted.chunks(100) {
        let addresses: Vec<Pubkey> = chunk.iter().map(|p| p.address).collect();
        let accounts = t
            .get_accounts(&addresses)
            .await
            .map_err(|e| e.to_string())?;
        for (address, account) in addresses.iter().zip(accounts) {
            let account = account.ok_or_else(|| format!("claim {address} is gone"))?;
            out.push(ClaimHeader::unpack(&account.data).map_err(|e| format!("{address}: {e:?}"))?);
        }
    }
    Ok(out)
}

/// Closes every claim (each claimer's `batch` at a time, the claimers side by side): the
/// lamports each returned, in `posted`'s order.
async fn close_all<T: Transport>(
    t: &T,
    keys: &Keys,
    posted: &[Posted],
    batch: usize,
) -> Result<Vec<u64>, String> {
    let by_claimer = join_all(keys.claimers.iter().enumerate().map(|(c, kp)| async move {
        let mine: Vec<&Posted> = posted.iter().filter(|p| p.claimer == c).collect();
        let mut returned = Vec::new();
        for chunk in mine.chunks(batch.max(1)) {
            let closed = try_join_all(chunk.iter().map(|p| async {
                close_claim(t, kp, &p.address, None, TxVersion::Auto)
                    .await
                    .map_err(|e| format!("closing claim {}: {e}", p.address))
            }))
            .await?;
            returned.extend(chunk.iter().zip(closed).map(|(p, c)| (p.index, c.returned)));
        }
        Ok::<_, String>(returned)
    }))
    .await;
    let mut returned = std::collections::HashMap::new();
    for claimer in by_claimer {
        returned.extend(claimer?);
    }
    Ok(posted.iter().map(|p| returned[&p.index]).collect())
}
