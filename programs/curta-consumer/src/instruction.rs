//! The consumer's instruction data (a u8 tag, then the fields in the interface crate's wire
//! format: integers little-endian, a u32 list as a u32 count then its items), parsed in place
//! with curta-interface's `Reader` and `Wire`; off chain, its builders.

use curta_interface::instruction::{Reader, U32s, Wire};

/// A parsed instruction.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ConsumerInstruction<'a> {
    /// 0: model (32), temperature (u32), top-p (u32), expiry (u32, slots), prompt (u32 count,
    /// then the ids, u32 each).
    Ask {
        model: &'a [u8; 32],
        temperature: u32,
        top_p: u32,
        expiry: u32,
        prompt: U32s<'a>,
    },
    /// 1: nothing else.
    Bind,
    /// 2: nothing else.
    Record,
    /// 3: nothing else.
    Release,
    /// 4: nothing else.
    Close,
    /// 5: nothing else.
    BindClaim,
    /// 6: the answer's generated ids (u32 count, then the ids), then its text (u32 count, then
    /// the bytes).
    RecordClaim { ids: U32s<'a>, text: &'a [u8] },
}

/// Ask's tag and fields of fixed size: tag, model, temperature, top-p, expiry.
const ASK_FIXED: usize = 1 + 32 + 4 + 4 + 4;

impl<'a> ConsumerInstruction<'a> {
    /// Parses instruction data exactly: an unknown tag, a truncated or over-long instruction,
    /// or a prompt count other than the ids that follow it is `None`.
    #[inline(always)]
    pub fn parse(data: &'a [u8]) -> Option<Self> {
        let (&tag, rest) = data.split_first()?;
        let bare = |instruction| rest.is_empty().then_some(instruction);
        match tag {
            0 => {
                let mut reader = Reader::new(data, 1, ASK_FIXED)?;
                let instruction = ConsumerInstruction::Ask {
                    model: Wire::read(&mut reader)?,
                    temperature: Wire::read(&mut reader)?,
                    top_p: Wire::read(&mut reader)?,
                    expiry: Wire::read(&mut reader)?,
                    prompt: Wire::read(&mut reader)?,
                };
                reader.is_done().then_some(instruction)
            }
            1 => bare(ConsumerInstruction::Bind),
            2 => bare(ConsumerInstruction::Record),
            3 => bare(ConsumerInstruction::Release),
            4 => bare(ConsumerInstruction::Close),
            5 => bare(ConsumerInstruction::BindClaim),
            6 => {
                let mut reader = Reader::new(data, 1, 1)?;
                let instruction = ConsumerInstruction::RecordClaim {
                    ids: Wire::read(&mut reader)?,
                    text: Wire::read(&mut reader)?,
                };
                reader.is_done().then_some(instruction)
            }
            _ => None,
        }
    }
}

#[cfg(not(target_os = "solana"))]
pub use host::*;

#[cfg(not(target_os = "solana"))]
mod host {
    use super::*;
    use alloc::vec::Vec;
    use solana_instruction::{AccountMeta, Instruction};
    use solana_pubkey::Pubkey;

    /// Ask: the question account (writable, this program's, zeroed) and the asker (signer).
    /// `expiry`: slots after the bound run's start slot from which anyone may release the
    /// question (`state::MIN_EXPIRY` to `state::MAX_EXPIRY`).
    #[allow(clippy::too_many_arguments)]
    pub fn ask(
        program: &Pubkey,
        question: &Pubkey,
        asker: &Pubkey,
        model: &Pubkey,
        temperature: u32,
        top_p: u32,
        expiry: u32,
        prompt: &[u32],
    ) -> Instruction {
        let mut data = Vec::with_capacity(ASK_FIXED + 4 + 4 * prompt.len());
        data.push(0);
        data.extend_from_slice(model.as_ref());
        temperature.write(&mut data);
        top_p.write(&mut data);
        expiry.write(&mut data);
        U32s::Values(prompt).write(&mut data);
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

    /// Release: the question and the bound run's address (read-only, whatever it holds now);
    /// anyone may send it once the question's expiry has passed.
    pub fn release(program: &Pubkey, question: &Pubkey, run: &Pubkey) -> Instruction {
        Instruction {
            program_id: *program,
            accounts: alloc::vec![
                AccountMeta::new(*question, false),
                AccountMeta::new_readonly(*run, false),
            ],
            data: alloc::vec![3],
        }
    }

    /// BindClaim: the question, the asker (signer) and the claim (read-only), in the claim's
    /// open slot.
    pub fn bind_claim(
        program: &Pubkey,
        question: &Pubkey,
        asker: &Pubkey,
        claim: &Pubkey,
    ) -> Instruction {
        Instruction {
            data: alloc::vec![5],
            ..bind(program, question, asker, claim)
        }
    }

    /// RecordClaim: the question and the claim (read-only), with the claim's answer (its
    /// generated ids and text); anyone may send it once the claim is settled.
    pub fn record_claim(
        program: &Pubkey,
        question: &Pubkey,
        claim: &Pubkey,
        ids: &[u32],
        text: &[u8],
    ) -> Instruction {
        let mut data = alloc::vec![6];
        U32s::Values(ids).write(&mut data);
        text.write(&mut data);
        Instruction {
            data,
            ..record(program, question, claim)
        }
    }

    /// Close: the question and its asker (signer, writable: receives every lamport).
    pub fn close(program: &Pubkey, question: &Pubkey, asker: &Pubkey) -> Instruction {
        Instruction {
            program_id: *program,
            accounts: alloc::vec![
                AccountMeta::new(*question, false),
                AccountMeta::new(*asker, true),
            ],
            data: alloc::vec![4],
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use solana_pubkey::Pubkey;

    #[test]
    fn ask_parses_exactly_what_the_builder_writes_and_nothing_else() {
        let (program, question, asker, model) = (
            Pubkey::new_unique(),
            Pubkey::new_unique(),
            Pubkey::new_unique(),
            Pubkey::new_unique(),
        );
        let data = ask(
            &program,
            &question,
            &asker,
            &model,
            5,
            6,
            512,
            &[1, 40, 300],
        )
        .data;
        assert_eq!(data.len(), 1 + 32 + 4 * 4 + 12);
        match ConsumerInstruction::parse(&data) {
            Some(ConsumerInstruction::Ask {
                model: m,
                temperature: 5,
                top_p: 6,
                expiry: 512,
                prompt,
            }) => {
                assert_eq!(m, model.as_ref());
                assert!(prompt.iter().eq([1, 40, 300]));
            }
            other => panic!("{other:?}"),
        }
        // Truncated anywhere, one byte too many, a count other than the ids that follow.
        for len in 0..data.len() {
            assert_eq!(ConsumerInstruction::parse(&data[..len]), None, "{len}");
        }
        let mut long = data.clone();
        long.push(0);
        assert_eq!(ConsumerInstruction::parse(&long), None);
        let mut count = data.clone();
        count[45] = 2;
        assert_eq!(ConsumerInstruction::parse(&count), None);
        // The bare instructions: the tag alone.
        for (tag, expected) in [
            (1, ConsumerInstruction::Bind),
            (2, ConsumerInstruction::Record),
            (3, ConsumerInstruction::Release),
            (4, ConsumerInstruction::Close),
        ] {
            assert_eq!(ConsumerInstruction::parse(&[tag]), Some(expected));
            assert_eq!(ConsumerInstruction::parse(&[tag, 0]), None);
        }
        assert_eq!(
            ConsumerInstruction::parse(&[5]),
            Some(ConsumerInstruction::BindClaim)
        );
        assert_eq!(ConsumerInstruction::parse(&[7]), None);
        let record = record_claim(&program, &question, &asker, &[3, 4], b"ab").data;
        assert_eq!(
            record,
            [6, 2, 0, 0, 0, 3, 0, 0, 0, 4, 0, 0, 0, 2, 0, 0, 0, b'a', b'b']
        );
        assert!(matches!(
            ConsumerInstruction::parse(&record),
            Some(ConsumerInstruction::RecordClaim { text: b"ab", .. })
        ));
        assert_eq!(
            ConsumerInstruction::parse(&record[..record.len() - 1]),
            None
        );
    }
}
