//! Transaction formats: legacy (1,232 bytes, compute budget as instructions) and version 1
//! (SIMD-0296/SIMD-0385: 4,096 bytes, the compute-unit limit, loaded-data limit and priority
//! fee carried in the message itself). Which one an operation uses is chosen once, before
//! anything is sent: `--tx-version legacy|v1|auto` ([`TxVersion`]), auto meaning v1 where the
//! cluster's feature `enable_tx_v1` is active.

use crate::transport::Transport;
use crate::Error;
use solana_pubkey::Pubkey;

/// agave-feature-set's `enable_tx_v1` (SIMD-0385: Transaction V1). A feature account holds
/// `Some(activation slot)` once active: its byte 0 is 1.
pub const FEATURE_TX_V1: Pubkey =
    solana_pubkey::pubkey!("txv1aq4pp281K9um3tnPgkfX8UqtFT6wcVW3hNezGLL");

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
            Format::Legacy => crate::engine::PACKET_LEN,
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::{
        transaction_len, transaction_len_in, v1_message, write_capacity, write_capacity_in,
        MAX_COMPUTE_UNITS,
    };
    use crate::transport::wire_bytes;
    use agave_transaction_view::sanitize::SanitizeConfig;
    use agave_transaction_view::transaction_version::TransactionVersion as ViewVersion;
    use agave_transaction_view::transaction_view::SanitizedTransactionView;
    use solana_hash::Hash;
    use solana_keypair::Keypair;
    use solana_message::{Message, VersionedMessage};
    use solana_signer::Signer;
    use solana_transaction::versioned::VersionedTransaction;

    /// A Write of `bytes` payload bytes by `authority`, as publish plans it.
    fn write(authority: &Pubkey, bytes: usize) -> solana_instruction::Instruction {
        curta_interface::instruction::write(
            &curta_interface::id(),
            &Pubkey::new_unique(),
            authority,
            123_456,
            &vec![0xa5; bytes],
        )
    }

    fn view_config() -> SanitizeConfig {
        SanitizeConfig {
            min_requested_heap_size: 32 * 1024,
            max_requested_heap_size: 256 * 1024,
            max_instructions: 64,
            max_accounts_per_instruction: Some(255),
        }
    }

    #[test]
    fn a_v1_write_of_full_capacity_fills_the_packet_and_decodes_as_agave_decodes_it() {
        let payer = Keypair::new();
        for (priced, fee) in [(false, None), (true, Some(7_777))] {
            let capacity = write_capacity_in(Format::V1, priced);
            // SIMD-0385's layout: version 1 + header 3 + config mask 4 + blockhash 32 + two
            // counts 2 + three keys 96 + the limits 4 + 4 (+ the fee 8) + the instruction's
            // header 4 (program index, account count, u16 data length) + two account indices
            // + the Write's tag, offset and length 9 + one signature 64 = 225 (233) bytes
            // around the payload.
            assert_eq!(capacity, if priced { 4_096 - 233 } else { 4_096 - 225 });
            let ix = write(&payer.pubkey(), capacity);
            let blockhash = Hash::new_unique();
            let message = v1_message(
                &payer.pubkey(),
                std::slice::from_ref(&ix),
                blockhash,
                2_000,
                fee,
            );
            let tx = VersionedTransaction::try_new(message.clone(), &[&payer]).unwrap();
            let wire = wire_bytes(&tx);

            // The length the planner counts is the serialized length, and capacity is the
            // most that fits: one byte more does not.
            assert_eq!(
                transaction_len_in(Format::V1, &payer.pubkey(), priced, &[ix]),
                wire.len()
            );
            assert_eq!(wire.len(), V1_PACKET_LEN);
            let over = write(&payer.pubkey(), capacity + 1);
            assert_eq!(
                transaction_len_in(Format::V1, &payer.pubkey(), priced, &[over]),
                V1_PACKET_LEN + 1
            );

            // The wincode form solana-client sends (sendTransaction, simulateTransaction) is
            // these bytes, and decodes back to the same transaction.
            assert_eq!(wincode::serialize(&tx).unwrap(), wire);
            let decoded: VersionedTransaction = wincode::deserialize(&wire).unwrap();
            assert_eq!(decoded, tx);
            assert!(decoded.verify_with_results().iter().all(|ok| *ok));

            // The message bytes first (version byte 0x81), then the signature, no count.
            assert_eq!(wire[0], solana_message::v1::V1_PREFIX);
            assert_eq!(&wire[wire.len() - 64..], tx.signatures[0].as_ref());
            let decoded_message = solana_message::v1::deserialize(&wire[1..wire.len() - 64])
                .expect("the message decodes");
            assert_eq!(VersionedMessage::V1(decoded_message), message);

            // agave's own parser (what sigverify and banking read from the packet).
            let view = SanitizedTransactionView::try_new_sanitized(&wire[..], &view_config())
                .expect("agave's transaction view accepts it");
            assert!(matches!(view.version(), ViewVersion::V1));
            assert_eq!(view.num_signatures(), 1);
            assert_eq!(view.signatures()[0], tx.signatures[0]);
            assert_eq!(view.recent_blockhash(), &blockhash);
            assert_eq!(view.num_instructions(), 1);
            let config = view.transaction_config().expect("a v1 config");
            assert_eq!(config.compute_unit_limit(), Some(2_000));
            assert_eq!(
                config.loaded_accounts_data_size_limit(),
                Some(V1_LOADED_DATA_LIMIT)
            );
            assert_eq!(config.priority_fee_lamports(), fee);
            assert_eq!(config.requested_heap_size(), None);
            let data = view.instructions_iter().next().unwrap().data;
            assert_eq!(data.len(), 1 + 4 + 4 + capacity);
        }
    }

    #[test]
    fn legacy_lengths_and_capacities_are_unchanged() {
        let payer = Keypair::new();
        assert_eq!(write_capacity_in(Format::Legacy, false), 1_019);
        assert_eq!(write_capacity_in(Format::Legacy, true), 967);
        assert_eq!(write_capacity(false), 1_019);
        let ix = write(&payer.pubkey(), 1_019);
        let message = Message::new_with_blockhash(
            std::slice::from_ref(&ix),
            Some(&payer.pubkey()),
            &Hash::new_unique(),
        );
        let tx =
            VersionedTransaction::try_new(VersionedMessage::Legacy(message), &[&payer]).unwrap();
        let wire = wire_bytes(&tx);
        assert_eq!(wire, bincode::serialize(&tx).unwrap());
        assert_eq!(wire, wincode::serialize(&tx).unwrap());
        assert_eq!(wire.len(), crate::engine::PACKET_LEN);
        assert_eq!(
            transaction_len_in(
                Format::Legacy,
                &payer.pubkey(),
                false,
                std::slice::from_ref(&ix)
            ),
            wire.len()
        );
        assert_eq!(transaction_len(&payer.pubkey(), false, &[ix]), wire.len());
    }

    #[test]
    fn a_v1_message_carries_the_limits_and_the_fee_it_was_given() {
        let payer = Pubkey::new_unique();
        let VersionedMessage::V1(m) = v1_message(
            &payer,
            &[write(&payer, 10)],
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
