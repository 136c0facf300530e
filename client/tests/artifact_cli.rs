//! `client convert`, `client inspect`, `client hash` as a user runs them: exit codes, exact
//! stdout, errors naming the file, no output file on error, an existing output kept.

use sha2::{Digest, Sha256};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

fn model(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../models")
        .join(name)
}

fn client(args: &[&Path]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_client"))
        .args(args)
        .output()
        .unwrap()
}

fn p(s: &str) -> &Path {
    Path::new(s)
}

fn stdout(o: &Output) -> String {
    String::from_utf8(o.stdout.clone()).unwrap()
}

fn stderr(o: &Output) -> String {
    String::from_utf8(o.stderr.clone()).unwrap()
}

fn u64le(b: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(b[at..at + 8].try_into().unwrap())
}

fn u32le(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes(b[at..at + 4].try_into().unwrap())
}

/// The sections, straight from the section table.
fn sections(a: &[u8]) -> Vec<&[u8]> {
    (0..u32le(a, 36) as usize)
        .map(|i| {
            let (off, len) = (
                u64le(a, 128 + 16 * i) as usize,
                u64le(a, 136 + 16 * i) as usize,
            );
            &a[off..off + len]
        })
        .collect()
}

/// The chain with sha2: hash each `prev || chunk` buffer whole.
fn chain_sha2(a: &[u8]) -> String {
    let mut h = [0u8; 32];
    for s in sections(a) {
        for chunk in s.chunks(65_536) {
            let mut buf = h.to_vec();
            buf.extend_from_slice(chunk);
            h = Sha256::digest(&buf).into();
        }
    }
    h.iter().map(|b| format!("{b:02x}")).collect()
}

/// The chain with `openssl dgst -sha256 -binary`, one process per chunk.
fn chain_openssl(a: &[u8]) -> Option<String> {
    let mut h = vec![0u8; 32];
    for s in sections(a) {
        for chunk in s.chunks(65_536) {
            let mut child = Command::new("openssl")
                .args(["dgst", "-sha256", "-binary"])
                .stdin(Stdio::piped())
                .stdout(Stdio::piped())
                .spawn()
                .ok()?;
            let mut stdin = child.stdin.take().unwrap();
            stdin.write_all(&h).unwrap();
            stdin.write_all(chunk).unwrap();
            drop(stdin);
            let out = child.wait_with_output().unwrap();
            assert!(out.status.success());
            h = out.stdout;
            assert_eq!(h.len(), 32);
        }
    }
    Some(h.iter().map(|b| format!("{b:02x}")).collect())
}

fn names(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    v.sort();
    v
}

#[test]
fn convert_then_hash_then_inspect() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("stories260K.curta");
    let o = client(&[
        p("convert"),
        &model("stories260K.bin"),
        &model("tok512.bin"),
        p("-o"),
        &out,
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let bytes = std::fs::read(&out).unwrap();
    let hash = chain_sha2(&bytes);
    if let Some(openssl) = chain_openssl(&bytes) {
        assert_eq!(openssl, hash, "sha2 and openssl chains agree");
    }
    let (s0, s1) = (u64le(&bytes, 136), u64le(&bytes, 152));
    assert_eq!(s0 + s1, bytes.len() as u64);
    let expected = format!(
        "wrote {}: {} bytes in 2 sections\nsection 0: {s0} bytes\nsection 1: {s1} bytes\nweights hash: {hash}\n",
        out.display(),
        bytes.len()
    );
    assert_eq!(stdout(&o), expected);

    // hash: 64 lowercase hex characters alone on stdout.
    let o = client(&[p("hash"), &out]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(stdout(&o), format!("{hash}\n"));
    assert!(
        hash.len() == 64
            && hash
                .bytes()
                .all(|c| c.is_ascii_digit() || (b'a'..=b'f').contains(&c))
    );

    // inspect --json: the issue's keys, the values of the header.
    let o = client(&[p("inspect"), &out, p("--json")]);
    assert!(o.status.success(), "{}", stderr(&o));
    let j: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    let c = &j["config"];
    let config: Vec<u64> = [
        "dim",
        "hidden_dim",
        "layers",
        "heads",
        "kv_heads",
        "vocab_size",
        "context_length",
    ]
    .iter()
    .map(|k| c[k].as_u64().unwrap_or_else(|| panic!("config.{k}")))
    .collect();
    assert_eq!(config, [64, 172, 5, 8, 4, 512, 512]);
    let secs = j["sections"].as_array().unwrap();
    assert_eq!(secs.len(), 2);
    assert_eq!(
        (secs[0]["offset"].as_u64(), secs[0]["length"].as_u64()),
        (Some(0), Some(s0))
    );
    assert_eq!(
        (secs[1]["offset"].as_u64(), secs[1]["length"].as_u64()),
        (Some(s0), Some(s1))
    );
    let mats = j["matrices"].as_array().unwrap();
    assert_eq!(mats.len(), 2 + 7 * 5);
    for (i, m) in mats.iter().enumerate() {
        let at = 512 + 24 * i;
        let got: Vec<u64> = ["section", "columns", "rows", "row_bytes", "offset"]
            .iter()
            .map(|k| m[k].as_u64().unwrap())
            .collect();
        let want = vec![
            u32le(&bytes, at) as u64,
            u32le(&bytes, at + 4) as u64,
            u32le(&bytes, at + 8) as u64,
            u32le(&bytes, at + 12) as u64,
            u64le(&bytes, at + 16),
        ];
        assert_eq!(got, want, "matrix {i}");
    }
    assert_eq!(mats[7]["columns"].as_u64(), Some(172));
    assert_eq!(mats[7]["row_bytes"].as_u64(), Some(184));
    assert_eq!(j["weights_hash"].as_str(), Some(hash.as_str()));

    // inspect (text): configuration, block offsets, sections, descriptors, hash.
    let o = client(&[p("inspect"), &out]);
    assert!(o.status.success(), "{}", stderr(&o));
    let text = stdout(&o);
    assert!(text.contains("config: dim 64 hidden_dim 172 layers 5 heads 8 kv_heads 4 vocab_size 512 context_length 512"), "{text}");
    for (name, field) in [
        ("normalization coefficients", 40),
        ("rotary coefficients", 44),
        ("token strings", 64),
    ] {
        let line = format!("  {name:<28} {}", u32le(&bytes, field));
        assert!(text.lines().any(|l| l == line), "{line:?} in\n{text}");
    }
    assert!(text.contains(&format!("weights hash: {hash}")));
    assert_eq!(
        text.lines()
            .filter(|l| l.contains(" section  1  rows"))
            .count(),
        37
    );
}

#[test]
fn convert_errors_write_nothing_and_keep_an_existing_output() {
    let dir = tempfile::tempdir().unwrap();
    let ckpt = std::fs::read(model("stories260K.bin")).unwrap();
    let bad = dir.path().join("truncated.bin");
    std::fs::write(&bad, &ckpt[..ckpt.len() - 4]).unwrap();
    let out = dir.path().join("out.curta");
    let o = client(&[p("convert"), &bad, &model("tok512.bin"), p("-o"), &out]);
    assert_eq!(o.status.code(), Some(1));
    assert_eq!(stdout(&o), "");
    let expected = format!(
        "error: {}: checkpoint is truncated: its header describes {} bytes, the file is {}\n",
        bad.display(),
        ckpt.len(),
        ckpt.len() - 4
    );
    assert_eq!(stderr(&o), expected);
    assert_eq!(names(dir.path()), ["truncated.bin"]);

    std::fs::write(&out, b"keep me").unwrap();
    let tok = std::fs::read(model("tok512.bin")).unwrap();
    let bad_tok = dir.path().join("tok.bin");
    let mut more = tok.clone();
    more.extend_from_slice(&[0; 3]);
    std::fs::write(&bad_tok, &more).unwrap();
    let o = client(&[
        p("convert"),
        &model("stories260K.bin"),
        &bad_tok,
        p("-o"),
        &out,
    ]);
    assert_eq!(o.status.code(), Some(1));
    let expected = format!(
        "error: {}: tokenizer has 3 bytes at offset {} after its 512 tokens (the vocabulary)\n",
        bad_tok.display(),
        tok.len()
    );
    assert_eq!(stderr(&o), expected);
    assert_eq!(std::fs::read(&out).unwrap(), b"keep me");
    assert_eq!(names(dir.path()), ["out.curta", "tok.bin", "truncated.bin"]);

    let missing = dir.path().join("missing.bin");
    let o = client(&[p("convert"), &missing, &model("tok512.bin"), p("-o"), &out]);
    assert_eq!(o.status.code(), Some(1));
    assert!(
        stderr(&o).starts_with(&format!("error: {}: ", missing.display())),
        "{}",
        stderr(&o)
    );
    assert_eq!(std::fs::read(&out).unwrap(), b"keep me");
}

#[test]
fn hash_and_inspect_errors() {
    let dir = tempfile::tempdir().unwrap();
    let good = dir.path().join("good.curta");
    let o = client(&[
        p("convert"),
        &model("stories260K.bin"),
        &model("tok512.bin"),
        p("-o"),
        &good,
    ]);
    assert!(o.status.success());
    let bytes = std::fs::read(&good).unwrap();

    let truncated = dir.path().join("truncated.curta");
    std::fs::write(&truncated, &bytes[..bytes.len() - 1]).unwrap();
    let mut tag = bytes.clone();
    tag[0] = b'X';
    let wrong_tag = dir.path().join("tag.curta");
    std::fs::write(&wrong_tag, &tag).unwrap();
    // The last descriptor (feed-forward up, layer 4) moved 8 bytes past the end of section one.
    let mut oob = bytes.clone();
    let at = 512 + 24 * 36 + 16;
    let moved = u64le(&bytes, at) + 8;
    oob[at..at + 8].copy_from_slice(&moved.to_le_bytes());
    let out_of_bounds = dir.path().join("oob.curta");
    std::fs::write(&out_of_bounds, &oob).unwrap();
    // Section one starting 8 bytes after section zero ends: a gap.
    let mut gap = bytes.clone();
    let zero = u64le(&bytes, 136);
    gap[144..152].copy_from_slice(&(zero + 8).to_le_bytes());
    let gapped = dir.path().join("gap.curta");
    std::fs::write(&gapped, &gap).unwrap();
    let n = bytes.len();
    let cases = [
        (
            &out_of_bounds,
            vec![
                "matrix descriptor 36".to_string(),
                "out of bounds".to_string(),
                format!("{}", u64le(&bytes, 152)),
            ],
        ),
        (
            &gapped,
            vec![
                "section 1".to_string(),
                format!("{}", zero + 8),
                format!("{zero}"),
            ],
        ),
        // The reader's wording is its own; the file, what and the numbers must be there.
        (
            &truncated,
            vec![
                "the sections do not tile the file".to_string(),
                format!("{n}"),
                format!("{}", n - 1),
            ],
        ),
        (
            &wrong_tag,
            vec![
                "wrong tag at byte 0".to_string(),
                r#"found "XURTAW01""#.to_string(),
            ],
        ),
    ];
    for (path, message) in &cases {
        for cmd in ["hash", "inspect"] {
            let o = client(&[p(cmd), path]);
            assert_eq!(o.status.code(), Some(1), "{cmd}");
            assert_eq!(stdout(&o), "", "{cmd}");
            let err = stderr(&o);
            assert!(
                err.starts_with(&format!("error: {}: ", path.display())),
                "{cmd}: {err}"
            );
            for part in message.iter() {
                assert!(err.contains(part.as_str()), "{cmd}: {part:?} in {err}");
            }
        }
    }
    let empty = dir.path().join("empty.curta");
    std::fs::write(&empty, b"").unwrap();
    let o = client(&[p("hash"), &empty]);
    assert_eq!(o.status.code(), Some(1));
    assert!(stderr(&o).contains("needs 4096 bytes"), "{}", stderr(&o));
}
