//! Carries the program's SBF binary in the client: when `curta_program.so` exists at build time
//! (scripts/build-sbf writes `target/deploy/curta_program.so`), it is embedded with
//! `include_bytes!`, so that `client rehearse` and `client demo` run the same program from any
//! directory, after the clone is gone, and after `cargo install --path client`.
//!
//! Where it is looked for, first found wins: `$CARGO_TARGET_DIR/deploy/` (a relative
//! CARGO_TARGET_DIR is taken from the workspace root), then the workspace's `target/deploy/`.
//! `CURTA_EMBED_PROGRAM_SO=<path>` names the one file to embed instead, e.g.
//! `target/deploy/curta_program_v3.so` (the SBPF v3 build; a relative path is taken from the
//! workspace root): the client runs either version.
//! A change to the found file (scripts/build-sbf again) rebuilds the client; while none is
//! found, every build looks again.

use std::path::PathBuf;

const PROGRAM_SO: &str = "curta_program.so";

fn main() {
    let manifest = PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR").expect("set by cargo"));
    let workspace = manifest
        .parent()
        .expect("client/ is in the workspace")
        .to_path_buf();
    let mut candidates = Vec::new();
    println!("cargo:rerun-if-env-changed=CURTA_EMBED_PROGRAM_SO");
    if let Some(path) = std::env::var_os("CURTA_EMBED_PROGRAM_SO") {
        let path = PathBuf::from(path);
        let path = if path.is_absolute() {
            path
        } else {
            workspace.join(path)
        };
        assert!(
            path.is_file(),
            "CURTA_EMBED_PROGRAM_SO={} is not a file (scripts/build-sbf [--sbpf-v3] builds it)",
            path.display()
        );
        candidates.push(path);
    } else if let Some(dir) = std::env::var_os("CARGO_TARGET_DIR") {
        let dir = PathBuf::from(dir);
        let dir = if dir.is_absolute() {
            dir
        } else {
            workspace.join(dir)
        };
        candidates.push(dir.join("deploy").join(PROGRAM_SO));
    }
    candidates.push(workspace.join("target").join("deploy").join(PROGRAM_SO));
    println!("cargo:rerun-if-env-changed=CARGO_TARGET_DIR");
    println!("cargo:rerun-if-changed=build.rs");

    let looked: Vec<String> = candidates.iter().map(|p| p.display().to_string()).collect();
    let embedded = match candidates.iter().find(|p| p.is_file()) {
        Some(path) => {
            // Only the embedded file is watched: a missing one would rerun this every build.
            println!("cargo:rerun-if-changed={}", path.display());
            let path = path.canonicalize().unwrap_or_else(|_| path.clone());
            let path = path.display().to_string();
            format!("Some(({path:?}, include_bytes!({path:?})))")
        }
        None => {
            // Missing files are watched: cargo runs this again on every build until one exists,
            // so the first build after scripts/build-sbf embeds it.
            for path in &candidates {
                println!("cargo:rerun-if-changed={}", path.display());
            }
            "None".to_string()
        }
    };
    let code = format!(
        "/// The SBF binary embedded at build time: the path it was read from, and its bytes.\n\
         pub const EMBEDDED: Option<(&str, &[u8])> = {embedded};\n\
         /// Where the build looked for it.\n\
         pub const LOOKED_AT: &str = {:?};\n",
        looked.join(", ")
    );
    let out =
        PathBuf::from(std::env::var_os("OUT_DIR").expect("set by cargo")).join("program_so.rs");
    std::fs::write(&out, code).unwrap_or_else(|e| panic!("writing {}: {e}", out.display()));
}
