//! The program's SBF binary, for the in-process bank: the ELF `scripts/build-sbf` (or
//! `cargo build-sbf`) builds, run by the bank's VM with compute metering, as on a cluster.

use solana_account::Account;
use solana_program_test::ProgramTest;
use solana_pubkey::Pubkey;
use std::path::PathBuf;

/// The file name every lookup ends in.
pub const PROGRAM_SO: &str = "curta_program.so";

/// SHA-256 of `elf` without its trailing zero bytes: how a deployed program's executable is
/// hashed (solana-verify's convention: the ProgramData account's bytes after its 45-byte
/// header, zero padding removed).
pub fn program_hash(elf: &[u8]) -> [u8; 32] {
    use sha2::{Digest, Sha256};
    let end = elf.iter().rposition(|&b| b != 0).map_or(0, |i| i + 1);
    Sha256::digest(&elf[..end]).into()
}

/// The SBPF version in an ELF's e_flags (bytes 48..52 of a 64-bit ELF header), or None when
/// `elf` is no 64-bit ELF.
pub fn sbpf_version(elf: &[u8]) -> Option<u32> {
    if elf.len() < 64 || elf[..4] != *b"\x7fELF" || elf[4] != 2 {
        return None;
    }
    Some(u32::from_le_bytes(elf[48..52].try_into().unwrap()))
}

/// The BPF loader (v2): the owner solana-program-test gives an ELF it loads.
const BPF_LOADER: Pubkey = Pubkey::from_str_const("BPFLoader2111111111111111111111111111111111");

mod embedded {
    // Written by client/build.rs: the binary found at build time, if any.
    include!(concat!(env!("OUT_DIR"), "/program_so.rs"));
}

/// A loaded SBF binary of the program.
pub struct ProgramSo {
    /// The file it was read from (for an embedded binary: the file the build embedded).
    pub path: PathBuf,
    pub bytes: Vec<u8>,
    /// Carried in the client binary (client/build.rs), not read at run time.
    pub embedded: bool,
}

impl ProgramSo {
    /// The files that override the embedded binary: `$CURTA_PROGRAM_SO` alone when it is set;
    /// otherwise `curta_program.so` in `$SBF_OUT_DIR` or `$BPF_OUT_DIR` (cargo build-sbf's
    /// convention), when set.
    pub fn candidates() -> Vec<PathBuf> {
        if let Some(path) = std::env::var_os("CURTA_PROGRAM_SO") {
            return vec![PathBuf::from(path)];
        }
        ["SBF_OUT_DIR", "BPF_OUT_DIR"]
            .iter()
            .filter_map(std::env::var_os)
            .map(|dir| PathBuf::from(dir).join(PROGRAM_SO))
            .collect()
    }

    /// The binary the client runs, by one rule: `$CURTA_PROGRAM_SO` when set (it must exist);
    /// else the first of `$SBF_OUT_DIR`/`$BPF_OUT_DIR` that holds `curta_program.so`; else the
    /// binary embedded when the client was built (client/build.rs took
    /// `target/deploy/curta_program.so` of the workspace, or of `$CARGO_TARGET_DIR`). So an
    /// installed client, or one run from any directory, runs the program it was built with.
    pub fn find() -> Result<ProgramSo, String> {
        let candidates = ProgramSo::candidates();
        if std::env::var_os("CURTA_PROGRAM_SO").is_some() {
            return ProgramSo::find_in(&candidates);
        }
        if candidates.iter().any(|p| p.is_file()) {
            return ProgramSo::find_in(&candidates);
        }
        ProgramSo::embedded().ok_or_else(|| {
            let mut looked: Vec<String> =
                candidates.iter().map(|p| p.display().to_string()).collect();
            looked.push(format!("at build time {}", embedded::LOOKED_AT));
            format!(
                "the Curta program's SBF binary is not built: run scripts/build-sbf, then build \
                 the client again (it embeds target/deploy/curta_program.so), or set \
                 CURTA_PROGRAM_SO (looked at {})",
                looked.join(", ")
            )
        })
    }

    /// The binary embedded at build time, if one existed then.
    pub fn embedded() -> Option<ProgramSo> {
        embedded::EMBEDDED.map(|(path, bytes)| ProgramSo {
            path: PathBuf::from(path),
            bytes: bytes.to_vec(),
            embedded: true,
        })
    }

    /// The first of `candidates` that exists, read.
    pub fn find_in(candidates: &[PathBuf]) -> Result<ProgramSo, String> {
        let path = candidates.iter().find(|p| p.is_file()).ok_or_else(|| {
            let looked: Vec<String> = candidates.iter().map(|p| p.display().to_string()).collect();
            format!(
                "the Curta program's SBF binary is not built: run scripts/build-sbf (looked at {})",
                looked.join(", ")
            )
        })?;
        let bytes = std::fs::read(path).map_err(|e| format!("reading {}: {e}", path.display()))?;
        Ok(ProgramSo {
            path: path.canonicalize().unwrap_or_else(|_| path.clone()),
            bytes,
            embedded: false,
        })
    }

    pub fn sha256_hex(&self) -> String {
        use sha2::{Digest, Sha256};
        crate::artifact::hex(&Sha256::digest(&self.bytes))
    }

    /// The executable's hash as a deployed program's is computed (solana-verify's convention,
    /// and `client verify-program`'s): SHA-256 of the ELF without its trailing zero bytes (a
    /// ProgramData account is zero-padded past the ELF).
    pub fn program_hash(&self) -> [u8; 32] {
        program_hash(&self.bytes)
    }

    /// The SBPF version the ELF declares in its header's e_flags (0 for `scripts/build-sbf`, 3
    /// for `scripts/build-sbf --sbpf-v3`), or None when the bytes are no 64-bit ELF. Either runs
    /// in the bank: its feature set enables v0 to v3 (docs/program.md).
    pub fn sbpf_version(&self) -> Option<u32> {
        sbpf_version(&self.bytes)
    }

    /// "SBF <path> (SBPF v<N>, <size> bytes, sha256 <hash>)", or "SBF embedded in the client,
    /// built from <path> (...)", for reports.
    pub fn describe(&self) -> String {
        let from = if self.embedded {
            "embedded in the client, built from "
        } else {
            ""
        };
        let version = self
            .sbpf_version()
            .map_or("not an ELF".to_string(), |v| format!("SBPF v{v}"));
        format!(
            "SBF {from}{} ({version}, {} bytes, sha256 {})",
            self.path.display(),
            self.bytes.len(),
            self.sha256_hex()
        )
    }

    /// Adds the binary to `test` at `program_id` as solana-program-test does for an ELF it
    /// finds itself: an executable account of the BPF loader.
    pub fn add_to(&self, test: &mut ProgramTest, program_id: Pubkey) {
        let rent = solana_sdk::rent::Rent::default();
        test.add_account(
            program_id,
            Account {
                lamports: rent.minimum_balance(self.bytes.len()).max(1),
                data: self.bytes.clone(),
                owner: BPF_LOADER,
                executable: true,
                rent_epoch: 0,
            },
        );
    }
}
