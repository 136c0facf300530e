//! A claimer of the load: its claims opened and answered a batch at a time, with the stages of
//! `client claim` (`plan::plan`, `open::open`, `open::post_answer`): the batch's opens in
//! flight together, one slot passed for its drawn seeds, the answers computed off chain (the
//! honest one always, and the forged one of a wrong claim), then its answers in flight
//! together.

use super::specs::{ClaimSpec, Forgery, Mode, TEMPERATURE, TOP_P};
use curta_client::claim::answer::{compute, drawn_claim_seed, Answer, DrawnSeed};
use curta_client::claim::open::{open, post_answer};
use curta_client::claim::plan::plan;
use curta_client::run::Prompt;
use curta_client::send::{Engine, Format, Progress};
use curta_client::{Transport, TxVersion};
use curta_core::infer::Settings;
use curta_core::Artifact;
use curta_interface::claim::ClaimHeader;
use futures::future::try_join_all;
use solana_keypair::Keypair;
use solana_pubkey::Pubkey;
use solana_signer::Signer;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// A claim opened and answered.
#[derive(Clone, Debug)]
pub struct Posted {
    pub index: usize,
    pub claimer: usize,
    pub address: Pubkey,
    pub mode: Mode,
    /// What was posted, and the answer curta-core computes.
    pub posted: Answer,
    pub honest: Answer,
    /// How the posted answer is wrong (None: it is the honest one).
    pub forgery: Option<Forgery>,
    pub bond: u64,
    pub rent: u64,
}

/// What a claimer did.
#[derive(Clone, Debug, Default)]
pub struct Claimed {
    pub posted: Vec<Posted>,
    /// Seconds of the off-chain runs (honest and forged answers).
    pub compute_seconds: f64,
}

/// How long a claimer waits for its open slots' hashes to reach SlotHashes.
const SEED_WAIT: Duration = Duration::from_secs(60);

/// Opens and answers `specs` (all of one claimer) `batch` at a time; `on_posted` hears of
/// each claim once answered.
#[allow(clippy::too_many_arguments)]
pub async fn run_claimer<T: Transport>(
    t: &T,
    claimer: &Keypair,
    model: &Pubkey,
    artifact: &Arc<Vec<u8>>,
    specs: &[ClaimSpec],
    (steps, window, batch): (u32, u32, usize),
    format: Format,
    on_posted: &dyn Fn(&Posted),
) -> Result<Claimed, String> {
    let decoded = curta_core::decode(artifact).map_err(|e| e.to_string())?;
    let mut claimed = Claimed::default();
    for chunk in specs.chunks(batch.max(1)) {
        let opened = try_join_all(
            chunk
                .iter()
                .map(|spec| open_one(t, claimer, model, &decoded, spec, (steps, window), format)),
        )
        .await?;
        let seeds = seeds_in_force(t, chunk, &opened).await?;
        let work: Vec<(ClaimSpec, Settings)> = chunk.iter().cloned().zip(seeds).collect();
        let artifact = artifact.clone();
        let (answers, seconds) =
            tokio::task::spawn_blocking(move || answers(&artifact, &work, steps))
                .await
                .map_err(|e| e.to_string())??;
        claimed.compute_seconds += seconds;
        try_join_all(
            opened
                .iter()
                .zip(&answers)
                .map(|((address, header, _), a)| {
                    answer_one(t, claimer, address, header, &a.0, format)
                }),
        )
        .await?;
        for ((spec, (address, header, rent)), (posted_answer, honest, forgery)) in
            chunk.iter().zip(opened).zip(answers)
        {
            let done = Posted {
                index: spec.index,
                claimer: spec.claimer,
                address,
                mode: spec.mode,
                posted: posted_answer,
                honest,
                forgery,
                bond: header.bond,
                rent,
            };
            on_posted(&done);
            claimed.posted.push(done);
        }
    }
    Ok(claimed)
}

/// Plans and opens one claim: its address, the claim as opened and its rent.
async fn open_one<T: Transport>(
    t: &T,
    claimer: &Keypair,
    model: &Pubkey,
    artifact: &Artifact<'_>,
    spec: &ClaimSpec,
    (steps, window): (u32, u32),
    format: Format,
) -> Result<(Pubkey, ClaimHeader, u64), String> {
    let request = spec.request(steps, window, TxVersion::Auto);
    let what = |e: &dyn std::fmt::Display| format!("claim {} (opening): {e}", spec.index);
    let plan = plan(t, &claimer.pubkey(), model, &request, artifact)
        .await
        .map_err(|e| what(&e))?;
    let mut engine = Engine::new(t, claimer, None, Some(1), Progress::hidden()).with_format(format);
    let header = open(&mut engine, &plan).await.map_err(|e| what(&e))?;
    Ok((plan.address, header, plan.rent))
}

/// Sends one claim's answer.
async fn answer_one<T: Transport>(
    t: &T,
    claimer: &Keypair,
    address: &Pubkey,
    header: &ClaimHeader,
    answer: &Answer,
    format: Format,
) -> Result<ClaimHeader, String> {
    let mut engine = Engine::new(t, claimer, None, Some(1), Progress::hidden()).with_format(format);
    post_answer(&mut engine, address, header, answer)
        .await
        .map_err(|e| format!("claim {address} (answering): {e}"))
}

/// The settings in force of each claim of the batch: for the drawn ones the seed AnswerClaim
/// will draw, once the cluster has passed the batch's last open slot (one slot for the batch).
async fn seeds_in_force<T: Transport>(
    t: &T,
    specs: &[ClaimSpec],
    opened: &[(Pubkey, ClaimHeader, u64)],
) -> Result<Vec<Settings>, String> {
    let last = opened
        .iter()
        .zip(specs)
        .filter(|(_, s)| s.mode == Mode::Drawn)
        .map(|((_, h, _), _)| h.open_slot)
        .max();
    let deadline = Instant::now() + SEED_WAIT;
    let mut settings = Vec::with_capacity(specs.len());
    for (spec, (address, header, _)) in specs.iter().zip(opened) {
        let mut s = spec.settings();
        if spec.mode == Mode::Drawn {
            s.seed = loop {
                let drawn = drawn_claim_seed(t, address, header.claimer_seed, header.open_slot)
                    .await
                    .map_err(|e| e.to_string())?;
                match drawn {
                    DrawnSeed::Seed { seed, .. } => break seed,
                    DrawnSeed::Gone => return Err(format!("claim {address}: its seed is gone")),
                    DrawnSeed::NotYet if Instant::now() > deadline => {
                        return Err(format!("claim {address}: its open slot never ended"))
                    }
                    DrawnSeed::NotYet => {
                        t.pass_slot(last.unwrap_or(header.open_slot))
                            .await
                            .map_err(|e| e.to_string())?;
                        tokio::time::sleep(t.profile().poll.min(Duration::from_millis(100))).await;
                    }
                }
            };
        }
        settings.push(s);
    }
    Ok(settings)
}

/// The batch's answers: (posted, honest, how the posted one is wrong), and the seconds the
/// off-chain runs took.
type Answers = Vec<(Answer, Answer, Option<Forgery>)>;

fn answers(
    artifact: &[u8],
    work: &[(ClaimSpec, Settings)],
    steps: u32,
) -> Result<(Answers, f64), String> {
    let artifact = curta_core::decode(artifact).map_err(|e| e.to_string())?;
    let mut seconds = 0.0;
    let mut out = Vec::with_capacity(work.len());
    for (spec, settings) in work {
        let mut run = |prompt: &Prompt, steps: u32, settings: Settings| {
            let (answer, s) = compute(&artifact, prompt, steps, settings, 1)
                .map_err(|e| format!("claim {}: curta-core: {e}", spec.index))?;
            seconds += s;
            Ok::<Answer, String>(answer)
        };
        let honest = run(&spec.prompt, steps, *settings)?;
        let Some(forgery) = spec.wrong else {
            out.push((honest.clone(), honest, None));
            continue;
        };
        let vocab = artifact.config().vocab_size;
        let forged = match forgery {
            Forgery::IdChanged => id_changed(&honest, vocab),
            Forgery::TextChanged => {
                let mut text = honest.text.clone();
                match text.len() {
                    0 => text.push(b'!'),
                    n => text[n / 2] ^= 0x20,
                }
                Answer::new(honest.prompt_tokens.clone(), honest.ids.clone(), text)
            }
            Forgery::WrongSeed => {
                let seed = match spec.mode {
                    // The claimer's own seed, not the one drawn from the open slot.
                    Mode::Drawn => spec.claimer_seed,
                    _ => settings.seed.rotate_left(17) | 1,
                };
                run(&spec.prompt, steps, Settings { seed, ..*settings })?
            }
            Forgery::WrongPrompt => {
                let other = match &spec.prompt {
                    Prompt::Text(text) => Prompt::Text([text.as_slice(), b" then"].concat()),
                    Prompt::Tokens(ids) => Prompt::Tokens([ids.as_slice(), &[306]].concat()),
                };
                run(&other, steps, *settings)?
            }
            Forgery::Truncated => {
                let mut short = match steps {
                    1 => honest.clone(),
                    _ => run(&spec.prompt, steps - 1, *settings)?,
                };
                if short.hash == honest.hash && honest.ids.len() > 1 {
                    // The answer ended on an end token before: drop its last id.
                    let mut ids = honest.ids.clone();
                    ids.pop();
                    short = Answer::new(honest.prompt_tokens.clone(), ids, honest.text.clone());
                }
                short
            }
            Forgery::WrongTemperature => {
                let other = match spec.mode {
                    Mode::Greedy => Settings {
                        temperature: TEMPERATURE,
                        top_p: TOP_P,
                        seed: 7,
                    },
                    _ => Settings::greedy(),
                };
                run(&spec.prompt, steps, other)?
            }
        };
        // A forgery that happens to give the answer (a seed that samples the same ids) is
        // made wrong the plain way.
        match forged.hash == honest.hash {
            true => out.push((id_changed(&honest, vocab), honest, Some(Forgery::IdChanged))),
            false => out.push((forged, honest, Some(forgery))),
        }
    }
    Ok((out, seconds))
}

/// `answer` with its middle generated id changed, the text kept.
fn id_changed(answer: &Answer, vocab: u32) -> Answer {
    let mut ids = answer.ids.clone();
    let k = ids.len() / 2;
    ids[k] = if ids[k] + 1 < vocab { ids[k] + 1 } else { 3 };
    Answer::new(answer.prompt_tokens.clone(), ids, answer.text.clone())
}
