//! Section zeros that would trap a run (issue 26): an exponential table other than the spec's
//! and a block at an offset that is not a multiple of 4 are refused by the reader (as by the
//! program's seal); token entries outside the token strings or over 128 bytes read as no bytes,
//! so a run that produces such a token goes on and its text leaves the token out.

mod common;
use common::*;
use curta_core::infer::{decode, encode, Model, Progress, Run, Settings, Status};
use curta_core::{decode as decode_artifact, FormatError};

fn artifact() -> Vec<u8> {
    curta_core::convert::convert(&read_model("stories260K.bin"), &read_model("tok512.bin")).unwrap()
}

fn put32(b: &mut [u8], at: usize, v: u32) {
    b[at..at + 4].copy_from_slice(&v.to_le_bytes());
}

/// e^(-i/256) with 30 fractional bits, rounded half away from zero, computed here.
fn spec_exp(i: usize) -> u32 {
    ((-(i as f64) / 256.0).exp() * (1u64 << 30) as f64).round() as u32
}

#[test]
fn an_exponential_table_other_than_the_spec_s_is_refused() {
    let a = artifact();
    let exp = u32le(&a, 48) as usize;
    for (index, value) in [
        (0usize, 0u32),
        (1, spec_exp(1) + 1),
        (4096, spec_exp(4096) - 1),
    ] {
        let mut bad = a.clone();
        put32(&mut bad, exp + 4 * index, value);
        assert_eq!(
            decode_artifact(&bad).unwrap_err(),
            FormatError::ExpTable {
                index,
                found: value,
                expected: spec_exp(index),
            }
        );
    }
    assert!(decode_artifact(&a).is_ok());
}

#[test]
fn a_table_block_at_an_offset_not_a_multiple_of_4_is_refused() {
    // The token strings 4 bytes later (their offset needs no alignment), the sorted ids 2
    // bytes later: no block overlaps another, the sorted ids are misaligned.
    let mut a = artifact();
    let (sorted, strings) = (u32le(&a, 60), u32le(&a, 64));
    put32(&mut a, 64, strings + 4);
    assert!(
        decode_artifact(&a).is_ok(),
        "token strings need no alignment"
    );
    put32(&mut a, 60, sorted + 2);
    assert_eq!(
        decode_artifact(&a).unwrap_err(),
        FormatError::BlockMisaligned {
            block: "sorted token ids",
            field: 60,
            offset: sorted as u64 + 2,
        }
    );
}

/// The greedy run of `prompt` to its end: the generated tokens and the text, each token's
/// piece decoded after the token before it.
fn greedy(artifact: &[u8], prompt: &[u32], steps: u32) -> (Vec<u32>, Vec<Vec<u8>>) {
    let artifact = decode_artifact(artifact).unwrap();
    let model = Model::from_artifact(&artifact).unwrap();
    let mut state = vec![0u8; curta_core::infer::state_len(&model.config())];
    let mut run = Run::start(&mut state, &model, prompt, steps, Settings::greedy()).unwrap();
    let (mut tokens, mut pieces) = (vec![], vec![]);
    loop {
        match run.advance(&model, 1 << 40).unwrap() {
            Progress::Token { pos, id } => {
                tokens.push(id);
                let piece = decode(artifact.metadata(), run.token(pos - 1), id).unwrap();
                pieces.push(piece.bytes().to_vec());
            }
            Progress::Finished(Status::Running) => unreachable!(),
            Progress::Finished(_) => break,
            _ => {}
        }
    }
    (tokens, pieces)
}

#[test]
fn a_token_entry_outside_the_strings_or_over_128_bytes_decodes_to_nothing() {
    let a = artifact();
    let (tokens, pieces) = greedy(&a, &[1], 24);
    // A token the run produces (not the first: its piece loses no leading space), with text.
    let k = (1..tokens.len())
        .find(|&k| !pieces[k].is_empty() && tokens[k] > 258)
        .unwrap();
    let id = tokens[k];
    let entries = u32le(&a, 56) as usize;
    let zero_len = u64le(&a, 136) as u32;
    let strings = u32le(&a, 64);
    // (length, offset) of the entry: over 128 bytes; past section zero's end; before the
    // token strings; the offset and length wrapping past 2^32.
    for (length, offset) in [
        (129, strings),
        (4, zero_len - 2),
        (4, strings - 4),
        (u32::MAX, u32::MAX),
    ] {
        let mut bad = a.clone();
        put32(&mut bad, entries + 16 * id as usize + 4, length);
        put32(&mut bad, entries + 16 * id as usize + 8, offset);
        // The reader accepts it (entries are not checked when section zero is read).
        let decoded = decode_artifact(&bad).unwrap();
        assert!(matches!(
            decoded.metadata().token_bytes(id),
            Err(FormatError::TokenOutOfBounds { .. })
        ));
        assert_eq!(decoded.metadata().token_text(id), b"");
        // The run is the same token for token; the text leaves out this token's pieces.
        let (bad_tokens, bad_pieces) = greedy(&bad, &[1], 24);
        assert_eq!(bad_tokens, tokens);
        for (t, (good, bad)) in tokens.iter().zip(pieces.iter().zip(&bad_pieces)) {
            if *t == id {
                assert!(bad.is_empty());
            } else {
                assert_eq!(good, bad);
            }
        }
        // A prompt that holds the token's text still encodes (the bad entry reads as empty).
        let text = std::str::from_utf8(&pieces[k]).unwrap_or("a").to_string();
        let mut out = vec![0u32; text.len() + 2];
        encode(decoded.metadata(), text.as_bytes(), &mut out).unwrap();
    }
}
