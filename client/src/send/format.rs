//! Transaction formats: legacy (1,232 bytes, compute budget as instructions) and version 1
//! (SIMD-0296/SIMD-0385: 4,096 bytes, the compute-unit limit, loaded-data limit and priority
//! fee carried in the message itself). Which one an operation uses is chosen once, before
//! anything is sent: `--tx-version legacy|v1|auto` ([`TxVersion`]), auto meaning v1 where the
//! cluster's feature `enable_tx_v1` is active.

use super::item::MAX_COMPUTE_UNITS;
use super::transport::Transport;
use crate::Error;
use solana_compute_budget_interface::ComputeBudgetInstruction;
use solana_hash::Hash;
use solana_instruction::Instruction;
use solana_keypair::Keypair;
use solana_message::{v1, Message, VersionedMessage};
use solana_pubkey::Pubkey;
use solana_transaction::versioned::VersionedTransaction;

/// agave-feature-set's `enable_tx_v1` (SIMD-0385: Transaction V1). A feature account holds
/// `Some(activation slot)` once active: its byte 0 is 1.
pub const FEATURE_TX_V1: Pubkey =
    solana_pubkey::pubkey!("txv1aq4pp281K9um3tnPgkfX8UqtFT6wcVW3hNezGLL");

/// The largest legacy transaction (the packet size).
pub const PACKET_LEN: usize = 1232;

/// The largest version 1 transaction (solana-message's `v1::MAX_TRANSACTION_SIZE`).
pub const V1_PACKET_LEN: usize = solana_message::v1::MAX_TRANSACTION_SIZE;

/// The loaded-accounts data limit every v1 transaction carries: the most a transaction may
/// load (SIMD-0186's 64 MiB, what a legacy transaction gets without a limit instruction). In
/// v1 the limit defaults to 0, which no transaction loading an account passes.
pub const V1_LOADED_DATA_LIMIT: u32 = 64 * 1024 * 1024;

/// What the user asked for.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum TxVersion {
    Legacy,
    V1,
    /// V1 when the cluster's feature is active, else legacy (saying so).
    #[default]
    Auto,
}

impl std::str::FromStr for TxVersion {
    type Err = String;
    fn from_str(s: &str) -> Result<TxVersion, String> {
        match s {
            "legacy" => Ok(TxVersion::Legacy),
            "v1" | "1" => Ok(TxVersion::V1),
            "auto" => Ok(TxVersion::Auto),
            other => Err(format!(
                "unknown transaction version {other:?}: legacy, v1 or auto"
            )),
        }
    }
}

/// The format an operation's transactions go in.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Format {
    #[default]
    Legacy,
    V1,
}

impl Format {
    pub fn name(self) -> &'static str {
        match self {
            Format::Legacy => "legacy",
            Format::V1 => "v1",
        }
    }

    /// The largest serialized transaction of this format.
    pub fn packet_len(self) -> usize {
        match self {
            Format::Legacy => PACKET_LEN,
            Format::V1 => V1_PACKET_LEN,
        }
    }
}

impl std::fmt::Display for Format {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// The format chosen for an operation, and the line saying why when auto fell back.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Choice {
    pub format: Format,
    /// Set when `auto` found the cluster without version 1 transactions.
    pub note: Option<String>,
}

/// Whether the cluster accepts version 1 transactions: its `enable_tx_v1` feature account
/// exists and is activated.
pub async fn v1_active<T: Transport>(t: &T) -> Result<bool, Error> {
    let feature = t.get_accounts(&[FEATURE_TX_V1]).await?.remove(0);
    Ok(feature.is_some_and(|a| a.data.first() == Some(&1)))
}

/// [`choose`], printing its note, when auto fell back, on stderr once per process (as the
/// Solana CLI prints its notes: an operation that runs several engines, e.g. publish then
/// run, says it once).
pub async fn choose_noted<T: Transport>(t: &T, requested: TxVersion) -> Result<Choice, Error> {
    let choice = choose(t, requested).await?;
    if let Some(note) = &choice.note {
        static NOTED: std::sync::Once = std::sync::Once::new();
        NOTED.call_once(|| eprintln!("Note: {note}"));
    }
    Ok(choice)
}

/// Chooses the format for `requested` on the transport's cluster. `v1` on a cluster without
/// the feature is refused ([`Error::TxV1Unsupported`]) before anything is sent.
pub async fn choose<T: Transport>(t: &T, requested: TxVersion) -> Result<Choice, Error> {
    match requested {
        TxVersion::Legacy => Ok(Choice {
            format: Format::Legacy,
            note: None,
        }),
        TxVersion::V1 | TxVersion::Auto => {
            if v1_active(t).await? {
                return Ok(Choice {
                    format: Format::V1,
                    note: None,
                });
            }
            if requested == TxVersion::V1 {
                return Err(Error::TxV1Unsupported {
                    cluster: t.describe(),
                });
            }
            Ok(Choice {
                format: Format::Legacy,
                note: Some(format!(
                    "{} does not accept version 1 transactions (feature {FEATURE_TX_V1} is not \
                     active): sending legacy transactions",
                    t.describe()
                )),
            })
        }
    }
}

/// The fee the cluster charges for one transaction of exactly `instructions` paid by `payer`
/// (its signers are the message's: the payer and any instruction signer), under `blockhash`.
pub async fn message_fee<T: Transport>(
    t: &T,
    payer: &Pubkey,
    instructions: &[Instruction],
    blockhash: Hash,
) -> Result<u64, Error> {
    let message = Message::new_with_blockhash(instructions, Some(payer), &blockhash);
    t.fee_for_message(&VersionedMessage::Legacy(message)).await
}

/// A message signed by its one signer, the payer.
pub(super) fn signed(message: VersionedMessage, payer: &Keypair) -> VersionedTransaction {
    VersionedTransaction::try_new(message, &[payer]).expect("the payer signs its own message")
}

/// What a legacy transaction of compute-unit limit `limit` at `price` micro-lamports per unit
/// pays beside its signatures (the runtime rounds up): the priority fee its v1 equivalent
/// names in lamports.
pub fn priority_fee(price: u64, limit: u32) -> u64 {
    (price as u128 * limit as u128)
        .div_ceil(1_000_000)
        .min(u64::MAX as u128) as u64
}

/// A version 1 message of `instructions` paid by `payer`: compute-unit limit `limit`, the
/// loaded-data limit [`V1_LOADED_DATA_LIMIT`], the default heap, and `priority_fee` lamports
/// when set.
pub fn v1_message(
    payer: &Pubkey,
    instructions: &[Instruction],
    blockhash: Hash,
    limit: u32,
    priority_fee: Option<u64>,
) -> VersionedMessage {
    let config = v1::TransactionConfig {
        priority_fee,
        compute_unit_limit: Some(limit),
        loaded_accounts_data_size_limit: Some(V1_LOADED_DATA_LIMIT),
        heap_size: None,
    };
    VersionedMessage::V1(
        v1::Message::try_compile_with_config(payer, instructions, blockhash, config)
            .expect("a message of at most 64 accounts compiles"),
    )
}

/// Serialized size of a transaction of `instructions` paid by `payer` in `format`
/// (signatures included): legacy with the two compute-budget instructions if `priced`; v1
/// with its limits, and its priority fee if `priced`.
pub fn transaction_len_in(
    format: Format,
    payer: &Pubkey,
    priced: bool,
    instructions: &[Instruction],
) -> usize {
    match format {
        Format::Legacy => transaction_len(payer, priced, instructions),
        Format::V1 => {
            let message = v1_message(
                payer,
                instructions,
                Hash::default(),
                MAX_COMPUTE_UNITS,
                priced.then_some(u64::MAX),
            );
            // V1: the message (its version byte first), then one signature per signer, no
            // length prefix.
            let signatures = message.header().num_required_signatures as usize;
            message.serialize().len() + 64 * signatures
        }
    }
}

/// Serialized size of a transaction of `instructions` paid by `payer` (signatures included),
/// with the two compute-budget instructions first if `compute_budget`.
pub fn transaction_len(
    payer: &Pubkey,
    compute_budget: bool,
    instructions: &[Instruction],
) -> usize {
    let mut all = Vec::new();
    if compute_budget {
        all.push(ComputeBudgetInstruction::set_compute_unit_limit(
            MAX_COMPUTE_UNITS,
        ));
        all.push(ComputeBudgetInstruction::set_compute_unit_price(u64::MAX));
    }
    all.extend(instructions.iter().cloned());
    let message = Message::new(&all, Some(payer));
    let signatures = message.header.num_required_signatures as usize;
    short_vec_len(signatures) + 64 * signatures + message.serialize().len()
}

fn short_vec_len(n: usize) -> usize {
    match n {
        0..=0x7f => 1,
        0x80..=0x3fff => 2,
        _ => 3,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_v1_message_carries_the_limits_and_the_fee_it_was_given() {
        let payer = Pubkey::new_unique();
        let transfer =
            solana_system_interface::instruction::transfer(&payer, &Pubkey::new_unique(), 10);
        let VersionedMessage::V1(m) = v1_message(
            &payer,
            &[transfer],
            Hash::default(),
            MAX_COMPUTE_UNITS,
            Some(42),
        ) else {
            panic!("not a v1 message")
        };
        assert_eq!(m.config.compute_unit_limit, Some(MAX_COMPUTE_UNITS));
        assert_eq!(m.config.loaded_accounts_data_size_limit, Some(64 << 20));
        assert_eq!(m.config.priority_fee, Some(42));
        assert_eq!(m.config.heap_size, None);
        assert_eq!(m.header.num_required_signatures, 1);
    }

    #[test]
    fn tx_versions_parse_and_name_what_was_expected() {
        assert_eq!("legacy".parse(), Ok(TxVersion::Legacy));
        assert_eq!("v1".parse(), Ok(TxVersion::V1));
        assert_eq!("auto".parse(), Ok(TxVersion::Auto));
        assert_eq!(
            "v0".parse::<TxVersion>(),
            Err("unknown transaction version \"v0\": legacy, v1 or auto".to_string())
        );
        assert_eq!(TxVersion::default(), TxVersion::Auto);
        assert_eq!(Format::V1.to_string(), "v1");
        assert_eq!(
            serde_json::to_value(Format::Legacy).unwrap(),
            serde_json::json!("legacy")
        );
    }
}
