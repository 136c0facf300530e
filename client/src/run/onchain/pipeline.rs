//! Steps in flight: as many as the run account can take in three blocks. A block gives each
//! writable account a share of its compute units, and the cost model reserves every
//! transaction's *requested* units against it, so a block's worth is that share over what a
//! step requests; three blocks' worth keep the run account busy while the client waits for
//! confirmations ([`BLOCKS_IN_FLIGHT`]).

use super::items::STEP_UNITS;
use crate::send::transport::Transport;
use crate::Error;
use solana_pubkey::Pubkey;

/// What a step transaction costs the block beside its execution: a signature (720), two write
/// locks (the run and the fee payer, 300 each), its data and the loaded accounts (8 units a
/// 32 KiB page, up to 16,384 for 64 MiB). Rounded up.
const STEP_OVERHEAD: u64 = 20_000;

/// Agave 4.2's per-account limit in a block: 40% of the 60M-unit block (SIMD-0306)...
pub const ACCOUNT_UNITS: u64 = 24_000_000;
/// ... and 40% of the 100M-unit block once SIMD-0286 is active.
pub const ACCOUNT_UNITS_100M: u64 = 40_000_000;
/// Before SIMD-0306: 12M units per writable account (what older documentation says).
pub const ACCOUNT_UNITS_LEGACY: u64 = 12_000_000;

/// SIMD-0286, the 100M-unit block (agave-feature-set's `raise_block_limits_to_100m`).
const FEATURE_100M: Pubkey = solana_pubkey::pubkey!("P1BCUMpAC7V2GRBRiJCNUgpMyWZhoqt3LKo712ePqsz");
/// SIMD-0306, the per-account limit at 40% of the block (`raise_account_cu_limit`).
const FEATURE_0306: Pubkey = solana_pubkey::pubkey!("htsptAwi2yRoZH83SKaUXykeZGtZHgxkS2QwW1pssR8");

/// The per-account compute-unit limit of a block and where it came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
pub struct AccountLimit {
    pub units: u64,
    /// "flag", "feature SIMD-0286", "feature SIMD-0306" or "default".
    pub source: &'static str,
}

/// The limit the cluster enforces, read from its feature accounts (a feature account holds
/// `Some(activation slot)` once active: byte 0 is 1); `flag` overrides it.
pub async fn account_limit<T: Transport>(t: &T, flag: Option<u64>) -> Result<AccountLimit, Error> {
    if let Some(units) = flag {
        return Ok(AccountLimit {
            units,
            source: "flag",
        });
    }
    let features = t.get_accounts(&[FEATURE_100M, FEATURE_0306]).await?;
    let active = |i: usize| {
        features[i]
            .as_ref()
            .is_some_and(|a| a.data.first() == Some(&1))
    };
    Ok(if active(0) {
        AccountLimit {
            units: ACCOUNT_UNITS_100M,
            source: "feature SIMD-0286",
        }
    } else if active(1) {
        AccountLimit {
            units: ACCOUNT_UNITS,
            source: "feature SIMD-0306",
        }
    } else {
        // A cluster that shows neither feature account: agave 4.2's limit without them is
        // 24M, but an older cluster's is 12M; the smaller window only costs time.
        AccountLimit {
            units: ACCOUNT_UNITS_LEGACY,
            source: "default",
        }
    })
}

/// Blocks' worth of steps kept in flight: one block's worth landing, one landed and being
/// confirmed (the client refills the window as steps are confirmed), one waiting at the
/// leader, so that the run account does not sit idle while the window refills
/// (docs/client.md, "Compute-unit limits").
pub const BLOCKS_IN_FLIGHT: u64 = 3;

/// Steps in flight for a per-account limit: [`BLOCKS_IN_FLIGHT`] times what a block gives the
/// run account over what a step requests, at least one.
pub fn step_window(limit: u64) -> usize {
    (BLOCKS_IN_FLIGHT * limit / (STEP_UNITS as u64 + STEP_OVERHEAD)).max(1) as usize
}
