//! Runs of a model: off chain ([`offline`]: generation and perplexity, from a local artifact
//! or a sealed model) and on chain ([`onchain`]: a run account stepped by the program, checked
//! against curta-core's run of the same inputs).

pub mod offline;
pub mod onchain;
pub mod prompt;

pub use offline::{detokenize, generate, perplexity, Generation, Perplexity};
pub use prompt::Prompt;
