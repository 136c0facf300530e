//! The `client` binary: a thin layer over the `curta_client` library.

fn main() -> std::process::ExitCode {
    curta_client::cli::main()
}
