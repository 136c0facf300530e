//! The format documentation's command names: `curta convert` and `curta-core inspect` (and
//! `curta-core convert`, `curta-core hash`) do what `client convert`, `client inspect` and
//! `client hash` do: the same files and the same output, byte for byte.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn model(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../models")
        .join(name)
}

fn run(exe: &str, args: &[&Path]) -> Output {
    let out = Command::new(exe).args(args).output().unwrap();
    assert!(
        out.status.success(),
        "{exe} {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

/// stdout with the output path replaced, so two runs writing different files compare.
fn text(out: &Output, path: &Path) -> String {
    String::from_utf8(out.stdout.clone())
        .unwrap()
        .replace(&path.display().to_string(), "OUT")
}

#[test]
fn curta_convert_is_client_convert() {
    let dir = tempfile::tempdir().unwrap();
    let (checkpoint, tokenizer) = (model("stories260K.bin"), model("tok512.bin"));
    let ours = dir.path().join("curta.curta");
    let theirs = dir.path().join("client.curta");
    let o = Path::new("-o");
    let a = run(
        env!("CARGO_BIN_EXE_curta"),
        &[Path::new("convert"), &checkpoint, &tokenizer, o, &ours],
    );
    let b = run(
        env!("CARGO_BIN_EXE_client"),
        &[Path::new("convert"), &checkpoint, &tokenizer, o, &theirs],
    );
    assert_eq!(text(&a, &ours), text(&b, &theirs));
    assert!(text(&a, &ours).starts_with("wrote OUT: 357216 bytes in 2 sections\n"));
    assert_eq!(
        std::fs::read(&ours).unwrap(),
        std::fs::read(&theirs).unwrap()
    );
    let c = run(
        env!("CARGO_BIN_EXE_curta-core"),
        &[Path::new("convert"), &checkpoint, &tokenizer, o, &ours],
    );
    assert_eq!(text(&c, &ours), text(&b, &theirs));
}

#[test]
fn curta_core_inspect_is_client_inspect() {
    let dir = tempfile::tempdir().unwrap();
    let artifact = dir.path().join("s.curta");
    run(
        env!("CARGO_BIN_EXE_client"),
        &[
            Path::new("convert"),
            &model("stories260K.bin"),
            &model("tok512.bin"),
            Path::new("-o"),
            &artifact,
        ],
    );
    for args in [
        vec![Path::new("inspect"), &artifact],
        vec![Path::new("inspect"), &artifact, Path::new("--json")],
        vec![Path::new("hash"), &artifact],
    ] {
        let core = run(env!("CARGO_BIN_EXE_curta-core"), &args);
        let client = run(env!("CARGO_BIN_EXE_client"), &args);
        assert_eq!(core.stdout, client.stdout, "{args:?}");
        assert!(!core.stdout.is_empty());
    }
    // A bad file is refused the same way.
    let bad = dir.path().join("bad.curta");
    std::fs::write(&bad, b"CURTAW02").unwrap();
    let core = Command::new(env!("CARGO_BIN_EXE_curta-core"))
        .args([Path::new("inspect"), &bad])
        .output()
        .unwrap();
    assert!(!core.status.success());
    let message = String::from_utf8(core.stderr).unwrap();
    assert!(
        message.contains("bad.curta") && message.contains("truncated"),
        "{message}"
    );
}
