//! `close`: recover the rent of an unsealed model and all its weight accounts. A sealed model
//! is permanent (the program refuses to close it; so does the client, before sending).

use super::accounts;
use super::items;
use super::plan::check_funds;
use crate::send::transport::Transport;
use crate::send::{Engine, Progress};
use crate::{Error, Options};
use curta_interface::state::ModelState;
use solana_keypair::Keypair;
use solana_pubkey::Pubkey;
use solana_signer::Signer;
use std::time::Instant;

#[derive(Clone, Debug)]
pub struct CloseReport {
    pub cluster: String,
    pub model: Pubkey,
    pub destination: Pubkey,
    /// Lamports the model and its weight accounts held, now at the destination.
    pub recovered: u64,
    pub fees: u64,
    pub accounts_closed: usize,
    pub seconds: f64,
    /// The format the Close went in.
    pub format: crate::send::format::Format,
}

impl CloseReport {
    /// The `--output json` document (keys in docs/client.md).
    pub fn to_json(&self) -> serde_json::Value {
        #[derive(serde::Serialize)]
        struct Lamports {
            recovered: u64,
            fees: u64,
        }
        #[derive(serde::Serialize)]
        struct CloseJson<'a> {
            command: &'a str,
            cluster: &'a str,
            model: String,
            destination: String,
            state: &'a str,
            accounts_closed: usize,
            tx_version: crate::send::format::Format,
            lamports: Lamports,
            seconds: f64,
        }
        serde_json::to_value(CloseJson {
            command: "close",
            cluster: &self.cluster,
            model: self.model.to_string(),
            destination: self.destination.to_string(),
            state: "closed",
            accounts_closed: self.accounts_closed,
            tx_version: self.format,
            lamports: Lamports {
                recovered: self.recovered,
                fees: self.fees,
            },
            seconds: self.seconds,
        })
        .expect("a close report serializes")
    }

    pub fn to_text(&self) -> String {
        format!(
            "closed model {} and {} weight accounts on {}\nrecovered {} lamports ({}) to {}; fees {} lamports\n",
            self.model,
            self.accounts_closed.saturating_sub(1),
            self.cluster,
            self.recovered,
            crate::error::sol(self.recovered),
            self.destination,
            self.fees
        )
    }
}

/// Closes the model at `model_address`; `authority` signs and pays the fee; the rent goes to
/// `destination` (the authority by default).
pub async fn close<T: Transport>(
    t: &T,
    authority: &Keypair,
    model_address: &Pubkey,
    destination: Option<Pubkey>,
    options: &Options,
) -> Result<CloseReport, Error> {
    let started = Instant::now();
    accounts::require_program(t).await?;
    let model = accounts::existing_model(t, model_address).await?;
    if model.state == ModelState::Sealed {
        return Err(Error::Sealed {
            model: *model_address,
            action: "closed",
        });
    }
    if model.authority != authority.pubkey() {
        return Err(Error::NotAuthority {
            model: *model_address,
            signer: authority.pubkey(),
            authority: model.authority,
        });
    }
    let chain = accounts::read(t, model_address, &model.authority, model.sections()).await?;
    let destination = destination.unwrap_or(authority.pubkey());
    let item = items::close(&chain, &authority.pubkey(), &destination);
    let choice = crate::send::format::choose_noted(t, options.tx_version).await?;
    let mut engine = Engine::new(
        t,
        authority,
        options.compute_unit_price,
        options.max_in_flight,
        Progress::hidden(),
    )
    .with_format(choice.format);
    let fee = engine.fee(&item).await?;
    check_funds(
        &authority.pubkey(),
        t.balance(&authority.pubkey()).await?,
        0,
        fee,
        0,
    )?;
    engine.send_one(item, "close").await?;
    Ok(CloseReport {
        cluster: t.describe(),
        model: *model_address,
        destination,
        // Close drains the model and every program-owned weight account (initialized or
        // not); lamports at an address nobody created stay where they are.
        recovered: chain.model_lamports
            + chain
                .weights
                .iter()
                .filter(|w| w.account.is_some())
                .map(|w| w.lamports())
                .sum::<u64>(),
        fees: engine.tally.fees,
        accounts_closed: 1 + chain.weights.iter().filter(|w| w.account.is_some()).count(),
        seconds: started.elapsed().as_secs_f64(),
        format: choice.format,
    })
}
