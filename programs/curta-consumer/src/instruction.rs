//! The consumer's instruction data (tag byte first) and, off chain, its builders.

/// A parsed instruction.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ConsumerInstruction<'a> {
    /// 0: model (32), temperature (u32), top-p (u32), n (u32), n ids (u32 each).
    Ask {
        model: &'a [u8; 32],
        temperature: u32,
        top_p: u32,
        /// The ids' bytes, 4 each.
        prompt: &'a [u8],
    },
    /// 1: nothing else.
    Bind,
    /// 2: nothing else.
    Record,
}

impl<'a> ConsumerInstruction<'a> {
    pub fn parse(data: &'a [u8]) -> Option<Self> {
        let (&tag, rest) = data.split_first()?;
        let word =
            |at: usize| u32::from_le_bytes([rest[at], rest[at + 1], rest[at + 2], rest[at + 3]]);
        match tag {
            0 => {
                let (model, tail) = rest.split_first_chunk::<32>()?;
                if tail.len() < 12 {
                    return None;
                }
                let n = word(40) as u64;
                let prompt = &tail[12..];
                (prompt.len() as u64 == 4 * n).then_some(ConsumerInstruction::Ask {
                    model,
                    temperature: word(32),
                    top_p: word(36),
                    prompt,
                })
            }
            1 => rest.is_empty().then_some(ConsumerInstruction::Bind),
            2 => rest.is_empty().then_some(ConsumerInstruction::Record),
            _ => None,
        }
    }
}

#[cfg(not(target_os = "solana"))]
pub use host::*;

#[cfg(not(target_os = "solana"))]
mod host {
    use alloc::vec::Vec;
    use solana_instruction::{AccountMeta, Instruction};
    use solana_pubkey::Pubkey;

    /// Ask: the question account (writable, this program's, zeroed) and the asker (signer).
    pub fn ask(
        program: &Pubkey,
        question: &Pubkey,
        asker: &Pubkey,
        model: &Pubkey,
        temperature: u32,
        top_p: u32,
        prompt: &[u32],
    ) -> Instruction {
        let mut data = Vec::with_capacity(45 + 4 * prompt.len());
        data.push(0);
        data.extend_from_slice(model.as_ref());
        data.extend_from_slice(&temperature.to_le_bytes());
        data.extend_from_slice(&top_p.to_le_bytes());
        data.extend_from_slice(&(prompt.len() as u32).to_le_bytes());
        prompt
            .iter()
            .for_each(|id| data.extend_from_slice(&id.to_le_bytes()));
        Instruction {
            program_id: *program,
            accounts: alloc::vec![
                AccountMeta::new(*question, false),
                AccountMeta::new_readonly(*asker, true),
            ],
            data,
        }
    }

    /// Bind: the question, the asker (signer) and the run (read-only).
    pub fn bind(program: &Pubkey, question: &Pubkey, asker: &Pubkey, run: &Pubkey) -> Instruction {
        Instruction {
            program_id: *program,
            accounts: alloc::vec![
                AccountMeta::new(*question, false),
                AccountMeta::new_readonly(*asker, true),
                AccountMeta::new_readonly(*run, false),
            ],
            data: alloc::vec![1],
        }
    }

    /// Record: the question and the run (read-only); anyone may send it.
    pub fn record(program: &Pubkey, question: &Pubkey, run: &Pubkey) -> Instruction {
        Instruction {
            program_id: *program,
            accounts: alloc::vec![
                AccountMeta::new(*question, false),
                AccountMeta::new_readonly(*run, false),
            ],
            data: alloc::vec![2],
        }
    }
}
