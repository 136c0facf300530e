//! The client carries the program's SBF binary (client/build.rs embeds
//! target/deploy/curta_program.so): `demo` and `rehearse` run it from any directory, a copy of
//! the binary outside the tree included, and say which binary ran; `CURTA_PROGRAM_SO`
//! overrides it, and a missing override is named.

use sha2::{Digest, Sha256};
use std::path::Path;
use std::process::Command;

/// Runs `exe` in `dir` with no override of the program's binary in its environment.
fn run_in(exe: &Path, dir: &Path, args: &[&str], so: Option<&Path>) -> (bool, String, String) {
    let mut command = Command::new(exe);
    command
        .args(args)
        .current_dir(dir)
        .env("RUST_LOG", "error")
        .env_remove("CURTA_PROGRAM_SO")
        .env_remove("SBF_OUT_DIR")
        .env_remove("BPF_OUT_DIR");
    if let Some(so) = so {
        command.env("CURTA_PROGRAM_SO", so);
    }
    let out = command.output().unwrap();
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into(),
        String::from_utf8_lossy(&out.stderr).into(),
    )
}

fn json_of(out: &str) -> serde_json::Value {
    serde_json::from_str(&out[out.find("{\n").expect(out)..]).unwrap()
}

/// The SBPF version an ELF declares: its header's e_flags (0 for `scripts/build-sbf`, 3 for
/// `--sbpf-v3`; `CURTA_EMBED_PROGRAM_SO` may embed either).
fn e_flags(elf: &[u8]) -> u32 {
    u32::from_le_bytes(elf[48..52].try_into().unwrap())
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// The binary this test build embedded, the bytes of the file it names, and their sha256
/// (computed here with sha2, not by the client).
fn embedded() -> (String, Vec<u8>, String) {
    let so = curta_client::send::transport::ProgramSo::embedded()
        .expect("the client embeds target/deploy/curta_program.so: run scripts/build-sbf first");
    assert!(so.embedded);
    let on_disk = std::fs::read(&so.path).unwrap();
    assert_eq!(so.bytes, on_disk, "the embedded bytes are the file's");
    assert_eq!(&so.bytes[..4], b"\x7fELF");
    let sum = hex(&Sha256::digest(&on_disk));
    (so.path.display().to_string(), on_disk, sum)
}

#[test]
fn demo_runs_the_embedded_program_from_another_directory_and_a_copied_binary() {
    let (path, bytes, sum) = embedded();
    let dir = tempfile::tempdir().unwrap();
    // The binary as cargo built it, and a copy of it outside the source tree (as an install).
    let copy = dir.path().join("client");
    std::fs::copy(env!("CARGO_BIN_EXE_client"), &copy).unwrap();
    for exe in [Path::new(env!("CARGO_BIN_EXE_client")), copy.as_path()] {
        let (ok, out, err) = run_in(exe, dir.path(), &["demo", "--output", "json"], None);
        assert!(ok, "{}: {err}", exe.display());
        let json = json_of(&out);
        assert_eq!(json["state"], "Sealed");
        assert_eq!(json["verified"], true);
        assert_eq!(
            json["cluster"],
            format!(
                "in-process bank, program SBF embedded in the client, built from {path} (SBPF v{}, {} bytes, sha256 {sum})",
                e_flags(&bytes),
                bytes.len()
            )
        );
    }
}

#[test]
fn curta_program_so_overrides_the_embedded_binary() {
    let (_, bytes, sum) = embedded();
    let dir = tempfile::tempdir().unwrap();
    let so = dir.path().join("override.so");
    std::fs::write(&so, &bytes).unwrap();
    let artifact = dir.path().join("stories260K.curta");
    let converted = curta_core::convert::convert(
        curta_client::rehearse::STORIES260K,
        curta_client::rehearse::TOK512,
    )
    .unwrap();
    std::fs::write(&artifact, converted).unwrap();
    let exe = Path::new(env!("CARGO_BIN_EXE_client"));
    let (ok, out, err) = run_in(
        exe,
        dir.path(),
        &["rehearse", "stories260K.curta", "--output", "json"],
        Some(&so),
    );
    assert!(ok, "{err}");
    let json = json_of(&out);
    assert_eq!(json["state"], "Sealed");
    assert_eq!(
        json["cluster"],
        format!(
            "in-process bank, program SBF {} (SBPF v{}, {} bytes, sha256 {sum})",
            so.canonicalize().unwrap().display(),
            e_flags(&bytes),
            bytes.len()
        )
    );

    // A missing override is an error naming it; nothing falls back silently.
    let missing = dir.path().join("missing.so");
    let (ok, _, err) = run_in(exe, dir.path(), &["demo"], Some(&missing));
    assert!(!ok);
    assert_eq!(
        err.trim(),
        format!(
            "error: the Curta program's SBF binary is not built: run scripts/build-sbf (looked at {})",
            missing.display()
        )
    );
}
