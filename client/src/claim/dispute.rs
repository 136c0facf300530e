//! Disputing a claim: the challenge ([`challenge`]: the dispute run's account created and
//! Challenge, which posts the challenger's bond and starts the run of the claim's model,
//! prompt, settings and seed), then stepping the run and resolving the claim
//! ([`finish_dispute`]). The run is stepped by the code that steps any run on chain
//! (`run::onchain::run_on_chain`, which resumes a run that already exists: order-free steps,
//! pipelined to the per-account limit, the chain's state checked against curta-core's at every
//! point), and kept open: Resolve closes it, its rent back to the challenger.

use super::account::expect_claim;
use super::answer::claim_prompt;
use super::items::{challenge_item, resolve_item};
use super::request::{state_name, ClaimError};
use crate::error::curta_error;
use crate::run::onchain::account::{read_run, Found as RunFound};
use crate::run::onchain::{run_on_chain, RunRequest};
use crate::send::format::TxVersion;
use crate::send::transport::Transport;
use crate::send::{Engine, Progress as Bars};
use crate::Error;
use curta_core::infer::Settings;
use curta_core::Config;
use curta_interface::claim::{ClaimHeader, ClaimState};
use curta_interface::cost::dispute_transactions;
use curta_interface::error::CurtaError;
use curta_interface::run::{run_address, run_len};
use solana_keypair::Keypair;
use solana_pubkey::Pubkey;
use solana_signer::Signer;

/// How a dispute's transactions go.
#[derive(Clone, Copy, Debug, Default)]
pub struct DisputeOptions {
    /// Micro-lamports per compute unit, if any.
    pub compute_unit_price: Option<u64>,
    pub tx_version: TxVersion,
    /// The per-account limit the steps in flight are counted from (None: the cluster's).
    pub account_limit: Option<u64>,
}

/// A challenge that landed.
#[derive(Clone, Debug, serde::Serialize)]
pub struct Challenged {
    pub claim: String,
    pub run: String,
    pub nonce: u32,
    /// The bond the challenger posted, and the dispute run's rent (back at Resolve).
    pub bond: u64,
    pub rent: u64,
    pub fee: u64,
}

/// Why a challenge was not made: the claim moved on (someone else challenged it, its window
/// passed), or the challenger cannot pay. Nothing of the challenger's but a fee was spent.
#[derive(Debug, thiserror::Error)]
pub enum ChallengeRefused {
    #[error("{0}")]
    Claim(#[from] ClaimError),
    #[error("the program refused the challenge: {0}")]
    Program(String),
}

/// The dispute run's nonce for a claim: a number from the claim's address and open slot (so
/// that two claims' disputes do not meet), then the next whose address holds nothing.
async fn dispute_nonce<T: Transport>(
    t: &T,
    challenger: &Pubkey,
    claim: &Pubkey,
    header: &ClaimHeader,
) -> Result<u32, Error> {
    let mut seed = claim.to_bytes().to_vec();
    seed.extend_from_slice(&header.open_slot.to_le_bytes());
    let digest = curta_core::sha256(&seed);
    let mut nonce = u32::from_le_bytes([digest[0], digest[1], digest[2], digest[3]]);
    loop {
        let run = run_address(&t.program_id(), challenger, &header.model, nonce);
        if matches!(read_run(t, &run).await?, RunFound::Nothing) {
            return Ok(nonce);
        }
        nonce = nonce.wrapping_add(1);
    }
}

/// Challenges the answered claim at `claim`: the dispute run's account created at the
/// challenger's run address and Challenge, in one transaction. Refused before anything is
/// sent when the challenger cannot pay the bond, the run's rent and the dispute's fees (at
/// most `cost::dispute_transactions`) and keep its own rent-exempt minimum.
pub async fn challenge<T: Transport>(
    t: &T,
    challenger: &Keypair,
    claim: &Pubkey,
    header: &ClaimHeader,
    config: &Config,
    options: &DisputeOptions,
) -> Result<Challenged, ChallengeRefused> {
    let me = challenger.pubkey();
    let program = t.program_id();
    let model = crate::model::accounts::existing_model(t, &header.model)
        .await
        .map_err(ClaimError::from)?;
    let prompt = header.prompt().ok_or_else(|| ClaimError::Account {
        address: *claim,
        problem: "holds a prompt that is not one".into(),
    })?;
    let nonce = dispute_nonce(t, &me, claim, header)
        .await
        .map_err(ClaimError::from)?;
    let run = run_address(&program, &me, &header.model, nonce);
    let len = run_len(config, header.steps);
    let rent = t
        .rent_minimum(len as usize)
        .await
        .map_err(ClaimError::from)?;
    let format = crate::send::format::choose(t, options.tx_version)
        .await
        .map_err(ClaimError::from)?
        .format;
    let mut engine = Engine::new(
        t,
        challenger,
        options.compute_unit_price,
        Some(1),
        Bars::hidden(),
    )
    .with_format(format);
    let item = challenge_item(
        &program,
        claim,
        &me,
        &run,
        &header.model,
        &model.weight_accounts[0],
        nonce,
        len,
        rent,
    );
    let fee = engine.fee(&item).await.map_err(ClaimError::from)?;
    let step_fee = engine
        .fee(&crate::run::onchain::items::step_item(
            curta_interface::instruction::step(&program, &run, &header.model, &[], 0, 1),
        ))
        .await
        .map_err(ClaimError::from)?;
    let fees =
        fee + step_fee * dispute_transactions(config, &prompt, header.steps, header.temperature);
    let balance = t.balance(&me).await.map_err(ClaimError::from)?;
    let reserve = t.rent_minimum(0).await.map_err(ClaimError::from)?;
    let needed = header.bond + rent + fees + reserve;
    if balance < needed {
        return Err(ClaimError::from(Error::InsufficientFunds {
            payer: me,
            balance,
            needed,
            rent: rent + header.bond,
            fees,
            reserve,
        })
        .into());
    }
    let failures = engine
        .send(vec![item], 1, false)
        .await
        .map_err(ClaimError::from)?;
    if let Some(failure) = failures.into_iter().next() {
        return Err(ChallengeRefused::Program(
            crate::error::describe_transaction_error(&failure.error),
        ));
    }
    Ok(Challenged {
        claim: claim.to_string(),
        run: run.to_string(),
        nonce,
        bond: header.bond,
        rent,
        fee,
    })
}

/// How a dispute ended.
#[derive(Clone, Debug, serde::Serialize)]
pub struct Resolution {
    pub claim: String,
    pub run: String,
    /// "upheld" or "overturned".
    pub outcome: &'static str,
    /// Steps the challenger sent that advanced the run, and the run's steps in all (0 when
    /// someone else's Resolve closed the run first: then the steps' figures are not known).
    pub steps_sent: u32,
    pub steps_landed: u32,
    /// The dispute run's generated ids (what the claim is compared with).
    pub tokens: Vec<u32>,
    /// Transactions this call sent that landed (steps, failed ones included, and Resolve), and
    /// their fees.
    pub transactions: u64,
    pub fees: u64,
    /// Whether this call's Resolve decided it (false: someone else resolved it first).
    pub resolved_here: bool,
    /// What the dispute gained the challenger: the claimer's bond won (overturned) or its own
    /// lost (upheld), less the fees of the steps and Resolve this call sent (the challenge's
    /// fee not counted). The bond and the run's rent it posted came back.
    pub gain: i64,
}

/// Steps the dispute run of the challenged claim at `claim` (the challenger's) to its end,
/// then sends Resolve and reads the outcome. Resumes wherever the run stands: a watcher
/// restarted mid-dispute finishes it the same way.
pub async fn finish_dispute<T: Transport>(
    t: &T,
    challenger: &Keypair,
    claim: &Pubkey,
    options: &DisputeOptions,
) -> Result<Resolution, ClaimError> {
    let me = challenger.pubkey();
    let before = t.balance(&me).await?;
    let (header, _) = expect_claim(t, claim).await?;
    let problem = |problem: String| ClaimError::Account {
        address: *claim,
        problem,
    };
    if header.state != ClaimState::Challenged {
        return Err(problem(format!(
            "is {}, not challenged",
            state_name(header.state)
        )));
    }
    let run = header.dispute_run;
    let RunFound::Run(run_header, rent, _) = read_run(t, &run).await? else {
        return Err(problem(format!("its dispute run {run} holds no run")));
    };
    let prompt =
        claim_prompt(&header).ok_or_else(|| problem("holds a prompt that is not one".into()))?;
    let settings = Settings {
        temperature: run_header.temperature,
        top_p: run_header.top_p,
        seed: match run_header.seed {
            0 => run_header.runner_seed,
            seed => seed,
        },
    };
    let mut request = RunRequest::new(prompt, Some(header.steps), settings);
    request.source = run_header.seed_source;
    request.nonce = run_header.nonce;
    request.keep = true;
    request.compute_unit_price = options.compute_unit_price;
    request.tx_version = options.tx_version;
    request.account_limit = options.account_limit;
    let stepped = match run_on_chain(t, challenger, &header.model, &request, |_, _| {}).await {
        Ok(stepped) => Some(stepped),
        // Someone's Resolve may have closed the run under the steps: then it is decided.
        Err(error) => match expect_claim(t, claim).await?.0.state {
            ClaimState::Upheld | ClaimState::Overturned => None,
            _ => return Err(error.into()),
        },
    };
    let (resolved_here, sent, fee) = match stepped {
        Some(_) => resolve(t, challenger, claim, &header, options).await?,
        None => (false, 0, 0),
    };
    let (steps_sent, steps_landed, tokens, stepped_transactions, stepped_fees) = match stepped {
        Some(s) => (
            s.steps_sent,
            s.steps_landed,
            s.tokens,
            s.transactions,
            s.fees,
        ),
        None => (0, 0, Vec::new(), 0, 0),
    };
    let (decided, _) = expect_claim(t, claim).await?;
    let outcome = match decided.state {
        ClaimState::Upheld => "upheld",
        ClaimState::Overturned => "overturned",
        state => return Err(problem(format!("is {} after Resolve", state_name(state)))),
    };
    Ok(Resolution {
        claim: claim.to_string(),
        run: run.to_string(),
        outcome,
        steps_sent,
        steps_landed,
        tokens,
        transactions: stepped_transactions + sent,
        fees: stepped_fees + fee,
        resolved_here,
        gain: t.balance(&me).await? as i64 - before as i64 - rent as i64 - header.bond as i64,
    })
}

/// Sends Resolve; someone else's Resolve first (NotChallenged) is no failure. Returns whether
/// this one decided the claim, and the transactions that landed and their fees.
async fn resolve<T: Transport>(
    t: &T,
    payer: &Keypair,
    claim: &Pubkey,
    header: &ClaimHeader,
    options: &DisputeOptions,
) -> Result<(bool, u64, u64), ClaimError> {
    let format = crate::send::format::choose(t, options.tx_version)
        .await?
        .format;
    let mut engine = Engine::new(
        t,
        payer,
        options.compute_unit_price,
        Some(1),
        Bars::hidden(),
    )
    .with_format(format);
    let item = resolve_item(
        &t.program_id(),
        claim,
        &header.dispute_run,
        &header.claimer,
        &header.challenger,
    );
    let failures = engine.send(vec![item], 1, false).await?;
    let (sent, fee) = (engine.tally.landed(), engine.tally.fees);
    match failures.into_iter().next() {
        None => Ok((true, sent, fee)),
        Some(f) if curta_error(&f.error) == Some(CurtaError::NotChallenged) => {
            Ok((false, sent, fee))
        }
        Some(f) => Err(f.into_error("resolve").into()),
    }
}
