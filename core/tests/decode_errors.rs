//! decode on damaged artifacts: wrong tag, truncated, sections that do not tile the file,
//! descriptors out of bounds or misaligned. Each error says where and what.

mod common;
use common::*;
use curta_core::{decode, FormatError};

fn artifact() -> Vec<u8> {
    curta_core::convert::convert(&read_model("stories260K.bin"), &read_model("tok512.bin")).unwrap()
}

fn put64(b: &mut [u8], at: usize, v: u64) {
    b[at..at + 8].copy_from_slice(&v.to_le_bytes());
}

#[test]
fn wrong_tag() {
    let mut a = artifact();
    a[7] = b'2';
    assert_eq!(
        decode(&a).unwrap_err(),
        FormatError::BadTag {
            found: *b"CURTAW02"
        }
    );
}

#[test]
fn truncated() {
    let a = artifact();
    let zero = u64le(&a, 136);
    let len = a.len() as u64;
    // Inside section one: the sections run past the file.
    assert_eq!(
        decode(&a[..a.len() - 1]).unwrap_err(),
        FormatError::FileLength {
            sections_end: len,
            file_length: len - 1
        }
    );
    // Inside section zero.
    let cut = &a[..zero as usize - 8];
    let expected = FormatError::Truncated {
        what: "section zero",
        offset: 0,
        needed: zero,
        available: zero - 8,
    };
    assert_eq!(decode(cut).unwrap_err(), expected);
    // Inside the header.
    let expected = FormatError::Truncated {
        what: "the artifact's header",
        offset: 0,
        needed: 4096,
        available: 100,
    };
    assert_eq!(decode(&a[..100]).unwrap_err(), expected);
}

#[test]
fn sections_that_do_not_tile_the_file() {
    let a = artifact();
    let len = a.len() as u64;
    let mut long = a.clone();
    long.extend_from_slice(&[0; 8]);
    assert_eq!(
        decode(&long).unwrap_err(),
        FormatError::FileLength {
            sections_end: len,
            file_length: len + 8
        }
    );
    // Section one starting 8 bytes late (a gap).
    let mut gap = a.clone();
    let zero = u64le(&a, 136);
    put64(&mut gap, 144, zero + 8);
    let expected = FormatError::SectionOffset {
        section: 1,
        entry: 144,
        found: zero + 8,
        expected: zero,
    };
    assert_eq!(decode(&gap).unwrap_err(), expected);
    // Section one claiming 8 bytes more than the file has.
    let mut over = a.clone();
    let one = u64le(&a, 152);
    put64(&mut over, 152, one + 8);
    assert_eq!(
        decode(&over).unwrap_err(),
        FormatError::FileLength {
            sections_end: len + 8,
            file_length: len
        }
    );
}

#[test]
fn descriptors_out_of_bounds() {
    let a = artifact();
    let one = u64le(&a, 152);
    // The last matrix (up, layer 4: 172 rows of 72 bytes) moved 8 bytes past its place.
    let at = 512 + 24 * 36 + 16;
    let offset = u64le(&a, at);
    assert_eq!(offset + 172 * 72, one, "the last matrix ends section one");
    let mut bad = a.clone();
    put64(&mut bad, at, offset + 8);
    let expected = FormatError::DescriptorOutOfBounds {
        index: 36,
        name: "feed-forward up",
        section: 1,
        offset: offset + 8,
        end: one + 8,
        section_length: one,
    };
    assert_eq!(decode(&bad).unwrap_err(), expected);
    // A huge offset does not overflow.
    put64(&mut bad, at, u64::MAX - 7);
    assert!(matches!(
        decode(&bad).unwrap_err(),
        FormatError::DescriptorOutOfBounds { index: 36, .. }
    ));
    // Misaligned.
    let mut bad = a.clone();
    put64(&mut bad, at, offset - 4);
    assert_eq!(
        decode(&bad).unwrap_err(),
        FormatError::Misaligned {
            index: 36,
            name: "feed-forward up",
            offset: offset - 4
        }
    );
    // Wrong row length.
    let mut bad = a.clone();
    bad[512 + 12..512 + 16].copy_from_slice(&80u32.to_le_bytes());
    let expected = FormatError::Descriptor {
        index: 0,
        name: "token embedding",
        at: 524,
        field: "row length",
        found: 80,
        expected: 72,
    };
    assert_eq!(decode(&bad).unwrap_err(), expected);
}

#[test]
fn wrong_inv_sqrt_head_size() {
    // stories260K: dimension 64, 8 heads, head size 8: round(2^24 / sqrt(8)) = 5,931,642
    // (2^24 / 2.8284271247 = 5931641.6...).
    let mut a = artifact();
    assert_eq!(u32::from_le_bytes(a[68..72].try_into().unwrap()), 5_931_642);
    a[68..72].copy_from_slice(&5_931_641u32.to_le_bytes());
    assert_eq!(
        decode(&a).unwrap_err(),
        FormatError::InvSqrtHeadSize {
            found: 5_931_641,
            expected: 5_931_642
        }
    );
}

#[test]
fn wrong_tag_message_shows_the_bytes_as_text() {
    let mut a = artifact();
    a[6] = 0;
    let message = decode(&a).unwrap_err().to_string();
    assert_eq!(
        message,
        r#"wrong tag at byte 0: expected "CURTAW01", found "CURTAW\x001""#
    );
}

#[test]
fn reserved_header_bytes_must_be_zero() {
    let base = artifact();
    // stories260K: 2 sections (table ends at 128 + 32 = 160), 2 + 7 x 5 = 37 matrices
    // (table ends at 512 + 24 x 37 = 1,400).
    for (offset, value) in [
        (72usize, 1u8),
        (127, 0xff),
        (160, 2),
        (511, 3),
        (1400, 4),
        (4095, 5),
    ] {
        let mut a = base.clone();
        a[offset] = value;
        assert_eq!(
            decode(&a).unwrap_err(),
            FormatError::ReservedNotZero {
                offset,
                found: value
            },
            "byte {offset}"
        );
    }
}

#[test]
fn sorted_ids_and_token_offsets_are_checked_on_access() {
    let mut a = artifact();
    let word = |a: &[u8], at: usize| u32::from_le_bytes(a[at..at + 4].try_into().unwrap()) as usize;
    let (entries, sorted, strings) = (word(&a, 56), word(&a, 60), word(&a, 64));
    a[sorted + 4 * 7..sorted + 4 * 8].copy_from_slice(&512u32.to_le_bytes());
    // Token 3's bytes said to start one byte before the token strings.
    a[entries + 16 * 3 + 8..entries + 16 * 3 + 12]
        .copy_from_slice(&(strings as u32 - 1).to_le_bytes());
    let artifact = decode(&a).unwrap();
    let meta = artifact.metadata();
    assert_eq!(
        meta.sorted_id(7),
        Err(FormatError::SortedIdOutOfRange {
            index: 7,
            id: 512,
            vocab_size: 512
        })
    );
    assert!(meta.sorted_id(6).is_ok());
    assert_eq!(
        meta.token_bytes(3),
        Err(FormatError::TokenOutOfBounds {
            id: 3,
            offset: strings as u64 - 1,
            length: meta.token(3).length as u64,
            strings: strings as u64,
            section_length: artifact.section(0).len() as u64,
        })
    );
}

/// `decode_head` on the file's first `min(length, MAX_SECTION_LEN)` bytes and its length finds
/// what `decode` finds on the whole file: the same metadata, or the same error.
#[test]
fn decode_head_checks_what_decode_checks() {
    use curta_core::{decode_head, MAX_SECTION_LEN};
    fn head_of(a: &[u8]) -> Result<curta_core::Metadata<'_>, FormatError> {
        decode_head(&a[..a.len().min(MAX_SECTION_LEN)], a.len() as u64)
    }
    let a = artifact();
    let whole = decode(&a).unwrap();
    let head = head_of(&a).unwrap();
    assert_eq!(head.bytes(), whole.metadata().bytes());
    assert_eq!(head.config(), whole.config());
    // A longer head (the whole file) is cut at the file's length.
    assert_eq!(
        decode_head(&a, a.len() as u64 - 8).unwrap_err(),
        FormatError::FileLength {
            sections_end: a.len() as u64,
            file_length: a.len() as u64 - 8
        }
    );
    let mut damaged = a.clone();
    damaged[12] = 0xff;
    assert_eq!(
        head_of(&damaged).unwrap_err(),
        decode(&damaged).unwrap_err()
    );
    assert_eq!(
        head_of(&a[..100]).unwrap_err(),
        decode(&a[..100]).unwrap_err()
    );
    let short = &a[..a.len() - 1];
    assert_eq!(head_of(short).unwrap_err(), decode(short).unwrap_err());
    // A file past MAX_SECTION_LEN whose section zero is said to be longer than a section can
    // be: the head holds MAX_SECTION_LEN bytes of it, and both refuse its length.
    let mut big = a.clone();
    big.resize(MAX_SECTION_LEN + 16, 0);
    put64(&mut big, 136, MAX_SECTION_LEN as u64 + 8);
    let error = decode(&big).unwrap_err();
    assert!(
        matches!(error, FormatError::SectionLength { section: 0, .. }),
        "{error}"
    );
    assert_eq!(head_of(&big).unwrap_err(), error);
}
