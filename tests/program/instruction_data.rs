//! Instruction data: the exact wire bytes, and every truncated, over-long or unknown encoding
//! refused with InvalidInstructionData (by the decoder and in the bank), never a panic.

use crate::harness::*;
use curta_program::instruction::{self as ix, CurtaInstruction, Prompt, RunSeeds, U32s};
use curta_program::run::SeedSource;
use curta_tests::{tiny_sections, Rng};
use solana_instruction::error::InstructionError;
use solana_instruction::Instruction;
use solana_pubkey::Pubkey;

fn every_kind() -> Vec<CurtaInstruction<'static>> {
    static WRITE_BYTES: [u8; 256] = {
        let mut bytes = [0; 256];
        let mut i = 0;
        while i < 256 {
            bytes[i] = i as u8;
            i += 1;
        }
        bytes
    };
    vec![
        CurtaInstruction::CreateModel {
            weights_hash: &[3; 32],
            section_lengths: U32s::Values(&[4_096, 70_000, 5]),
        },
        CurtaInstruction::InitWeightAccount { section: 17 },
        CurtaInstruction::Write {
            offset: 123_456,
            bytes: &WRITE_BYTES,
        },
        CurtaInstruction::Seal {
            pass: 2,
            chunk: 161,
            creation: 0x0102_0304_0506_0708,
        },
        CurtaInstruction::Reopen {},
        CurtaInstruction::Close {},
        CurtaInstruction::StartRun {
            nonce: 7,
            steps: 16,
            temperature: 52_429,
            top_p: 58_982,
            seed: 0x0102_0304_0506_0708,
            seed_source: SeedSource::Drawn,
            prompt: Prompt::Text(b"Once upon a time"),
        },
        CurtaInstruction::StartRun {
            nonce: 0,
            steps: 1,
            temperature: 0,
            top_p: 65_536,
            seed: 1,
            seed_source: SeedSource::None,
            prompt: Prompt::Tokens(U32s::Values(&[1, 306, 70_000])),
        },
        CurtaInstruction::Step {
            ticket: 12,
            budget: 1_175_000,
        },
        CurtaInstruction::CloseRun { run_seeds: None },
        CurtaInstruction::CloseRun {
            run_seeds: Some(RunSeeds {
                model: &[0x5a; 32],
                nonce: 0x0102_0304,
            }),
        },
        CurtaInstruction::OpenClaim {
            nonce: 3,
            steps: 64,
            temperature: 52_429,
            top_p: 58_982,
            seed: 9,
            seed_source: SeedSource::Drawn,
            window: 150,
            priority_price: 1_000,
            bond: 0x0a0b_0c0d_0e0f,
            prompt: Prompt::Tokens(U32s::Values(&[1, 40])),
        },
        CurtaInstruction::AnswerClaim {
            token_count: 64,
            answer_hash: &[0x33; 32],
        },
        CurtaInstruction::Challenge { nonce: 5 },
        CurtaInstruction::Resolve {},
        CurtaInstruction::CloseClaim {},
    ]
}

#[test]
fn claim_instructions_bytes_as_documented() {
    // docs/program.md, "9 OpenClaim": tag 9, nonce, steps, temperature, top-p (u32 each), seed
    // (u64), seed source (u8), window (u32), priority price, bond (u64 each), the prompt.
    let open = CurtaInstruction::OpenClaim {
        nonce: 3,
        steps: 64,
        temperature: 7,
        top_p: 8,
        seed: 9,
        seed_source: SeedSource::Chosen,
        window: 150,
        priority_price: 1_000,
        bond: 0x0102,
        prompt: Prompt::Text(b"hi"),
    };
    let mut expected = vec![9, 3, 0, 0, 0, 64, 0, 0, 0, 7, 0, 0, 0, 8, 0, 0, 0];
    expected.extend([9, 0, 0, 0, 0, 0, 0, 0, 2, 150, 0, 0, 0]);
    expected.extend([0xe8, 3, 0, 0, 0, 0, 0, 0, 2, 1, 0, 0, 0, 0, 0, 0]);
    expected.extend([0, 2, 0, 0, 0, b'h', b'i']);
    assert_eq!(open.pack(), expected);
    let answer = CurtaInstruction::AnswerClaim {
        token_count: 0x0201,
        answer_hash: &[0x44; 32],
    };
    let mut expected = vec![10, 1, 2, 0, 0];
    expected.extend([0x44; 32]);
    assert_eq!(answer.pack(), expected);
    assert_eq!(
        CurtaInstruction::Challenge { nonce: 0x0304 }.pack(),
        vec![11, 4, 3, 0, 0]
    );
    assert_eq!(CurtaInstruction::Resolve {}.pack(), vec![12]);
    assert_eq!(CurtaInstruction::CloseClaim {}.pack(), vec![13]);
}

#[test]
fn wire_bytes_as_documented() {
    // docs/program.md: tag, then little-endian fields; a list is a u32 count then its items.
    let write = CurtaInstruction::Write {
        offset: 0x0403_0201,
        bytes: &[9, 8],
    };
    assert_eq!(write.pack(), [2, 1, 2, 3, 4, 2, 0, 0, 0, 9, 8]);
    assert_eq!(
        CurtaInstruction::Seal {
            pass: 1,
            chunk: 0x0102,
            creation: 0x0807_0605_0403_0201,
        }
        .pack(),
        [3, 1, 0, 0, 0, 2, 1, 0, 0, 1, 2, 3, 4, 5, 6, 7, 8]
    );
    assert_eq!(
        CurtaInstruction::InitWeightAccount { section: 5 }.pack(),
        [1, 5]
    );
    assert_eq!(CurtaInstruction::Reopen {}.pack(), [4]);
    assert_eq!(CurtaInstruction::Close {}.pack(), [5]);
    // StartRun: tag 6, nonce, steps, temperature, top-p (u32 each), seed (u64), the seed's
    // source (2: chosen), the prompt's kind (1: ids), its count (u32) and the ids (u32 each).
    let start = CurtaInstruction::StartRun {
        nonce: 0x0403_0201,
        steps: 16,
        temperature: 0x0001_0000,
        top_p: 0x0000_e666,
        seed: 0x0807_0605_0403_0201,
        seed_source: SeedSource::Chosen,
        prompt: Prompt::Tokens(U32s::Values(&[1, 0x0102])),
    };
    let mut expected = vec![6, 1, 2, 3, 4, 16, 0, 0, 0, 0, 0, 1, 0, 0x66, 0xe6, 0, 0];
    expected.extend([
        1, 2, 3, 4, 5, 6, 7, 8, 2, 1, 2, 0, 0, 0, 1, 0, 0, 0, 2, 1, 0, 0,
    ]);
    assert_eq!(start.pack(), expected);
    // A text prompt: kind 0, the byte count, the bytes.
    let text = CurtaInstruction::StartRun {
        nonce: 0,
        steps: 1,
        temperature: 0,
        top_p: 0,
        seed: 0,
        seed_source: SeedSource::None,
        prompt: Prompt::Text(b"ab"),
    };
    let mut expected = vec![6];
    expected.extend([0; 24]);
    expected[5] = 1;
    expected.extend([0, 0, 2, 0, 0, 0, b'a', b'b']);
    assert_eq!(text.pack(), expected);
    // Step: tag 7, the ticket, the budget.
    let step = CurtaInstruction::Step {
        ticket: 0x0201,
        budget: 0x0403_0201,
    };
    assert_eq!(step.pack(), [7, 1, 2, 0, 0, 1, 2, 3, 4]);
    assert_eq!(CurtaInstruction::CloseRun { run_seeds: None }.pack(), [8]);
    // CloseRun naming its run: tag 8, the model's 32 bytes, the nonce.
    let named = CurtaInstruction::CloseRun {
        run_seeds: Some(RunSeeds {
            model: &[7; 32],
            nonce: 0x0403_0201,
        }),
    };
    let mut expected = vec![8];
    expected.extend([7; 32]);
    expected.extend([1, 2, 3, 4]);
    assert_eq!(named.pack(), expected);
    // Any other length after CloseRun's tag is refused.
    for len in [1, 32, 35, 37] {
        let mut data = vec![8];
        data.extend(vec![0; len]);
        assert_eq!(
            CurtaInstruction::parse(&data),
            None,
            "CloseRun with {len} bytes after the tag"
        );
    }
    // A prompt kind other than 0 and 1 is refused, and a seed source other than 0 to 2.
    let mut bad_kind = text.pack();
    bad_kind[26] = 2;
    assert_eq!(CurtaInstruction::parse(&bad_kind), None);
    let mut bad_source = text.pack();
    bad_source[25] = 3;
    assert_eq!(CurtaInstruction::parse(&bad_source), None);
    let create = CurtaInstruction::CreateModel {
        weights_hash: &[0xaa; 32],
        section_lengths: U32s::Values(&[1, 0x0100]),
    };
    let mut expected = vec![0];
    expected.extend([0xaa; 32]);
    expected.extend([2, 0, 0, 0, 1, 0, 0, 0, 0, 1, 0, 0]);
    assert_eq!(create.pack(), expected);
}

#[test]
fn decoder_refuses_truncated_trailing_and_unknown() {
    for kind in every_kind() {
        let bytes = kind.pack();
        assert_eq!(CurtaInstruction::parse(&bytes), Some(kind));
        for len in 0..bytes.len() {
            // CloseRun's tag alone is CloseRun without the optional names.
            if bytes[0] == 8 && len == 1 {
                let tag_alone = CurtaInstruction::CloseRun { run_seeds: None };
                assert_eq!(CurtaInstruction::parse(&bytes[..1]), Some(tag_alone));
                continue;
            }
            assert_eq!(
                CurtaInstruction::parse(&bytes[..len]),
                None,
                "{kind:?} cut to {len}"
            );
        }
        for extra in [0u8, 1, 0xff] {
            let mut long = bytes.clone();
            long.push(extra);
            assert_eq!(CurtaInstruction::parse(&long), None, "{kind:?} + {extra}");
        }
    }
    for tag in 14..=255u8 {
        assert_eq!(CurtaInstruction::parse(&[tag]), None);
        assert_eq!(CurtaInstruction::parse(&[tag, 0, 0, 0, 0]), None);
    }
    // A Vec whose count claims more than the data holds (up to u32::MAX) fails without
    // allocating it.
    for count in [3u32, 1_019, 1 << 20, u32::MAX] {
        let mut data = vec![2, 0, 0, 0, 0];
        data.extend(count.to_le_bytes());
        data.extend([1, 2]);
        assert_eq!(CurtaInstruction::parse(&data), None);
        let mut data = vec![0];
        data.extend([0; 32]);
        data.extend(count.to_le_bytes());
        assert_eq!(CurtaInstruction::parse(&data), None);
    }
    // Seeded garbage: decodes or is refused, never panics; whatever decodes re-encodes to the
    // same bytes (the encoding is canonical).
    let mut rng = Rng::new(77);
    for _ in 0..20_000 {
        let len = rng.below(48) as usize;
        let mut data = rng.bytes(len);
        if !data.is_empty() {
            data[0] %= 8;
        }
        if let Some(decoded) = CurtaInstruction::parse(&data) {
            assert_eq!(decoded.pack(), data);
        }
    }
}

#[tokio::test]
async fn bank_refuses_garbage_truncated_and_over_long_data() {
    let mut bank = Bank::start().await;
    let a = bank.authority.insecure_clone();
    let p = written(&mut bank, tiny_sections(10_000, 31)).await;
    let w = p.accounts();
    let write = ix::write(&PROGRAM, &p.weights[1], &p.authority, 8, &[1, 2, 3]);
    let seal = ix::start_seal(&PROGRAM, &p.model, &p.weights, &p.authority, p.creation, 0);
    let with_data = |i: &Instruction, data: Vec<u8>| Instruction { data, ..i.clone() };
    let bad = InstructionError::InvalidInstructionData;

    bank.refused(&[with_data(&write, vec![])], &[&a], 0, bad.clone(), &w)
        .await;
    for tag in [6u8, 7, 0x80, 0xff] {
        bank.refused(
            &[with_data(&write, vec![tag, 8, 0, 0, 0])],
            &[&a],
            0,
            bad.clone(),
            &w,
        )
        .await;
    }
    let bytes = write.data.clone();
    for len in [1, 4, 5, 8, bytes.len() - 1] {
        bank.refused(
            &[with_data(&write, bytes[..len].to_vec())],
            &[&a],
            0,
            bad.clone(),
            &w,
        )
        .await;
    }
    let mut long = bytes.clone();
    long.push(0);
    bank.refused(&[with_data(&write, long)], &[&a], 0, bad.clone(), &w)
        .await;
    let mut long = seal.data.clone();
    long.extend([0; 4]);
    bank.refused(&[with_data(&seal, long)], &[&a], 0, bad.clone(), &w)
        .await;
    bank.refused(
        &[with_data(&seal, seal.data[..8].to_vec())],
        &[&a],
        0,
        bad.clone(),
        &w,
    )
    .await;
    // Seeded garbage of every length up to 64.
    let mut rng = Rng::new(5);
    for len in 0..64 {
        let mut data = rng.bytes(len);
        if !data.is_empty() {
            data[0] = 6 + (data[0] % 250);
        }
        bank.refused(&[with_data(&seal, data)], &[&a], 0, bad.clone(), &w)
            .await;
    }
    // Too few or too many accounts for a well-formed instruction.
    let mut short = write.clone();
    short.accounts.pop();
    bank.refused(
        &[short],
        &[],
        0,
        custom(curta_program::error::CurtaError::WrongAccountCount),
        &w,
    )
    .await;
    let mut extra = seal.clone();
    extra
        .accounts
        .push(solana_instruction::AccountMeta::new_readonly(
            Pubkey::new_unique(),
            false,
        ));
    bank.refused(
        &[extra],
        &[&a],
        0,
        custom(curta_program::error::CurtaError::WrongAccountCount),
        &w,
    )
    .await;
    // The well-formed instructions still work afterwards.
    bank.send(&[write], &[&a]).await.unwrap();
    bank.send(&[seal], &[&a]).await.unwrap();
}

#[tokio::test]
async fn write_declaring_a_million_bytes_is_refused_before_any_allocation() {
    // The SBF program has no heap at all (it would abort on the first allocation), so the
    // named error proves the count is checked against the bytes present before anything else.
    let mut bank = Bank::start().await;
    let a = bank.authority.insecure_clone();
    let p = written(&mut bank, tiny_sections(10_000, 32)).await;
    let w = p.accounts();
    let write = ix::write(&PROGRAM, &p.weights[1], &p.authority, 0, &[7; 16]);
    let mut data = write.data.clone();
    data[5..9].copy_from_slice(&1_000_000u32.to_le_bytes());
    assert_eq!(data.len(), 9 + 16);
    let (result, logs, units) = bank
        .send_metered(&[Instruction { data, ..write }], &[&a])
        .await;
    assert_eq!(
        result,
        Err(solana_sdk::transaction::TransactionError::InstructionError(
            0,
            InstructionError::InvalidInstructionData
        )),
        "{logs:#?}"
    );
    assert!(
        logs.iter()
            .all(|l| !l.contains("panicked") && !l.contains("memory")),
        "{logs:#?}"
    );
    assert!(units < 1_000, "refused at once: {units} CU");
    let after = bank.snapshot(&w).await;
    assert_eq!(
        after[2].as_ref().unwrap().data[2048..2064],
        p.sections[1][..16]
    );
}
