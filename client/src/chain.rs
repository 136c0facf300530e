//! Reading a model and its weight accounts from the chain, checked against the program's
//! layouts. Everything the client does is planned from this, never from a local journal.

use crate::transport::Transport;
use crate::Error;
use curta_program::state::{weight_address, Model, WeightHeader, MODEL_LEN, WEIGHT_HEADER_LEN};
use solana_account::Account;
use solana_pubkey::Pubkey;

/// A model's on-chain state: the model account (if any) and each section's weight account.
pub struct OnChain {
    pub address: Pubkey,
    pub model: Option<Model>,
    pub model_lamports: u64,
    pub weights: Vec<Weight>,
}

pub struct Weight {
    pub address: Pubkey,
    /// The account, if it exists and is initialized by the program.
    pub account: Option<Account>,
    pub header: Option<WeightHeader>,
}

impl Weight {
    /// The section bytes stored on chain (after the 2,048-byte header).
    pub fn bytes(&self) -> Option<&[u8]> {
        self.account.as_ref().map(|a| &a.data[WEIGHT_HEADER_LEN..])
    }

    pub fn lamports(&self) -> u64 {
        self.account.as_ref().map_or(0, |a| a.lamports)
    }
}

impl OnChain {
    pub fn rent_held(&self) -> u64 {
        self.model_lamports + self.weights.iter().map(Weight::lamports).sum::<u64>()
    }
}

/// The model account at `address`: `None` when there is no account, an error when the
/// account is not a Curta model.
pub async fn read_model<T: Transport>(
    t: &T,
    address: &Pubkey,
) -> Result<Option<(Model, u64)>, Error> {
    let account = t.get_accounts(&[*address]).await?.pop().flatten();
    let Some(account) = account else {
        return Ok(None);
    };
    if account.lamports == 0 {
        return Ok(None);
    }
    if account.owner != curta_program::id() || account.data.len() != MODEL_LEN {
        return Err(Error::NotAModel {
            address: *address,
            owner: account.owner,
            len: account.data.len(),
        });
    }
    let model = Model::unpack(&account.data).map_err(|_| Error::NotAModel {
        address: *address,
        owner: account.owner,
        len: account.data.len(),
    })?;
    Ok(Some((model, account.lamports)))
}

/// Reads the model at `address` and the weight accounts of `authority`'s sections of the
/// given lengths, checking each weight account that exists against the program's layout.
pub async fn read<T: Transport>(
    t: &T,
    model_address: &Pubkey,
    authority: &Pubkey,
    lengths: &[u32],
) -> Result<OnChain, Error> {
    let model = read_model(t, model_address).await?;
    let program = curta_program::id();
    let addresses: Vec<Pubkey> = (0..lengths.len())
        .map(|i| weight_address(&program, authority, model_address, i as u8))
        .collect();
    let accounts = t.get_accounts(&addresses).await?;
    let mut weights = Vec::with_capacity(lengths.len());
    for (section, (address, account)) in addresses.into_iter().zip(accounts).enumerate() {
        let bad = |problem: String| Error::BadWeightAccount {
            address,
            section,
            problem,
        };
        let account = account.filter(|a| a.lamports > 0);
        let Some(account) = account else {
            weights.push(Weight {
                address,
                account: None,
                header: None,
            });
            continue;
        };
        if account.owner != program {
            return Err(bad(format!(
                "exists with owner {} and {} lamports; expected no account or one owned by the Curta program {program}",
                account.owner, account.lamports
            )));
        }
        let expected = WEIGHT_HEADER_LEN + lengths[section] as usize;
        if account.data.len() != expected {
            return Err(bad(format!(
                "holds {} bytes, expected {expected}",
                account.data.len()
            )));
        }
        let header = WeightHeader::unpack(&account.data)
            .map_err(|e| bad(format!("header is not an initialized weight account ({e})")))?;
        if header.model != *model_address {
            return Err(bad(format!(
                "belongs to model {}, expected this model",
                header.model
            )));
        }
        if header.section as usize != section || header.length != lengths[section] {
            return Err(bad(format!(
                "header says section {} of {} bytes, expected section {section} of {} bytes",
                header.section, header.length, lengths[section]
            )));
        }
        weights.push(Weight {
            address,
            account: Some(account),
            header: Some(header),
        });
    }
    let (model, model_lamports) = match model {
        Some((m, l)) => (Some(m), l),
        None => (None, 0),
    };
    Ok(OnChain {
        address: *model_address,
        model,
        model_lamports,
        weights,
    })
}
