//! convert_file: the artifact appears only on success; an error names the file at fault and
//! leaves no output, and never clobbers an existing one.

mod common;
use common::*;
use curta_core::convert::{convert_file, ConvertError, ConvertFileError};

fn listing(dir: &std::path::Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    names.sort();
    names
}

#[test]
fn writes_the_artifact_and_its_summary() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("stories260K.curta");
    let summary = convert_file(&model("stories260K.bin"), &model("tok512.bin"), &out).unwrap();
    let bytes = std::fs::read(&out).unwrap();
    assert_eq!(summary.bytes, bytes.len() as u64);
    assert_eq!(
        summary.section_lengths,
        vec![u64le(&bytes, 136), u64le(&bytes, 152)]
    );
    assert_eq!(summary.weights_hash, chain(&sections(&bytes)));
    assert_eq!(
        listing(dir.path()),
        ["stories260K.curta"],
        "no temporary file left"
    );
    // Same bytes as the in-memory converter.
    let mem =
        curta_core::convert::convert(&read_model("stories260K.bin"), &read_model("tok512.bin"))
            .unwrap();
    assert!(mem == bytes);
}

#[test]
fn errors_leave_no_file_and_do_not_clobber() {
    let dir = tempfile::tempdir().unwrap();
    let bad_ckpt = dir.path().join("bad.bin");
    let ckpt = read_model("stories260K.bin");
    std::fs::write(&bad_ckpt, &ckpt[..ckpt.len() - 4]).unwrap();
    let out = dir.path().join("out.curta");

    let e = convert_file(&bad_ckpt, &model("tok512.bin"), &out).unwrap_err();
    match &e {
        ConvertFileError::Convert {
            path,
            error: ConvertError::CheckpointTruncated { .. },
        } => assert_eq!(path, &bad_ckpt),
        other => panic!("{other:?}"),
    }
    assert!(
        e.to_string()
            .starts_with(&format!("{}: checkpoint is truncated", bad_ckpt.display())),
        "{e}"
    );
    assert_eq!(listing(dir.path()), ["bad.bin"]);

    // An existing output survives a failed conversion untouched.
    std::fs::write(&out, b"precious").unwrap();
    let bad_tok = dir.path().join("bad-tok.bin");
    let tok = read_model("tok512.bin");
    std::fs::write(&bad_tok, &tok[..tok.len() - 1]).unwrap();
    let e = convert_file(&model("stories260K.bin"), &bad_tok, &out).unwrap_err();
    match &e {
        ConvertFileError::Convert {
            path,
            error: ConvertError::TokenizerTruncated { token: 511, .. },
        } => assert_eq!(path, &bad_tok),
        other => panic!("{other:?}"),
    }
    assert_eq!(std::fs::read(&out).unwrap(), b"precious");
    assert_eq!(listing(dir.path()), ["bad-tok.bin", "bad.bin", "out.curta"]);

    // A missing input names its path.
    let missing = dir.path().join("missing.bin");
    let e = convert_file(&missing, &model("tok512.bin"), &out).unwrap_err();
    assert!(
        matches!(&e, ConvertFileError::Read { path, .. } if path == &missing),
        "{e:?}"
    );
    // An output directory that does not exist.
    let nowhere = dir.path().join("no/such/dir/out.curta");
    let e = convert_file(&model("stories260K.bin"), &model("tok512.bin"), &nowhere).unwrap_err();
    assert!(
        matches!(&e, ConvertFileError::Write { path, .. } if path == &nowhere),
        "{e:?}"
    );
    assert_eq!(std::fs::read(&out).unwrap(), b"precious");

    // Success replaces the old output.
    convert_file(&model("stories260K.bin"), &model("tok512.bin"), &out).unwrap();
    assert_eq!(&std::fs::read(&out).unwrap()[..8], b"CURTAW01");
}
