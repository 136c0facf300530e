//! The backends against each other: the SBF backend (its assembly's Rust stand-in) and every
//! kernel set of the native one give the same bytes.

use super::native::{head::attention_head_on, Native};
use super::sbf::{attention_head_rows, Sbf};
use super::{Backend, Head};
use crate::infer::fixed::TABLE_LAST;
use crate::infer::forward::Write;
use crate::infer::kernels::Path;
use crate::infer::model::Rows;
use crate::infer::next_random;
use std::format;
use std::vec::Vec;

/// The program's head (its assembly's Rust stand-in, `kernels/sbf_stand_in.rs`) and every off-chain
/// kernel set's head this machine runs (portable, AVX2, AVX-512) give the same bytes (outputs and
/// the att scratch) and sum: seeded random caches at the ends of the value range, head sizes 1 to
/// 64 (whole groups of four and remainders), grouped key heads, up to 300 positions, an exponential
/// table whose entries use all 32 bits and one that starts at 2^30 as the artifact's does (where a
/// single position makes R = 2^32), and scales (header byte 68) below 2^24 and from 2^31 on.
#[test]
fn the_programs_head_is_the_portable_head() {
    let mut seed = 0x2545_F491_4F6C_DD1Du64;
    let mut next = move || next_random(&mut seed);
    let table = |top: u64| -> Vec<u8> {
        (0..=TABLE_LAST as u64)
            .flat_map(|i| ((top >> (i / 128)) as u32).to_le_bytes())
            .collect()
    };
    let (wide, artifact_like) = (table(u32::MAX as u64), table(1 << 30));
    let cases = [
        (1, 1, 1),
        (8, 4, 1),
        (8, 4, 65),
        (48, 6, 256),
        (64, 2, 300),
        (6, 3, 7),
        (2, 1, 9),
        (10, 2, 33),
        (8, 4, 1),
        (16, 2, 17),
        (48, 1, 9),
    ];
    for (round, &(head_size, kv_heads, positions)) in cases.iter().enumerate() {
        let exp = if round % 2 == 0 {
            &wide
        } else {
            &artifact_like
        };
        let kv_dim = head_size * kv_heads;
        let mut value = |i: u64| -> i32 {
            match (round + i as usize) % 5 {
                0 => 1 << 27,
                1 => -(1 << 27),
                _ => (next() % (1 << 28)) as i32 - (1 << 27),
            }
        };
        // The caches in their offset binary (state::CACHE_OFFSET).
        let keys: Vec<u8> = (0..(positions * kv_dim) as u64)
            .flat_map(|i| (value(i) ^ i32::MIN).to_le_bytes())
            .collect();
        let values: Vec<u8> = (0..(positions * kv_dim) as u64)
            .flat_map(|i| (value(i) ^ i32::MIN).to_le_bytes())
            .collect();
        // In odd rounds a query of 16 bits, so that the scores spread instead of saturating.
        let query: Vec<u8> = (0..head_size as u64)
            .flat_map(|i| (value(i) >> (12 * (round % 2))).to_le_bytes())
            .collect();
        let inv_sqrt = match round % 3 {
            2 => next() as u32 | 1 << 31,
            _ => (next() % (1 << 24)) as u32,
        };
        for kv_head in 0..kv_heads {
            let (mut att_a, mut out_a) = (vec![0u8; 4 * positions], vec![0u8; 4 * head_size]);
            let (mut att_b, mut out_b) = (att_a.clone(), out_a.clone());
            // Every head takes the same arguments.
            macro_rules! head {
                ($att:expr, $out:expr) => {
                    &mut Head {
                        query: &query,
                        keys: &keys,
                        values: &values,
                        row_len: 4 * kv_dim,
                        offset: 4 * kv_head * head_size,
                        positions,
                        inv_sqrt,
                        exp,
                        att: $att,
                        out: $out,
                    }
                };
            }
            let portable = attention_head_on(Path::Portable, head!(&mut att_a, &mut out_a));
            let program = attention_head_rows(head!(&mut att_b, &mut out_b));
            for path in Path::all() {
                let (mut att_c, mut out_c) = (vec![0u8; 4 * positions], vec![0u8; 4 * head_size]);
                let sum = attention_head_on(path, head!(&mut att_c, &mut out_c));
                let case = format!("{path:?}, case {round}, kv head {kv_head}");
                assert_eq!(sum, portable, "sum, {case}");
                assert_eq!(out_c, out_a, "outputs, {case}");
                assert_eq!(att_c, att_a, "att, {case}");
            }
            assert_eq!(program, portable, "sum, case {round}, kv head {kv_head}");
            assert_eq!(out_b, out_a, "outputs, case {round}, kv head {kv_head}");
            // The scratch is state too: both leave the exponentials in it.
            assert_eq!(att_b, att_a, "att, case {round}, kv head {kv_head}");
        }
    }
}

/// The SBF backend's row loop (three rows a turn, then two or one) writes the words of the
/// native backend's portable rows: every `Write`, ranges of every remainder, starting and
/// ending mid-matrix, products that do not saturate.
#[test]
fn the_programs_rows_are_the_portable_rows() {
    let mut seed = 0x5EED_0FCA_FE01_u64;
    let mut next = move || next_random(&mut seed);
    let table: Vec<u8> = (0..=TABLE_LAST as u64)
        .flat_map(|i| ((i as i32 * 331) - 700_000).to_le_bytes())
        .collect();
    for (rows, columns) in [(1, 1), (7, 33), (64, 64), (10, 288), (5, 2048)] {
        let row_bytes = (crate::ROW_WEIGHTS_OFFSET + columns).next_multiple_of(8);
        let mut bytes = std::vec![0u8; rows * row_bytes];
        for row in bytes.chunks_exact_mut(row_bytes) {
            row[..4].copy_from_slice(&((next() % (1 << 18)) as u32).to_le_bytes());
            for w in &mut row[crate::ROW_WEIGHTS_OFFSET..crate::ROW_WEIGHTS_OFFSET + columns] {
                *w = next() as u8;
            }
        }
        let m = Rows {
            bytes: &bytes,
            columns,
            row_bytes,
        };
        // Inputs and scales small enough that the products do not saturate.
        let x: Vec<u8> = (0..columns)
            .flat_map(|_| ((next() % (1 << 21)) as i32 - (1 << 20)).to_le_bytes())
            .collect();
        let sum = x
            .chunks_exact(4)
            .map(|v| crate::infer::state::word(v) as i64)
            .sum();
        let start: Vec<u8> = (0..rows)
            .flat_map(|_| ((next() % (1 << 22)) as i32).to_le_bytes())
            .collect();
        let ranges = [0..rows, 1..rows, rows / 2..rows, 0..rows.min(2), rows..rows];
        for range in ranges {
            for write in [Write::Set, Write::Add, Write::Gate(&table)] {
                let mut scratch =
                    Native::scratch(Native::with_path(Native::options(), Path::Portable));
                let input = Native::input(&x, sum, &mut scratch);
                let mut expected = start.clone();
                Native::write_rows(&m, range.clone(), &input, &mut expected, write);
                let mut scratch = Sbf::scratch(());
                let input = Sbf::input(&x, sum, &mut scratch);
                let mut got = start.clone();
                Sbf::write_rows(&m, range.clone(), &input, &mut got, write);
                assert!(got == expected, "{rows} × {columns}, {range:?}");
                if !range.is_empty() {
                    assert!(
                        got != start || rows == 1,
                        "{rows} × {columns}: words unchanged"
                    );
                }
            }
        }
    }
}
