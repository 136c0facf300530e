//! Little-endian reads at a byte offset: the format, the program's account layouts and the
//! client all read fields this way. The caller has checked the bounds; these panic past them.

pub fn u16_at(bytes: &[u8], offset: usize) -> u16 {
    let mut word = [0u8; 2];
    word.copy_from_slice(&bytes[offset..offset + 2]);
    u16::from_le_bytes(word)
}

pub fn u32_at(bytes: &[u8], offset: usize) -> u32 {
    let mut word = [0u8; 4];
    word.copy_from_slice(&bytes[offset..offset + 4]);
    u32::from_le_bytes(word)
}

pub fn u64_at(bytes: &[u8], offset: usize) -> u64 {
    let mut word = [0u8; 8];
    word.copy_from_slice(&bytes[offset..offset + 8]);
    u64::from_le_bytes(word)
}

pub fn bytes32_at(bytes: &[u8], offset: usize) -> [u8; 32] {
    let mut out = [0u8; 32];
    out.copy_from_slice(&bytes[offset..offset + 32]);
    out
}
