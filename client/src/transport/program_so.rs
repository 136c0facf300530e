//! The program's SBF binary, for the in-process bank: the ELF `scripts/build-sbf` (or
//! `cargo build-sbf`) builds, run by the bank's VM with compute metering, as on a cluster.

use solana_account::Account;
use solana_program_test::ProgramTest;
use solana_pubkey::Pubkey;
use std::path::PathBuf;

/// The file name every lookup ends in.
pub const PROGRAM_SO: &str = "curta_program.so";

/// The BPF loader (v2): the owner solana-program-test gives an ELF it loads.
const BPF_LOADER: Pubkey = Pubkey::from_str_const("BPFLoader2111111111111111111111111111111111");

/// A loaded SBF binary of the program.
pub struct ProgramSo {
    pub path: PathBuf,
    pub bytes: Vec<u8>,
}

impl ProgramSo {
    /// Where the binary is looked for: `$CURTA_PROGRAM_SO` alone when it is set; otherwise, in
    /// order, `curta_program.so` in `$SBF_OUT_DIR` or `$BPF_OUT_DIR` (cargo build-sbf's
    /// convention), then this workspace's `target/deploy/` (scripts/build-sbf).
    pub fn candidates() -> Vec<PathBuf> {
        if let Some(path) = std::env::var_os("CURTA_PROGRAM_SO") {
            return vec![PathBuf::from(path)];
        }
        let mut out = vec![];
        for var in ["SBF_OUT_DIR", "BPF_OUT_DIR"] {
            if let Some(dir) = std::env::var_os(var) {
                out.push(PathBuf::from(dir).join(PROGRAM_SO));
            }
        }
        out.push(
            PathBuf::from(env!("CARGO_MANIFEST_DIR"))
                .join("../target/deploy")
                .join(PROGRAM_SO),
        );
        out
    }

    /// The first candidate that exists, read; a clear error naming what to run otherwise.
    pub fn find() -> Result<ProgramSo, String> {
        ProgramSo::find_in(&ProgramSo::candidates())
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
        })
    }

    pub fn sha256_hex(&self) -> String {
        use sha2::{Digest, Sha256};
        crate::artifact::hex(&Sha256::digest(&self.bytes))
    }

    /// "SBF <path> (<size> bytes, sha256 <hash>)", for reports.
    pub fn describe(&self) -> String {
        format!(
            "SBF {} ({} bytes, sha256 {})",
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
