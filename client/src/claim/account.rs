//! Claim accounts as the client finds them ([`read_claim`]), the claims of a model
//! (`client claims`: [`claims`]) and closing one (`client close-claim`: [`close_claim`]).
//!
//! A claimer's claims are found the way runs are: their addresses are derived from (claimer,
//! model, nonce), so a range of nonces is read directly. Claims of every claimer are found by
//! the program's accounts whose data starts with the claim magic and holds the model
//! ([`Transport::program_accounts`]: getProgramAccounts over RPC).

use super::items::close_item;
use super::request::{state_at, ClaimError};
use crate::send::format::TxVersion;
use crate::send::transport::Transport;
use crate::send::{Engine, Progress as Bars};
use crate::Error;
use curta_interface::claim::{
    claim_address, claim_field, ClaimHeader, ClaimState, CLAIM_HEADER_LEN, CLAIM_MAGIC,
};
use solana_keypair::Keypair;
use solana_pubkey::Pubkey;
use solana_signer::Signer;

/// What the account at a claim address holds.
#[derive(Clone, Debug)]
pub enum Found {
    /// No account, or one without lamports.
    Nothing,
    /// A claim and the lamports its account holds.
    Claim(Box<ClaimHeader>, u64),
    /// Something else: another owner's account, or program data that is no claim.
    Other {
        owner: Pubkey,
        lamports: u64,
        len: usize,
    },
}

/// Reads the account at `address` and says what it is.
pub async fn read_claim<T: Transport>(t: &T, address: &Pubkey) -> Result<Found, Error> {
    let account = t.get_accounts(&[*address]).await?.remove(0);
    let Some(account) = account.filter(|a| a.lamports > 0) else {
        return Ok(Found::Nothing);
    };
    let (owner, lamports, len) = (account.owner, account.lamports, account.data.len());
    if owner != t.program_id() {
        return Ok(Found::Other {
            owner,
            lamports,
            len,
        });
    }
    Ok(match ClaimHeader::unpack(&account.data) {
        Ok(header) => Found::Claim(Box::new(header), lamports),
        Err(_) => Found::Other {
            owner,
            lamports,
            len,
        },
    })
}

/// Reads a claim that must be there: anything else is an error naming the account.
pub async fn expect_claim<T: Transport>(
    t: &T,
    address: &Pubkey,
) -> Result<(ClaimHeader, u64), ClaimError> {
    let problem = |problem: String| ClaimError::Account {
        address: *address,
        problem,
    };
    match read_claim(t, address).await? {
        Found::Claim(header, lamports) => Ok((*header, lamports)),
        Found::Nothing => Err(problem("does not exist (closed, or never opened)".into())),
        Found::Other {
            owner,
            lamports,
            len,
        } => Err(problem(format!(
            "holds {lamports} lamports and {len} bytes owned by {owner}: not a claim of program {}",
            t.program_id()
        ))),
    }
}

/// The memcmp filters of the program's claim accounts of `model` (every model when None) by
/// `claimer` (any when None) in `state` (any when None).
pub fn claim_filters(
    model: Option<&Pubkey>,
    claimer: Option<&Pubkey>,
    state: Option<ClaimState>,
) -> Vec<(usize, Vec<u8>)> {
    let mut filters = vec![(claim_field::MAGIC, CLAIM_MAGIC.to_vec())];
    if let Some(state) = state {
        filters.push((claim_field::STATE, vec![state as u8]));
    }
    if let Some(model) = model {
        filters.push((claim_field::MODEL, model.to_bytes().to_vec()));
    }
    if let Some(claimer) = claimer {
        filters.push((claim_field::CLAIMER, claimer.to_bytes().to_vec()));
    }
    filters
}

/// The program's claims that hold `filters` ([`claim_filters`]), decoded, with their
/// lamports; accounts that hold the filters' bytes but are no claim (or no claim at its own
/// address) are left out.
pub async fn find_claims<T: Transport>(
    t: &T,
    filters: &[(usize, Vec<u8>)],
) -> Result<Vec<(Pubkey, ClaimHeader, u64)>, Error> {
    let program = t.program_id();
    let mut found = Vec::new();
    for (address, account) in t.program_accounts(filters).await? {
        if account.data.len() < CLAIM_HEADER_LEN {
            continue;
        }
        let Ok(header) = ClaimHeader::unpack(&account.data) else {
            continue;
        };
        if claim_address(&program, &header.claimer, &header.model, header.nonce) == address {
            found.push((address, header, account.lamports));
        }
    }
    found.sort_by_key(|(address, h, _)| (h.open_slot, *address));
    Ok(found)
}

/// A claimer's claims of `model` at `nonces`, read at their derived addresses.
pub async fn claims_of<T: Transport>(
    t: &T,
    claimer: &Pubkey,
    model: &Pubkey,
    nonces: std::ops::Range<u32>,
) -> Result<Vec<(Pubkey, ClaimHeader, u64)>, Error> {
    let program = t.program_id();
    let mut found = Vec::new();
    let all: Vec<u32> = nonces.collect();
    for batch in all.chunks(100) {
        let addresses: Vec<Pubkey> = batch
            .iter()
            .map(|&n| claim_address(&program, claimer, model, n))
            .collect();
        for (address, account) in addresses.iter().zip(t.get_accounts(&addresses).await?) {
            let Some(account) = account.filter(|a| a.lamports > 0 && a.owner == program) else {
                continue;
            };
            if let Ok(header) = ClaimHeader::unpack(&account.data) {
                found.push((*address, header, account.lamports));
            }
        }
    }
    Ok(found)
}

/// One claim, as `client claims` lists it.
#[derive(Clone, Debug, serde::Serialize)]
pub struct ClaimListing {
    pub address: String,
    pub claimer: String,
    pub nonce: u32,
    /// "open", "answered", "settled" (answered, its window passed), "challenged", "upheld",
    /// "overturned".
    pub state: &'static str,
    pub settled: bool,
    pub seed_source: &'static str,
    pub steps: u32,
    pub token_count: u32,
    pub open_slot: u64,
    /// 0 before the answer.
    pub answer_slot: u64,
    pub window: u32,
    /// The last slot a challenge may land in (null before the answer).
    pub window_end: Option<u64>,
    /// Slots left in the window at `slot` (0 once passed; null before the answer).
    pub slots_left: Option<u64>,
    pub bond: u64,
    pub lamports: u64,
    /// Null until challenged.
    pub challenger: Option<String>,
    pub dispute_run: Option<String>,
}

/// The listing of a claim at `slot`.
pub fn listing(address: &Pubkey, h: &ClaimHeader, lamports: u64, slot: u64) -> ClaimListing {
    let answered = h.answer_slot != 0;
    let window_end = h.answer_slot.saturating_add(h.window as u64);
    let challenged = h.challenger != Pubkey::default();
    ClaimListing {
        address: address.to_string(),
        claimer: h.claimer.to_string(),
        nonce: h.nonce,
        state: state_at(h, slot),
        settled: h.settled(slot),
        seed_source: crate::run::onchain::source_name(h.seed_source),
        steps: h.steps,
        token_count: h.token_count,
        open_slot: h.open_slot,
        answer_slot: h.answer_slot,
        window: h.window,
        window_end: answered.then_some(window_end),
        slots_left: answered.then(|| window_end.saturating_sub(slot)),
        bond: h.bond,
        lamports,
        challenger: challenged.then(|| h.challenger.to_string()),
        dispute_run: challenged.then(|| h.dispute_run.to_string()),
    }
}

/// What `client claims` found.
#[derive(Clone, Debug, serde::Serialize)]
pub struct ClaimList {
    pub model: String,
    /// The claimer the list is of (null: every claimer's, from the program's accounts).
    pub claimer: Option<String>,
    pub slot: u64,
    pub claims: Vec<ClaimListing>,
}

/// The claims of `model`: `claimer`'s at `nonces` (derived addresses, as `client runs` finds
/// runs), or every claimer's (the program's accounts).
pub async fn claims<T: Transport>(
    t: &T,
    model: &Pubkey,
    claimer: Option<&Pubkey>,
    nonces: std::ops::Range<u32>,
) -> Result<ClaimList, Error> {
    let found = match claimer {
        Some(claimer) => claims_of(t, claimer, model, nonces).await?,
        None => find_claims(t, &claim_filters(Some(model), None, None)).await?,
    };
    let slot = t.slot().await?;
    Ok(ClaimList {
        model: model.to_string(),
        claimer: claimer.map(Pubkey::to_string),
        slot,
        claims: found
            .iter()
            .map(|(address, h, lamports)| listing(address, h, *lamports, slot))
            .collect(),
    })
}

/// What `client close-claim` did.
#[derive(Clone, Debug, serde::Serialize)]
pub struct ClosedClaim {
    pub address: String,
    /// The state it was closed in ("open", "settled", "upheld", "overturned").
    pub state: &'static str,
    /// Lamports the account held (its rent and the bond, or what is left of it), now the
    /// claimer's.
    pub returned: u64,
    pub fee: u64,
    pub balance_before: u64,
    pub balance_after: u64,
    pub tx_version: crate::send::format::Format,
}

/// Why a claim cannot be closed at `slot` (None: it can).
pub fn not_closable(h: &ClaimHeader, slot: u64) -> Option<String> {
    match h.state {
        ClaimState::Open | ClaimState::Upheld | ClaimState::Overturned => None,
        ClaimState::Answered if h.settled(slot) => None,
        ClaimState::Answered => {
            let end = h.answer_slot.saturating_add(h.window as u64);
            Some(format!(
                "is answered and within its challenge window until slot {end} (the cluster is at slot {slot}): it can be closed from slot {} on",
                end + 1
            ))
        }
        ClaimState::Challenged => Some(format!(
            "is challenged by {}: its dispute run {} must finish and be resolved first (`client watch --challenge` as the challenger does it; anyone may step the run and send Resolve)",
            h.challenger, h.dispute_run
        )),
    }
}

/// Closes a claim of `claimer` (open, settled or resolved): every lamport back to the
/// claimer. Refused before anything is sent when the signer is not the claimer or the claim
/// cannot be closed now.
pub async fn close_claim<T: Transport>(
    t: &T,
    claimer: &Keypair,
    address: &Pubkey,
    compute_unit_price: Option<u64>,
    tx_version: TxVersion,
) -> Result<ClosedClaim, ClaimError> {
    let me = claimer.pubkey();
    let (header, lamports) = expect_claim(t, address).await?;
    let refuse = |problem: String| ClaimError::Account {
        address: *address,
        problem,
    };
    if header.claimer != me {
        return Err(refuse(format!(
            "is a claim of {}, not of the signer {me}: only its claimer may close it",
            header.claimer
        )));
    }
    let slot = t.slot().await?;
    if let Some(why) = not_closable(&header, slot) {
        return Err(refuse(why));
    }
    let balance_before = t.balance(&me).await?;
    let format = crate::send::format::choose_noted(t, tx_version)
        .await?
        .format;
    let mut engine =
        Engine::new(t, claimer, compute_unit_price, Some(1), Bars::hidden()).with_format(format);
    let item = close_item(&t.program_id(), address, &me);
    let fee = engine.fee(&item).await?;
    engine.send_one(item, "close claim").await?;
    if !matches!(read_claim(t, address).await?, Found::Nothing) {
        return Err(refuse("still exists after CloseClaim landed".into()));
    }
    Ok(ClosedClaim {
        address: address.to_string(),
        state: state_at(&header, slot),
        returned: lamports,
        fee,
        balance_before,
        balance_after: t.balance(&me).await?,
        tx_version: format,
    })
}
