//! Writing a claim account's header fields in place (the layout: curta-interface's `claim`).

pub(crate) fn put_u32(data: &mut [u8], at: usize, value: u32) {
    data[at..at + 4].copy_from_slice(&value.to_le_bytes());
}

pub(crate) fn put_u64(data: &mut [u8], at: usize, value: u64) {
    data[at..at + 8].copy_from_slice(&value.to_le_bytes());
}

pub(crate) fn put_bytes(data: &mut [u8], at: usize, bytes: &[u8; 32]) {
    data[at..at + 32].copy_from_slice(bytes);
}
