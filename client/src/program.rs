//! `verify-program`: is the program deployed at an id the local build? The deployed executable
//! is read as solana-verify reads it: for the upgradeable loader, the program account names its
//! ProgramData account, whose bytes after the 45-byte header (state tag, deployment slot,
//! optional upgrade authority) are the ELF, zero-padded; for the BPF loaders v1 and v2 the
//! program account holds the ELF itself. Both sides are hashed without trailing zero bytes
//! ([`program_hash`]).

use crate::artifact::hex;
use crate::send::transport::{program_hash, program_so::sbpf_version, ProgramSo, Transport};
use crate::Error;
use solana_pubkey::Pubkey;

/// The upgradeable BPF loader (what `solana program deploy` uses).
pub const UPGRADEABLE_LOADER: Pubkey =
    Pubkey::from_str_const("BPFLoaderUpgradeab1e11111111111111111111111");
/// The BPF loader v2 (solana-program-test loads an ELF it finds with it).
pub const BPF_LOADER: Pubkey =
    Pubkey::from_str_const("BPFLoader2111111111111111111111111111111111");
/// The deprecated BPF loader v1.
pub const BPF_LOADER_DEPRECATED: Pubkey =
    Pubkey::from_str_const("BPFLoader1111111111111111111111111111111111");
/// The upgradeable loader's `UpgradeableLoaderState::Program` tag, and the account's length.
const PROGRAM_TAG: u32 = 2;
const PROGRAM_LEN: usize = 4 + 32;
/// `UpgradeableLoaderState::ProgramData` and its header: tag (4), slot (8), option tag (1) and
/// upgrade authority (32): `size_of_programdata_metadata()`.
const PROGRAMDATA_TAG: u32 = 3;
pub const PROGRAMDATA_HEADER_LEN: usize = 45;

/// What verify-program found.
#[derive(Clone, Debug)]
pub struct ProgramVerification {
    pub program_id: Pubkey,
    /// "upgradeable loader", "BPF loader v2" or "BPF loader v1".
    pub loader: &'static str,
    /// The account that holds the executable: the ProgramData account for the upgradeable
    /// loader, else the program account.
    pub executable_account: Pubkey,
    /// Upgradeable loader only: the deployment slot and the upgrade authority (none when the
    /// program is immutable).
    pub deployed_slot: Option<u64>,
    pub upgrade_authority: Option<Pubkey>,
    /// The deployed executable's length without trailing zeros, and its hash.
    pub deployed_len: usize,
    pub deployed_hash: [u8; 32],
    /// The SBPF version in the deployed ELF's e_flags (0 or 3 for this program's builds;
    /// None when the executable is no ELF). The hash compares the bytes either way.
    pub deployed_sbpf_version: Option<u32>,
    /// The local binary ([`ProgramSo::describe`]), its length without trailing zeros and hash.
    pub local: String,
    pub local_len: usize,
    pub local_hash: [u8; 32],
}

impl ProgramVerification {
    /// The deployed executable is the local binary.
    pub fn ok(&self) -> bool {
        self.deployed_hash == self.local_hash
    }

    pub fn to_text(&self) -> String {
        let mut account = self.loader.to_string();
        if self.loader == "upgradeable loader" {
            account.push_str(&format!(
                ", ProgramData {}, deployed at slot {}, upgrade authority {}",
                self.executable_account,
                self.deployed_slot.unwrap_or_default(),
                self.upgrade_authority
                    .map_or("none (immutable)".to_string(), |a| a.to_string())
            ));
        }
        format!(
            "program:        {} ({account})\n\
             deployed hash:  {} ({}, {} bytes without trailing zeros)\n\
             local hash:     {} ({} bytes without trailing zeros; {})\n\
             result:         {}\n",
            self.program_id,
            hex(&self.deployed_hash),
            self.deployed_sbpf_version
                .map_or("not an ELF".to_string(), |v| format!("SBPF v{v}")),
            self.deployed_len,
            hex(&self.local_hash),
            self.local_len,
            self.local,
            if self.ok() {
                "the deployed program is the local build"
            } else {
                "DIFFERENT: the deployed program is not the local build"
            }
        )
    }

    pub fn to_json(&self) -> serde_json::Value {
        serde_json::json!({
            "program_id": self.program_id.to_string(),
            "loader": self.loader,
            "executable_account": self.executable_account.to_string(),
            "deployed_slot": self.deployed_slot,
            "upgrade_authority": self.upgrade_authority.map(|a| a.to_string()),
            "deployed_len": self.deployed_len,
            "deployed_hash": hex(&self.deployed_hash),
            "deployed_sbpf_version": self.deployed_sbpf_version,
            "local": self.local,
            "local_len": self.local_len,
            "local_hash": hex(&self.local_hash),
            "matches": self.ok(),
        })
    }
}

/// "state tag N" of an upgradeable loader account's first four bytes ("no state tag" when
/// shorter).
fn state_tag(data: &[u8]) -> String {
    match data.get(..4) {
        Some(tag) => format!("state tag {}", u32::from_le_bytes(tag.try_into().unwrap())),
        None => "no state tag".to_string(),
    }
}

fn trimmed_len(bytes: &[u8]) -> usize {
    bytes.iter().rposition(|&b| b != 0).map_or(0, |i| i + 1)
}

/// Reads the executable deployed at `program_id` on `t`'s cluster and compares its hash with
/// `local`'s. An address that holds no program, or a ProgramData account that is missing or
/// malformed, is an error naming the account.
pub async fn verify_program<T: Transport>(
    t: &T,
    program_id: &Pubkey,
    local: &ProgramSo,
) -> Result<ProgramVerification, Error> {
    let not_deployed = |found: String| Error::ProgramNotDeployed {
        program: *program_id,
        cluster: t.describe(),
        found,
    };
    let program = t
        .get_accounts(&[*program_id])
        .await?
        .pop()
        .flatten()
        .ok_or_else(|| not_deployed("no account".to_string()))?;
    if !program.executable {
        return Err(not_deployed(format!(
            "the account there is not executable (owner {}, {} bytes)",
            program.owner,
            program.data.len()
        )));
    }
    let bad = |address: Pubkey, problem: String| Error::BadProgramAccount { address, problem };
    let (loader, executable_account, slot, authority, elf) = if program.owner == UPGRADEABLE_LOADER
    {
        upgradeable(t, program_id, &program).await?
    } else if program.owner == BPF_LOADER || program.owner == BPF_LOADER_DEPRECATED {
        let loader = if program.owner == BPF_LOADER {
            "BPF loader v2"
        } else {
            "BPF loader v1"
        };
        (loader, *program_id, None, None, program.data)
    } else {
        return Err(bad(
            *program_id,
            format!(
                "executable, but owned by {}, which is not a BPF loader this client reads (upgradeable, v2, v1)",
                program.owner
            ),
        ));
    };
    Ok(ProgramVerification {
        program_id: *program_id,
        loader,
        executable_account,
        deployed_slot: slot,
        upgrade_authority: authority,
        deployed_len: trimmed_len(&elf),
        deployed_hash: program_hash(&elf),
        deployed_sbpf_version: sbpf_version(&elf),
        local: local.describe(),
        local_len: trimmed_len(&local.bytes),
        local_hash: local.program_hash(),
    })
}

/// What the upgradeable loader's program account `program` names: its ProgramData account,
/// read and checked, and the deployment slot, the upgrade authority and the ELF it holds.
async fn upgradeable<T: Transport>(
    t: &T,
    program_id: &Pubkey,
    program: &solana_account::Account,
) -> Result<Deployed, Error> {
    let bad = |address: Pubkey, problem: String| Error::BadProgramAccount { address, problem };
    let data = &program.data;
    if data.len() < PROGRAM_LEN || u32::from_le_bytes(data[..4].try_into().unwrap()) != PROGRAM_TAG
    {
        return Err(bad(
            *program_id,
            format!(
                "owned by the upgradeable loader but not a Program account ({} bytes, {}; expected {PROGRAM_LEN} bytes, state tag {PROGRAM_TAG})",
                data.len(),
                state_tag(data)
            ),
        ));
    }
    let programdata = Pubkey::new_from_array(data[4..36].try_into().unwrap());
    let account = t
        .get_accounts(&[programdata])
        .await?
        .pop()
        .flatten()
        .ok_or_else(|| {
            bad(
                programdata,
                format!("the ProgramData account of program {program_id} does not exist"),
            )
        })?;
    let data = account.data;
    if account.owner != UPGRADEABLE_LOADER {
        return Err(bad(
            programdata,
            format!(
                "the ProgramData account of program {program_id} is owned by {}, not the upgradeable loader",
                account.owner
            ),
        ));
    }
    if data.len() < PROGRAMDATA_HEADER_LEN
        || u32::from_le_bytes(data[..4].try_into().unwrap()) != PROGRAMDATA_TAG
    {
        return Err(bad(
            programdata,
            format!(
                "not a ProgramData account ({} bytes, {}; expected at least {PROGRAMDATA_HEADER_LEN} bytes, state tag {PROGRAMDATA_TAG})",
                data.len(),
                state_tag(&data)
            ),
        ));
    }
    let slot = u64::from_le_bytes(data[4..12].try_into().unwrap());
    let authority = match data[12] {
        0 => None,
        1 => Some(Pubkey::new_from_array(data[13..45].try_into().unwrap())),
        other => {
            return Err(bad(
                programdata,
                format!("upgrade authority option tag {other} at byte 12 (expected 0 or 1)"),
            ))
        }
    };
    Ok((
        "upgradeable loader",
        programdata,
        Some(slot),
        authority,
        data[PROGRAMDATA_HEADER_LEN..].to_vec(),
    ))
}

/// The loader's name, the account that holds the executable, the deployment slot and upgrade
/// authority (upgradeable loader only), and the ELF.
type Deployed = (&'static str, Pubkey, Option<u64>, Option<Pubkey>, Vec<u8>);
