//! Curta client: publish, seal, verify and close models, against an RPC endpoint or an
//! in-process bank running the real program.

pub mod cli;
