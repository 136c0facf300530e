//! The program entrypoint (absent with the `no-entrypoint` feature).

// The entrypoint macro's heap and panic handlers refer to `std` on the host.
extern crate std;

solana_program_entrypoint::entrypoint!(process_instruction);

fn process_instruction(
    program_id: &solana_pubkey::Pubkey,
    accounts: &[solana_account_info::AccountInfo],
    instruction_data: &[u8],
) -> solana_program_error::ProgramResult {
    crate::processor::process_instruction(program_id, accounts, instruction_data)
}
