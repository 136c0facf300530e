//! The kernels of the forward pass per target.

#[cfg(target_os = "solana")]
pub mod sbf;
