//! The integer forward pass, the tokenizer and the sampler: a run of a CURTAW01 model with no
//! floating point, no allocator and no std, over the in-place reader and a caller's state
//! buffer. The program, the CLI and the browser all run this code, so a model gives the same
//! tokens wherever it runs. The arithmetic is written down in docs/inference.md.

mod backend;
mod error;
pub mod fixed;
pub mod forward;
mod kernels;
mod model;
mod run;
pub mod sample;
pub mod state;
#[cfg(feature = "std")]
mod team;
pub mod tokenizer;

pub use error::{Fixed16, RunError};
pub use fixed::parse_fixed16;
pub use kernels::Path;
pub use model::{Model, Rows};
pub use run::{Progress, Run, Stage};
pub use sample::{next_random, Settings, MAX_TEMPERATURE, ONE};
pub use state::{state_len, Mode, StateLayout, Status, STATE_TAG};
pub use tokenizer::{
    decode, encode, encode_in, encode_scratch_len, lookup, EncodeItem, Encoding, Piece, BOS, EOS,
};
