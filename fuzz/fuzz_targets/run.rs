//! A run of any model whose section zero the seal accepts (issue 26): a synthetic artifact
//! whose tables (normalization, rotary, SiLU; the exponential table too, though only the
//! spec's passes), token entries, sorted ids, row scales and any other bytes the input
//! rewrites; whatever `Metadata::parse` accepts (the rules of the program's
//! `section_zero::check`) is started with the input's prompt (ids or text) and settings, advanced
//! item by item for up to 200 advances of the input's budgets, and every generated token
//! decoded. Nothing may panic (overflow checks on), and the only errors allowed are the
//! documented ones: Run::start's refusals of a prompt or settings, and `encode`'s
//! `SortedIdOutOfRange` for a sorted id outside the vocabulary or `NoSpaceToken` when no token
//! reads " ". An advance or a decode of a
//! generated token never fails.
#![no_main]

use curta_core::infer::{decode, encode, state_len, Model, Progress, Run, RunError, Settings};
use curta_core::{Config, FormatError};
use libfuzzer_sys::fuzz_target;
use std::sync::OnceLock;

/// Two layers, two heads of 8 sharing one key and value head, 320 tokens (61 pieces past the
/// byte tokens), context 24: small enough for thousands of runs a second.
const SHAPE: Config = Config {
    dim: 16,
    hidden_dim: 40,
    layers: 2,
    heads: 2,
    kv_heads: 1,
    vocab_size: 320,
    context_length: 24,
};

fn base() -> &'static [u8] {
    static A: OnceLock<Vec<u8>> = OnceLock::new();
    A.get_or_init(|| {
        use curta_core::convert::{convert, synth};
        let checkpoint = synth::checkpoint(&SHAPE, true, 26);
        convert(&checkpoint, &tokenizer()).expect("the synthetic model converts")
    })
}

/// A tokenizer file of SHAPE's 320 tokens: `<unk>`, `<s>`, `</s>`, the 256 byte tokens, then
/// " " and pieces that merge (letters, pairs, words, with and without a leading space), each
/// scored by its length, so that text prompts encode with merges.
fn tokenizer() -> Vec<u8> {
    let mut tokens: Vec<Vec<u8>> = vec![b"<unk>".to_vec(), b"<s>".to_vec(), b"</s>".to_vec()];
    tokens.extend((0..=255u8).map(|b| format!("<0x{b:02X}>").into_bytes()));
    let words = [
        " ", "e", "t", "a", "o", "h", "n", "s", "th", "he", "the", " the", "an", "and", " and",
        "in", " in", "on", " on", "at", " at", "er", "re", "es", "st", "en", "nd", "ha", "to",
        " to", "it", " it", "is", " is", "as", " a", " h", " s", " t", "ea", "ee", "tt", "aa",
        "hat", " hat", "tea", " tea", "sea", " sea", "eat", " eat", "ten", " ten", "net",
        " net", "ant", " ant", "tan", " tan", "nest", " nest",
    ];
    tokens.extend(words.iter().map(|w| w.as_bytes().to_vec()));
    assert_eq!(tokens.len(), SHAPE.vocab_size as usize);
    let mut out = 128u32.to_le_bytes().to_vec();
    for t in tokens {
        out.extend_from_slice(&(t.len() as f32).to_le_bytes());
        out.extend_from_slice(&(t.len() as u32).to_le_bytes());
        out.extend_from_slice(&t);
    }
    out
}

/// The input, read from the front; zeros once it runs out.
struct Input<'a>(&'a [u8]);

impl Input<'_> {
    fn u8(&mut self) -> u8 {
        match self.0.split_first() {
            Some((&b, rest)) => {
                self.0 = rest;
                b
            }
            None => 0,
        }
    }
    fn u32(&mut self) -> u32 {
        u32::from_le_bytes([self.u8(), self.u8(), self.u8(), self.u8()])
    }
    fn u64(&mut self) -> u64 {
        self.u32() as u64 | (self.u32() as u64) << 32
    }
}

fn at(bytes: &[u8], offset: usize) -> usize {
    u32::from_le_bytes(bytes[offset..offset + 4].try_into().unwrap()) as usize
}

fn put(bytes: &mut [u8], offset: usize, v: u32) {
    if offset + 4 <= bytes.len() {
        bytes[offset..offset + 4].copy_from_slice(&v.to_le_bytes());
    }
}

fuzz_target!(|data: &[u8]| {
    let mut input = Input(data);
    let mut artifact = base().to_vec();
    let zero_len = at(&artifact, 136);
    let (norm, rotary, exp, silu) = (
        at(&artifact, 40),
        at(&artifact, 44),
        at(&artifact, 48),
        at(&artifact, 52),
    );
    let (entries, sorted, strings) = (at(&artifact, 56), at(&artifact, 60), at(&artifact, 64));
    let c = SHAPE;
    let words = |from: usize, to: usize, i: u32| from + 4 * (i as usize % ((to - from) / 4));
    // Up to 32 rewrites, each a kind, an index and a value.
    for _ in 0..input.u8() % 33 {
        let (kind, i, v) = (input.u8(), input.u32(), input.u32());
        let offset = match kind % 9 {
            0 => words(norm, rotary, i),
            1 => words(rotary, exp, i),
            2 => words(exp, silu, i),
            3 => words(silu, entries, i),
            // A token entry's score key, length or offset.
            4 => entries + 16 * (i as usize % c.vocab_size as usize) + 4 * (i as usize >> 16) % 12,
            5 => words(sorted, strings, i),
            // Any word of the matrices at a multiple of 8: every row's scale (rows start
            // there), its zero word, or weights.
            6 => zero_len + 8 * (i as usize % ((artifact.len() - zero_len) / 8)),
            // Any word of section zero past the header's tag, or any byte.
            7 => 8 + 4 * (i as usize % ((zero_len - 8) / 4)),
            _ => {
                let b = i as usize % zero_len;
                artifact[b] = v as u8;
                continue;
            }
        };
        put(&mut artifact, offset, v);
    }
    let Ok(decoded) = curta_core::decode(&artifact) else {
        return;
    };
    let Ok(model) = Model::from_artifact(&decoded) else {
        return;
    };
    let meta = *decoded.metadata();
    let config = model.config();

    // The prompt: ids, or text encoded as the program does.
    let mut prompt = vec![];
    let kind = input.u8();
    let n = input.u8() as usize % 12;
    if kind % 2 == 0 {
        for _ in 0..n {
            prompt.push(input.u32() % (c.vocab_size + 4));
        }
    } else {
        let text: Vec<u8> = (0..n * 3).map(|_| input.u8()).collect();
        let mut out = vec![0u32; text.len() + 2];
        match encode(&meta, &text, &mut out) {
            Ok(count) => prompt.extend_from_slice(&out[..count]),
            // The documented refusals of a text prompt: a sorted id outside the vocabulary, or
            // no token for the space prefix (rewritten entries or ids); StartRun refuses it.
            Err(
                RunError::Format(FormatError::SortedIdOutOfRange { .. }) | RunError::NoSpaceToken,
            ) => return,
            Err(e) => panic!("encode: {e}"),
        }
    }
    let settings = Settings {
        temperature: input.u32() % (20 << 16),
        top_p: input.u32() % (1 << 17),
        seed: input.u64(),
    };
    let steps = input.u8() as u32 % 30;
    let mut state = vec![0u8; state_len(&config)];
    let run = if kind & 2 == 0 {
        Run::start(&mut state, &model, &prompt, steps, settings)
    } else {
        Run::score(&mut state, &model, &prompt)
    };
    let mut run = match run {
        Ok(run) => run,
        Err(
            RunError::EmptyPrompt
            | RunError::TokenOutOfRange { .. }
            | RunError::PromptTooLong { .. }
            | RunError::NoSteps
            | RunError::StepsPastContext { .. }
            | RunError::Temperature { .. }
            | RunError::TopP { .. }
            | RunError::SeedZero
            | RunError::ScoreTooShort { .. },
        ) => return,
        Err(e) => panic!("start: {e}"),
    };
    // Up to 200 advances of 1 to 505 units of work (a few items each at this shape).
    for _ in 0..200 {
        let budget = 1 + 8 * (input.u8() as u64 % 64);
        let progress = run.advance(&model, budget).expect("an advance never fails");
        match progress {
            Progress::Token { pos, id } => {
                assert!(id < c.vocab_size);
                let piece = decode(&meta, run.token(pos - 1), id).expect("a decode never fails");
                assert!(piece.bytes().len() <= curta_core::MAX_TOKEN_LEN);
            }
            Progress::Finished(_) => break,
            Progress::Scored { argmax, .. } => assert!(argmax < c.vocab_size),
            Progress::Working => {}
        }
    }
    // The state resumes as it stands (the program resumes it at every step).
    let bytes = run.bytes().to_vec();
    let mut copy = bytes.clone();
    Run::resume(&mut copy, &model).expect("a run's own state resumes");
});
