//! What a claim fixes before anything is sent ([`plan`]): the checks the program makes at
//! OpenClaim, made first so that bad input costs nothing, the nonce and the claim's address,
//! the bond and the rent; and what the claim address holds already ([`existing`]).

use super::account::{claim_filters, find_claims, read_claim, Found};
use super::answer::owned_prompt;
use super::request::{ClaimError, ClaimRequest};
use crate::run::onchain::{default_steps, source_name};
use crate::run::Prompt;
use crate::send::transport::Transport;
use curta_core::infer::{state_len, Model, Run};
use curta_core::Artifact;
use curta_interface::claim::{
    claim_address, claim_len, prompt_bytes, ClaimHeader, MAX_WINDOW, MIN_WINDOW,
};
use curta_interface::cost::{claim_bond, dispute_transactions, MAX_PRIORITY_PRICE};
use curta_interface::instruction::{ClaimTerms, OwnedPrompt};
use curta_interface::run::SeedSource;
use solana_pubkey::Pubkey;

/// A claim's terms, address and price, fixed before anything is sent.
#[derive(Clone, Debug)]
pub struct Plan {
    pub address: Pubkey,
    pub model: Pubkey,
    pub terms: ClaimTerms,
    pub prompt: OwnedPrompt,
    /// The prompt's wire bytes (what the claim account holds after its header).
    pub prompt_bytes: Vec<u8>,
    pub prompt_tokens: Vec<u32>,
    /// The claim account's length and rent-exempt minimum.
    pub len: usize,
    pub rent: u64,
    /// The bond rule's minimum (`cost::claim_bond`) and the transactions it counts.
    pub minimum_bond: u64,
    pub dispute_transactions: u64,
    /// Whether the bond was given (else the minimum: a claim found with another bond of its
    /// own is resumed).
    pub bond_given: bool,
}

fn input(field: &'static str, problem: String) -> ClaimError {
    ClaimError::Input { field, problem }
}

/// The checks that need no chain: the window's bounds, the seed's source against the
/// temperature, the claimer's seed.
pub fn check_request(request: &ClaimRequest) -> Result<(), ClaimError> {
    if !(MIN_WINDOW..=MAX_WINDOW).contains(&request.window) {
        return Err(input(
            "--window",
            format!(
                "{} slots is out of range: a challenge window is {MIN_WINDOW} to {MAX_WINDOW} slots (about a minute to two days)",
                request.window
            ),
        ));
    }
    let greedy = request.settings.temperature == 0;
    match (request.source, greedy) {
        (SeedSource::None, false) => {
            return Err(input(
                "--seed-source",
                "none is for greedy claims (--temperature 0); a sampled claim's seed is drawn or chosen".into(),
            ))
        }
        (SeedSource::Drawn | SeedSource::Chosen, true) => {
            return Err(input(
                "--seed-source",
                format!(
                    "{} is for sampled claims: a greedy claim (--temperature 0) has no seed (its source is none)",
                    source_name(request.source)
                ),
            ))
        }
        _ => {}
    }
    if request.source == SeedSource::Chosen && request.settings.seed == 0 {
        return Err(input(
            "--seed",
            "0 cannot sample (it is xorshift64*'s fixed point): use any other seed".into(),
        ));
    }
    Ok(())
}

/// The prompt's ids and the token count, checked as OpenClaim checks them: every id below the
/// vocabulary, the prompt and the steps within the context (for a text, its bytes + 2 stand
/// for its ids, the most it can make); then curta-core's own checks of the run.
fn check_prompt(
    artifact: &Artifact,
    request: &ClaimRequest,
) -> Result<(Vec<u32>, u32), ClaimError> {
    let config = artifact.config();
    let ids = request.prompt.tokens(artifact)?;
    if let Prompt::Tokens(given) = &request.prompt {
        if let Some((index, id)) = given
            .iter()
            .enumerate()
            .find(|(_, &id)| id >= config.vocab_size)
        {
            return Err(input(
                "--prompt-tokens",
                format!(
                    "id {id} at index {index} is not below the model's vocabulary of {} tokens",
                    config.vocab_size
                ),
            ));
        }
    }
    let positions = match &request.prompt {
        Prompt::Text(text) => text.len() as u64 + 2,
        Prompt::Tokens(ids) => ids.len() as u64,
    };
    let steps = request
        .steps
        .unwrap_or_else(|| default_steps(config.context_length, positions as usize));
    if steps == 0 {
        return Err(input(
            "--steps",
            "a claim generates at least 1 token".into(),
        ));
    }
    let context = config.context_length as u64;
    if positions + steps as u64 - 1 > context {
        let what = match &request.prompt {
            Prompt::Text(text) => format!(
                "a text of {} bytes (counted as {positions} ids, the most it can make)",
                text.len()
            ),
            Prompt::Tokens(ids) => format!("{} prompt ids", ids.len()),
        };
        return Err(input(
            "--steps",
            format!(
                "{steps} tokens after {what} do not fit the model's context of {context} positions: at most {} steps",
                (context + 1).saturating_sub(positions)
            ),
        ));
    }
    // curta-core's checks (an empty prompt, the settings' ranges), on a scratch state.
    let model = Model::from_artifact(artifact)?;
    let mut state = vec![0u8; state_len(&model.config())];
    let mut settings = request.settings;
    settings.seed = settings.seed.max(1);
    Run::start(&mut state, &model, &ids, steps, settings)?;
    Ok((ids, steps))
}

/// The claim's terms, address and price. Refused before anything is sent for any input the
/// program would refuse: the window, the seed's source, the prompt, the steps, a bond below
/// the rule.
pub async fn plan<T: Transport>(
    t: &T,
    claimer: &Pubkey,
    model: &Pubkey,
    request: &ClaimRequest,
    artifact: &Artifact<'_>,
) -> Result<Plan, ClaimError> {
    check_request(request)?;
    let (prompt_tokens, steps) = check_prompt(artifact, request)?;
    let config = artifact.config();
    let prompt = owned_prompt(&request.prompt);
    let minimum_bond = claim_bond(
        &config,
        &prompt.as_wire(),
        steps,
        request.settings.temperature,
        request.priority_price,
    )
        .ok_or_else(|| {
            input(
                "--priority-price",
                format!(
                    "{} micro-lamports per compute unit is above the most a claim may record, {MAX_PRIORITY_PRICE}",
                    request.priority_price
                ),
            )
        })?;
    let bond = request.bond.unwrap_or(minimum_bond);
    let dispute = dispute_transactions(
        &config,
        &prompt.as_wire(),
        steps,
        request.settings.temperature,
    );
    if bond < minimum_bond {
        return Err(input(
            "--bond",
            format!(
                "{bond} lamports is below the rule's minimum of {minimum_bond} for this claim: its dispute takes at most {dispute} transactions, each paid at the base fee and {} compute units at --priority-price {} micro-lamports (cost::claim_bond)",
                curta_interface::cost::STEP_UNITS,
                request.priority_price
            ),
        ));
    }
    let nonce = match request.nonce {
        Some(nonce) => nonce,
        None => free_nonce(t, claimer, model).await?,
    };
    let bytes = prompt_bytes(&prompt.as_wire());
    let len = claim_len(bytes.len());
    Ok(Plan {
        address: claim_address(&t.program_id(), claimer, model, nonce),
        model: *model,
        terms: ClaimTerms {
            nonce,
            steps,
            settings: request.settings,
            source: request.source,
            window: request.window,
            priority_price: request.priority_price,
            bond,
        },
        prompt,
        prompt_bytes: bytes,
        prompt_tokens,
        len,
        rent: t.rent_minimum(len).await?,
        minimum_bond,
        dispute_transactions: dispute,
        bond_given: request.bond.is_some(),
    })
}

/// The first nonce at or after the claimer's claims of the model (the program's accounts)
/// whose address holds nothing; from 0 where the transport cannot list accounts.
async fn free_nonce<T: Transport>(
    t: &T,
    claimer: &Pubkey,
    model: &Pubkey,
) -> Result<u32, ClaimError> {
    let filters = claim_filters(Some(model), Some(claimer), None);
    let used: std::collections::BTreeSet<u32> = match find_claims(t, &filters).await {
        Ok(found) => found.iter().map(|(_, h, _)| h.nonce).collect(),
        Err(_) => Default::default(),
    };
    let program = t.program_id();
    let mut nonce = 0u32;
    loop {
        if !used.contains(&nonce) {
            let address = claim_address(&program, claimer, model, nonce);
            if matches!(read_claim(t, &address).await?, Found::Nothing) {
                return Ok(nonce);
            }
        }
        nonce = nonce.checked_add(1).ok_or_else(|| {
            input(
                "--nonce",
                "every nonce of this claimer and model is taken".into(),
            )
        })?;
    }
}

/// Whether the claim `h` was opened with the plan's terms (`any_seed`: the claimer's seed was
/// not given, so the claim's own stands).
pub fn same_terms(
    h: &ClaimHeader,
    plan: &Plan,
    claimer: &Pubkey,
    any_seed: bool,
) -> Result<(), String> {
    let t = &plan.terms;
    let mut differ = Vec::new();
    let mut check = |what: &str, same: bool| {
        if !same {
            differ.push(what.to_string());
        }
    };
    check("claimer", h.claimer == *claimer);
    check("model", h.model == plan.model);
    check("nonce", h.nonce == t.nonce);
    check("prompt", h.prompt == plan.prompt_bytes);
    check("--steps", h.steps == t.steps);
    check("--temperature", h.temperature == t.settings.temperature);
    check("--top-p", h.top_p == t.settings.top_p);
    check("--seed-source", h.seed_source == t.source);
    check(
        "--seed",
        t.source == SeedSource::None || any_seed || h.claimer_seed == t.settings.seed,
    );
    check("--window", h.window == t.window);
    check("--priority-price", h.priority_price == t.priority_price);
    check("--bond", h.bond == t.bond || !plan.bond_given);
    match differ.is_empty() {
        true => Ok(()),
        false => Err(differ.join(", ")),
    }
}

/// What the plan's address holds: nothing (the claim is opened), this very claim (resumed
/// from its state), or anything else (refused, naming the account and what frees the nonce).
pub async fn existing<T: Transport>(
    t: &T,
    plan: &Plan,
    claimer: &Pubkey,
    any_seed: bool,
) -> Result<Option<ClaimHeader>, ClaimError> {
    let address = plan.address;
    let problem = |problem: String| ClaimError::Account { address, problem };
    match read_claim(t, &address).await? {
        Found::Nothing => Ok(None),
        Found::Other { owner, lamports, len } => Err(problem(format!(
            "holds {lamports} lamports and {len} bytes owned by {owner}, not a claim of program {}: pass another --nonce",
            t.program_id()
        ))),
        Found::Claim(header, _) => match same_terms(&header, plan, claimer, any_seed) {
            Ok(()) => Ok(Some(*header)),
            Err(differ) => Err(problem(format!(
                "holds a claim (nonce {}) whose {differ} differ from this one's: run the same command as opened it, close it with `client close-claim {address}` once it may be closed, or pass another --nonce",
                header.nonce
            ))),
        },
    }
}
