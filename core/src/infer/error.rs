//! What can stop a run before or while it works. Every variant names the value at fault and
//! what was expected.

use crate::FormatError;
use core::fmt;

/// A value with 16 fractional bits, printed in decimal (up to 5 places, trailing zeros
/// dropped).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Fixed16(pub u32);

impl fmt::Display for Fixed16 {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let whole = self.0 >> 16;
        let frac = ((self.0 & 0xFFFF) as u64 * 100_000 + (1 << 15)) >> 16;
        let (whole, frac) = if frac == 100_000 {
            (whole + 1, 0)
        } else {
            (whole, frac)
        };
        if frac == 0 {
            return write!(f, "{whole}");
        }
        let mut digits = [0u8; 5];
        let mut v = frac;
        for d in digits.iter_mut().rev() {
            *d = b'0' + (v % 10) as u8;
            v /= 10;
        }
        let mut len = 5;
        while digits[len - 1] == b'0' {
            len -= 1;
        }
        let text = core::str::from_utf8(&digits[..len]).map_err(|_| fmt::Error)?;
        write!(f, "{whole}.{text}")
    }
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RunError {
    #[error(transparent)]
    Format(#[from] FormatError),

    #[error("the run's state buffer is {len} bytes, this model's run needs {needed}")]
    StateTooSmall { len: usize, needed: usize },

    #[error("the prompt has no tokens: a run starts from at least one (token 1)")]
    EmptyPrompt,

    #[error("the prompt is {tokens} tokens, longer than the model's context of {context}")]
    PromptTooLong { tokens: usize, context: u32 },

    #[error("token {index} of the input is {id}, but the vocabulary has {vocab} tokens (0 to {})", vocab - 1)]
    TokenOutOfRange { index: usize, id: u32, vocab: u32 },

    #[error("steps must be at least 1")]
    NoSteps,

    #[error("{steps} steps after a prompt of {prompt} tokens run past the model's context of {context} (at most {} steps)", context + 1 - prompt)]
    StepsPastContext {
        steps: u32,
        prompt: u32,
        context: u32,
    },

    #[error("temperature {} is out of range: 0 (greedy) to {}", Fixed16(*.value), Fixed16(super::sample::MAX_TEMPERATURE))]
    Temperature { value: u32 },

    #[error("top-p {} is out of range: above 0, at most 1", Fixed16(*.value))]
    TopP { value: u32 },

    #[error("seed 0 cannot sample (it is xorshift64*'s fixed point): use any other seed")]
    SeedZero,

    #[error("teacher forcing needs at least 2 tokens, got {tokens}")]
    ScoreTooShort { tokens: usize },

    #[error("the token buffer has {len} entries, encoding this text needs {needed}")]
    TokenBuffer { len: usize, needed: usize },

    #[error("matrix {matrix} is in section {section}, which this runner does not hold")]
    SectionMissing { section: usize, matrix: usize },

    #[error("section {section} is {length} bytes, but the section table says {expected}")]
    SectionLength {
        section: usize,
        length: u64,
        expected: u64,
    },

    #[error("{given} sections given, the model has {count}")]
    TooManySections { given: usize, count: usize },

    #[error("not a run's state: it does not start with \"CURTAS01\"")]
    NotAState,

    #[error("the run's state is of another model (its configuration differs)")]
    ModelMismatch,

    #[error("the run's state field {field} is {value}, expected at most {max}")]
    BadState {
        field: &'static str,
        value: u64,
        max: u64,
    },
}

#[cfg(test)]
mod tests {
    use super::*;
    extern crate std;
    use std::string::ToString;

    #[test]
    fn fixed16_prints_decimals() {
        assert_eq!(Fixed16(0).to_string(), "0");
        assert_eq!(Fixed16(1 << 16).to_string(), "1");
        assert_eq!(Fixed16(3 << 15).to_string(), "1.5");
        assert_eq!(Fixed16(52_429).to_string(), "0.8"); // round(0.8 × 65536)
        assert_eq!(Fixed16(1).to_string(), "0.00002");
        assert_eq!(Fixed16(65_535).to_string(), "0.99998");
        assert_eq!(Fixed16(16 << 16).to_string(), "16");
    }
}
