//! Shared helpers for the integration tests: the bank running the program's SBF binary,
//! the real stories260K artifact, a small hand-built artifact, a seeded generator and an
//! independent SHA-256 chain.

use std::path::PathBuf;
use std::sync::OnceLock;

use solana_program_test::ProgramTest;

/// The program's SBF binary every test bank runs (scripts/build-sbf builds it; see
/// `curta_client::send::transport::ProgramSo::find` for where it is looked for). There is no native
/// processor to fall back to: without the binary the tests stop here, saying what to run.
pub fn program_so() -> &'static curta_client::send::transport::ProgramSo {
    static SO: OnceLock<curta_client::send::transport::ProgramSo> = OnceLock::new();
    SO.get_or_init(|| {
        let so = curta_client::send::transport::ProgramSo::find().unwrap_or_else(|e| panic!("{e}"));
        eprintln!("curta-tests: running {}", so.describe());
        so
    })
}

/// A bank with the Curta program's SBF binary loaded at `curta_program::id()`, run in the VM
/// with compute metering. The bank's own debug log (every instruction) is silenced unless
/// RUST_LOG asks for it.
pub fn program_test() -> ProgramTest {
    static QUIET: std::sync::Once = std::sync::Once::new();
    QUIET.call_once(|| {
        if std::env::var_os("RUST_LOG").is_none() {
            // Before the bank installs its logger; set once, before any bank thread starts.
            std::env::set_var("RUST_LOG", "error");
        }
    });
    let mut test = ProgramTest::default();
    program_so().add_to(&mut test, curta_program::id());
    test
}

/// The repository's models/ directory.
pub fn models_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("..")
        .join("models")
}

/// The artifact converted from models/stories260K.bin and models/tok512.bin (converted once
/// per test binary).
pub fn stories260k_artifact() -> Vec<u8> {
    static ARTIFACT: OnceLock<Vec<u8>> = OnceLock::new();
    ARTIFACT
        .get_or_init(|| {
            let read = |name: &str| {
                let path = models_dir().join(name);
                std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
            };
            curta_core::convert::convert(&read("stories260K.bin"), &read("tok512.bin"))
                .unwrap_or_else(|e| panic!("converting stories260K.bin + tok512.bin: {e}"))
        })
        .clone()
}

/// A small shape of the stories15M vocabulary: dimension 64, hidden 172, 2 layers of 4 heads,
/// 32,000 tokens, context 256.
pub const SMALL_32K: curta_core::Config = curta_core::Config {
    dim: 64,
    hidden_dim: 172,
    layers: 2,
    heads: 4,
    kv_heads: 4,
    vocab_size: 32_000,
    context_length: 256,
};

/// The largest model of dimension 512 and hidden dimension 2,048 that CreateModel accepts
/// (issues 26 and 29): 14 layers, 8 heads, vocabulary 8,192 (16 sections, 64.1 MB of accounts
/// with a converter-sized section zero), with the given context.
pub fn large_shape(context_length: u32) -> curta_core::Config {
    curta_core::Config {
        dim: 512,
        hidden_dim: 2048,
        layers: 14,
        heads: 8,
        kv_heads: 8,
        vocab_size: 8192,
        context_length,
    }
}

/// [`SMALL_32K`] with the real 32,000-token tokenizer of llama2.c
/// (models/tokenizer.bin, which merges much; context 256: room for a 733-byte English prompt's
/// tokens and a few more), converted once per test binary.
pub fn tokenizer_bin_artifact() -> Vec<u8> {
    static ARTIFACT: OnceLock<Vec<u8>> = OnceLock::new();
    ARTIFACT
        .get_or_init(|| {
            let checkpoint = curta_core::convert::synth::checkpoint(&SMALL_32K, false, 26);
            let path = models_dir().join("tokenizer.bin");
            let tokenizer =
                std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
            curta_core::convert::convert(&checkpoint, &tokenizer)
                .unwrap_or_else(|e| panic!("converting with tokenizer.bin: {e}"))
        })
        .clone()
}

/// [`SMALL_32K`] with a tokenizer built to make its lookups compare long strings: tokens "a"
/// repeated 1 to 128 times (the longer, the higher the score, so that a text of "a"s merges to
/// runs of 128), and the rest of the 32,000 tokens 125 "a"s and three more bytes, so that
/// every probe of a lookup of a run of "a"s compares about 125 bytes before it differs; ids 0 to 2
/// and the 256 byte tokens as llama2.c's. Converted once per test binary.
pub fn long_prefix_artifact() -> Vec<u8> {
    static ARTIFACT: OnceLock<Vec<u8>> = OnceLock::new();
    ARTIFACT
        .get_or_init(|| {
            let mut tokens: Vec<(f32, Vec<u8>)> = vec![
                (0.0, b"<unk>".to_vec()),
                (0.0, b"\n<s>\n".to_vec()),
                (0.0, b"\n</s>\n".to_vec()),
            ];
            tokens.extend((0..=255u8).map(|b| (0.0, format!("<0x{b:02X}>").into_bytes())));
            tokens.extend((1..=128).map(|k| (k as f32, vec![b'a'; k])));
            // A text prompt's first lookup (a model without it does not seal).
            tokens.push((0.0, b" ".to_vec()));
            let tails = (b'b'..=b'z').chain(b'A'..=b'Z').chain(b'0'..=b'9');
            let tails: Vec<u8> = tails.collect();
            let n = tails.len();
            let wanted = SMALL_32K.vocab_size as usize - tokens.len();
            for i in 0..wanted {
                let mut token = vec![b'a'; 125];
                token.extend([tails[i / (n * n)], tails[i / n % n], tails[i % n]]);
                tokens.push((-1.0, token));
            }
            assert_eq!(tokens.len(), SMALL_32K.vocab_size as usize);
            let mut file = 128u32.to_le_bytes().to_vec();
            for (score, bytes) in &tokens {
                file.extend(score.to_le_bytes());
                file.extend((bytes.len() as u32).to_le_bytes());
                file.extend(bytes);
            }
            let checkpoint = curta_core::convert::synth::checkpoint(&SMALL_32K, false, 40);
            curta_core::convert::convert(&checkpoint, &file)
                .unwrap_or_else(|e| panic!("converting with the long-prefix tokenizer: {e}"))
        })
        .clone()
}

/// An English story of 874 bytes (core/tests/data/story.txt, which curta-core's tests read
/// too): its first 733 are the most text one StartRun transaction carries (tests/program/runs.rs
/// measures it).
pub const STORY: &[u8] = include_bytes!("../../core/tests/data/story.txt");

/// The sections of an artifact, as the section table of its header lays them out (read
/// directly from the header bytes: section count at byte 36, entries of 16 bytes at 128).
pub fn split_sections(artifact: &[u8]) -> Vec<Vec<u8>> {
    let u32_at = |at: usize| u32::from_le_bytes(artifact[at..at + 4].try_into().unwrap());
    let u64_at = |at: usize| u64::from_le_bytes(artifact[at..at + 8].try_into().unwrap());
    (0..u32_at(36) as usize)
        .map(|i| {
            let offset = u64_at(128 + 16 * i) as usize;
            let length = u64_at(136 + 16 * i) as usize;
            artifact[offset..offset + length].to_vec()
        })
        .collect()
}

pub mod expected;
pub mod traps;
pub use expected::sha256_chain;

/// The seeded generator (SplitMix64) the synthetic checkpoints use: the same seed gives the
/// same bytes on every machine.
pub use curta_core::convert::synth::Rng;

/// The configuration of the hand-built artifact: dimension 8, hidden dimension 8, one layer,
/// one head (head size 8), one key and value head, 259 tokens, context 1. Its 9 matrices
/// (rows of 16 bytes, the classifier tied to the embedding) take the first
/// TINY_MATRIX_BYTES bytes of section one; section one may be longer.
pub const TINY_CONFIG: [u32; 7] = [8, 8, 1, 1, 1, 259, 1];
/// 259 x 16 (embedding, shared by the classifier) + 7 x 8 x 16 (the layer).
pub const TINY_MATRIX_BYTES: u64 = 259 * 16 + 7 * 8 * 16;

/// Section zero of the hand-built artifact, laid out by the spec and decisions D5/D9 (blocks
/// back to back after the 4,096-byte header, zero padding to a multiple of 8), declaring
/// section one to be `section_one_len` bytes (at least TINY_MATRIX_BYTES).
pub fn tiny_section_zero(section_one_len: u64) -> Vec<u8> {
    let [dim, hidden, layers, heads, kv_heads, vocab, context] = TINY_CONFIG;
    let head_size = dim / heads;
    let tokens: Vec<Vec<u8>> = (0..vocab)
        .map(|id| match id {
            0 => b"<unk>".to_vec(),
            1 => b"<s>".to_vec(),
            2 => b"</s>".to_vec(),
            _ => vec![(id - 3) as u8],
        })
        .collect();
    let norm = 4096u32;
    let rotary = norm + 4 * (2 * layers + 1) * dim;
    let exp = rotary + 4 * context * head_size;
    let silu = exp + 4 * 4097;
    let entries = silu + 4 * 4097;
    let sorted = entries + 16 * vocab;
    let strings = sorted + 4 * vocab;
    let strings_len: u32 = tokens.iter().map(|t| t.len() as u32).sum();
    let len = (strings + strings_len).div_ceil(8) * 8;

    let mut s = vec![0u8; len as usize];
    let put = |s: &mut Vec<u8>, at: u32, bytes: &[u8]| {
        s[at as usize..at as usize + bytes.len()].copy_from_slice(bytes)
    };
    put(&mut s, 0, b"CURTAW01");
    let header = [
        dim, hidden, layers, heads, kv_heads, vocab, context, 2, norm, rotary, exp, silu, entries,
        sorted, strings,
    ];
    for (i, v) in header.iter().enumerate() {
        put(&mut s, 8 + 4 * i as u32, &v.to_le_bytes());
    }
    put(
        &mut s,
        68,
        &(((1u64 << 24) as f64 / (head_size as f64).sqrt()).round() as u32).to_le_bytes(),
    );
    // Section table: (0, len), (len, section one).
    put(&mut s, 136, &(len as u64).to_le_bytes());
    put(&mut s, 144, &(len as u64).to_le_bytes());
    put(&mut s, 152, &section_one_len.to_le_bytes());
    // Matrix table: all in section 1, 8 columns (row length 16); embedding then its tied copy.
    let shapes = [
        (vocab, 0u64),
        (vocab, 0),
        (dim, 1),
        (dim, 2),
        (dim, 3),
        (dim, 4),
        (hidden, 5),
        (dim, 6),
        (hidden, 7),
    ];
    let mut at = 512u32;
    for (rows, k) in shapes {
        let offset = if k == 0 {
            0
        } else {
            16 * vocab as u64 + (k - 1) * 128
        };
        for v in [1u32, 8, rows, 16] {
            put(&mut s, at, &v.to_le_bytes());
            at += 4;
        }
        put(&mut s, at, &offset.to_le_bytes());
        at += 8;
    }
    // Coefficients and tables (values follow the spec; the program does not read them).
    for i in 0..(2 * layers + 1) * dim {
        put(&mut s, norm + 4 * i, &(1i32 << 24).to_le_bytes());
    }
    for j in 0..head_size / 2 {
        put(&mut s, rotary + 8 * j, &(1i32 << 24).to_le_bytes());
    }
    for i in 0..4097u32 {
        let e = ((-(i as f64) / 256.0).exp() * (1u64 << 30) as f64).round() as u32;
        put(&mut s, exp + 4 * i, &e.to_le_bytes());
        let x = i as f64 / 128.0 - 16.0;
        let silu_value = (x / (1.0 + (-x).exp()) * 65536.0).round() as i32;
        put(&mut s, silu + 4 * i, &silu_value.to_le_bytes());
    }
    // Tokenizer: entries (score key, length, offset), ids sorted by bytes, strings in id order.
    let mut offset = strings;
    for (id, token) in tokens.iter().enumerate() {
        let entry = entries + 16 * id as u32;
        let score_key = (-(id as f32)).to_bits() ^ u32::MAX; // a negative score: bits inverted
        put(&mut s, entry, &score_key.to_le_bytes());
        put(&mut s, entry + 4, &(token.len() as u32).to_le_bytes());
        put(&mut s, entry + 8, &offset.to_le_bytes());
        put(&mut s, offset, token);
        offset += token.len() as u32;
    }
    let mut ids: Vec<u32> = (0..vocab).collect();
    ids.sort_by(|&a, &b| tokens[a as usize].cmp(&tokens[b as usize]).then(a.cmp(&b)));
    for (i, id) in ids.iter().enumerate() {
        put(&mut s, sorted + 4 * i as u32, &id.to_le_bytes());
    }
    s
}

/// The hand-built artifact's two sections: tiny_section_zero and `section_one_len` seeded
/// random bytes.
pub fn tiny_sections(section_one_len: usize, seed: u64) -> Vec<Vec<u8>> {
    assert!(section_one_len as u64 >= TINY_MATRIX_BYTES);
    vec![
        tiny_section_zero(section_one_len as u64),
        Rng::new(seed).bytes(section_one_len),
    ]
}
/// The load test of claims (issue 40): the driver `client/examples/bench_claims.rs` and the
/// test `client::claims_load` run.
pub mod claims_load;
pub mod client;
pub mod rpc_shim;

/// The section layouts the format allows, each as an artifact: the smallest model of each
/// section count (two sections under 1,000,000 matrix weights; three, eight and eighteen just
/// over it), which the many-authority tests publish, and stories15M's full shape (16.5 MB,
/// eight sections, the largest 9.47 MB), published once.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Layout {
    /// The bundled stories260K with tok512.
    Two,
    /// dim 288, hidden 768, one layer, 512 tokens: 147,456 + 995,328 = 1,142,784 weights.
    Three,
    /// dim 128, hidden 256, 6 layers, 512 tokens: 65,536 + 6 x 163,840 = 1,048,576 weights
    /// (1.1 MB).
    Eight,
    /// dim 64, hidden 256, 16 layers, 512 tokens: 32,768 + 16 x 65,536 = 1,081,344 weights.
    Eighteen,
    /// stories15M's shape (16.5 MB): 6 layers, 32,000 tokens, 8 sections, the classifier's
    /// section 9.47 MB.
    Stories15M,
}

impl Layout {
    /// Every layout, the full-size one last.
    pub const ALL: [Layout; 5] = [
        Layout::Two,
        Layout::Three,
        Layout::Eight,
        Layout::Eighteen,
        Layout::Stories15M,
    ];

    /// The section count the spec gives this layout: 2 under 1,000,000 weights, else L + 2.
    pub fn sections(self) -> usize {
        match self {
            Layout::Two => 2,
            Layout::Three => 3,
            Layout::Eight | Layout::Stories15M => 8,
            Layout::Eighteen => 18,
        }
    }

    fn config(self) -> curta_core::Config {
        let config =
            |dim, hidden_dim, layers, heads, vocab_size, context_length| curta_core::Config {
                dim,
                hidden_dim,
                layers,
                heads,
                kv_heads: heads,
                vocab_size,
                context_length,
            };
        match self {
            Layout::Two => unreachable!("stories260K is a real checkpoint"),
            Layout::Three => config(288, 768, 1, 6, 512, 64),
            Layout::Eight => config(128, 256, 6, 4, 512, 64),
            Layout::Eighteen => config(64, 256, 16, 4, 512, 64),
            Layout::Stories15M => curta_core::convert::synth::STORIES15M,
        }
    }

    /// The artifact (converted once per test binary; synthetic checkpoints from fixed seeds).
    pub fn artifact(self) -> Vec<u8> {
        static ARTIFACTS: [OnceLock<Vec<u8>>; 5] = [const { OnceLock::new() }; 5];
        let index = Layout::ALL.iter().position(|l| *l == self).unwrap();
        ARTIFACTS[index]
            .get_or_init(|| {
                if self == Layout::Two {
                    return stories260k_artifact();
                }
                let config = self.config();
                let checkpoint = curta_core::convert::synth::checkpoint(&config, true, 7);
                let tokenizer = curta_core::convert::synth::tokenizer(config.vocab_size, 7);
                curta_core::convert::convert(&checkpoint, &tokenizer)
                    .unwrap_or_else(|e| panic!("converting the {self:?} layout: {e}"))
            })
            .clone()
    }
}

/// The accounts of a Sealed model of `sections` under `authority`, declaring `declared`, as
/// the program leaves them after the last seal: the model account at its address and every
/// weight account at its seed-derived address (frozen header, then the section's bytes), each
/// holding `rent(data length)` lamports. For models too large to publish in a test's time; the
/// seal itself is tested on the models that are published.
pub fn sealed_model_accounts(
    program: &solana_pubkey::Pubkey,
    authority: &solana_pubkey::Pubkey,
    declared: [u8; 32],
    config: curta_core::Config,
    sections: Vec<Vec<u8>>,
    rent: impl Fn(usize) -> u64,
) -> (
    solana_pubkey::Pubkey,
    Vec<(solana_pubkey::Pubkey, solana_account::Account)>,
) {
    use curta_program::state::{self, Model, ModelState, WeightHeader, MAX_SECTIONS};
    let (model, bump) = state::model_address(program, authority, &declared);
    let weights: Vec<_> = (0..sections.len())
        .map(|s| state::weight_address(program, authority, &model, s as u8))
        .collect();
    let lengths: Vec<u32> = sections.iter().map(|s| s.len() as u32).collect();
    let total_chunks = lengths.iter().map(|&l| l.div_ceil(65_536)).sum();
    let mut section_lengths = [0; MAX_SECTIONS];
    section_lengths[..lengths.len()].copy_from_slice(&lengths);
    let mut weight_accounts = [solana_pubkey::Pubkey::default(); MAX_SECTIONS];
    weight_accounts[..lengths.len()].copy_from_slice(&weights);
    let sealed = Model {
        state: ModelState::Sealed,
        bump,
        section_count: lengths.len() as u8,
        seal_pass: 0,
        creation: 1,
        authority: *authority,
        weights_hash: declared,
        running_hash: declared,
        seal_cursor: total_chunks,
        total_chunks,
        config,
        section_lengths,
        weight_accounts,
    };
    let account = |data: Vec<u8>| solana_account::Account {
        lamports: rent(data.len()),
        data,
        owner: *program,
        executable: false,
        rent_epoch: 0,
    };
    let mut data = vec![0; state::MODEL_LEN];
    sealed.pack(&mut data);
    let mut accounts = vec![(model, account(data))];
    for (s, section) in sections.into_iter().enumerate() {
        let mut data = vec![0u8; state::WEIGHT_HEADER_LEN];
        WeightHeader {
            frozen: true,
            section: s as u16,
            length: section.len() as u32,
            model,
            authority: *authority,
        }
        .pack(&mut data);
        data.extend(section);
        accounts.push((weights[s], account(data)));
    }
    (model, accounts)
}

/// Keypair number `index` of the seeded sequence `seed`: the same authorities on every run.
pub fn seeded_keypair(seed: u64, index: u64) -> solana_keypair::Keypair {
    let mut rng = Rng::new(seed ^ index.wrapping_mul(0x9e37_79b9_7f4a_7c15));
    let mut secret = [0u8; 32];
    rng.fill(&mut secret);
    solana_keypair::Keypair::new_from_array(secret)
}
