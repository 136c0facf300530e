//! Trap models (issue 26): a real artifact with one part of section zero or of the matrices
//! changed, as a publisher could upload it. The reader and the program's seal refuse an
//! exponential table other than the spec's and a table block at an offset that is not a
//! multiple of 4, and the seal a sorted id past the vocabulary and a vocabulary without " ";
//! everything else here seals and must run to its end, on chain and off chain alike. Every offset is read from the header's bytes (spec: offsets at bytes 40 to 64, the
//! section table at 128), not through curta-core.

fn u32_at(a: &[u8], at: usize) -> u32 {
    u32::from_le_bytes(a[at..at + 4].try_into().unwrap())
}

fn put(a: &mut [u8], at: usize, v: u32) {
    a[at..at + 4].copy_from_slice(&v.to_le_bytes());
}

/// Header bytes of the block offsets.
const NORM: usize = 40;
const ROTARY: usize = 44;
const EXP: usize = 48;
const SILU: usize = 52;
const ENTRIES: usize = 56;
const SORTED: usize = 60;
const STRINGS: usize = 64;

/// Section zero's length (section table entry 0's length, byte 136).
pub fn section_zero_len(a: &[u8]) -> usize {
    u64::from_le_bytes(a[136..144].try_into().unwrap()) as usize
}

/// The exponential table's entry `index` set to `value`.
pub fn exp_entry(artifact: &[u8], index: usize, value: u32) -> Vec<u8> {
    let mut a = artifact.to_vec();
    let at = u32_at(&a, EXP) as usize + 4 * index;
    put(&mut a, at, value);
    a
}

/// The sorted ids 2 bytes later (not a multiple of 4), the token strings 4 bytes later so
/// that no block overlaps the next.
pub fn misaligned_sorted_ids(artifact: &[u8]) -> Vec<u8> {
    let mut a = artifact.to_vec();
    let (sorted, strings) = (u32_at(&a, SORTED), u32_at(&a, STRINGS));
    put(&mut a, STRINGS, strings + 4);
    put(&mut a, SORTED, sorted + 2);
    a
}

/// Token `id`'s entry with this length and offset of its bytes.
pub fn token_entry(artifact: &[u8], id: u32, length: u32, offset: u32) -> Vec<u8> {
    let mut a = artifact.to_vec();
    let at = u32_at(&a, ENTRIES) as usize + 16 * id as usize;
    put(&mut a, at + 4, length);
    put(&mut a, at + 8, offset);
    a
}

/// Token `id`'s entry 129 bytes long (over the 128 the spec allows), at its own offset.
pub fn token_too_long(artifact: &[u8], id: u32) -> Vec<u8> {
    let at = u32_at(artifact, ENTRIES) as usize + 16 * id as usize;
    let offset = u32_at(artifact, at + 8);
    token_entry(artifact, id, 129, offset)
}

/// Token `id`'s 4 bytes starting 2 bytes before the end of section zero.
pub fn token_outside(artifact: &[u8], id: u32) -> Vec<u8> {
    token_entry(artifact, id, 4, section_zero_len(artifact) as u32 - 2)
}

/// The vocabulary size (header bytes 8 to 36 hold the configuration; the vocabulary is its
/// sixth field).
fn vocab_size(a: &[u8]) -> u32 {
    u32_at(a, 8 + 4 * 5)
}

/// The sorted token id at `index` replaced by the vocabulary size (no such token).
pub fn sorted_id_past_vocab(artifact: &[u8], index: u32) -> Vec<u8> {
    let mut a = artifact.to_vec();
    let (vocab, at) = (
        vocab_size(&a),
        u32_at(&a, SORTED) as usize + 4 * index as usize,
    );
    put(&mut a, at, vocab);
    a
}

/// The token whose text is " " given no bytes (its entry's length 0): the vocabulary then has
/// no token for " ".
pub fn no_space_token(artifact: &[u8]) -> Vec<u8> {
    let entries = u32_at(artifact, ENTRIES) as usize;
    let space = (0..vocab_size(artifact) as usize)
        .find(|&id| {
            let at = entries + 16 * id;
            let (length, offset) = (u32_at(artifact, at + 4), u32_at(artifact, at + 8));
            length == 1 && artifact[offset as usize] == b' '
        })
        .expect("a token for \" \"");
    let offset = u32_at(artifact, entries + 16 * space + 8);
    token_entry(artifact, space as u32, 0, offset)
}

/// Every table at its extremes, and the matrices' scales too: normalization coefficients
/// i32::MAX and i32::MIN alternating, rotary coefficients i32::MIN, the SiLU table
/// alternating i32::MAX and i32::MIN, and every other row of section one (the first matrix
/// section) with scale u32::MAX. The exponential table and every offset stay the spec's: the
/// seal accepts it.
pub fn wild_tables(artifact: &[u8]) -> Vec<u8> {
    let mut a = artifact.to_vec();
    let words = |a: &[u8], from: usize, to: usize| {
        let (start, end) = (u32_at(a, from) as usize, u32_at(a, to) as usize);
        (start..end).step_by(4).enumerate().collect::<Vec<_>>()
    };
    for (i, at) in words(&a, NORM, ROTARY) {
        put(
            &mut a,
            at,
            if i % 2 == 0 {
                i32::MAX as u32
            } else {
                i32::MIN as u32
            },
        );
    }
    for (_, at) in words(&a, ROTARY, EXP) {
        put(&mut a, at, i32::MIN as u32);
    }
    for (i, at) in words(&a, SILU, ENTRIES) {
        put(
            &mut a,
            at,
            if i % 2 == 0 {
                i32::MAX as u32
            } else {
                i32::MIN as u32
            },
        );
    }
    // Section one's matrices: the descriptors at 512 + 24 i (section, columns, rows, row
    // length, offset); every other row of every matrix in section one.
    let zero = section_zero_len(&a);
    let matrices = 2 + 7 * u32_at(&a, 16) as usize;
    for i in 0..matrices {
        let d = 512 + 24 * i;
        if u32_at(&a, d) != 1 {
            continue;
        }
        let (rows, row_len) = (u32_at(&a, d + 8) as usize, u32_at(&a, d + 12) as usize);
        let offset = u64::from_le_bytes(a[d + 16..d + 24].try_into().unwrap()) as usize;
        for r in (0..rows).step_by(2) {
            put(&mut a, zero + offset + r * row_len, u32::MAX);
        }
    }
    a
}
