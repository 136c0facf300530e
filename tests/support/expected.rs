//! Expected values computed by a second path, independent of curta-core's hash and of the
//! program. Also compiled into the client crate's tests (client/tests/*.rs), so it uses
//! nothing but sha2.

use sha2::{Digest, Sha256};

/// The weights hash computed with the sha2 crate directly (a second path, independent of
/// curta-core and of the program): h = 32 zero bytes, then h = SHA-256(h || chunk) for every
/// 65,536-byte chunk of every section in order.
pub fn sha256_chain<'a>(sections: impl IntoIterator<Item = &'a [u8]>) -> [u8; 32] {
    let mut h = [0u8; 32];
    for section in sections {
        for chunk in section.chunks(65_536) {
            h = Sha256::new()
                .chain_update(h)
                .chain_update(chunk)
                .finalize()
                .into();
        }
    }
    h
}

/// [`sha256_chain`] as 64 lowercase hex characters.
pub fn sha256_chain_hex<'a>(sections: impl IntoIterator<Item = &'a [u8]>) -> String {
    sha256_chain(sections)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}
