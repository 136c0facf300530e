//! Converts a checkpoint and tokenizer with the library alone (no client build needed).
//!
//! cargo run --release -p curta-core --example convert -- <CHECKPOINT> <TOKENIZER> <OUT>

use std::process::ExitCode;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().collect();
    if args.len() != 4 {
        eprintln!("usage: convert <CHECKPOINT> <TOKENIZER> <OUT>");
        return ExitCode::from(2);
    }
    match curta_core::convert::convert_file(args[1].as_ref(), args[2].as_ref(), args[3].as_ref()) {
        Ok(summary) => {
            let hash: String = summary
                .weights_hash
                .iter()
                .map(|b| format!("{b:02x}"))
                .collect();
            println!(
                "{} bytes, sections {:?}, weights hash {hash}",
                summary.bytes, summary.section_lengths
            );
            ExitCode::SUCCESS
        }
        Err(err) => {
            eprintln!("error: {err}");
            ExitCode::FAILURE
        }
    }
}
