//! The integer run: any split of the work gives the same state bytes and tokens; every layout
//! (two sections, L + 2 sections, tied and untied, grouped-query heads) runs through its
//! descriptors; the tokenizer against llama2.c's algorithm written here over the tokenizer
//! file's float scores; decoding; and every refused input with its error.

mod common;
use common::*;
use curta_core::convert::{convert, synth};
use curta_core::infer::{
    decode as decode_token, encode, encode_in, encode_scratch_len, state_len, EncodeItem, Encoding,
    Model, Path, Piece, Progress, Run, RunError, Settings, Stage, Status,
};
use curta_core::{decode, Config};

fn stories260k() -> Vec<u8> {
    convert(&read_model("stories260K.bin"), &read_model("tok512.bin")).unwrap()
}

fn synthetic(config: &Config, tied: bool, seed: u64) -> Vec<u8> {
    let checkpoint = synth::checkpoint(config, tied, seed);
    convert(&checkpoint, &synth::tokenizer(config.vocab_size, seed)).unwrap()
}

/// Runs to the end with `budget` per advance; returns the generated ids and the final state.
fn generate(
    art: &[u8],
    prompt: &[u32],
    steps: u32,
    settings: Settings,
    budget: u64,
) -> (Vec<u32>, Vec<u8>) {
    let a = decode(art).unwrap();
    let model = Model::from_artifact(&a).unwrap();
    let mut state = vec![0u8; state_len(&model.config())];
    let mut run = Run::start(&mut state, &model, prompt, steps, settings).unwrap();
    let mut out = Vec::new();
    loop {
        match run.advance(&model, budget).unwrap() {
            Progress::Token { id, pos } => {
                assert_eq!(pos as usize, prompt.len() + out.len());
                out.push(id);
            }
            Progress::Finished(_) => break,
            Progress::Working => {}
            Progress::Scored { .. } => panic!("scored while generating"),
        }
    }
    (out, state)
}

fn sampled(seed: u64) -> Settings {
    Settings {
        temperature: 58_982, // 0.9
        top_p: 58_982,
        seed,
    }
}

#[test]
fn stories260k_greedy_and_sampled_runs_end_as_documented() {
    let art = stories260k();
    let (greedy, _) = generate(&art, &[1], 40, Settings::greedy(), u64::MAX);
    eprintln!("greedy: {greedy:?}");
    assert!(!greedy.is_empty() && greedy.len() <= 40);
    // Every token but the last is neither 1 nor 2; a run shorter than its steps ends on one.
    let (last, rest) = greedy.split_last().unwrap();
    assert!(rest.iter().all(|&t| t != 1 && t != 2));
    assert!(greedy.len() == 40 || *last == 1 || *last == 2);
    let (a, _) = generate(&art, &[1], 40, sampled(7), u64::MAX);
    let (b, _) = generate(&art, &[1], 40, sampled(7), u64::MAX);
    let (c, _) = generate(&art, &[1], 40, sampled(8), u64::MAX);
    eprintln!("seed 7: {a:?}\nseed 8: {c:?}");
    assert_eq!(a, b, "a seed gives the same tokens");
    assert_ne!(a, c, "another seed gives other tokens");
}

/// Budgets from a seeded generator, from 1 (one item per advance) up to `max`.
fn random_budgets(seed: u64, max: u64) -> impl FnMut() -> u64 {
    let mut rng = synth::Rng::new(seed);
    move || match rng.below(4) {
        0 => 1,
        1 => 1 + rng.below(64),
        _ => 1 + rng.below(max),
    }
}

/// Runs with a new budget drawn before every advance.
fn generate_split(
    art: &[u8],
    prompt: &[u32],
    steps: u32,
    settings: Settings,
    seed: u64,
    max: u64,
) -> (Vec<u32>, Vec<u8>, usize) {
    let a = decode(art).unwrap();
    let model = Model::from_artifact(&a).unwrap();
    let mut state = vec![0u8; state_len(&model.config())];
    let mut run = Run::start(&mut state, &model, prompt, steps, settings).unwrap();
    let mut budget = random_budgets(seed, max);
    let (mut out, mut advances) = (Vec::new(), 0);
    loop {
        advances += 1;
        match run.advance(&model, budget()).unwrap() {
            Progress::Token { id, .. } => out.push(id),
            Progress::Finished(_) => break,
            _ => {}
        }
    }
    (out, state, advances)
}

#[test]
fn any_split_of_the_work_gives_the_same_state_and_tokens() {
    // (name, artifact, prompt, steps, the largest budget: a fraction of a token's work)
    type Case = (&'static str, Vec<u8>, Vec<u32>, u32, u64);
    let cases: Vec<Case> = vec![
        ("stories260K", stories260k(), vec![1, 67, 300], 12, 5_000),
        (
            "gqa untied",
            synthetic(&synth::GQA, false, 5),
            vec![1, 9],
            10,
            5_000,
        ),
        (
            "tiny tied",
            synthetic(&synth::TINY, true, 3),
            vec![1],
            4,
            40,
        ),
    ];
    for (name, art, prompt, steps, max) in cases {
        for (settings, split_seed) in [(Settings::greedy(), 1), (sampled(11), 2), (sampled(12), 3)]
        {
            let (whole, whole_state) = generate(&art, &prompt, steps, settings, u64::MAX);
            let (split, split_state, advances) =
                generate_split(&art, &prompt, steps, settings, split_seed, max);
            assert_eq!(split, whole, "{name}: tokens");
            assert!(split_state == whole_state, "{name}: state bytes differ");
            assert!(
                advances > whole.len() * 3,
                "{name}: the split advanced {advances} times"
            );
        }
    }
}

/// Four heads of 64 values, two key and value heads, one layer; context 160.
const WIDE_HEADS: Config = Config {
    dim: 256,
    hidden_dim: 64,
    layers: 1,
    heads: 4,
    kv_heads: 2,
    vocab_size: 259,
    context_length: 160,
};

/// Every kernel set this machine runs (portable, AVX2, AVX-512) and every thread count give
/// the same tokens and state bytes, whole runs and split ones (the program, the CLI and the
/// browser must agree on every bit).
#[test]
fn every_kernel_path_and_thread_count_gives_the_same_run() {
    let cases: Vec<(&str, Vec<u8>, Vec<u32>, u32)> = vec![
        ("stories260K", stories260k(), vec![1, 67, 300], 24),
        (
            "gqa untied",
            synthetic(&synth::GQA, false, 5),
            vec![1, 9],
            16,
        ),
        // Heads of 64 values: from position 127 on a layer's heads are enough work to be
        // split across threads (2 × 4 heads × 64 values × 128 positions = 2^16).
        ("wide heads", synthetic(&WIDE_HEADS, false, 7), vec![1], 136),
        ("tiny tied", synthetic(&synth::TINY, true, 3), vec![1], 4),
    ];
    for (name, art, prompt, steps) in cases {
        let a = decode(&art).unwrap();
        let model = Model::from_artifact(&a).unwrap();
        for settings in [Settings::greedy(), sampled(21)] {
            let (expected, expected_state) = generate(&art, &prompt, steps, settings, u64::MAX);
            for path in Path::all() {
                for (threads, budget) in [(1, u64::MAX), (2, u64::MAX), (3, 3_000), (1, 700)] {
                    let mut state = vec![0u8; state_len(&model.config())];
                    let mut tokens = Vec::new();
                    let mut run = Run::start(&mut state, &model, &prompt, steps, settings)
                        .unwrap()
                        .with_path(path)
                        .with_threads(threads);
                    loop {
                        match run.advance(&model, budget).unwrap() {
                            Progress::Token { id, .. } => tokens.push(id),
                            Progress::Finished(_) => break,
                            _ => {}
                        }
                    }
                    let case = format!("{name}, {path:?}, {threads} threads, budget {budget}");
                    assert_eq!(tokens, expected, "{case}: tokens");
                    assert!(state == expected_state, "{case}: state bytes differ");
                }
            }
        }
    }
}

/// llama2.c's encode written here over the tokenizer file (float scores, a map from bytes to
/// the lowest id), independent of the artifact's sorted ids and score keys.
fn reference_encode(tokens: &[(f32, Vec<u8>)], text: &[u8]) -> Vec<u32> {
    let mut ids = std::collections::HashMap::new();
    for (id, (_, bytes)) in tokens.iter().enumerate().rev() {
        ids.insert(bytes.clone(), id as u32);
    }
    let mut out = vec![1];
    if !text.is_empty() {
        out.push(ids[&b" ".to_vec()]);
    }
    let mut i = 0;
    while i < text.len() {
        let mut j = i + 1;
        while j < text.len() && text[j] & 0xC0 == 0x80 && j - i < 4 {
            j += 1;
        }
        match ids.get(&text[i..j]) {
            Some(&id) => out.push(id),
            None => out.extend(text[i..j].iter().map(|&b| b as u32 + 3)),
        }
        i = j;
    }
    loop {
        let mut best: Option<(f32, usize, u32)> = None;
        for k in 0..out.len().saturating_sub(1) {
            let mut pair = tokens[out[k] as usize].1.clone();
            pair.extend_from_slice(&tokens[out[k + 1] as usize].1);
            if let Some(&id) = ids.get(&pair) {
                let score = tokens[id as usize].0;
                if best.is_none_or(|(s, _, _)| score > s) {
                    best = Some((score, k, id));
                }
            }
        }
        let Some((_, k, id)) = best else { break };
        out[k] = id;
        out.remove(k + 1);
    }
    out
}

#[test]
fn prompts_encode_as_llama2c_does() {
    let prompts: [&[u8]; 8] = [
        b"",
        b"Once upon a time, there was a little girl",
        b"e4 e5 Nf3 Nc6 Bb5 a6",
        "caf\u{e9} \u{1F600} na\u{ef}ve".as_bytes(),
        b"  two spaces\nand a newline\t",
        b"\xff\xfe stray bytes \x80",
        b"1. d4 d5 2. c4 e6 3. Nc3 Nf6 4. Bg5 Be7",
        b"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
    ];
    let cases = [(
        "tok512",
        stories260k(),
        read_tokenizer(&read_model("tok512.bin"), 512),
    )];
    let big = {
        let tokenizer = read_model("tokenizer.bin");
        let shape = Config {
            vocab_size: 32_000,
            ..synth::TINY
        };
        let checkpoint = synth::checkpoint(&shape, true, 1);
        (
            convert(&checkpoint, &tokenizer).unwrap(),
            read_tokenizer(&tokenizer, 32_000),
        )
    };
    for (name, art, tokens) in cases.into_iter().chain([("tokenizer.bin", big.0, big.1)]) {
        let a = decode(&art).unwrap();
        for prompt in prompts {
            let mut out = vec![0u32; prompt.len() + 2];
            let n = encode(a.metadata(), prompt, &mut out).unwrap();
            assert_eq!(
                out[..n],
                reference_encode(&tokens, prompt)[..],
                "{name}: {prompt:?}"
            );
            // Decoding gives the prompt back after its space prefix (llama2.c drops the space
            // after token 1), except where the prompt had no token and went to bytes.
            let mut text = Vec::new();
            for w in out[..n].windows(2) {
                text.extend_from_slice(decode_token(a.metadata(), w[0], w[1]).unwrap().bytes());
            }
            assert_eq!(text, prompt, "{name}: {prompt:?} decodes back");
        }
        let mut short = [0u32; 3];
        assert_eq!(
            encode(a.metadata(), b"abc", &mut short),
            Err(RunError::TokenBuffer { len: 3, needed: 5 })
        );
    }
}

/// The tiny synthetic model with llama2.c's 32,000-token tokenizer.bin (which merges much).
fn tiny_with_tokenizer_bin() -> Vec<u8> {
    let shape = Config {
        vocab_size: 32_000,
        ..synth::TINY
    };
    convert(
        &synth::checkpoint(&shape, true, 1),
        &read_model("tokenizer.bin"),
    )
    .unwrap()
}

/// A random text of at least `len` bytes: words of the stories, random bytes and UTF-8.
fn random_text(rng: &mut synth::Rng, len: usize) -> Vec<u8> {
    const WORDS: [&[u8]; 16] = [
        b"Once", b" upon", b" a", b" time", b",", b" there", b" was", b" little", b" girl",
        b" named", b" Lily", b".", b"\n", b" She", b" loved", b" aaaa",
    ];
    let mut text = Vec::new();
    while text.len() < len {
        match rng.below(10) {
            0 => text.push(rng.below(256) as u8),
            1 => text.extend_from_slice("\u{e9}\u{1F600}".as_bytes()),
            _ => text.extend_from_slice(WORDS[rng.below(16) as usize]),
        }
    }
    text
}

/// The program's encoding (`encode_in`: candidates kept between rounds, pairs cached) gives
/// `encode`'s ids
/// for the prompts above, random texts of every length up to 1,300 bytes (words of the
/// stories, random bytes and UTF-8, repeated letters), on tok512 and the 32,000-token
/// tokenizer.bin.
#[test]
fn the_programs_encoding_is_encode() {
    let big = tiny_with_tokenizer_bin();
    let mut rng = synth::Rng::new(26);
    for art in [stories260k(), big] {
        let a = decode(&art).unwrap();
        for round in 0..150 {
            let len = match round % 3 {
                0 => rng.below(40) as usize,
                1 => rng.below(400) as usize,
                _ => 1_000 + rng.below(300) as usize,
            };
            let text = random_text(&mut rng, len);
            let mut want = vec![0u32; text.len() + 2];
            let expected = encode(a.metadata(), &text, &mut want).map(|n| want[..n].to_vec());
            let mut out = vec![0u32; text.len() + 2];
            // With no pair cache, a small one (collisions) and the full one.
            let extra = [0, 8, 800, 40_000][round % 4];
            let mut scratch = vec![0xA5u8; encode_scratch_len(text.len()) + extra];
            let got =
                encode_in(a.metadata(), &text, &mut out, &mut scratch).map(|n| out[..n].to_vec());
            assert_eq!(got, expected, "round {round}: {text:?}");
        }
    }
}

/// The resumable encoding (`Encoding`, what StartRun and the first Steps of a run do on chain)
/// cut at random points, its bytes copied to a fresh buffer between cuts (as a run account's
/// bytes are all that carries it from one transaction to the next), gives `encode`'s ids on
/// random texts up to 1,300 bytes, on tok512 and the 32,000-token tokenizer.bin; also with the
/// costs the program counts and budgets of one item, and for the longest StartRun text.
#[test]
fn the_resumable_encoding_cut_anywhere_is_encode() {
    let big = tiny_with_tokenizer_bin();
    let cost = |item: EncodeItem, _: u32| match item {
        EncodeItem::Lookup => 700,
        EncodeItem::Known => 40,
        EncodeItem::Scan(pairs) => 10 * pairs as u64 + 100,
    };
    let mut rng = synth::Rng::new(2626);
    for art in [stories260k(), big] {
        let a = decode(&art).unwrap();
        for round in 0..90 {
            let len = match round % 3 {
                0 => rng.below(40) as usize,
                1 => rng.below(733) as usize,
                _ => 1_000 + rng.below(301) as usize,
            };
            let text = random_text(&mut rng, len);
            let mut want = vec![0u32; text.len() + 2];
            let expected = encode(a.metadata(), &text, &mut want).map(|n| want[..n].to_vec());
            let extra = [0, 8, 800, 40_000][round % 4];
            let mut bytes = vec![0xA5u8; encode_scratch_len(text.len()) + extra];
            let begun = Encoding::begin(&mut bytes, &text).map(|_| ());
            let got = begun.and_then(|_| {
                let mut cuts = 0;
                loop {
                    // A fresh buffer each time: the bytes alone carry the encoding.
                    let mut moved = vec![0x5Au8; bytes.len()];
                    moved.copy_from_slice(&bytes);
                    bytes = moved;
                    let mut e = Encoding::resume(&mut bytes).expect("an encoding");
                    if e.done() {
                        let mut out = vec![0u32; text.len() + 2];
                        let n = e.ids(&mut out);
                        return Ok((out[..n].to_vec(), cuts));
                    }
                    let budget = match rng.below(4) {
                        0 => 1,
                        1 => rng.below(5_000),
                        2 => rng.below(300_000),
                        _ => rng.below(1_200_000),
                    };
                    let used = e.advance(a.metadata(), budget, cost)?;
                    assert!(used > 0 || e.done(), "an advance that did nothing");
                    cuts += 1;
                }
            });
            let got = got.map(|(ids, cuts)| {
                assert!(cuts >= 1 || text.is_empty());
                ids
            });
            assert_eq!(got, expected, "round {round}: {text:?}");
        }
        // The longest text a StartRun transaction carries, cut by one item a time.
        let story = &curta_core_story()[..733];
        let mut want = vec![0u32; story.len() + 2];
        let n = encode(a.metadata(), story, &mut want).unwrap();
        let mut bytes = vec![0u8; encode_scratch_len(story.len()) + 16_000];
        let mut e = Encoding::begin(&mut bytes, story).unwrap();
        let mut items = 0;
        while !e.done() {
            e.advance(a.metadata(), 1, cost).unwrap();
            items += 1;
        }
        let mut out = vec![0u32; story.len() + 2];
        let m = e.ids(&mut out);
        assert_eq!(&out[..m], &want[..n]);
        eprintln!("733 bytes: {n} tokens, {items} items");
    }
}

/// An English story of 874 bytes (the one tests/program tokenizes on chain).
fn curta_core_story() -> &'static [u8] {
    include_bytes!("data/story.txt")
}

#[test]
fn tokens_decode_as_the_spec_says() {
    let art = stories260k();
    let a = decode(&art).unwrap();
    let meta = a.metadata();
    assert_eq!(decode_token(meta, 0, 1).unwrap(), Piece::None);
    assert_eq!(decode_token(meta, 0, 2).unwrap(), Piece::None);
    // tok512's byte tokens read <0x00> .. <0xFF> at ids 3 .. 258.
    assert_eq!(decode_token(meta, 0, 3).unwrap(), Piece::Byte(0));
    assert_eq!(decode_token(meta, 0, 3 + 0x41).unwrap(), Piece::Byte(0x41));
    assert_eq!(decode_token(meta, 0, 258).unwrap(), Piece::Byte(0xFF));
    // A token starting with a space keeps it, except right after token 1.
    let tokens = read_tokenizer(&read_model("tok512.bin"), 512);
    let spaced = tokens
        .iter()
        .position(|(_, b)| b.len() > 1 && b[0] == b' ')
        .unwrap() as u32;
    let bytes = &tokens[spaced as usize].1;
    assert_eq!(decode_token(meta, 5, spaced).unwrap().bytes(), &bytes[..]);
    assert_eq!(decode_token(meta, 1, spaced).unwrap().bytes(), &bytes[1..]);
    assert_eq!(
        decode_token(meta, 1, 512),
        Err(RunError::TokenOutOfRange {
            index: 0,
            id: 512,
            vocab: 512
        })
    );
}

#[test]
fn bad_runs_are_refused_before_any_work() {
    let art = stories260k();
    let a = decode(&art).unwrap();
    let model = Model::from_artifact(&a).unwrap();
    let mut state = vec![0u8; state_len(&model.config())];
    let greedy = Settings::greedy();
    let cases: Vec<(Vec<u32>, u32, Settings, RunError)> = vec![
        (vec![], 4, greedy, RunError::EmptyPrompt),
        (
            vec![1, 512],
            4,
            greedy,
            RunError::TokenOutOfRange {
                index: 1,
                id: 512,
                vocab: 512,
            },
        ),
        (
            vec![1; 513],
            1,
            greedy,
            RunError::PromptTooLong {
                tokens: 513,
                context: 512,
            },
        ),
        (vec![1], 0, greedy, RunError::NoSteps),
        (
            vec![1, 2, 3],
            511,
            greedy,
            RunError::StepsPastContext {
                steps: 511,
                prompt: 3,
                context: 512,
            },
        ),
        (
            vec![1],
            4,
            Settings {
                temperature: (16 << 16) + 1,
                ..greedy
            },
            RunError::Temperature {
                value: (16 << 16) + 1,
            },
        ),
        (
            vec![1],
            4,
            Settings { top_p: 0, ..greedy },
            RunError::TopP { value: 0 },
        ),
        (
            vec![1],
            4,
            Settings {
                top_p: 65_537,
                ..greedy
            },
            RunError::TopP { value: 65_537 },
        ),
        (
            vec![1],
            4,
            Settings {
                temperature: 1 << 16,
                top_p: 1 << 16,
                seed: 0,
            },
            RunError::SeedZero,
        ),
    ];
    for (prompt, steps, settings, expected) in cases {
        state.fill(0xAB);
        let err = Run::start(&mut state, &model, &prompt, steps, settings).err();
        assert_eq!(err, Some(expected.clone()), "{expected}");
        assert!(
            state.iter().all(|&b| b == 0xAB),
            "{expected}: the state was written"
        );
    }
    // The context bound is exact: 3 prompt tokens and 510 steps use positions 0 to 511.
    assert!(Run::start(&mut state, &model, &[1, 2, 3], 510, greedy).is_ok());
    let mut small = vec![0u8; state.len() - 1];
    assert_eq!(
        Run::start(&mut small, &model, &[1], 1, greedy).err(),
        Some(RunError::StateTooSmall {
            len: state.len() - 1,
            needed: state.len()
        })
    );
    assert_eq!(
        Run::score(&mut state, &model, &[1]).err(),
        Some(RunError::ScoreTooShort { tokens: 1 })
    );
    // A state resumes only with its own model and a valid header.
    let gqa = synthetic(&synth::GQA, false, 5);
    let g = decode(&gqa).unwrap();
    let other = Model::from_artifact(&g).unwrap();
    let mut run = Run::start(&mut state, &model, &[1], 4, greedy).unwrap();
    assert_eq!(run.advance(&other, 10).err(), Some(RunError::ModelMismatch));
    assert_eq!(
        Run::resume(&mut state, &other).err(),
        Some(RunError::ModelMismatch)
    );
    state[0] = b'X';
    assert_eq!(
        Run::resume(&mut state, &model).err(),
        Some(RunError::NotAState)
    );
    state[0] = b'C';
    state[28..32].copy_from_slice(&512u32.to_le_bytes()); // position
    assert_eq!(
        Run::resume(&mut state, &model).err(),
        Some(RunError::BadState {
            field: "position",
            value: 512,
            max: 511
        })
    );
}

#[test]
fn a_resumed_state_finishes_the_run() {
    let art = synthetic(&synth::GQA, false, 5);
    let a = decode(&art).unwrap();
    let model = Model::from_artifact(&a).unwrap();
    let (whole, whole_state) = generate(&art, &[1, 7], 6, sampled(3), u64::MAX);
    let mut state = vec![0u8; state_len(&model.config())];
    let mut run = Run::start(&mut state, &model, &[1, 7], 6, sampled(3)).unwrap();
    for _ in 0..10 {
        run.advance(&model, 20_000).unwrap();
    }
    let mut copy = state.clone();
    let mut run = Run::resume(&mut copy, &model).unwrap();
    while !matches!(
        run.advance(&model, 50_000).unwrap(),
        Progress::Finished(Status::Done | Status::EndToken)
    ) {}
    let tokens: Vec<u32> = (2..2 + run.generated()).map(|i| run.token(i)).collect();
    assert_eq!(tokens, whole);
    assert!(copy == whole_state);
}

#[test]
fn teacher_forcing_scores_every_position_but_the_last() {
    let art = stories260k();
    let a = decode(&art).unwrap();
    let model = Model::from_artifact(&a).unwrap();
    let tokens = [1u32, 300, 67, 91, 400, 12];
    let (greedy, _) = generate(&art, &tokens[..3], 1, Settings::greedy(), u64::MAX);
    let mut state = vec![0u8; state_len(&model.config())];
    let mut run = Run::score(&mut state, &model, &tokens).unwrap();
    let mut scored = Vec::new();
    loop {
        match run.advance(&model, u64::MAX).unwrap() {
            Progress::Scored { pos, argmax } => {
                let best = (0..512)
                    .max_by_key(|&i| (run.logit(i), std::cmp::Reverse(i)))
                    .unwrap();
                assert_eq!(
                    argmax, best,
                    "argmax at {pos}: the highest logit, lowest id"
                );
                scored.push((pos, argmax));
            }
            Progress::Finished(status) => {
                assert_eq!(status, Status::Done);
                break;
            }
            other => panic!("{other:?}"),
        }
    }
    assert_eq!(
        scored.iter().map(|s| s.0).collect::<Vec<_>>(),
        [0, 1, 2, 3, 4]
    );
    // Position 2's argmax is what greedy generation after the first three tokens gives.
    assert_eq!(scored[2].1, greedy[0]);
}

/// Section zero read without checks (`Metadata::sealed`, what the program does for a sealed
/// model) is the same view as the checked one, and a run over it, advanced with another cost
/// per item (`advance_by`, the program's estimated compute units), ends with the same state
/// bytes and tokens as `advance`.
#[test]
fn a_sealed_view_and_another_cost_give_the_same_run() {
    use curta_core::infer::Stage;
    use curta_core::Metadata;
    for (art, sampled_seed) in [(stories260k(), 5), (synthetic(&synth::GQA, false, 11), 6)] {
        let a = decode(&art).unwrap();
        let checked = *a.metadata();
        let sealed = Metadata::sealed(checked.bytes()).unwrap();
        assert_eq!(sealed.config(), checked.config());
        assert_eq!(sealed.blocks(), checked.blocks());
        assert_eq!(sealed.section_count(), checked.section_count());
        assert!(Metadata::sealed(&checked.bytes()[..4095]).is_none());
        let mut sections: Vec<&[u8]> = a.sections().collect();
        sections[0] = sealed.bytes();
        let model = Model::new(sealed, &sections).unwrap();
        for settings in [Settings::greedy(), sampled(sampled_seed)] {
            let (tokens, state) = generate(&art, &[1, 40], 12, settings, u64::MAX / 2);
            let mut other = vec![0u8; state_len(&model.config())];
            let mut run = Run::start(&mut other, &model, &[1, 40], 12, settings).unwrap();
            let cost = |stage: Stage, c: &Config, pos: u32| 3 * stage.cost(c, pos) + 17;
            let mut got = vec![];
            loop {
                match run.advance_by(&model, 5_000, cost).unwrap().0 {
                    Progress::Token { id, .. } => got.push(id),
                    Progress::Finished(_) => break,
                    _ => {}
                }
            }
            assert_eq!(got, tokens);
            assert!(other == state, "state bytes differ");
        }
    }
}

/// A model given only some sections (what a Step carries on chain): a run whose every advance
/// holds section zero and the section its next item reads stops before the first item that
/// reads another, and run to the end that way gives the same state bytes and tokens as the
/// whole model; an advance whose next item reads a missing section is `SectionMissing` and
/// changes nothing; the sections an advance reads are the spec's layout (section one the
/// vocabulary matrices, section 2 + l layer l's), told by `advance_reading`.
#[test]
fn a_model_holding_some_sections_stops_before_the_others() {
    // 128 × 512 + 3 layers of 2 × 128 × 128 + 2 × 128 × 64 + 3 × 128 × 768: over 1,000,000
    // weights, so L + 2 = 5 sections.
    let config = Config {
        dim: 128,
        hidden_dim: 768,
        layers: 3,
        heads: 4,
        kv_heads: 2,
        vocab_size: 512,
        context_length: 32,
    };
    assert_eq!(config.section_count(), 5);
    let art = synthetic(&config, true, 41);
    let a = decode(&art).unwrap();
    let whole = Model::from_artifact(&a).unwrap();
    let sections: Vec<&[u8]> = a.sections().collect();
    let holding = |held: &[usize]| {
        let mut given = vec![&[][..]; sections.len()];
        for &s in held {
            given[s] = sections[s];
        }
        Model::new(*a.metadata(), &given).unwrap()
    };
    let settings = sampled(5);
    let (tokens, reference) = generate(&art, &[1, 7, 9], 6, settings, 20_000);

    // Position 0's first item reads the embedding: section one.
    let mut state = vec![0u8; state_len(&config)];
    let mut run = Run::start(&mut state, &whole, &[1, 7, 9], 6, settings).unwrap();
    assert_eq!(run.section_needed(), Some(1));
    let before = run.bytes().to_vec();
    assert_eq!(
        run.advance(&holding(&[0, 2, 3, 4]), 20_000).unwrap_err(),
        RunError::SectionMissing {
            section: 1,
            matrix: 0
        }
    );
    assert_eq!(run.bytes(), before, "the refused advance changed the state");

    // A whole position (the prompt's first: no classifier) reads section one (the
    // embedding) and every layer's section; with sections zero and one only, the embedding
    // and the first norm, then it stops before layer 0's query.
    let mut read = 0;
    let mut copy = before.clone();
    let mut probe = Run::resume(&mut copy, &whole).unwrap();
    while probe.position() == 0 {
        probe
            .advance_reading(&whole, 1_000, Stage::cost, &mut read)
            .unwrap();
    }
    assert_eq!(read, 0b11110, "sections 1 to 4, one bit each");
    let (progress, used) = run.advance_counted(&holding(&[0, 1]), u64::MAX).unwrap();
    assert_eq!(progress, Progress::Working);
    assert_eq!(
        used,
        2 * config.dim as u64,
        "the embedding and the attention norm"
    );
    assert_eq!(run.section_needed(), Some(2));

    // To the end, each advance holding section zero and the one its next item reads.
    let mut out = Vec::new();
    let mut advances = 0;
    loop {
        let held: Vec<usize> = [0].into_iter().chain(run.section_needed()).collect();
        advances += 1;
        match run.advance(&holding(&held), 20_000).unwrap() {
            Progress::Token { id, .. } => out.push(id),
            Progress::Finished(_) => break,
            _ => {}
        }
    }
    assert_eq!(out, tokens);
    assert_eq!(run.bytes(), reference);
    assert!(advances > 0);
}
