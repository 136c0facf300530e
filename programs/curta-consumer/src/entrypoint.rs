//! The entrypoint (SBF builds without `no-entrypoint`): pinocchio's, no heap.

pinocchio::program_entrypoint!(crate::processor::process_instruction, 4);
pinocchio::no_allocator!();

#[panic_handler]
fn panic(_: &core::panic::PanicInfo<'_>) -> ! {
    const WHERE: &str = "curta-consumer";
    // SAFETY: the syscall reads WHERE's bytes and never returns.
    unsafe { pinocchio::syscalls::sol_panic_(WHERE.as_ptr(), WHERE.len() as u64, 0, 0) }
}
