//! The claim instructions and the claim account against the IDL, as the others in tests/idl.rs.

use super::*;
use curta_interface::claim::{self, claim_field as c};

pub fn claim_instructions(p: &Value) {
    let program_id = curta_interface::id();
    let (claim, claimer, model, run_key, challenger, zero) =
        (key(21), key(22), key(23), key(24), key(25), key(26));
    let terms = ix::ClaimTerms {
        nonce: 0x0badcafe,
        steps: 64,
        settings: curta_core::infer::Settings {
            temperature: 52_429,
            top_p: 58_982,
            seed: 0x1122334455667788,
        },
        source: SeedSource::Drawn,
        window: 150,
        priority_price: 1_000,
        bond: 0x0102030405,
    };
    let args = json!({
        "nonce": 0x0badcafe, "steps": 64, "temperature": 52_429, "topP": 58_982,
        "seed": 0x1122334455667788u64, "seedSource": "drawn", "window": 150,
        "priorityPrice": 1_000, "bond": 0x0102030405u64, "prompt": {"tokenIds": [[1, 40]]},
    });
    let prompt = OwnedPrompt::Tokens(vec![1, 40]);
    let built = ix::open_claim(&program_id, &claim, &claimer, &model, &terms, &prompt);
    let accounts = [("claim", claim), ("claimer", claimer), ("model", model)];
    check(p, "openClaim", args, built, &[], 0, &accounts);
    let hash: [u8; 32] = core::array::from_fn(|i| 0x50 ^ i as u8);
    let hex = |b: &[u8]| b.iter().map(|x| format!("{x:02x}")).collect::<String>();
    check(
        p,
        "answerClaim",
        json!({"tokenCount": 64, "answerHash": hex(&hash)}),
        ix::answer_claim(&program_id, &claim, &claimer, 64, &hash),
        &[],
        0,
        &[
            ("claim", claim),
            ("claimer", claimer),
            ("slotHashes", slot_hashes()),
        ],
    );
    check(
        p,
        "challenge",
        json!({"nonce": 7}),
        ix::challenge(&program_id, &claim, &challenger, &run_key, &model, &zero, 7),
        &[],
        0,
        &[
            ("claim", claim),
            ("challenger", challenger),
            ("run", run_key),
            ("model", model),
            ("sectionZero", zero),
            ("systemProgram", Pubkey::default()),
        ],
    );
    check(
        p,
        "resolve",
        json!({}),
        ix::resolve(&program_id, &claim, &run_key, &claimer, &challenger),
        &[],
        0,
        &[
            ("claim", claim),
            ("run", run_key),
            ("claimer", claimer),
            ("challenger", challenger),
        ],
    );
    check(
        p,
        "closeClaim",
        json!({}),
        ix::close_claim(&program_id, &claim, &claimer),
        &[],
        0,
        &[("claim", claim), ("claimer", claimer)],
    );
}

pub fn claim_layout(p: &Value) {
    let fields = layout(p, "claim");
    check_fields(
        "claim",
        &fields,
        &[
            ("magic", c::MAGIC, 8),
            ("version", c::VERSION, 1),
            ("state", c::STATE, 1),
            ("seedSource", c::SEED_SOURCE, 1),
            ("nonce", c::NONCE, 4),
            ("model", c::MODEL, 32),
            ("claimer", c::CLAIMER, 32),
            ("challenger", c::CHALLENGER, 32),
            ("disputeRun", c::DISPUTE_RUN, 32),
            ("steps", c::STEPS, 4),
            ("temperature", c::TEMPERATURE, 4),
            ("topP", c::TOP_P, 4),
            ("window", c::WINDOW, 4),
            ("claimerSeed", c::CLAIMER_SEED, 8),
            ("openSlot", c::OPEN_SLOT, 8),
            ("answerSlot", c::ANSWER_SLOT, 8),
            ("seedInForce", c::SEED, 8),
            ("slotHash", c::SLOT_HASH, 32),
            ("bond", c::BOND, 8),
            ("priorityPrice", c::PRIORITY_PRICE, 8),
            ("tokenCount", c::TOKEN_COUNT, 4),
            ("promptLength", c::PROMPT_LEN, 4),
            ("answerHash", c::ANSWER_HASH, 32),
        ],
    );
    assert_eq!(fields["prompt"], (claim::CLAIM_HEADER_LEN, None));
    assert_eq!(discriminator(p, "claim"), claim::CLAIM_MAGIC);
    assert_eq!(
        default_number(p, "claim", "version"),
        claim::CLAIM_VERSION as u64
    );
    let states = &Types::of(p).0["claimState"]["variants"];
    let names = [
        "uninitialized",
        "open",
        "answered",
        "challenged",
        "upheld",
        "overturned",
    ];
    for (i, name) in names.iter().enumerate() {
        assert_eq!(states[i]["name"], *name);
    }
    assert_eq!(
        claim::ClaimState::from_u8(5),
        Some(claim::ClaimState::Overturned)
    );
}
