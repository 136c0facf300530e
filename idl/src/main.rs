//! Writes idl/curta.json from the interface crate (docs/idl.md).
//!
//!   cargo run -p curta-idl            # rewrites idl/curta.json
//!   cargo run -p curta-idl -- --check # exits 1 when idl/curta.json is not what this writes

use std::path::Path;
use std::process::ExitCode;

fn main() -> ExitCode {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("curta.json");
    let text = curta_idl::render_text();
    if std::env::args().any(|a| a == "--check") {
        let now = std::fs::read_to_string(&path).unwrap_or_default();
        if now != text {
            eprintln!(
                "{} is not what the interface describes: run `cargo run -p curta-idl`",
                path.display()
            );
            return ExitCode::FAILURE;
        }
        return ExitCode::SUCCESS;
    }
    let temporary = path.with_extension("json.tmp");
    let written =
        std::fs::write(&temporary, &text).and_then(|()| std::fs::rename(&temporary, &path));
    match written {
        Ok(()) => {
            println!("wrote {}", path.display());
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("cannot write {}: {e}", path.display());
            ExitCode::FAILURE
        }
    }
}
