//! `client claim`: open a claim, answer it with the answer computed off chain, and wait until
//! it is settled ([`claim`]). Its stages are public for callers that take them one by one
//! ([`open`], [`post_answer`], [`wait_settled`]).

use super::account::expect_claim;
use super::answer::{compute, drawn_claim_seed, hex, Answer, DrawnSeed};
use super::items::{answer_item, open_item};
use super::plan::{existing, plan, Plan};
use super::request::{state_at, ClaimError, ClaimReport, ClaimRequest};
use crate::error::curta_error;
use crate::model::fetch_sealed;
use crate::run::onchain::source_name;
use crate::send::transport::Transport;
use crate::send::{Engine, Progress as Bars};
use crate::Error;
use curta_core::infer::Settings;
use curta_core::Artifact;
use curta_interface::claim::{ClaimHeader, ClaimState};
use curta_interface::error::CurtaError;
use curta_interface::run::SeedSource;
use solana_keypair::Keypair;
use solana_pubkey::Pubkey;
use solana_signer::Signer;
use std::time::{Duration, Instant};

/// How many AnswerClaims are sent at most before giving up (each refused one waited for the
/// cluster to pass the open slot first, so a second is rare).
const ANSWER_TRIES: u32 = 8;

/// What `claim` reports as it goes.
#[derive(Clone, Debug)]
pub enum ClaimStage {
    /// OpenClaim landed in `slot` (or the claim was found: `resumed`).
    Opened {
        claim: Pubkey,
        nonce: u32,
        slot: u64,
        resumed: bool,
    },
    /// The answer was computed off chain.
    Computed { answer: Answer, seconds: f64 },
    /// AnswerClaim landed in `slot`; a challenge may land until `window_end`.
    Answered { slot: u64, window_end: u64 },
    /// Someone challenged the claim: its dispute run decides it.
    Challenged { challenger: Pubkey, run: Pubkey },
}

/// Opens a claim of `model` with `claimer` paying, answers it with the answer curta-core
/// computes off chain, and (with `request.wait`) waits until it is settled or resolved. A claim
/// found at the address with the same terms is resumed from its state. Refused before anything
/// is sent for bad input or a claimer who cannot pay.
pub async fn claim<T: Transport>(
    t: &T,
    claimer: &Keypair,
    model: &Pubkey,
    request: &ClaimRequest,
    mut on_stage: impl FnMut(ClaimStage),
) -> Result<ClaimReport, ClaimError> {
    let started = Instant::now();
    super::plan::check_request(request)?;
    let me = claimer.pubkey();
    let (file, _) = fetch_sealed(t, model).await?;
    let artifact = curta_core::decode(&file).map_err(Error::Artifact)?;
    let plan = plan(t, &me, model, request, &artifact).await?;
    let any_seed = request.any_seed;
    let found = existing(t, &plan, &me, any_seed).await?;
    let format = crate::send::format::choose_noted(t, request.tx_version)
        .await?
        .format;
    let mut engine = Engine::new(
        t,
        claimer,
        request.compute_unit_price,
        Some(1),
        Bars::hidden(),
    )
    .with_format(format);
    let balance_before = t.balance(&me).await?;
    let resumed = found.is_some();
    let header = match found {
        Some(header) => header,
        None => open(&mut engine, &plan).await?,
    };
    on_stage(ClaimStage::Opened {
        claim: plan.address,
        nonce: header.nonce,
        slot: header.open_slot,
        resumed,
    });
    let (answer, compute_seconds) =
        answer_of(t, &plan, &header, &artifact, request.threads).await?;
    on_stage(ClaimStage::Computed {
        answer: answer.clone(),
        seconds: compute_seconds,
    });
    let header = match header.state {
        ClaimState::Open => post_answer(&mut engine, &plan.address, &header, &answer).await?,
        _ => check_posted(&plan.address, &header, &answer)?,
    };
    on_stage(ClaimStage::Answered {
        slot: header.answer_slot,
        window_end: header.answer_slot + header.window as u64,
    });
    if request.wait {
        wait_settled(t, &plan.address, &mut on_stage).await?;
    }
    let (header, lamports_held) = expect_claim(t, &plan.address).await?;
    let slot = t.slot().await?;
    Ok(ClaimReport {
        claim: plan.address.to_string(),
        model: model.to_string(),
        claimer: me.to_string(),
        nonce: header.nonce,
        prompt_tokens: answer.prompt_tokens.clone(),
        tokens: answer.ids.clone(),
        text: String::from_utf8_lossy(&answer.text).into_owned(),
        answer_hash: hex(&header.answer_hash),
        seed: header.seed,
        seed_source: source_name(header.seed_source),
        claimer_seed: header.claimer_seed,
        temperature: header.temperature,
        top_p: header.top_p,
        steps: header.steps,
        open_slot: header.open_slot,
        answer_slot: header.answer_slot,
        window: header.window,
        window_end: header.answer_slot + header.window as u64,
        slot,
        state: state_at(&header, slot),
        settled: header.settled(slot),
        bond: header.bond,
        minimum_bond: plan.minimum_bond,
        priority_price: header.priority_price,
        rent: plan.rent,
        transactions: engine.tally.landed(),
        failed_transactions: engine.tally.failed,
        fees: engine.tally.fees,
        balance_before,
        balance_after: t.balance(&me).await?,
        lamports_held,
        compute_seconds,
        seconds: started.elapsed().as_secs_f64(),
        resumed,
        tx_version: format,
        text_bytes: answer.text,
    })
}

/// Prices the open and the answer and refuses when the claimer cannot pay the rent, the bond
/// and the fees and keep its own rent-exempt minimum; simulates the open (a refusal sends
/// nothing); sends it. Returns the claim as opened.
pub async fn open<T: Transport>(
    engine: &mut Engine<'_, T>,
    plan: &Plan,
) -> Result<ClaimHeader, ClaimError> {
    let t = engine.transport();
    let (program, me) = (t.program_id(), engine.payer().pubkey());
    let lamports = plan.rent + plan.terms.bond;
    let item = open_item(
        &program,
        &plan.address,
        &me,
        &plan.model,
        &plan.terms,
        &plan.prompt,
        plan.prompt_bytes.len(),
        lamports,
    );
    let answer = answer_item(&program, &plan.address, &me, 1, &[0; 32]);
    let fees = engine.fee(&item).await? + engine.fee(&answer).await?;
    let balance = t.balance(&me).await?;
    let reserve = t.rent_minimum(0).await?;
    let needed = lamports + fees + reserve;
    if balance < needed {
        return Err(Error::InsufficientFunds {
            payer: me,
            balance,
            needed,
            rent: lamports,
            fees,
            reserve,
        }
        .into());
    }
    let simulation = engine.simulate(&item).await?;
    if let Err(error) = simulation.result {
        return Err(ClaimError::OpenRefused {
            address: plan.address,
            error: crate::error::describe_transaction_error(&error),
            logs: simulation.logs,
        });
    }
    engine.send_one(item, "open claim").await?;
    Ok(expect_claim(t, &plan.address).await?.0)
}

/// The answer of the claim `header`: computed with the seed in force, which for a drawn seed
/// needs the open slot's hash (the cluster is first moved past the open slot). Returns it and
/// the seconds the off-chain run took.
async fn answer_of<T: Transport>(
    t: &T,
    plan: &Plan,
    header: &ClaimHeader,
    artifact: &Artifact<'_>,
    threads: usize,
) -> Result<(Answer, f64), ClaimError> {
    let mut settings = Settings {
        temperature: header.temperature,
        top_p: header.top_p,
        seed: header.claimer_seed,
    };
    match header.seed_source {
        SeedSource::None => settings.seed = 0,
        SeedSource::Chosen => {}
        SeedSource::Drawn if header.state != ClaimState::Open => settings.seed = header.seed,
        SeedSource::Drawn => settings.seed = seed_to_draw(t, &plan.address, header).await?,
    }
    let prompt = crate::claim::answer::claim_prompt(header).ok_or_else(|| ClaimError::Account {
        address: plan.address,
        problem: "holds a prompt that is not one".into(),
    })?;
    Ok(compute(artifact, &prompt, header.steps, settings, threads)?)
}

/// How long [`seed_to_draw`] waits for the open slot's hash to reach SlotHashes at the
/// transport's commitment (over RPC a confirmed slot follows the processed one by a second or
/// two).
const SEED_WAIT: Duration = Duration::from_secs(60);

/// The seed a drawn claim's AnswerClaim will draw: waits for the cluster to pass the open slot,
/// then reads its hash from SlotHashes.
async fn seed_to_draw<T: Transport>(
    t: &T,
    address: &Pubkey,
    header: &ClaimHeader,
) -> Result<u64, ClaimError> {
    let deadline = Instant::now() + SEED_WAIT;
    while Instant::now() < deadline {
        match drawn_claim_seed(t, address, header.claimer_seed, header.open_slot).await? {
            DrawnSeed::Seed { seed, .. } => return Ok(seed),
            DrawnSeed::NotYet => {
                t.pass_slot(header.open_slot).await?;
                tokio::time::sleep(t.profile().poll.min(Duration::from_millis(100))).await;
            }
            DrawnSeed::Gone => return Err(gone(address, header.open_slot)),
        }
    }
    Err(ClaimError::Account {
        address: *address,
        problem: format!(
            "the hash of its open slot {} is still not in SlotHashes after {} s (the same command with --nonce {} resumes the claim)",
            header.open_slot,
            SEED_WAIT.as_secs(),
            header.nonce
        ),
    })
}

fn gone(address: &Pubkey, open_slot: u64) -> ClaimError {
    ClaimError::Account {
        address: *address,
        problem: format!(
            "its open slot {open_slot} has left SlotHashes (512 slots): its drawn seed can no longer be drawn, so it cannot be answered; `client close-claim {address}` returns its rent and bond"
        ),
    }
}

/// Sends AnswerClaim with `answer` (again after the open slot where it landed too early) and
/// checks what the claim recorded: the answer and, for a drawn seed, the seed it was computed
/// with.
pub async fn post_answer<T: Transport>(
    engine: &mut Engine<'_, T>,
    address: &Pubkey,
    header: &ClaimHeader,
    answer: &Answer,
) -> Result<ClaimHeader, ClaimError> {
    let t = engine.transport();
    let (program, me) = (t.program_id(), engine.payer().pubkey());
    for _ in 0..ANSWER_TRIES {
        let item = answer_item(&program, address, &me, answer.token_count(), &answer.hash);
        let failure = engine.send(vec![item], 1, false).await?.into_iter().next();
        let Some(failure) = failure else {
            let (posted, _) = expect_claim(t, address).await?;
            return check_posted(address, &posted, answer);
        };
        match curta_error(&failure.error) {
            Some(CurtaError::SeedNotReady) => t.pass_slot(header.open_slot).await?,
            Some(CurtaError::SeedExpired) => return Err(gone(address, header.open_slot)),
            // An earlier AnswerClaim of this call landed after all.
            Some(CurtaError::AlreadyAnswered) => {
                let (posted, _) = expect_claim(t, address).await?;
                return check_posted(address, &posted, answer);
            }
            _ => return Err(failure.into_error("answer claim").into()),
        }
    }
    Err(ClaimError::Account {
        address: *address,
        problem: format!("AnswerClaim was refused {ANSWER_TRIES} times in the open slot"),
    })
}

/// Checks that the claim holds `answer` (a claim answered already, resumed, or just now).
fn check_posted(
    address: &Pubkey,
    posted: &ClaimHeader,
    answer: &Answer,
) -> Result<ClaimHeader, ClaimError> {
    if posted.state == ClaimState::Open || posted.answer_slot == 0 {
        return Err(ClaimError::Account {
            address: *address,
            problem: "is still open after its AnswerClaim landed".into(),
        });
    }
    if posted.token_count != answer.token_count() || posted.answer_hash != answer.hash {
        return Err(ClaimError::Account {
            address: *address,
            problem: format!(
                "holds the answer of {} ids with hash {} (seed in force {}), not the {} ids with hash {} curta-core computes with that seed: its answer is wrong and will be overturned if challenged; close it with `client close-claim` after its window",
                posted.token_count,
                hex(&posted.answer_hash),
                posted.seed,
                answer.token_count(),
                hex(&answer.hash)
            ),
        });
    }
    Ok(posted.clone())
}

/// Waits until the claim is settled (answered and past its window), upheld or overturned,
/// moving the cluster on slot by slot (over RPC, waiting for it; on the bank, advancing it).
/// Reports a challenge once.
pub async fn wait_settled<T: Transport>(
    t: &T,
    address: &Pubkey,
    on_stage: &mut impl FnMut(ClaimStage),
) -> Result<ClaimHeader, ClaimError> {
    let mut reported = false;
    loop {
        let (header, _) = expect_claim(t, address).await?;
        let slot = t.slot().await?;
        match header.state {
            ClaimState::Upheld | ClaimState::Overturned => return Ok(header),
            ClaimState::Answered if header.settled(slot) => return Ok(header),
            ClaimState::Answered => {
                t.pass_slot(slot).await?;
                if t.slot().await? == slot {
                    // Over RPC the processed slot runs ahead of the commitment's.
                    tokio::time::sleep(Duration::from_millis(200)).await;
                }
            }
            ClaimState::Challenged => {
                if !reported {
                    on_stage(ClaimStage::Challenged {
                        challenger: header.challenger,
                        run: header.dispute_run,
                    });
                    reported = true;
                }
                tokio::time::sleep(t.profile().poll.max(Duration::from_millis(20))).await;
            }
            ClaimState::Open => {
                return Err(ClaimError::Account {
                    address: *address,
                    problem: "is open: it was never answered".into(),
                })
            }
        }
    }
}
