//! Run accounts as the client finds them: a run, nothing, or lamports at a run address that no
//! run holds yet; the runner's runs of a model (`client runs`) and closing one
//! (`client close-run`).

use super::items::close_run_item;
use crate::send::format::TxVersion;
use crate::send::transport::Transport;
use crate::send::{Engine, Progress as Bars};
use crate::Error;
use curta_core::infer::state::field;
use curta_core::le::u32_at;
use curta_interface::instruction as ix;
use curta_interface::run::{run_address, RunHeader, RUN_HEADER_LEN};
use solana_keypair::Keypair;
use solana_pubkey::Pubkey;
use solana_signer::Signer;

/// What the account at a run address holds.
#[derive(Clone, Debug)]
pub enum Found {
    /// No account, or one without lamports.
    Nothing,
    /// Lamports the system program owns, no data: someone funded the address. A run can still
    /// be created there (transfer, allocate with the seed and assign).
    Funded(u64),
    /// A program account whose header StartRun never wrote (created at the address in a
    /// transaction of its own, or for a run whose StartRun failed): CloseRun naming the model
    /// and nonce returns its lamports.
    Unstarted { lamports: u64, len: usize },
    /// A run, its lamports and its data length.
    Run(Box<RunHeader>, u64, usize),
    /// Something else: another owner's account, or program data that is no run.
    Foreign {
        owner: Pubkey,
        lamports: u64,
        len: usize,
    },
}

/// Reads the account at `address` and says what it is.
pub async fn read_run<T: Transport>(t: &T, address: &Pubkey) -> Result<Found, Error> {
    let account = t.get_accounts(&[*address]).await?.remove(0);
    let Some(account) = account.filter(|a| a.lamports > 0) else {
        return Ok(Found::Nothing);
    };
    let (lamports, len) = (account.lamports, account.data.len());
    let system = solana_system_interface::program::ID;
    Ok(if account.owner == system && account.data.is_empty() {
        Found::Funded(lamports)
    } else if account.owner != t.program_id() {
        Found::Foreign {
            owner: account.owner,
            lamports,
            len,
        }
    } else if account.data[..len.min(RUN_HEADER_LEN)]
        .iter()
        .all(|&b| b == 0)
    {
        Found::Unstarted { lamports, len }
    } else {
        match RunHeader::unpack(&account.data) {
            Ok(header) => Found::Run(Box::new(header), lamports, len),
            Err(_) => Found::Foreign {
                owner: account.owner,
                lamports,
                len,
            },
        }
    })
}

/// One of the runner's runs of a model, as `client runs` lists it.
#[derive(Clone, Debug, serde::Serialize)]
pub struct RunListing {
    pub nonce: u32,
    pub address: String,
    /// "tokenizing its prompt", "running", "ended by token", "steps done", or "unstarted" (a
    /// zero header).
    pub status: &'static str,
    /// Steps that landed (anyone's).
    pub steps_landed: u32,
    /// The state's position, and the generated tokens so far.
    pub position: u32,
    pub tokens: u32,
    /// The most tokens the run may generate.
    pub steps: u32,
    pub rent: u64,
}

/// The runner's runs of `model` at nonces `nonces`: every program account at one of their
/// addresses, started or not (addresses are derived, so unstarted accounts are found too).
pub async fn runs<T: Transport>(
    t: &T,
    runner: &Pubkey,
    model: &Pubkey,
    nonces: std::ops::Range<u32>,
) -> Result<Vec<RunListing>, Error> {
    let program = t.program_id();
    let mut out = Vec::new();
    let all: Vec<u32> = nonces.collect();
    for batch in all.chunks(100) {
        let addresses: Vec<Pubkey> = batch
            .iter()
            .map(|&n| run_address(&program, runner, model, n))
            .collect();
        let accounts = t.get_accounts(&addresses).await?;
        for ((&nonce, address), account) in batch.iter().zip(&addresses).zip(accounts) {
            let Some(account) = account.filter(|a| a.lamports > 0 && a.owner == program) else {
                continue;
            };
            let rent = account.lamports;
            let listing = match RunHeader::unpack(&account.data) {
                Ok(h) if h.model == *model && h.runner == *runner => RunListing {
                    nonce,
                    address: address.to_string(),
                    status: match u32_at(&h.state, field::STATUS) {
                        _ if h.encoding => "tokenizing its prompt",
                        0 => "running",
                        1 => "ended by token",
                        _ => "steps done",
                    },
                    steps_landed: h.steps_landed,
                    // While tokenizing, the state buffer holds the encoding: no position or
                    // tokens yet.
                    position: match h.encoding {
                        true => 0,
                        false => u32_at(&h.state, field::POSITION),
                    },
                    tokens: match h.encoding {
                        true => 0,
                        false => u32_at(&h.state, field::GENERATED),
                    },
                    steps: h.steps,
                    rent,
                },
                _ => RunListing {
                    nonce,
                    address: address.to_string(),
                    status: "unstarted",
                    steps_landed: 0,
                    position: 0,
                    tokens: 0,
                    steps: 0,
                    rent,
                },
            };
            out.push(listing);
        }
    }
    Ok(out)
}

/// What `client close-run` did.
#[derive(Clone, Debug, serde::Serialize)]
pub struct ClosedRun {
    pub address: String,
    /// Lamports the account held, now the runner's.
    pub returned: u64,
    pub fee: u64,
    pub balance_before: u64,
    pub balance_after: u64,
    /// The format the CloseRun went in.
    pub tx_version: crate::send::format::Format,
}

/// Which run to close: its address (a started run names its model and nonce), or the model
/// and nonce (needed for an account whose header is still zero).
#[derive(Clone, Copy, Debug)]
pub enum RunRef {
    Address(Pubkey),
    Nonce { model: Pubkey, nonce: u32 },
}

/// Closes a run of `runner` (any status, or a program account at one of its run addresses
/// that StartRun never initialized): every lamport back to the runner. The CloseRun goes as
/// version 1 where the cluster accepts it ([`close_run_in`] chooses).
pub async fn close_run<T: Transport>(
    t: &T,
    runner: &Keypair,
    which: RunRef,
    compute_unit_price: Option<u64>,
) -> Result<ClosedRun, Error> {
    close_run_in(t, runner, which, compute_unit_price, TxVersion::Auto).await
}

/// [`close_run`] with the transaction format `tx_version` (`v1` on a cluster without it is
/// refused before anything is sent).
pub async fn close_run_in<T: Transport>(
    t: &T,
    runner: &Keypair,
    which: RunRef,
    compute_unit_price: Option<u64>,
    tx_version: TxVersion,
) -> Result<ClosedRun, Error> {
    let program = t.program_id();
    let me = runner.pubkey();
    let address = match which {
        RunRef::Address(a) => a,
        RunRef::Nonce { model, nonce } => run_address(&program, &me, &model, nonce),
    };
    let refuse = |why: String| Error::Refused(format!("run account {address}: {why}"));
    let (instruction, lamports) = match read_run(t, &address).await? {
        Found::Run(header, lamports, _) => {
            if header.runner != me {
                return Err(refuse(format!(
                    "is a run of {}, not of the signer {me}: only its runner may close it",
                    header.runner
                )));
            }
            (ix::close_run(&program, &address, &me), lamports)
        }
        Found::Unstarted { lamports, .. } => match which {
            RunRef::Nonce { model, nonce } => (
                ix::close_run_at(&program, &address, &me, &model, nonce),
                lamports,
            ),
            RunRef::Address(_) => {
                return Err(refuse(
                    "holds no run yet (its header is zero): name it by --model and --nonce, which the program checks against the address".into(),
                ))
            }
        },
        Found::Nothing => return Err(refuse("does not exist (already closed?)".into())),
        Found::Funded(lamports) => {
            return Err(refuse(format!(
                "holds {lamports} lamports of the system program and no run: nothing of the program's to close"
            )))
        }
        Found::Foreign {
            owner,
            lamports,
            len,
        } => {
            return Err(refuse(format!(
                "holds {lamports} lamports and {len} bytes owned by {owner}: not a run of program {program}"
            )))
        }
    };
    let balance_before = t.balance(&me).await?;
    let format = crate::send::format::choose_noted(t, tx_version)
        .await?
        .format;
    let mut engine =
        Engine::new(t, runner, compute_unit_price, Some(1), Bars::hidden()).with_format(format);
    let item = close_run_item(instruction);
    let fee = engine.fee(&item).await?;
    engine.send_one(item, "close run").await?;
    if !matches!(read_run(t, &address).await?, Found::Nothing) {
        return Err(refuse("still exists after CloseRun landed".into()));
    }
    Ok(ClosedRun {
        address: address.to_string(),
        returned: lamports,
        fee,
        balance_before,
        balance_after: t.balance(&me).await?,
        tx_version: format,
    })
}
