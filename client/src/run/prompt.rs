//! A run's prompt: text, tokenized with the model's tokenizer, or token ids.

use curta_core::infer::{encode, RunError};
use curta_core::Artifact;

/// The prompt: text (tokenized from section zero) or token ids.
#[derive(Clone, Debug)]
pub enum Prompt {
    Text(Vec<u8>),
    Tokens(Vec<u32>),
}

impl Prompt {
    /// The prompt's tokens (a text starts with token 1 and its space prefix).
    pub fn tokens(&self, artifact: &Artifact) -> Result<Vec<u32>, RunError> {
        match self {
            Prompt::Tokens(t) => Ok(t.clone()),
            Prompt::Text(text) => {
                let mut out = vec![0; text.len() + 2];
                let n = encode(artifact.metadata(), text, &mut out)?;
                out.truncate(n);
                Ok(out)
            }
        }
    }
}
