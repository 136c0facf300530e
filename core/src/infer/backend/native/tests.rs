//! The native backend against exact sums: every kernel set and every split of a stage.

use super::*;
use crate::infer::backend::Matrices;
use crate::infer::fixed::TABLE_LAST;
use crate::infer::forward::stored_dot_plain;
use crate::infer::kernels::portable::halves_dot;
use crate::infer::state::word;
use std::vec::Vec;

/// A CPU with a set's features takes the set: its known-answer check (`available`) passed
/// here, so the tests below run it.
#[test]
fn a_cpu_with_the_features_runs_their_set() {
    #[cfg(target_arch = "x86_64")]
    {
        let avx512 = ["avx512f", "avx512bw", "avx512dq", "avx512vl", "avx512vnni"];
        let has = |f: &str| match f {
            "avx512f" => std::is_x86_feature_detected!("avx512f"),
            "avx512bw" => std::is_x86_feature_detected!("avx512bw"),
            "avx512dq" => std::is_x86_feature_detected!("avx512dq"),
            "avx512vl" => std::is_x86_feature_detected!("avx512vl"),
            "avx512vnni" => std::is_x86_feature_detected!("avx512vnni"),
            _ => std::is_x86_feature_detected!("avx2"),
        };
        if avx512.iter().all(|f| has(f)) {
            assert!(Path::all().contains(&Path::Avx512), "AVX-512 disagreed");
            assert_eq!(Path::detect(), Path::Avx512);
        }
        if has("avx2") {
            assert!(Path::all().contains(&Path::Avx2), "AVX2 disagreed");
        }
    }
}

/// Every kernel set's scores, exponentials and weights equal the portable ones, value by
/// value: head sizes 1 to 64, 1 to 300 positions (every tail of the vector loops), queries
/// of 28 bits (scores saturate) and of 14 (they spread), scales below 2^24 and from 2^31
/// on, the artifact's exponential table, and R = 2^32 (one position).
#[test]
fn every_path_scores_and_weighs_alike() {
    use crate::infer::kernels::portable::Portable;
    let mut seed = 0x9E37_79B9_7F4A_7C15u64;
    let mut next = move || crate::infer::next_random(&mut seed);
    let exp = &crate::EXP_TABLE_BYTES;
    let cases = [
        (8, 1),
        (8, 7),
        (8, 8),
        (8, 9),
        (8, 17),
        (8, 256),
        (48, 33),
        (64, 300),
        (3, 15),
        (13, 16),
        (1, 40),
    ];
    for (round, &(head_size, positions)) in cases.iter().enumerate() {
        let row_len = 4 * (2 * head_size + 1);
        let offset = 4 * (round % 2) * head_size;
        // The keys in the cache's offset binary (state::CACHE_OFFSET).
        let keys: Vec<u8> = (0..positions * row_len / 4)
            .flat_map(|_| (((next() % (1 << 28)) as i32 - (1 << 27)) ^ i32::MIN).to_le_bytes())
            .collect();
        for shift in [0, 14] {
            let q: Vec<u8> = (0..head_size)
                .flat_map(|_| (((next() % (1 << 28)) as i32 - (1 << 27)) >> shift).to_le_bytes())
                .collect();
            let query: Vec<i64> = q.chunks_exact(4).map(|v| word(v) as i64).collect();
            let inv_sqrt = match (round + shift) % 3 {
                0 => next() as u32 | 1 << 31,
                _ => (next() % (1 << 24)) as u32,
            };
            let mut expected = vec![0u8; 4 * positions];
            // SAFETY: the portable set runs everywhere.
            let max = unsafe {
                Portable::scores(&query, &q, &keys, row_len, offset, inv_sqrt, &mut expected)
            };
            let mut exps = expected.clone();
            let reciprocal = unsafe { Portable::softmax(&mut exps, max, exp) };
            let mut weights = vec![0u32; positions];
            unsafe { Portable::weights(&exps, reciprocal, &mut weights) };
            let spread = expected
                .chunks_exact(4)
                .filter(|v| word(v).abs() < 1 << 27)
                .count();
            if shift == 14 && inv_sqrt < 1 << 24 {
                assert!(2 * spread > positions, "case {round}: the scores spread");
            }
            for path in Path::all() {
                let case = format!("{path:?}, case {round}, shift {shift}");
                let mut att = vec![0u8; 4 * positions];
                let got = with_path!(path, K => K::scores(&query, &q, &keys, row_len, offset, inv_sqrt, &mut att));
                assert_eq!((got, &att), (max, &expected), "scores, {case}");
                let r = with_path!(path, K => K::softmax(&mut att, max, exp));
                assert_eq!((r, &att), (reciprocal, &exps), "exponentials, {case}");
                let mut w = vec![0u32; positions];
                with_path!(path, K => K::weights(&att, r, &mut w));
                assert_eq!(w, weights, "weights, {case}");
            }
        }
    }
    // R = 2^32: a single position's exponential is the whole sum.
    for path in Path::all() {
        let mut att = 0i32.to_le_bytes().to_vec();
        let r = with_path!(path, K => K::softmax(&mut att, 0, exp));
        assert_eq!(r, 1 << 32, "{path:?}");
        let mut w = [0u32; 1];
        with_path!(path, K => K::weights(&att, r, &mut w));
        assert_eq!(w[0], 1 << 30, "{path:?}");
    }
}

/// Every kernel set this machine runs (portable, AVX2, AVX-512 VNNI) gives the same exact
/// row sums as Σ w × x in i64 — one row ([`Kernels::dot`]), four rows
/// ([`Kernels::dot4`]), the products of four and of eight ([`Kernels::products4`],
/// [`Kernels::products8`]: scales over the whole u32 range, biases of either sign), and
/// whole matrix stages ([`write_rows`], every `Write`, rows in and past fours, split across
/// threads) — at the extremes of the ranges and on seeded
/// random rows of every tail length up to 2,048 columns.
#[test]
fn every_kernel_gives_the_same_integers() {
    let mut seed = 0x9E37_79B9_7F4A_7C15u64;
    let mut next = move || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed
    };
    let extremes = [
        1 << 27,
        -(1 << 27),
        (1 << 27) - 1,
        -32_769,
        32_768,
        0,
        -129,
        128,
    ];
    let paths = Path::all();
    for n in [
        1usize, 7, 8, 15, 16, 17, 23, 24, 25, 31, 32, 33, 63, 64, 65, 100, 127, 128, 172, 255, 256,
        257, 263, 264, 272, 279, 288, 768, 2047, 2048,
    ] {
        for round in 0..6 {
            let weights: Vec<Vec<u8>> = (0..8)
                .map(|r| {
                    (0..n)
                        .map(|i| match round {
                            0 | 4 => 255,
                            5 => (r * 51) as u8,
                            _ => (next() >> (i % 8)) as u8,
                        })
                        .collect()
                })
                .collect();
            let x: Vec<i32> = (0..n)
                .map(|i| match round {
                    0 => 1 << 27,
                    1 => -(1 << 27),
                    2 => extremes[i % extremes.len()],
                    // Every low half at −2^15: Σ b × lo of a whole row leaves i32.
                    4 => -32_768,
                    _ => (next() % (1 << 28)) as i32 - (1 << 27),
                })
                .collect();
            let bytes: Vec<u8> = x.iter().flat_map(|v| v.to_le_bytes()).collect();
            let expected: Vec<i64> = weights
                .iter()
                .map(|w| w.iter().zip(&x).map(|(&w, &v)| w as i64 * v as i64).sum())
                .collect();
            assert_eq!(
                stored_dot_plain(&weights[0], &bytes),
                expected[0],
                "plain, {n}"
            );
            // The products' rule in i128: round((dot − bias) × scale / 2^24), halves up,
            // saturated; scales over the whole u32 range, biases of either sign.
            let scales = [1, next() as u32, next() as u32 | 1 << 31, u32::MAX];
            let scales8: [u32; 8] = core::array::from_fn(|r| match r {
                0..4 => scales[r],
                4 => 1 << 24,
                _ => next() as u32,
            });
            let bias = match round {
                0 => 0,
                1 => -(1i64 << 45),
                _ => (next() % (1 << 46)) as i64 - (1 << 45),
            };
            let finished: [i32; 8] = core::array::from_fn(|r| {
                let v = (expected[r] - bias) as i128 * scales8[r] as i128;
                ((v + (1 << 23)) >> 24).clamp(-(1 << 27), 1 << 27) as i32
            });
            for &path in &paths {
                let mut scratch = Scratch::with(path, 1);
                let input = Native::input(&bytes, 0, &mut scratch);
                assert_eq!(input.path, path);
                let x = &input.vector;
                if path == Path::Portable {
                    assert_eq!(halves_dot(&weights[0], x.hi, x.lo), expected[0]);
                }
                let rows8: [&[u8]; 8] = core::array::from_fn(|r| &weights[r][..]);
                let rows = [rows8[0], rows8[1], rows8[2], rows8[3]];
                let (one, four, products, products8) = with_path!(path, K => (
                    weights.iter().map(|w| K::dot(x, w)).collect::<Vec<_>>(),
                    K::dot4(x, rows),
                    K::products4(x, rows, scales, bias),
                    K::products8(x, rows8, scales8, bias),
                ));
                assert_eq!(one, expected, "{path:?} dot, {n} columns, round {round}");
                assert_eq!(four[..], expected[..4], "{path:?} dot4, {n}, round {round}");
                assert_eq!(
                    products[..],
                    finished[..4],
                    "{path:?} products4, {n}, {round}"
                );
                assert_eq!(
                    products8, finished,
                    "{path:?} products8, {n}, round {round}"
                );
            }
        }
    }
}

/// A matrix of `rows` rows of `columns` seeded weights and scales, as the format lays it
/// out (a 4-byte scale, then the weights from ROW_WEIGHTS_OFFSET, rows 8-byte aligned).
fn matrix(rows: usize, columns: usize, seed: &mut u64) -> (Vec<u8>, usize) {
    let row_bytes = (crate::ROW_WEIGHTS_OFFSET + columns).next_multiple_of(8);
    let mut bytes = vec![0u8; rows * row_bytes];
    for row in bytes.chunks_exact_mut(row_bytes) {
        let scale = (crate::infer::next_random(seed) % (1 << 24)) as u32;
        row[..4].copy_from_slice(&scale.to_le_bytes());
        for w in &mut row[crate::ROW_WEIGHTS_OFFSET..crate::ROW_WEIGHTS_OFFSET + columns] {
            *w = crate::infer::next_random(seed) as u8;
        }
    }
    (bytes, row_bytes)
}

/// [`write_rows`] gives the same words on every path, with 1 to 3 threads, for every
/// `Write`, whole stages and ranges that start and end mid-matrix.
#[test]
fn every_path_and_split_of_a_stage_writes_the_same_words() {
    let mut seed = 0x1234_5678_9ABC_DEF1u64;
    let table: Vec<u8> = (0..=TABLE_LAST as u64)
        .flat_map(|i| ((i as i32 * 331) - 700_000).to_le_bytes())
        .collect();
    for (rows, columns) in [
        (5, 7),
        (512, 64),
        (172, 64),
        (64, 172),
        (1031, 288),
        (9, 2048),
    ] {
        let (bytes, row_bytes) = matrix(rows, columns, &mut seed);
        let m = Rows {
            bytes: &bytes,
            columns,
            row_bytes,
        };
        let x: Vec<u8> = (0..columns)
            .flat_map(|_| {
                let v = (crate::infer::next_random(&mut seed) % (1 << 28)) as i32 - (1 << 27);
                v.to_le_bytes()
            })
            .collect();
        let sum: i64 = x.chunks_exact(4).map(|v| word(v) as i64).sum();
        let start: Vec<u8> = (0..rows)
            .flat_map(|_| ((crate::infer::next_random(&mut seed) % (1 << 22)) as i32).to_le_bytes())
            .collect();
        for range in [0..rows, 1..rows, 0..rows.min(3), rows / 3..rows - rows / 4] {
            for write in [Write::Set, Write::Add, Write::Gate(&table)] {
                // The reference: one row at a time, the plain sum.
                let mut expected = start.clone();
                let mut scratch = Scratch::with(Path::Portable, 1);
                let input = Native::input(&x, sum, &mut scratch);
                for r in range.clone() {
                    let (scale, w) = m.row(r);
                    let v = input.finish(stored_dot_plain(w, &x), scale);
                    write.apply(&mut expected, r, v);
                }
                for &path in &Path::all() {
                    for threads in 1..=3 {
                        let mut scratch = Scratch::with(path, threads);
                        let input = Native::input(&x, sum, &mut scratch);
                        let mut out = start.clone();
                        Native::write_rows(&m, range.clone(), &input, &mut out, write);
                        assert!(
                            out == expected,
                            "{path:?}, {threads} threads, {rows} × {columns}, {range:?}"
                        );
                    }
                }
            }
        }
    }
}

/// [`write_products`] in one split gives every product's words as its matrices in turn,
/// row by row: products of several matrices over one output (the gate, then the up rows),
/// of other row counts and ranges, one too small to share out, on every path and 1 to 3
/// threads (their work together past the split's threshold).
#[test]
fn products_in_one_split_write_what_their_matrices_write_in_turn() {
    let mut seed = 0x0DDB_A11C_AFE5_EED5u64;
    let columns = 288;
    let table: Vec<u8> = (0..=TABLE_LAST as u64)
        .flat_map(|i| ((i as i32 * 331) - 700_000).to_le_bytes())
        .collect();
    let stored: Vec<(Vec<u8>, usize)> = [300, 200, 200, 5]
        .map(|rows| matrix(rows, columns, &mut seed))
        .into();
    let m: Vec<Rows> = stored
        .iter()
        .map(|(bytes, row_bytes)| Rows {
            bytes,
            columns,
            row_bytes: *row_bytes,
        })
        .collect();
    let x: Vec<u8> = (0..columns)
        .flat_map(|_| {
            ((crate::infer::next_random(&mut seed) % (1 << 28)) as i32 - (1 << 27)).to_le_bytes()
        })
        .collect();
    let sum: i64 = x.chunks_exact(4).map(|v| word(v) as i64).sum();
    let first = [(m[0], Write::Set)];
    let gated = [(m[1], Write::Set), (m[2], Write::Gate(&table))];
    let small = [(m[3], Write::Add)];
    let products: [(&Matrices, core::ops::Range<usize>); 3] =
        [(&first, 0..300), (&gated, 7..190), (&small, 0..5)];
    assert!(300 * columns + 2 * 183 * columns + 5 * columns >= PARALLEL_WORK);
    let start = |rows: usize, seed: &mut u64| -> Vec<u8> {
        (0..rows)
            .flat_map(|_| ((crate::infer::next_random(seed) % (1 << 22)) as i32).to_le_bytes())
            .collect()
    };
    let outs: Vec<Vec<u8>> = products
        .iter()
        .map(|(_, r)| start(r.len(), &mut seed))
        .collect();
    // The reference: each product's matrices in turn, one row at a time, the plain sum.
    let mut expected = outs.clone();
    let mut scratch = Scratch::with(Path::Portable, 1);
    let input = Native::input(&x, sum, &mut scratch);
    for ((matrices, range), out) in products.iter().zip(&mut expected) {
        for &(m, write) in matrices.iter() {
            for r in range.clone() {
                let (scale, w) = m.row(r);
                let v = input.finish(stored_dot_plain(w, &x), scale);
                write.apply(out, r - range.start, v);
            }
        }
    }
    for &path in &Path::all() {
        for threads in 1..=3 {
            let mut scratch = Scratch::with(path, threads);
            let input = Native::input(&x, sum, &mut scratch);
            let mut got = outs.clone();
            let mut all: Vec<Product> = products
                .iter()
                .zip(&mut got)
                .map(|((matrices, range), out)| Product::new(matrices, range.clone(), out))
                .collect();
            Native::write_products(&mut all, &input);
            assert!(got == expected, "{path:?}, {threads} threads");
        }
    }
}

/// The byte planes of AVX-512 give back every value of the activations' range.
#[cfg(all(feature = "std", target_arch = "x86_64"))]
#[test]
fn the_digits_give_back_the_value() {
    use crate::infer::kernels::avx512::digits;
    let mut seed = 7u64;
    let values = (0..100_000)
        .map(|_| (crate::infer::next_random(&mut seed) % (1 << 28)) as i32 - (1 << 27))
        .chain([
            1 << 27,
            -(1 << 27),
            0,
            -1,
            127,
            128,
            -128,
            -129,
            32_767,
            -32_768,
        ]);
    for x in values {
        let d = digits(x);
        let back = d[0] as i64 + ((d[1] as i64) << 8) + ((d[2] as i64) << 16);
        assert_eq!(back + ((d[3] as i64) << 24), x as i64, "{x}");
        assert!((-8..=8).contains(&d[3]), "{x}");
    }
}
