//! A local artifact, decoded and hashed before anything is sent.

use crate::Error;
use curta_interface::state::model_address;
use solana_pubkey::Pubkey;

/// An artifact checked with `curta_core::decode`: its sections, their lengths and its
/// weights hash.
pub struct LocalArtifact<'a> {
    pub sections: Vec<&'a [u8]>,
    pub lengths: Vec<u32>,
    pub weights_hash: [u8; 32],
}

impl<'a> LocalArtifact<'a> {
    pub fn decode(file: &'a [u8]) -> Result<LocalArtifact<'a>, Error> {
        let artifact = curta_core::decode(file)?;
        let sections: Vec<&'a [u8]> = artifact.sections().collect();
        let lengths = sections.iter().map(|s| s.len() as u32).collect();
        let weights_hash = curta_core::weights_hash(sections.iter().copied());
        Ok(LocalArtifact {
            sections,
            lengths,
            weights_hash,
        })
    }

    /// The model account `authority` publishes this artifact to, under program `program`.
    pub fn model_address(&self, program: &Pubkey, authority: &Pubkey) -> Pubkey {
        model_address(program, authority, &self.weights_hash).0
    }

    pub fn len(&self) -> u64 {
        self.lengths.iter().map(|&l| l as u64).sum()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// Lowercase hex of `bytes` (hashes in reports and errors).
pub fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}
