//! Prints sdk/test/golden/claims.json: what the interface crate computes for claims, for the
//! SDK's tests to hold its TypeScript to (sdk/test/claims.test.ts).

use curta_core::Config;
use curta_interface::claim::{answer_hash, claim_address, claim_field as f, claim_seed, read_prompt, CLAIM_HEADER_LEN, CLAIM_MAGIC, CLAIM_VERSION};
use curta_interface::cost::{claim_bond, dispute_transactions, encode_transactions_bound, prompt_tokens_bound, run_transactions_bound, RunUnits, MAX_PRIORITY_PRICE};
use curta_interface::instruction::Prompt;
use curta_interface::run::{seed_from_digest, seed_preimage};
use solana_pubkey::Pubkey;
use std::str::FromStr;

fn text_wire(t: &[u8]) -> Vec<u8> {
    let mut v = vec![0u8];
    v.extend_from_slice(&(t.len() as u32).to_le_bytes());
    v.extend_from_slice(t);
    v
}

fn ids_wire(ids: &[u32]) -> Vec<u8> {
    let mut v = vec![1u8];
    v.extend_from_slice(&(ids.len() as u32).to_le_bytes());
    for i in ids {
        v.extend_from_slice(&i.to_le_bytes());
    }
    v
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

fn config_json(c: &Config) -> String {
    format!(
        "{{\"dim\": {}, \"hiddenDim\": {}, \"layers\": {}, \"heads\": {}, \"kvHeads\": {}, \"vocabSize\": {}, \"contextLength\": {}}}",
        c.dim, c.hidden_dim, c.layers, c.heads, c.kv_heads, c.vocab_size, c.context_length
    )
}

fn main() {
    let program = Pubkey::from_str("EK9jqHnajPuMkoe66Go1ASMV1KQG9RctaRcrGcgs3Qqn").unwrap();
    // The sealed stories260K model of sdk/test/golden/chain.json and its authority.
    let model = Pubkey::from_str("3AaC5D1r3PRJKcFUrECrhFZNCdy167uXMVYe9gh3AKpg").unwrap();
    let claimer = Pubkey::from_str("GmaDrppBC7P5ARKV8g3djiwP89vz1jLK23V2GBjuAEGB").unwrap();
    let mut out = String::from("{\n  \"programId\": \"EK9jqHnajPuMkoe66Go1ASMV1KQG9RctaRcrGcgs3Qqn\",\n");
    out += &format!("  \"model\": \"{model}\",\n  \"claimer\": \"{claimer}\",\n  \"addresses\": [\n");
    let nonces = [0u32, 42, 0xffff_ffff];
    for (i, nonce) in nonces.iter().enumerate() {
        out += &format!(
            "    {{\"nonce\": {nonce}, \"seed\": \"{}\", \"address\": \"{}\"}}{}\n",
            claim_seed(&model, *nonce),
            claim_address(&program, &claimer, &model, *nonce),
            if i + 1 < nonces.len() { "," } else { "" }
        );
    }
    out += "  ],\n  \"bonds\": [\n";
    let s260 = Config { dim: 64, hidden_dim: 172, layers: 5, heads: 8, kv_heads: 4, vocab_size: 512, context_length: 512 };
    let s15 = Config { dim: 288, hidden_dim: 768, layers: 6, heads: 6, kv_heads: 6, vocab_size: 32000, context_length: 256 };
    let gqa = Config { dim: 96, hidden_dim: 256, layers: 2, heads: 6, kv_heads: 2, vocab_size: 512, context_length: 64 };
    let once = b"Once upon a time".as_slice();
    let long = "Lily and Tom went to the park to play on the swings, and the sun was warm. ".repeat(4);
    // (configuration, prompt, steps, temperature, priority price): greedy and sampled, text and
    // ids prompts, the price up to MAX_PRIORITY_PRICE and one past it (no bond: None, null).
    const SAMPLED: u32 = 52_429;
    let cases: Vec<(Config, Vec<u8>, u32, u32, u64)> = vec![
        (s260, text_wire(once), 64, 0, 0),
        (s260, text_wire(once), 64, SAMPLED, 0),
        (s260, text_wire(once), 64, SAMPLED, 10_000),
        (s260, ids_wire(&[1]), 64, 0, 0),
        (s260, ids_wire(&[1]), 64, SAMPLED, 0),
        (s260, ids_wire(&[1]), 256, 65_536, 1),
        (s260, ids_wire(&[1, 400, 300]), 500, SAMPLED, 123_456),
        (s260, ids_wire(&[1, 400, 300]), 500, 0, 123_456),
        (s260, ids_wire(&[]), 1, 0, 0),
        (s260, text_wire(long.as_bytes()), 100, 1, 7),
        (s260, text_wire(long.as_bytes()), 100, 0, 7),
        (s260, text_wire("héllo ✓".as_bytes()), 9, SAMPLED, 999_999),
        (s15, text_wire(once), 256, 0, 0),
        (s15, ids_wire(&[1]), 255, SAMPLED, 50_000),
        (s15, ids_wire(&[1]), 256, SAMPLED, 1_000),
        (s15, ids_wire(&[1]), 255, 0, 1_000),
        (gqa, ids_wire(&[1, 2, 3]), 61, 3, 3),
        (gqa, text_wire(once), 40, 0, 3),
        (s260, ids_wire(&[1]), 64, SAMPLED, MAX_PRIORITY_PRICE),
        (s15, ids_wire(&[1]), 255, SAMPLED, MAX_PRIORITY_PRICE),
        (s260, ids_wire(&[1]), 64, 0, MAX_PRIORITY_PRICE + 1),
        (s260, ids_wire(&[1]), 64, SAMPLED, u64::MAX),
    ];
    for (i, (c, wire, steps, temperature, price)) in cases.iter().enumerate() {
        let p = read_prompt(wire).unwrap();
        let prompt = match p {
            Prompt::Text(t) => format!("{{\"textHex\": \"{}\"}}", hex(t)),
            Prompt::Tokens(_) => {
                let n = u32::from_le_bytes(wire[1..5].try_into().unwrap()) as usize;
                let ids: Vec<String> = (0..n).map(|k| u32::from_le_bytes(wire[5 + 4 * k..9 + 4 * k].try_into().unwrap()).to_string()).collect();
                format!("{{\"tokenIds\": [{}]}}", ids.join(", "))
            }
        };
        let tokens = prompt_tokens_bound(&p);
        let encode = match p {
            Prompt::Text(t) => encode_transactions_bound(t.len() as u32, c.vocab_size),
            Prompt::Tokens(_) => 0,
        };
        let bond = match claim_bond(c, &p, *steps, *temperature, *price) {
            Some(bond) => format!("\"{bond}\""),
            None => "null".to_string(),
        };
        out += &format!(
            "    {{\"config\": {}, \"prompt\": {prompt}, \"steps\": {steps}, \"temperature\": {temperature}, \"priorityPrice\": \"{price}\", \"promptTokensBound\": {tokens}, \"runTransactions\": \"{}\", \"encodeTransactions\": \"{encode}\", \"disputeTransactions\": \"{}\", \"bond\": {bond}}}{}\n",
            config_json(c),
            run_transactions_bound(c, tokens, *steps, *temperature),
            dispute_transactions(c, &p, *steps, *temperature),
            if i + 1 < cases.len() { "," } else { "" }
        );
    }
    // RunUnits (the closed form the bond counts with) of each shape, greedy and sampled; a shape
    // with heads of eight values besides stories260K's (its attention's own constants).
    out += "  ],\n  \"runUnits\": [\n";
    let eights = Config { dim: 64, hidden_dim: 256, layers: 16, heads: 8, kv_heads: 8, vocab_size: 2048, context_length: 64 };
    let configs = [s260, s15, gqa, eights];
    let mut rows = Vec::new();
    for c in configs.iter() {
        for temperature in [0u32, SAMPLED] {
            let u = RunUnits::of(c, temperature);
            rows.push(format!(
                "    {{\"config\": {}, \"temperature\": {temperature}, \"layers\": \"{}\", \"perPosition\": \"{}\", \"end\": \"{}\", \"largest\": \"{}\", \"head\": \"{}\", \"headPerPosition\": \"{}\"}}",
                config_json(c), u.layers, u.per_position, u.end, u.largest, u.head, u.head_per_position
            ));
        }
    }
    out += &rows.join(",\n");
    out += "\n";
    out += "  ],\n  \"answerHashes\": [\n";
    let answers: Vec<(Vec<u32>, &[u8])> = vec![(vec![5, 9, 2], b" Once"), (vec![], b""), (vec![0xffff_ffff, 1], "é✓".as_bytes())];
    for (i, (ids, text)) in answers.iter().enumerate() {
        let list: Vec<String> = ids.iter().map(|x| x.to_string()).collect();
        out += &format!(
            "    {{\"ids\": [{}], \"textHex\": \"{}\", \"hash\": \"{}\"}}{}\n",
            list.join(", "),
            hex(text),
            hex(&answer_hash(ids, text)),
            if i + 1 < answers.len() { "," } else { "" }
        );
    }
    // A drawn claim's seed: the run derivation over the claim's address and open slot.
    let claim = claim_address(&program, &claimer, &model, 42);
    let slot_hash: [u8; 32] = core::array::from_fn(|i| (i as u8).wrapping_mul(7).wrapping_add(3));
    let (claimer_seed, open_slot) = (0x0123_4567_89ab_cdefu64, 987_654u64);
    let seed = seed_from_digest(&curta_core::sha256(&seed_preimage(claimer_seed, &claim.to_bytes(), open_slot, &slot_hash)));
    out += &format!(
        "  ],\n  \"drawnSeed\": {{\"claim\": \"{claim}\", \"claimerSeed\": \"{claimer_seed}\", \"openSlot\": \"{open_slot}\", \"slotHash\": \"{}\", \"seed\": \"{seed}\"}},\n",
        hex(&slot_hash)
    );
    // A claim account written at the crate's field offsets (claim_field), its prompt a text.
    let prompt = text_wire(once);
    let mut data = vec![0u8; CLAIM_HEADER_LEN + prompt.len()];
    let put = |data: &mut Vec<u8>, at: usize, bytes: &[u8]| data[at..at + bytes.len()].copy_from_slice(bytes);
    put(&mut data, f::MAGIC, &CLAIM_MAGIC);
    data[f::VERSION] = CLAIM_VERSION;
    data[f::STATE] = 2;
    data[f::SEED_SOURCE] = 1;
    put(&mut data, f::NONCE, &42u32.to_le_bytes());
    put(&mut data, f::MODEL, &model.to_bytes());
    put(&mut data, f::CLAIMER, &claimer.to_bytes());
    put(&mut data, f::STEPS, &64u32.to_le_bytes());
    put(&mut data, f::TEMPERATURE, &52_429u32.to_le_bytes());
    put(&mut data, f::TOP_P, &58_982u32.to_le_bytes());
    put(&mut data, f::WINDOW, &150u32.to_le_bytes());
    put(&mut data, f::CLAIMER_SEED, &claimer_seed.to_le_bytes());
    put(&mut data, f::OPEN_SLOT, &open_slot.to_le_bytes());
    put(&mut data, f::ANSWER_SLOT, &(open_slot + 3).to_le_bytes());
    put(&mut data, f::SEED, &seed.to_le_bytes());
    put(&mut data, f::SLOT_HASH, &slot_hash);
    put(&mut data, f::BOND, &985_000u64.to_le_bytes());
    put(&mut data, f::PRIORITY_PRICE, &17u64.to_le_bytes());
    put(&mut data, f::TOKEN_COUNT, &33u32.to_le_bytes());
    put(&mut data, f::PROMPT_LEN, &(prompt.len() as u32).to_le_bytes());
    put(&mut data, f::ANSWER_HASH, &answer_hash(&[5, 9, 2], b" Once"));
    put(&mut data, CLAIM_HEADER_LEN, &prompt);
    let header = curta_interface::claim::ClaimHeader::unpack(&data).unwrap();
    assert_eq!(header.window, 150);
    out += &format!("  \"account\": {{\"address\": \"{claim}\", \"data\": \"{}\"}}\n}}\n", hex(&data));
    print!("{out}");
}
