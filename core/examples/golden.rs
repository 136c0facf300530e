//! Golden vectors for the TypeScript SDK (sdk/), from curta-core's public API alone.
//!
//! cargo run --release -p curta-core --example golden -- <ARTIFACT_DIR> [JSON_DIR]
//!
//! Writes three artifacts into ARTIFACT_DIR: stories260K.curta (models/stories260K.bin and
//! models/tok512.bin), gqa.curta (a grouped-query synthetic model, seed 7) and stories15M.curta
//! (the stories15M-shaped synthetic checkpoint of seed 15 with models/tokenizer.bin, as
//! scripts/bench-core makes it), and kjv.curta (the demo's English model: models/kjv.bin and
//! models/tok1024.bin, which the verifier page bundles). With JSON_DIR, also writes one JSON file per artifact (the
//! configuration, block offsets, section table, matrix descriptors, sampled token entries and
//! the weights hash, as the Rust reader reads them) and malformed.json: damaged copies of the
//! stories260K and gqa artifacts with the error the Rust reader gives for each.
//!
//! Runs (run.json, for the SDK's WebAssembly engine): generations written by `curta_core::infer`
//! (prompt, settings, the generated ids, the text, how the run ended and the SHA-256 of the whole
//! state buffer at its end) on stories260K and gqa, greedy and sampled with several seeds;
//! teacher-forced scores (argmax and negative log-likelihood per position); and eight random small
//! configurations (random-N.curta in ARTIFACT_DIR, synthetic checkpoints from a fixed seed), each
//! with greedy and sampled runs and a score.
//!
//! cargo run --release -p curta-core --example golden -- --random <SEED> <COUNT> <DIR>
//!
//! The SDK's property test: COUNT random small configurations drawn from SEED (wider ranges than
//! run.json's eight), written as random-SEED-N.curta into DIR with DIR/random.json, their runs
//! and scores in run.json's form. scripts/sdk-test draws a fresh seed on every run.

use curta_core::convert::{convert, synth};
use curta_core::infer::{
    decode as decode_token, encode, parse_fixed16, state_len, Model, Progress, Run, Settings,
    Status,
};
use curta_core::{decode, weights_hash, Config, FormatError};
use sha2::{Digest, Sha256};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

fn models() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../models")
}

fn read(path: &Path) -> Vec<u8> {
    std::fs::read(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn write(path: &Path, bytes: &[u8]) {
    std::fs::write(path, bytes).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The grouped-query shape the tests share (curta-core's synth).
const GQA: Config = curta_core::convert::synth::GQA;

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// A JSON string literal.
fn quote(s: &str) -> String {
    let mut out = String::from('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            c if (c as u32) < 0x20 => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

fn config_json(c: &Config) -> String {
    format!(
        "{{\"dim\": {}, \"hiddenDim\": {}, \"layers\": {}, \"heads\": {}, \"kvHeads\": {}, \"vocabSize\": {}, \"contextLength\": {}}}",
        c.dim, c.hidden_dim, c.layers, c.heads, c.kv_heads, c.vocab_size, c.context_length
    )
}

/// Everything the reader says about one artifact.
fn describe(name: &str, file: &str, bytes: &[u8]) -> String {
    let artifact = decode(bytes).unwrap_or_else(|e| panic!("{name}: {e}"));
    let meta = artifact.metadata();
    let c = artifact.config();
    let b = meta.blocks();
    let mut j = String::new();
    let _ = writeln!(j, "{{");
    let _ = writeln!(j, "  \"name\": {},", quote(name));
    let _ = writeln!(j, "  \"file\": {},", quote(file));
    let _ = writeln!(j, "  \"fileLength\": {},", bytes.len());
    let _ = writeln!(j, "  \"config\": {},", config_json(&c));
    let _ = writeln!(j, "  \"headSize\": {},", c.head_size());
    let _ = writeln!(j, "  \"kvDim\": {},", c.kv_dim());
    let _ = writeln!(j, "  \"invSqrtHeadSize\": {},", meta.inv_sqrt_head_size());
    let _ = writeln!(
        j,
        "  \"blocks\": {{\"norm\": {}, \"rotary\": {}, \"exp\": {}, \"silu\": {}, \"tokenEntries\": {}, \"sortedIds\": {}, \"tokenStrings\": {}}},",
        b.norm, b.rotary, b.exp, b.silu, b.token_entries, b.sorted_ids, b.token_strings
    );
    let sections: Vec<String> = meta
        .sections()
        .map(|s| format!("{{\"offset\": {}, \"length\": {}}}", s.offset, s.length))
        .collect();
    let _ = writeln!(j, "  \"sections\": [{}],", sections.join(", "));
    let matrices: Vec<String> = meta
        .matrices()
        .enumerate()
        .map(|(i, d)| {
            format!(
                "    {{\"name\": {}, \"section\": {}, \"columns\": {}, \"rows\": {}, \"rowBytes\": {}, \"offset\": {}, \"firstRowScale\": {}}}",
                quote(Config::matrix_name(i)),
                d.section,
                d.columns,
                d.rows,
                d.row_bytes,
                d.offset,
                artifact.matrix(i).row(0).scale
            )
        })
        .collect();
    let _ = writeln!(j, "  \"matrices\": [\n{}\n  ],", matrices.join(",\n"));
    let v = c.vocab_size;
    let mut ids: Vec<u32> = vec![0, 1, 2, 3, 3 + b'a' as u32, 258, 259, 300, v / 2, v - 1];
    ids.dedup();
    let tokens: Vec<String> = ids
        .iter()
        .map(|&id| {
            let t = meta.token(id);
            format!(
                "    {{\"id\": {id}, \"scoreKey\": {}, \"bytes\": \"{}\"}}",
                t.score_key,
                hex(meta.token_bytes(id).expect("token bytes"))
            )
        })
        .collect();
    let _ = writeln!(j, "  \"tokens\": [\n{}\n  ],", tokens.join(",\n"));
    let sorted: Vec<String> = (0..8)
        .map(|i| meta.sorted_id(i).expect("sorted id").to_string())
        .collect();
    let _ = writeln!(j, "  \"firstSortedIds\": [{}],", sorted.join(", "));
    let _ = writeln!(
        j,
        "  \"tables\": {{\"norm0\": {}, \"rotary1\": {}, \"exp0\": {}, \"exp4096\": {}, \"silu0\": {}, \"silu4096\": {}}},",
        meta.norm(0),
        meta.rotary(1),
        meta.exp(0),
        meta.exp(4096),
        meta.silu(0),
        meta.silu(4096)
    );
    let _ = writeln!(
        j,
        "  \"weightsHash\": \"{}\"",
        hex(&weights_hash(artifact.sections()))
    );
    j.push_str("}\n");
    j
}

/// A damaged copy of an artifact: byte patches, then a new length.
struct Damage {
    name: &'static str,
    base: &'static str,
    patches: Vec<(usize, Vec<u8>)>,
    length: Option<usize>,
    /// Checked on access, not by decode: `sortedId` or `tokenBytes` with its argument.
    access: Option<(&'static str, u32)>,
}

fn damage(name: &'static str, base: &'static str, patches: Vec<(usize, Vec<u8>)>) -> Damage {
    Damage {
        name,
        base,
        patches,
        length: None,
        access: None,
    }
}

fn u32le(b: &[u8], at: usize) -> u32 {
    curta_core::le::u32_at(b, at)
}

fn u64le(b: &[u8], at: usize) -> u64 {
    curta_core::le::u64_at(b, at)
}

fn w32(v: u32) -> Vec<u8> {
    v.to_le_bytes().to_vec()
}

fn w64(v: u64) -> Vec<u8> {
    v.to_le_bytes().to_vec()
}

fn damages(small: &[u8]) -> Vec<Damage> {
    let zero = u64le(small, 136);
    let one = u64le(small, 152);
    let len = small.len();
    let last = 512 + 24 * 36 + 16;
    let last_offset = u64le(small, last);
    let (entries, sorted, strings) = (u32le(small, 56), u32le(small, 60), u32le(small, 64));
    let norm = u32le(small, 40);
    let truncated = |name, length| Damage {
        length: Some(length),
        ..damage(name, "stories260K", vec![])
    };
    let on_access = |name, patches, access| Damage {
        access: Some(access),
        ..damage(name, "stories260K", patches)
    };
    vec![
        damage("wrong tag", "stories260K", vec![(7, b"2".to_vec())]),
        damage("tag with a zero byte", "stories260K", vec![(6, vec![0])]),
        truncated("truncated inside the header", 100),
        truncated("empty file", 0),
        truncated("truncated inside section zero", zero as usize - 8),
        truncated("truncated inside section one", len - 1),
        truncated("eight bytes past the last section", len + 8),
        damage("dimension 0", "stories260K", vec![(8, w32(0))]),
        damage("dimension 513", "stories260K", vec![(8, w32(513))]),
        damage(
            "hidden dimension 2049",
            "stories260K",
            vec![(12, w32(2049))],
        ),
        damage("layers 0", "stories260K", vec![(16, w32(0))]),
        damage("layers 17", "stories260K", vec![(16, w32(17))]),
        damage("heads 17", "stories260K", vec![(20, w32(17))]),
        damage(
            "heads 3 (not a divisor of 64)",
            "stories260K",
            vec![(20, w32(3))],
        ),
        damage("key and value heads 9", "stories260K", vec![(24, w32(9))]),
        damage(
            "key and value heads 3 (not a divisor of 8)",
            "stories260K",
            vec![(24, w32(3))],
        ),
        damage("vocabulary 258", "stories260K", vec![(28, w32(258))]),
        damage("vocabulary 65537", "stories260K", vec![(28, w32(65_537))]),
        damage("context 0", "stories260K", vec![(32, w32(0))]),
        damage("context 513", "stories260K", vec![(32, w32(513))]),
        damage(
            "head size 5 (dimension 40)",
            "stories260K",
            vec![(8, w32(40))],
        ),
        damage(
            "head size 128 (dimension 512, 4 heads)",
            "stories260K",
            vec![(8, w32(512)), (20, w32(4)), (24, w32(4))],
        ),
        damage("section count 1", "stories260K", vec![(36, w32(1))]),
        damage("section count 19", "stories260K", vec![(36, w32(19))]),
        damage(
            "section count 3 for a two-section layout",
            "stories260K",
            vec![(36, w32(3))],
        ),
        damage(
            "section count 2 for an eight-section layout",
            "gqa",
            vec![(36, w32(2))],
        ),
        damage(
            "section one starts 8 bytes late",
            "stories260K",
            vec![(144, w64(zero + 8))],
        ),
        damage(
            "section one 8 bytes longer",
            "stories260K",
            vec![(152, w64(one + 8))],
        ),
        damage("section one empty", "stories260K", vec![(152, w64(0))]),
        damage(
            "section one over the limit",
            "stories260K",
            vec![(152, w64(10_483_713))],
        ),
        damage(
            "section zero's entry 8 bytes short",
            "stories260K",
            vec![(136, w64(zero - 8))],
        ),
        damage(
            "section zero's entry past the file",
            "stories260K",
            vec![(136, w64(len as u64 + 8))],
        ),
        damage(
            "normalization inside the header",
            "stories260K",
            vec![(40, w32(100))],
        ),
        damage(
            "rotary coefficients overlapping the normalization",
            "stories260K",
            vec![(44, w32(norm + 4))],
        ),
        damage(
            "token strings past section zero",
            "stories260K",
            vec![(64, w32(zero as u32 + 1))],
        ),
        damage("reserved byte 72", "stories260K", vec![(72, vec![1])]),
        damage("reserved byte 127", "stories260K", vec![(127, vec![0xff])]),
        damage(
            "section table past the count",
            "stories260K",
            vec![(160, vec![2])],
        ),
        damage(
            "matrix table past the count",
            "stories260K",
            vec![(1400, vec![4])],
        ),
        damage("reserved byte 4095", "stories260K", vec![(4095, vec![5])]),
        damage(
            "embedding row length 80",
            "stories260K",
            vec![(524, w32(80))],
        ),
        damage("embedding in section 2", "stories260K", vec![(512, w32(2))]),
        damage(
            "embedding with 65 columns",
            "stories260K",
            vec![(516, w32(65))],
        ),
        damage(
            "embedding with 511 rows",
            "stories260K",
            vec![(520, w32(511))],
        ),
        damage(
            "query of layer 1 in section 2 of gqa",
            "gqa",
            vec![(512 + 24 * 9, w32(2))],
        ),
        damage(
            "last matrix 8 bytes past its section",
            "stories260K",
            vec![(last, w64(last_offset + 8))],
        ),
        damage(
            "last matrix at a huge offset",
            "stories260K",
            vec![(last, w64(u64::MAX - 7))],
        ),
        damage(
            "last matrix misaligned",
            "stories260K",
            vec![(last, w64(last_offset - 4))],
        ),
        damage(
            "one over the square root of the head size off by one",
            "stories260K",
            vec![(68, w32(5_931_641))],
        ),
        on_access(
            "sorted id 7 out of range",
            vec![(sorted as usize + 4 * 7, w32(512))],
            ("sortedId", 7),
        ),
        on_access(
            "token 3 starting before the token strings",
            vec![(entries as usize + 16 * 3 + 8, w32(strings - 1))],
            ("tokenBytes", 3),
        ),
        on_access(
            "token 5 of 129 bytes",
            vec![(entries as usize + 16 * 5 + 4, w32(129))],
            ("tokenBytes", 5),
        ),
        on_access(
            "token 6 running past section zero",
            vec![(entries as usize + 16 * 6 + 8, w32(zero as u32 - 1))],
            ("tokenBytes", 6),
        ),
    ]
}

/// The variant's name from its Debug form, e.g. "BadTag".
fn variant(e: &FormatError) -> String {
    format!("{e:?}")
        .chars()
        .take_while(|c| c.is_ascii_alphanumeric())
        .collect()
}

fn malformed_json(bases: &[(&str, &[u8])]) -> String {
    let small = bases[0].1;
    let mut entries = Vec::new();
    for d in damages(small) {
        let base = bases.iter().find(|b| b.0 == d.base).expect("base").1;
        let mut bytes = base.to_vec();
        for (at, patch) in &d.patches {
            bytes[*at..*at + patch.len()].copy_from_slice(patch);
        }
        if let Some(length) = d.length {
            bytes.resize(length, 0);
        }
        let error = match d.access {
            None => decode(&bytes).expect_err(d.name),
            Some((what, arg)) => {
                let artifact = decode(&bytes).unwrap_or_else(|e| panic!("{}: {e}", d.name));
                let meta = artifact.metadata();
                match what {
                    "sortedId" => meta.sorted_id(arg).expect_err(d.name),
                    _ => meta.token_bytes(arg).map(|_| ()).expect_err(d.name),
                }
            }
        };
        let patches: Vec<String> = d
            .patches
            .iter()
            .map(|(at, p)| format!("{{\"offset\": {at}, \"bytes\": \"{}\"}}", hex(p)))
            .collect();
        let mut e = format!(
            "  {{\"name\": {}, \"base\": {}, \"patches\": [{}]",
            quote(d.name),
            quote(d.base),
            patches.join(", ")
        );
        if let Some(length) = d.length {
            let _ = write!(e, ", \"length\": {length}");
        }
        if let Some((what, arg)) = d.access {
            let _ = write!(e, ", \"access\": {{\"{what}\": {arg}}}");
        }
        let _ = write!(
            e,
            ", \"error\": {}, \"message\": {}}}",
            quote(&variant(&error)),
            quote(&error.to_string())
        );
        entries.push(e);
    }
    format!("[\n{}\n]\n", entries.join(",\n"))
}

/// One generation to record: a text or token prompt, steps, settings as the CLI reads them.
struct RunCase {
    prompt: Prompt,
    steps: u32,
    temperature: &'static str,
    top_p: &'static str,
    seed: u64,
}

enum Prompt {
    Text(&'static str),
    Tokens(Vec<u32>),
}

fn case(
    prompt: Prompt,
    steps: u32,
    temperature: &'static str,
    top_p: &'static str,
    seed: u64,
) -> RunCase {
    RunCase {
        prompt,
        steps,
        temperature,
        top_p,
        seed,
    }
}

fn ids(v: &[u32]) -> String {
    v.iter()
        .map(|t| t.to_string())
        .collect::<Vec<_>>()
        .join(", ")
}

/// The case run by curta-core to its end, as JSON.
fn run_json(name: &str, bytes: &[u8], c: &RunCase) -> String {
    let artifact = decode(bytes).unwrap_or_else(|e| panic!("{name}: {e}"));
    let model = Model::from_artifact(&artifact).expect("model");
    let meta = model.metadata();
    let prompt = match &c.prompt {
        Prompt::Text(t) => {
            let mut out = vec![0; t.len() + 2];
            let n = encode(meta, t.as_bytes(), &mut out).expect("encode");
            out.truncate(n);
            out
        }
        Prompt::Tokens(t) => t.clone(),
    };
    let settings = Settings {
        temperature: parse_fixed16(c.temperature).expect("temperature"),
        top_p: parse_fixed16(c.top_p).expect("top-p"),
        seed: c.seed,
    };
    let mut state = vec![0u8; state_len(&model.config())];
    let mut run = Run::start(&mut state, &model, &prompt, c.steps, settings)
        .unwrap_or_else(|e| panic!("{name}: {e}"));
    let (mut tokens, mut text) = (Vec::new(), Vec::new());
    let mut previous = *prompt.last().expect("prompt");
    let end = loop {
        match run.advance(&model, u64::MAX).expect("advance") {
            Progress::Token { id, .. } => {
                text.extend_from_slice(decode_token(meta, previous, id).expect("decode").bytes());
                tokens.push(id);
                previous = id;
            }
            Progress::Finished(status) => break status,
            _ => {}
        }
    };
    let prompt_text = match &c.prompt {
        Prompt::Text(t) => format!("\"prompt\": {}, ", quote(t)),
        Prompt::Tokens(_) => String::new(),
    };
    format!(
        "    {{\"model\": {}, {prompt_text}\"promptTokens\": [{}], \"steps\": {}, \"temperature\": {}, \"topP\": {}, \"seed\": \"{}\", \"tokens\": [{}], \"text\": {}, \"end\": {}, \"stateLength\": {}, \"stateSha256\": \"{}\"}}",
        quote(name),
        ids(&prompt),
        c.steps,
        quote(c.temperature),
        quote(c.top_p),
        c.seed,
        ids(&tokens),
        quote(&String::from_utf8_lossy(&text)),
        quote(match end {
            Status::EndToken => "end-token",
            _ => "done",
        }),
        state.len(),
        hex(&Sha256::digest(&state))
    )
}

/// Teacher forcing over `tokens` (at most the context): argmax and −ln p(next) per position,
/// the latter in f64 from the Q16 logits as `client perplexity` computes it.
fn score_json(name: &str, bytes: &[u8], tokens: &[u32]) -> String {
    let artifact = decode(bytes).unwrap_or_else(|e| panic!("{name}: {e}"));
    let model = Model::from_artifact(&artifact).expect("model");
    let vocab = model.config().vocab_size;
    let mut state = vec![0u8; state_len(&model.config())];
    let mut run = Run::score(&mut state, &model, tokens).expect("score");
    let (mut argmax, mut nll) = (Vec::new(), Vec::new());
    loop {
        match run.advance(&model, u64::MAX).expect("advance") {
            Progress::Scored { pos, argmax: best } => {
                argmax.push(best);
                let logit = |i: u32| run.logit(i) as f64 / 65_536.0;
                let max = (0..vocab).map(logit).fold(f64::MIN, f64::max);
                let sum: f64 = (0..vocab).map(|i| (logit(i) - max).exp()).sum();
                nll.push(max + sum.ln() - logit(tokens[pos as usize + 1]));
            }
            Progress::Finished(_) => break,
            _ => {}
        }
    }
    let nll: Vec<String> = nll.iter().map(|v| format!("{v:?}")).collect();
    format!(
        "    {{\"model\": {}, \"tokens\": [{}], \"argmax\": [{}], \"nll\": [{}], \"stateSha256\": \"{}\"}}",
        quote(name),
        ids(tokens),
        ids(&argmax),
        nll.join(", "),
        hex(&Sha256::digest(&state))
    )
}

/// A random small configuration the format allows (head size even, at most 64). `wide` (the
/// property test's) also draws odd head counts, larger heads, hidden dimensions and contexts.
fn random_config(rng: &mut synth::Rng, wide: bool) -> Config {
    let (heads, head_sizes, hidden, context): (&[u32], &[u32], u64, u64) = if wide {
        (&[1, 2, 3, 4, 6, 8], &[2, 4, 6, 8, 16, 32, 64], 300, 64)
    } else {
        (&[1, 2, 4], &[2, 4, 8, 16], 48, 28)
    };
    let heads = heads[rng.below(heads.len() as u64) as usize];
    let head_size = head_sizes[rng.below(head_sizes.len() as u64) as usize];
    let kv_divisors: Vec<u32> = (1..=heads).filter(|k| heads % k == 0).collect();
    Config {
        dim: heads * head_size,
        hidden_dim: 1 + rng.below(hidden) as u32,
        layers: 1 + rng.below(3) as u32,
        heads,
        kv_heads: kv_divisors[rng.below(kv_divisors.len() as u64) as usize],
        vocab_size: 259 + rng.below(200) as u32,
        context_length: 4 + rng.below(context) as u32,
    }
}

/// A random small model: its name, configuration, tiedness, checkpoint seed and artifact.
struct RandomModel {
    name: String,
    config: Config,
    tied: bool,
    seed: u64,
    bytes: Vec<u8>,
}

/// `count` random small models from `seed`, named `{prefix}-0`, `{prefix}-1`, ...; their
/// checkpoints have the seeds `first_seed`, `first_seed + 1`, ...
fn random_models(
    seed: u64,
    count: u64,
    wide: bool,
    prefix: &str,
    first_seed: u64,
) -> Vec<RandomModel> {
    let mut rng = synth::Rng::new(seed);
    (0..count)
        .map(|i| {
            let config = random_config(&mut rng, wide);
            let tied = rng.below(2) == 0;
            let seed = first_seed + i;
            let bytes = convert(
                &synth::checkpoint(&config, tied, seed),
                &synth::tokenizer(config.vocab_size, seed),
            )
            .unwrap_or_else(|e| panic!("{prefix}-{i} ({config:?}): {e}"));
            RandomModel {
                name: format!("{prefix}-{i}"),
                config,
                tied,
                seed,
                bytes,
            }
        })
        .collect()
}

/// For each random model: a greedy run to the end of the context, two sampled runs (random
/// seeds, one at a high temperature) after a random prompt, and a teacher-forced score of random
/// tokens. Returns the models' JSON entries; the runs and scores are appended.
fn random_cases(
    rng: &mut synth::Rng,
    random: &[RandomModel],
    runs: &mut Vec<String>,
    scores: &mut Vec<String>,
) -> Vec<String> {
    let mut entries = Vec::new();
    for m in random {
        let c = &m.config;
        let p = 1 + rng.below(3.min(c.context_length as u64 - 1)) as usize;
        let prompt: Vec<u32> = (0..p)
            .map(|i| {
                if i == 0 {
                    1
                } else {
                    3 + rng.below(c.vocab_size as u64 - 3) as u32
                }
            })
            .collect();
        let room = c.context_length + 1 - p as u32;
        let cases = [
            case(Prompt::Tokens(prompt.clone()), room, "0", "0.9", 0),
            case(
                Prompt::Tokens(prompt.clone()),
                room,
                "0.9",
                "0.9",
                1 + rng.below(1 << 40),
            ),
            case(
                Prompt::Tokens(prompt.clone()),
                room.min(9),
                "1.5",
                "1",
                1 + rng.below(u64::MAX - 1),
            ),
        ];
        for case in &cases {
            runs.push(run_json(&m.name, &m.bytes, case));
        }
        let n = 2 + rng.below(c.context_length as u64 - 1) as usize;
        let tokens: Vec<u32> = (0..n)
            .map(|_| rng.below(c.vocab_size as u64) as u32)
            .collect();
        scores.push(score_json(&m.name, &m.bytes, &tokens));
        entries.push(format!(
            "    {{\"name\": {}, \"file\": \"{}.curta\", \"config\": {}, \"tied\": {}, \"seed\": {}, \"weightsHash\": \"{}\"}}",
            quote(&m.name),
            m.name,
            config_json(c),
            m.tied,
            m.seed,
            hex(&weights_hash(decode(&m.bytes).expect("decode").sections()))
        ));
    }
    entries
}

fn vectors_json(random: &[String], runs: &[String], scores: &[String]) -> String {
    format!(
        "{{\n  \"randomModels\": [\n{}\n  ],\n  \"runs\": [\n{}\n  ],\n  \"scores\": [\n{}\n  ]\n}}\n",
        random.join(",\n"),
        runs.join(",\n"),
        scores.join(",\n")
    )
}

fn runs_json(small: &[u8], gqa: &[u8], random: &[RandomModel]) -> String {
    let mut runs = Vec::new();
    let once = "Once upon a time";
    let small_cases = [
        // The verifier page's test: 32 greedy tokens after this prompt.
        case(Prompt::Text(once), 32, "0", "0.9", 0),
        case(Prompt::Tokens(vec![1]), 64, "0", "1", 0),
        case(Prompt::Text(once), 48, "0.8", "0.9", 1),
        case(Prompt::Text(once), 48, "0.8", "0.9", 7),
        case(Prompt::Text(once), 48, "0.8", "0.9", 42),
        case(Prompt::Text("Lily and Tom"), 40, "1", "1", 3),
        case(Prompt::Tokens(vec![1]), 40, "1.3", "0.5", 1234567890123),
        case(Prompt::Text(once), 12, "0.5", "0.95", u64::MAX),
    ];
    for c in &small_cases {
        runs.push(run_json("stories260K", small, c));
    }
    let gqa_cases = [
        case(Prompt::Text("once upon a time"), 40, "0", "0.9", 0),
        case(Prompt::Tokens(vec![1, 300, 301]), 60, "0", "1", 0),
        case(Prompt::Text("once upon a time"), 40, "0.8", "0.9", 5),
        case(Prompt::Text("once upon a time"), 40, "0.8", "0.9", 11),
        case(Prompt::Tokens(vec![1]), 40, "1", "1", 99),
    ];
    for c in &gqa_cases {
        runs.push(run_json("gqa", gqa, c));
    }
    // The first score is sdk/README.md's snippet (test/snippets/run.ts): "Once upon a time".
    let artifact = decode(small).expect("stories260K");
    let mut prompt = vec![0; once.len() + 2];
    let n = encode(artifact.metadata(), once.as_bytes(), &mut prompt).expect("encode");
    let mut scores = vec![
        score_json("stories260K", small, &prompt[..n]),
        score_json(
            "stories260K",
            small,
            &[
                1, 403, 407, 261, 378, 410, 283, 365, 272, 379, 267, 400, 303, 418, 270, 368, 258,
                2,
            ],
        ),
        score_json(
            "gqa",
            gqa,
            &[1, 300, 301, 302, 259, 400, 500, 511, 2, 1, 260],
        ),
    ];
    let randoms = random_cases(&mut synth::Rng::new(7), random, &mut runs, &mut scores);
    vectors_json(&randoms, &runs, &scores)
}

const USAGE: &str =
    "usage: golden <ARTIFACT_DIR> [JSON_DIR]\n       golden --random <SEED> <COUNT> <DIR>";

/// `--random SEED COUNT DIR`: the SDK's property test (sdk/test/property.test.ts) on fresh
/// random configurations: COUNT random small models from SEED (random-SEED-N.curta in DIR),
/// and DIR/random.json with their runs and scores, in run.json's form.
fn property(args: &[String]) {
    let (Some(seed), Some(count), Some(dir), None) = (
        args.first().and_then(|s| s.parse::<u64>().ok()),
        args.get(1).and_then(|s| s.parse::<u64>().ok()),
        args.get(2),
        args.get(3),
    ) else {
        eprintln!("{USAGE}\n(SEED and COUNT are unsigned integers)");
        std::process::exit(2);
    };
    let dir = Path::new(dir);
    std::fs::create_dir_all(dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
    let random = random_models(seed, count, true, &format!("random-{seed}"), seed);
    for m in &random {
        write(&dir.join(format!("{}.curta", m.name)), &m.bytes);
    }
    let (mut runs, mut scores) = (Vec::new(), Vec::new());
    let mut rng = synth::Rng::new(seed ^ 0x5eed);
    let entries = random_cases(&mut rng, &random, &mut runs, &mut scores);
    write(
        &dir.join("random.json"),
        vectors_json(&entries, &runs, &scores).as_bytes(),
    );
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if args.get(1).map(String::as_str) == Some("--random") {
        return property(&args[2..]);
    }
    if args.len() < 2 || args.len() > 3 {
        eprintln!("{USAGE}");
        std::process::exit(2);
    }
    let out = Path::new(&args[1]);
    std::fs::create_dir_all(out).unwrap_or_else(|e| panic!("{}: {e}", out.display()));
    let m = models();
    let small = convert(
        &read(&m.join("stories260K.bin")),
        &read(&m.join("tok512.bin")),
    )
    .expect("convert stories260K");
    let gqa = convert(
        &synth::checkpoint(&GQA, false, 7),
        &synth::tokenizer(GQA.vocab_size, 7),
    )
    .expect("convert gqa");
    let big = convert(
        &synth::checkpoint(&synth::STORIES15M, true, 15),
        &read(&m.join("tokenizer.bin")),
    )
    .expect("convert stories15M");
    let artifacts = [("stories260K", &small), ("gqa", &gqa), ("stories15M", &big)];
    for (name, bytes) in artifacts {
        write(&out.join(format!("{name}.curta")), bytes);
    }
    // The demo's English model: the verifier page bundles it (sdk/scripts/build-browser.mjs).
    let kjv =
        convert(&read(&m.join("kjv.bin")), &read(&m.join("tok1024.bin"))).expect("convert kjv");
    write(&out.join("kjv.curta"), &kjv);
    let random = random_models(2026, 8, false, "random", 100);
    for m in &random {
        write(&out.join(format!("{}.curta", m.name)), &m.bytes);
    }
    if let Some(json) = args.get(2) {
        let json = Path::new(json);
        std::fs::create_dir_all(json).unwrap_or_else(|e| panic!("{}: {e}", json.display()));
        for (name, bytes) in artifacts {
            let text = describe(name, &format!("{name}.curta"), bytes);
            write(&json.join(format!("{name}.json")), text.as_bytes());
        }
        let text = malformed_json(&[("stories260K", &small), ("gqa", &gqa)]);
        write(&json.join("malformed.json"), text.as_bytes());
        let text = runs_json(&small, &gqa, &random);
        write(&json.join("run.json"), text.as_bytes());
    }
}
