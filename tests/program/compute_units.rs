//! Compute units of every instruction, measured in the VM on the SBF binary, against the goals
//! of docs/measurements.md, and the client's compute-unit limits against the measures.
//! `scripts/bench-cu` prints the table (this test with --nocapture).

use crate::harness::*;
use curta_client::model::items::{
    CLOSE_UNITS, CREATE_UNITS, REOPEN_UNITS, SEAL_UNITS, WRITE_UNITS,
};
use curta_core::convert::synth;
use curta_core::Config;
use curta_program::instruction as ix;
use curta_program::state::ModelState;
use curta_tests::{split_sections, tiny_sections};
use solana_instruction::Instruction;
use solana_sdk::signature::{Keypair, Signer};

/// An 18-section artifact (16 layers, the maximum, 114 matrix descriptors): dimension 64,
/// hidden 256, 8 heads, a vocabulary of `vocab` (2,048: 1,179,648 matrix weights, over the
/// 1,000,000 that split the layers). Section zero is over 65,536 bytes (the tokenizer), so its first chunk is
/// a full one: chunk 0 at its most, the header check on top of a full chunk's hash.
fn eighteen_sections(vocab: u32) -> Vec<Vec<u8>> {
    let config = Config {
        dim: 64,
        hidden_dim: 256,
        layers: 16,
        heads: 8,
        kv_heads: 8,
        vocab_size: vocab,
        context_length: 64,
    };
    let artifact = curta_core::convert::convert(
        &synth::checkpoint(&config, true, 18),
        &synth::tokenizer(config.vocab_size, 18),
    )
    .expect("converting the synthetic 16-layer checkpoint");
    let sections = split_sections(&artifact);
    assert_eq!(sections.len(), 18);
    assert!(
        sections[0].len() > 65_536,
        "section zero: {}",
        sections[0].len()
    );
    sections
}

struct Table(Vec<(String, u64)>);

impl Table {
    /// Sends `instructions` (one transaction) and records the units it consumed.
    async fn measure(
        &mut self,
        bank: &mut Bank,
        name: &str,
        instructions: &[Instruction],
        signers: &[&Keypair],
    ) -> u64 {
        let (result, logs, units) = bank.send_metered(instructions, signers).await;
        assert_eq!(result, Ok(()), "{name}: {logs:#?}");
        self.0.push((name.to_string(), units));
        units
    }
}

#[tokio::test]
async fn compute_units_of_every_instruction() {
    let mut bank = Bank::start().await;
    let a = bank.authority.insecure_clone();
    let mut table = Table(vec![]);

    // Two sections: section zero (the hand-built header) and 200,000 bytes, chunks 0..=4
    // (chunk 4 is the short last one: 200,000 - 3 x 65,536 = 3,392 bytes).
    let sections = tiny_sections(200_000, 3);
    let declared = curta_tests::sha256_chain(sections.iter().map(|s| s.as_slice()));
    let (model, _) = curta_program::state::model_address(&PROGRAM, &a.pubkey(), &declared);
    let lengths: Vec<u32> = sections.iter().map(|s| s.len() as u32).collect();
    let create_model = table
        .measure(
            &mut bank,
            "CreateModel (2 sections)",
            &[ix::create_model(&PROGRAM, &a.pubkey(), declared, &lengths)],
            &[&a],
        )
        .await;
    let p = Published {
        model,
        authority: a.pubkey(),
        signer: a.insecure_clone(),
        weights: (0..2)
            .map(|s| curta_program::state::weight_address(&PROGRAM, &a.pubkey(), &model, s))
            .collect(),
        sections,
        declared,
        creation: bank.model(&model).await.creation,
    };
    init_one(&mut bank, &p, 0).await;
    let create_and_init = [
        create_weight(&bank, &p, 1),
        ix::init_weight_account(&PROGRAM, &p.model, &p.weights[1], &p.authority, 1),
    ];
    let create_init = table
        .measure(
            &mut bank,
            "create_account_with_seed + InitWeightAccount",
            &create_and_init,
            &[&a],
        )
        .await;
    write_all(&mut bank, &p, 16).await;
    let bytes = &p.sections[1][1_019..2 * 1_019];
    let write = table
        .measure(
            &mut bank,
            "Write of 1,019 bytes",
            &[ix::write(
                &PROGRAM,
                &p.weights[1],
                &p.authority,
                1_019,
                bytes,
            )],
            &[&a],
        )
        .await;
    let seal0 = |pass| {
        ix::start_seal(
            &PROGRAM,
            &p.model,
            &p.weights,
            &p.authority,
            p.creation,
            pass,
        )
    };
    let chunk0_tiny = table
        .measure(
            &mut bank,
            "Seal chunk 0 (2-section header)",
            &[seal0(0)],
            &[&a],
        )
        .await;
    let seal = |chunk| ix::seal(&PROGRAM, &p.model, &p.weights[1], p.creation, 0, chunk);
    let full = table
        .measure(
            &mut bank,
            "Seal of a full 65,536-byte chunk",
            &[seal(1)],
            &[],
        )
        .await;
    let every =
        |chunk| ix::seal_every_section(&PROGRAM, &p.model, &p.weights, p.creation, 0, chunk);
    let full_every_2 = table
        .measure(
            &mut bank,
            "Seal of a full chunk carrying every section (2 sections)",
            &[every(2)],
            &[],
        )
        .await;
    bank.send(&[seal(3)], &[]).await.unwrap();
    let last = table
        .measure(
            &mut bank,
            "Seal of the short last chunk (3,392 bytes, seals)",
            &[seal(4)],
            &[],
        )
        .await;
    assert_eq!(bank.model(&p.model).await.state, ModelState::Sealed);

    // Reopen and Close of 2 and of 18 sections, every weight account initialized, Sealing.
    let q = written(&mut bank, tiny_sections(70_000, 4)).await;
    let r = written(&mut bank, eighteen_sections(2048)).await;
    let (mut chunk0_18, mut full_every_18, mut full_every_18_late, mut full_late) = (0, 0, 0, 0);
    let (mut reopen, mut close) = (vec![], vec![]);
    for (m, n) in [(&q, 2), (&r, 18)] {
        let start = |pass| {
            ix::start_seal(
                &PROGRAM,
                &m.model,
                &m.weights,
                &m.authority,
                m.creation,
                pass,
            )
        };
        let units = table
            .measure(
                &mut bank,
                &format!("Seal chunk 0 ({n}-section header), before Reopen"),
                &[start(0)],
                &[&a],
            )
            .await;
        if n == 18 {
            chunk0_18 = units;
            // Every chunk before section two's first (a full one) is sealed, that one is
            // measured with the 18 weight accounts carried; then likewise section 16's first
            // with every account and section 17's first with its own: the cursor's section
            // is found by a walk over the sections before it, so the last sections' chunks
            // cost the most, in either form.
            let chunks = m.chunks();
            let first_of = |section: usize| {
                let at = chunks
                    .iter()
                    .position(|&(s, c)| (s, c) == (section, 0))
                    .unwrap();
                assert!(m.sections[section].len() >= 65_536, "section {section}");
                at as u32
            };
            let every = |chunk| {
                ix::seal_every_section(&PROGRAM, &m.model, &m.weights, m.creation, 0, chunk)
            };
            let one = |chunk: u32| {
                let (s, _) = chunks[chunk as usize];
                ix::seal(&PROGRAM, &m.model, &m.weights[s], m.creation, 0, chunk)
            };
            let cases = [
                (
                    2,
                    "Seal of a full chunk carrying every section (18 sections, section 2)",
                    true,
                ),
                (
                    16,
                    "Seal of a full chunk carrying every section (18 sections, section 16)",
                    true,
                ),
                (
                    17,
                    "Seal of a full chunk of section 17 (18 sections)",
                    false,
                ),
            ];
            let mut units = [0u64; 3];
            for (i, (section, name, carrying_every)) in cases.into_iter().enumerate() {
                let chunk = first_of(section);
                while bank.model(&m.model).await.seal_cursor < chunk {
                    let cursor = bank.model(&m.model).await.seal_cursor;
                    bank.send(&[one(cursor)], &[]).await.unwrap();
                }
                let ix = if carrying_every {
                    every(chunk)
                } else {
                    one(chunk)
                };
                units[i] = table.measure(&mut bank, name, &[ix], &[]).await;
            }
            [full_every_18, full_every_18_late, full_late] = units;
        }
        let reopen_ix = ix::reopen(&PROGRAM, &m.model, &m.authority, &m.weights);
        reopen.push(
            table
                .measure(
                    &mut bank,
                    &format!("Reopen ({n} sections)"),
                    &[reopen_ix],
                    &[&a],
                )
                .await,
        );
        bank.send(&[start(1)], &[&a]).await.unwrap();
        let close_ix = ix::close(
            &PROGRAM,
            &m.model,
            &m.authority,
            &bank.mallory.pubkey(),
            &m.weights,
        );
        close.push(
            table
                .measure(
                    &mut bank,
                    &format!("Close ({n} sections)"),
                    &[close_ix],
                    &[&a],
                )
                .await,
        );
    }

    let so = curta_tests::program_so();
    println!("\nCompute units in the VM, {}", so.describe());
    // 126,056 bytes with core::fmt (formatted logs, panic locations), 72,072 without; with the
    // runs (curta-core's inference, issue 19) about 164,000, 172,000 before issue 26; the
    // spec's exponential table the seal compares at chunk 0 (16,388 bytes, issue 26) makes it
    // about 190,000, 201,832 before the resumable encoding, 211,424 with it (the encoder and
    // `Run::start` reached from Step too, in frames of their own), 218,648 with the assembly
    // position loops of a head of eight values (issue 29), 222,472 with the instruction parser
    // generated from the contract's one description (issue 39), 283,776 with claims (issue
    // 40: OpenClaim about 21,000 bytes, Resolve 13,000, Challenge 12,000, AnswerClaim 9,000,
    // CloseClaim 2,000). The goal of 65,536 is missed (docs/measurements.md).
    assert!(
        so.bytes.len() < 280 * 1024,
        "the binary: {} bytes",
        so.bytes.len()
    );
    println!("| Instruction | CU |\n|---|---:|");
    for (name, units) in &table.0 {
        println!("| {name} | {units} |");
    }

    // The goals (docs/measurements.md): a Write of 1,019 bytes at most 376 (met: 230), Close of
    // 18 sections under 200,000 (met), a full-chunk Seal at most 33,300 (the sol_sha256 floor
    // 85 + 16 + 32,768 = 32,869 plus 431; met: 33,293), chunk 0 at most 40,000 for every
    // layout (met: 23,732 for 2 sections, 38,804 for 18 sections with a full first chunk, the
    // worst layout). The other bounds below are the measures plus a little, so a regression
    // fails here.
    // 233 before issue 39, 266 with the parser generated from the contract (the goal: 376).
    assert!(write <= 275, "Write: {write}");
    assert!(close[1] < 200_000, "Close of 18: {}", close[1]);
    assert!((32_869..=33_300).contains(&full), "full-chunk Seal: {full}");
    // The cursor's section is recorded in the model (bytes 148 and 150), not found by a walk:
    // the same in every section (33,464 for section 17 of 18 before, a walk of 9 a section).
    assert!(
        (32_869..=33_300).contains(&full_late),
        "section 17: {full_late}"
    );
    assert!(
        full_late <= full + 5,
        "section 17: {full_late}, section 1: {full}"
    );
    // Carrying every section costs the entrypoint's walk over the accounts, about 8 units an
    // account: at most 33,350 up to 11 sections (stories15M has 8), 33,420 at 18 (each about
    // 10 more since issue 39's parser generated from the contract).
    assert!((32_869..=33_300).contains(&full_every_2), "{full_every_2}");
    assert_eq!(
        full_every_18, full_every_18_late,
        "every section, section 2 and 16"
    );
    let per_account = (full_every_18 - full_every_2) as f64 / 16.0;
    assert!(per_account <= 9.0, "{per_account} units an account carried");
    assert!(full_every_2 as f64 + 7.0 * per_account <= 33_350.0);
    assert!(
        full_every_18 <= 33_420,
        "every section of 18: {full_every_18}"
    );
    // Chunk 0 checks every sorted token id (issue 40's review): the same 18-section shape with
    // 16,384 tokens instead of 2,048 gives the units an id costs.
    let wide = written(&mut bank, eighteen_sections(16_384)).await;
    let start = ix::start_seal(
        &PROGRAM,
        &wide.model,
        &wide.weights,
        &wide.authority,
        wide.creation,
        0,
    );
    // Over the default 200,000 units: the limit raised (the budget instruction's own units,
    // 150, are in the measure).
    let limit = solana_compute_budget_interface::ComputeBudgetInstruction::set_compute_unit_limit(
        1_400_000,
    );
    let chunk0_wide = table
        .measure(
            &mut bank,
            "Seal chunk 0 (18 sections, 16,384 tokens), with a compute-unit limit",
            &[limit, start],
            &[&a],
        )
        .await;
    // 23,903 before the sorted ids were checked, with 259 tokens.
    assert!(chunk0_tiny <= 28_000, "chunk 0, 2 sections: {chunk0_tiny}");
    // 99,129 with curta-core's Metadata::parse_declared (and a shorter first chunk); 45,972
    // before the descriptors were compared as whole words, 42,820 before issue 21's second
    // pass (section zero's check in a frame of its own, written-out descriptor groups);
    // 38,804 before issue 26's checks (blocks at multiples of 4, the spec's exponential table
    // compared with one sol_memcmp_), 39,180 with them; 39,592 once chunk 0 takes and freezes
    // every section's weight account (17 more accounts; the bound check of every section
    // became each later account's address check, which it needs anyway); 39,632 before the
    // sorted ids were checked, 61,756 with them (2,048 tokens).
    assert!(chunk0_18 <= 62_000, "chunk 0, 18 sections: {chunk0_18}");
    // The units a sorted id costs, from the two vocabularies (259 and 2,048 tokens), and
    // chunk 0 of the largest vocabulary the format allows (65,536) with 18 sections.
    let per_id = (chunk0_wide - chunk0_18) as f64 / (16_384.0 - 2048.0);
    let largest = chunk0_wide as f64 + per_id * (65_536.0 - 16_384.0);
    println!("chunk 0: {per_id:.2} units a sorted id; 65,536 tokens and 18 sections: {largest:.0}");
    assert!(per_id <= 12.0, "{per_id} units a sorted id");
    assert!(
        curta_client::model::items::SEAL_START_UNITS as f64 >= 1.2 * largest,
        "chunk 0 of 65,536 tokens: {largest}"
    );
    assert!(last < full, "the short last chunk: {last}");

    // The client's limits cover what they are the limit of.
    assert!(WRITE_UNITS as u64 >= write);
    for seal in [full, last, full_every_2, full_every_18] {
        assert!(SEAL_UNITS as u64 >= seal, "seal {seal}");
    }
    // Every Seal after the first gets at least SEAL_CHUNK_LIMIT.
    assert!(
        curta_client::model::items::SEAL_CHUNK_UNITS as u64 >= full.max(last).max(full_every_18)
    );
    assert!(CREATE_UNITS as u64 >= create_model + create_init);
    for units in reopen {
        assert!(REOPEN_UNITS as u64 >= units, "reopen {units}");
    }
    for units in close {
        assert!(CLOSE_UNITS as u64 >= units, "close {units}");
    }
}
