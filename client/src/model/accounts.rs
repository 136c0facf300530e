//! Reading a model and its weight accounts from the chain, checked against the program's
//! layouts. Every model operation plans from this, never from a local journal.

use crate::send::transport::Transport;
use crate::Error;
use curta_interface::state::{weight_address, Model, WeightHeader, MODEL_LEN, WEIGHT_HEADER_LEN};
use solana_account::Account;
use solana_pubkey::Pubkey;

/// A model's on-chain state: the model account (if any) and each section's weight account.
pub struct OnChain {
    /// The Curta program the model belongs to.
    pub program_id: Pubkey,
    pub address: Pubkey,
    pub model: Option<Model>,
    /// Lamports at the model address: the model's, or, while there is no model, what someone
    /// sent to the address beforehand (the program's CreateModel tops it up).
    pub model_lamports: u64,
    pub weights: Vec<Weight>,
}

pub struct Weight {
    pub address: Pubkey,
    /// The account, if it exists and is owned by the program (initialized or not).
    pub account: Option<Account>,
    /// The header, if the account is initialized (None while its header is all zero).
    pub header: Option<WeightHeader>,
    /// Lamports at the address while no account exists there (a system-owned, data-empty
    /// account someone funded beforehand); 0 otherwise.
    pub prefunded: u64,
}

impl Weight {
    /// The section bytes stored on chain (after the 2,048-byte header).
    pub fn bytes(&self) -> Option<&[u8]> {
        self.account.as_ref().map(|a| &a.data[WEIGHT_HEADER_LEN..])
    }

    /// Lamports at the address (program-owned or pre-funded).
    pub fn lamports(&self) -> u64 {
        self.account.as_ref().map_or(self.prefunded, |a| a.lamports)
    }

    /// Created by the program's owner assignment but never initialized (all-zero header).
    pub fn uninitialized(&self) -> bool {
        self.account.is_some() && self.header.is_none()
    }
}

impl OnChain {
    /// Lamports held at the model's addresses (model and weight accounts, pre-funded or not).
    pub fn rent_held(&self) -> u64 {
        self.model_lamports + self.weights.iter().map(Weight::lamports).sum::<u64>()
    }

    /// The weight accounts' addresses, in section order (as Reopen and Close list them).
    pub fn weight_addresses(&self) -> Vec<Pubkey> {
        self.weights.iter().map(|w| w.address).collect()
    }
}

/// An address with no account for the program's purposes: none at all, or a system-owned,
/// data-empty one (possibly holding lamports someone sent to it).
fn absent(account: &Account) -> bool {
    account.lamports == 0
        || (account.owner == solana_system_interface::program::ID && account.data.is_empty())
}

/// An error unless the transport's program id is an executable account on its cluster:
/// checked before anything is spent, so a wrong `--program-id` costs nothing.
pub async fn require_program<T: Transport>(t: &T) -> Result<(), Error> {
    let program = t.program_id();
    let found = match t.get_accounts(&[program]).await?.pop().flatten() {
        Some(account) if account.executable => return Ok(()),
        Some(account) => format!(
            "the account there is not executable (owner {}, {} bytes)",
            account.owner,
            account.data.len()
        ),
        None => "no account".to_string(),
    };
    Err(Error::ProgramNotDeployed {
        program,
        cluster: t.describe(),
        found,
    })
}

/// The model at `address`; `ModelNotFound` when there is none.
pub async fn existing_model<T: Transport>(t: &T, address: &Pubkey) -> Result<Model, Error> {
    let (model, _) = read_model(t, address)
        .await?
        .ok_or(Error::ModelNotFound(*address))?;
    Ok(model)
}

/// The model account at `address`: `None` when there is no account, an error when the
/// account is not a Curta model (lamports sent to a model address before its CreateModel
/// included: there is no model to seal, inspect or close; only publish, through [`read`],
/// treats them as a pre-funded address).
pub async fn read_model<T: Transport>(
    t: &T,
    address: &Pubkey,
) -> Result<Option<(Model, u64)>, Error> {
    match read_model_address(t, address).await? {
        (None, lamports) if lamports > 0 => Err(Error::NotAModel {
            address: *address,
            owner: solana_system_interface::program::ID,
            len: 0,
            program: t.program_id(),
        }),
        (model, _) => Ok(model),
    }
}

/// The model at `address` with its lamports, and the lamports at the address when there is
/// no model yet (pre-funded).
async fn read_model_address<T: Transport>(
    t: &T,
    address: &Pubkey,
) -> Result<(Option<(Model, u64)>, u64), Error> {
    let account = t.get_accounts(&[*address]).await?.pop().flatten();
    let Some(account) = account else {
        return Ok((None, 0));
    };
    if absent(&account) {
        return Ok((None, account.lamports));
    }
    let not_a_model = || Error::NotAModel {
        address: *address,
        owner: account.owner,
        len: account.data.len(),
        program: t.program_id(),
    };
    if account.owner != t.program_id() || account.data.len() != MODEL_LEN {
        return Err(not_a_model());
    }
    let model = Model::unpack(&account.data).map_err(|_| not_a_model())?;
    check_consistent(address, &model)?;
    Ok((Some((model, account.lamports)), 0))
}

/// The program keeps total chunks equal to the sections' chunk count and the seal cursor
/// within it; an account that breaks this is refused rather than planned from.
fn check_consistent(address: &Pubkey, model: &Model) -> Result<(), Error> {
    let bad = |problem: String| Error::BadModel {
        address: *address,
        problem,
    };
    let chunks = curta_core::total_chunks(model.sections());
    if model.total_chunks != chunks {
        return Err(bad(format!(
            "total chunks is {}, expected {chunks} from the section lengths {:?}",
            model.total_chunks,
            model.sections()
        )));
    }
    if model.seal_cursor > model.total_chunks {
        return Err(bad(format!(
            "seal cursor is {}, expected at most the total chunks {}",
            model.seal_cursor, model.total_chunks
        )));
    }
    Ok(())
}

/// Reads the model at `address` and the weight accounts of `authority`'s sections of the
/// given lengths, checking each weight account that exists against the program's layout.
pub async fn read<T: Transport>(
    t: &T,
    model_address: &Pubkey,
    authority: &Pubkey,
    lengths: &[u32],
) -> Result<OnChain, Error> {
    let (model, prefunded) = read_model_address(t, model_address).await?;
    let program = t.program_id();
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
        let account = match account {
            Some(a) if absent(&a) => {
                weights.push(Weight {
                    address,
                    account: None,
                    header: None,
                    prefunded: a.lamports,
                });
                continue;
            }
            None => {
                weights.push(Weight {
                    address,
                    account: None,
                    header: None,
                    prefunded: 0,
                });
                continue;
            }
            Some(a) => a,
        };
        if account.owner != program {
            return Err(bad(format!(
                "exists with owner {}, {} bytes and {} lamports; expected no account, a system-owned empty one, or one owned by the Curta program {program}",
                account.owner,
                account.data.len(),
                account.lamports
            )));
        }
        let expected = WEIGHT_HEADER_LEN + lengths[section] as usize;
        if account.data.len() != expected {
            return Err(bad(format!(
                "holds {} bytes, expected {expected}",
                account.data.len()
            )));
        }
        if account.data[..WEIGHT_HEADER_LEN].iter().all(|&b| b == 0) {
            // Created but never initialized: InitWeightAccount completes it, Close drains it.
            weights.push(Weight {
                address,
                account: Some(account),
                header: None,
                prefunded: 0,
            });
            continue;
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
            prefunded: 0,
        });
    }
    let (model, model_lamports) = match model {
        Some((m, l)) => (Some(m), l),
        None => (None, prefunded),
    };
    Ok(OnChain {
        program_id: program,
        address: *model_address,
        model,
        model_lamports,
        weights,
    })
}
