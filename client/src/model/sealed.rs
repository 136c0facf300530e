//! A sealed model's artifact read back from its weight accounts, checked against its declared
//! hash: what runs, off chain and on chain, run.

use super::accounts;
use super::report::State;
use crate::artifact::hex;
use crate::send::transport::Transport;
use crate::Error;
use curta_interface::state::{model_address, ModelState};
use solana_pubkey::Pubkey;

/// Why a model on chain cannot be run.
#[derive(Debug, thiserror::Error)]
pub enum FetchError {
    #[error(transparent)]
    Client(#[from] Error),
    #[error("model {model} is {state}, not Sealed: only a sealed model runs (finish it with `client seal`)")]
    NotSealed { model: Pubkey, state: State },
    #[error("model {model} is not the model address of its authority {authority} and declared hash {hash} (that is {expected})")]
    NotItsAddress {
        model: Pubkey,
        authority: Pubkey,
        hash: String,
        expected: Pubkey,
    },
    #[error("model {model}: section {section}'s weight account {address} holds no section")]
    MissingSection {
        model: Pubkey,
        section: usize,
        address: Pubkey,
    },
    #[error(
        "model {model}: its weight accounts hash to {computed}, not to the declared {declared}"
    )]
    HashDiffers {
        model: Pubkey,
        declared: String,
        computed: String,
    },
}

/// A sealed model's artifact, read from its weight accounts: the sections one after another
/// (the file they were published from), whose weights hash was recomputed and equals the
/// declared one; and that hash.
pub async fn fetch_sealed<T: Transport>(
    t: &T,
    address: &Pubkey,
) -> Result<(Vec<u8>, [u8; 32]), FetchError> {
    let model = accounts::existing_model(t, address).await?;
    if model.state != ModelState::Sealed {
        return Err(FetchError::NotSealed {
            model: *address,
            state: State(Some(model.state)),
        });
    }
    let (expected, _) = model_address(&t.program_id(), &model.authority, &model.weights_hash);
    if expected != *address {
        return Err(FetchError::NotItsAddress {
            model: *address,
            authority: model.authority,
            hash: hex(&model.weights_hash),
            expected,
        });
    }
    let onchain = accounts::read(t, address, &model.authority, model.sections()).await?;
    let mut file = Vec::new();
    for (section, w) in onchain.weights.iter().enumerate() {
        let bytes = w.bytes().ok_or(FetchError::MissingSection {
            model: *address,
            section,
            address: w.address,
        })?;
        file.extend_from_slice(bytes);
    }
    let sections = onchain.weights.iter().filter_map(|w| w.bytes());
    let computed = curta_core::weights_hash(sections);
    if computed != model.weights_hash {
        return Err(FetchError::HashDiffers {
            model: *address,
            declared: hex(&model.weights_hash),
            computed: hex(&computed),
        });
    }
    Ok((file, model.weights_hash))
}
