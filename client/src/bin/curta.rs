//! The `curta` binary: the same commands as `client`, under the name the format documentation
//! uses (`curta convert CHECKPOINT TOKENIZER -o OUT`).

fn main() -> std::process::ExitCode {
    curta_client::cli::main()
}
