//! The Codama IDL (idl/curta.json) against the interface crate (curta-interface, which the
//! program and the client use): a small encoder driven by the IDL's type nodes encodes every
//! instruction from sample arguments, and the bytes must equal the crate's builders'; the instruction accounts (order, writable, signer) must equal the
//! builders' account metas; every account field's offset and size must equal the crate's layout
//! constants (`model_field`, `weight_field`, `run_field`) and the header lengths; the errors must
//! be `CurtaError::ALL` (code, name, message); the model PDA's seeds must give `model_address`.
//! A layout changed in Rust without the IDL fails here (docs/idl.md).

use curta_interface::error::CurtaError;
use curta_interface::instruction::{self as ix, OwnedPrompt};
use curta_interface::run::{self, run_field, SeedSource};
use curta_interface::state::{self, model_field, weight_field};
use serde_json::{json, Value};
use solana_instruction::{AccountMeta, Instruction};
use solana_pubkey::Pubkey;
use std::collections::BTreeMap;
use std::str::FromStr;

#[path = "idl/claims.rs"]
mod claims;

fn idl() -> Value {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../idl/curta.json");
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("reading {path}: {e}"));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{path}: {e}"))
}

fn program(idl: &Value) -> &Value {
    assert_eq!(idl["kind"], "rootNode");
    assert_eq!(idl["standard"], "codama");
    &idl["program"]
}

fn named<'a>(list: &'a Value, name: &str) -> &'a Value {
    list.as_array()
        .expect("a list of nodes")
        .iter()
        .find(|n| n["name"] == name)
        .unwrap_or_else(|| panic!("no node named {name}"))
}

/// The IDL's defined types by name.
struct Types<'a>(BTreeMap<String, &'a Value>);

impl<'a> Types<'a> {
    fn of(program: &'a Value) -> Self {
        let map = program["definedTypes"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| (t["name"].as_str().unwrap().to_string(), &t["type"]))
            .collect();
        Types(map)
    }

    fn resolve(&self, ty: &'a Value) -> &'a Value {
        match ty["kind"].as_str() {
            Some("definedTypeLinkNode") => self.0[ty["name"].as_str().unwrap()],
            _ => ty,
        }
    }

    /// The encoded size of a type whose size does not depend on its value.
    fn fixed_size(&self, ty: &Value) -> Option<usize> {
        let ty = self.resolve(ty);
        Some(match ty["kind"].as_str().unwrap() {
            "numberTypeNode" => number_size(ty),
            "publicKeyTypeNode" => 32,
            "booleanTypeNode" => number_size(&ty["size"]),
            "fixedSizeTypeNode" => ty["size"].as_u64().unwrap() as usize,
            "arrayTypeNode" if ty["count"]["kind"] == "fixedCountNode" => {
                ty["count"]["value"].as_u64().unwrap() as usize * self.fixed_size(&ty["item"])?
            }
            "structTypeNode" => {
                let fields = ty["fields"].as_array().unwrap();
                fields
                    .iter()
                    .map(|f| self.fixed_size(&f["type"]))
                    .sum::<Option<usize>>()?
            }
            "enumTypeNode"
                if ty["variants"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .all(|v| v["kind"] == "enumEmptyVariantTypeNode") =>
            {
                number_size(&ty["size"])
            }
            _ => return None,
        })
    }

    /// Encodes `value` as `ty` says (borsh-like, little-endian), appending to `out`.
    fn encode(&self, ty: &Value, value: &Value, out: &mut Vec<u8>) {
        let ty = self.resolve(ty);
        match ty["kind"].as_str().unwrap() {
            "numberTypeNode" => encode_number(ty, value, out),
            "booleanTypeNode" => {
                encode_number(&ty["size"], &json!(value.as_bool().unwrap() as u8), out)
            }
            "publicKeyTypeNode" => {
                let key = Pubkey::from_str(value.as_str().unwrap()).unwrap();
                out.extend_from_slice(key.as_ref());
            }
            "bytesTypeNode" => out.extend(bytes_of(value)),
            "fixedSizeTypeNode" => {
                let size = ty["size"].as_u64().unwrap() as usize;
                let mut inner = Vec::new();
                self.encode(&ty["type"], value, &mut inner);
                assert_eq!(inner.len(), size, "a fixed-size value of {size} bytes");
                out.extend(inner);
            }
            "sizePrefixTypeNode" => {
                let mut inner = Vec::new();
                self.encode(&ty["type"], value, &mut inner);
                encode_number(&ty["prefix"], &json!(inner.len()), out);
                out.extend(inner);
            }
            "arrayTypeNode" => {
                let items = value.as_array().unwrap();
                let count = &ty["count"];
                match count["kind"].as_str().unwrap() {
                    "prefixedCountNode" => {
                        encode_number(&count["prefix"], &json!(items.len()), out)
                    }
                    "fixedCountNode" => {
                        assert_eq!(items.len() as u64, count["value"].as_u64().unwrap())
                    }
                    "remainderCountNode" => {}
                    other => panic!("count {other}"),
                }
                items
                    .iter()
                    .for_each(|item| self.encode(&ty["item"], item, out));
            }
            "structTypeNode" => {
                for field in ty["fields"].as_array().unwrap() {
                    let name = field["name"].as_str().unwrap();
                    self.encode(&field["type"], &value[name], out);
                }
            }
            "tupleTypeNode" => {
                let items = ty["items"].as_array().unwrap();
                let values = value.as_array().unwrap();
                assert_eq!(items.len(), values.len());
                items
                    .iter()
                    .zip(values)
                    .for_each(|(t, v)| self.encode(t, v, out));
            }
            "remainderOptionTypeNode" => {
                if !value.is_null() {
                    self.encode(&ty["item"], value, out);
                }
            }
            "enumTypeNode" => {
                // A variant by name: "name" for an empty variant, {"name": [tuple items]}.
                let (name, items) = match value {
                    Value::String(name) => (name.as_str(), None),
                    Value::Object(map) if map.len() == 1 => {
                        let (name, items) = map.iter().next().unwrap();
                        (name.as_str(), Some(items))
                    }
                    other => panic!("an enum value: {other}"),
                };
                let variants = ty["variants"].as_array().unwrap();
                let (index, variant) = variants
                    .iter()
                    .enumerate()
                    .find(|(_, v)| v["name"] == name)
                    .unwrap_or_else(|| panic!("no variant {name}"));
                let discriminator = variant["discriminator"].as_u64().unwrap_or(index as u64);
                encode_number(&ty["size"], &json!(discriminator), out);
                match variant["kind"].as_str().unwrap() {
                    "enumEmptyVariantTypeNode" => assert!(items.is_none()),
                    "enumTupleVariantTypeNode" => {
                        self.encode(&variant["tuple"], items.unwrap(), out)
                    }
                    other => panic!("variant {other}"),
                }
            }
            other => panic!("the test's encoder has no {other}"),
        }
    }
}

fn number_size(ty: &Value) -> usize {
    assert_eq!(ty["kind"], "numberTypeNode");
    match ty["format"].as_str().unwrap() {
        "u8" => 1,
        "u16" => 2,
        "u32" => 4,
        "u64" => 8,
        other => panic!("number format {other}"),
    }
}

fn encode_number(ty: &Value, value: &Value, out: &mut Vec<u8>) {
    assert_eq!(ty["endian"], "le");
    let v = value.as_u64().unwrap();
    let size = number_size(ty);
    assert!(
        size == 8 || v < 1 << (8 * size),
        "{v} does not fit {size} bytes"
    );
    out.extend_from_slice(&v.to_le_bytes()[..size]);
}

fn bytes_of(value: &Value) -> Vec<u8> {
    match value {
        Value::String(hex) => (0..hex.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&hex[i..i + 2], 16).unwrap())
            .collect(),
        Value::Array(items) => items.iter().map(|b| b.as_u64().unwrap() as u8).collect(),
        other => panic!("bytes: {other}"),
    }
}

/// The instruction's data as the IDL encodes `args` (the discriminator from its default value).
fn idl_data(program: &Value, name: &str, args: &Value) -> Vec<u8> {
    let types = Types::of(program);
    let node = named(&program["instructions"], name);
    assert_eq!(node["discriminators"][0]["kind"], "fieldDiscriminatorNode");
    let mut out = Vec::new();
    for arg in node["arguments"].as_array().unwrap() {
        let value = match arg["defaultValueStrategy"].as_str() {
            Some("omitted") => arg["defaultValue"]["number"].clone(),
            _ => args[arg["name"].as_str().unwrap()].clone(),
        };
        types.encode(&arg["type"], &value, &mut out);
    }
    out
}

/// The instruction's accounts as the IDL lists them, `remaining` appended with the remaining
/// accounts' flags, and `omit` optional accounts left out: (writable, signer) each.
fn idl_accounts(
    program: &Value,
    name: &str,
    omit: &[&str],
    remaining: usize,
) -> Vec<(String, bool, bool)> {
    let node = named(&program["instructions"], name);
    let mut out: Vec<(String, bool, bool)> = node["accounts"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|a| !omit.contains(&a["name"].as_str().unwrap()))
        .map(|a| {
            let flag = |f: &str| a[f].as_bool().unwrap();
            (
                a["name"].as_str().unwrap().to_string(),
                flag("isWritable"),
                flag("isSigner"),
            )
        })
        .collect();
    for r in node["remainingAccounts"].as_array().unwrap() {
        let flag = |f: &str| r[f].as_bool().unwrap_or(false);
        for _ in 0..remaining {
            out.push((
                r["value"]["name"].as_str().unwrap().to_string(),
                flag("isWritable"),
                flag("isSigner"),
            ));
        }
    }
    out
}

fn key(seed: u8) -> Pubkey {
    Pubkey::new_from_array(core::array::from_fn(|i| {
        seed.wrapping_mul(31).wrapping_add(i as u8 * 7)
    }))
}

/// Checks one instruction: data and accounts (and, for the fixed accounts, their addresses in
/// the IDL's order by name) against the crate's builder.
/// A seal after chunk 0 as the IDL lists it: the IDL has one account list for every chunk, as
/// chunk 0 needs it (its weight accounts writable: it freezes them); the crate's builders for
/// later chunks pass the weight accounts read only, which the program takes either way.
fn writable_weights(mut seal: Instruction) -> Instruction {
    for meta in &mut seal.accounts[1..] {
        meta.is_writable = true;
    }
    seal
}

fn check(
    program: &Value,
    name: &str,
    args: Value,
    built: Instruction,
    omit: &[&str],
    remaining: usize,
    keys: &[(&str, Pubkey)],
) {
    assert_eq!(built.program_id, curta_interface::id());
    assert_eq!(
        idl_data(program, name, &args),
        built.data,
        "{name}: the IDL's bytes differ from the crate's builder"
    );
    let flags: Vec<(bool, bool)> = built
        .accounts
        .iter()
        .map(|m: &AccountMeta| (m.is_writable, m.is_signer))
        .collect();
    let listed = idl_accounts(program, name, omit, remaining);
    assert_eq!(
        listed.iter().map(|(_, w, s)| (*w, *s)).collect::<Vec<_>>(),
        flags,
        "{name}: the IDL's accounts (writable, signer) differ from the builder's: {listed:?}"
    );
    for (i, (account, _, _)) in listed.iter().enumerate() {
        if let Some((_, at)) = keys.iter().find(|(n, _)| n == account) {
            assert_eq!(
                built.accounts[i].pubkey, *at,
                "{name}: account {i} is not {account}"
            );
        }
    }
}

#[test]
fn the_program_id_is_the_crates() {
    let idl = idl();
    assert_eq!(
        program(&idl)["publicKey"],
        curta_interface::id().to_string()
    );
    assert_eq!(program(&idl)["name"], "curta");
}

#[test]
fn every_instruction_encodes_as_the_crates_builders() {
    let idl = idl();
    let p = program(&idl);
    let names: Vec<&str> = p["instructions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        names,
        [
            "createModel",
            "initWeightAccount",
            "write",
            "seal",
            "reopen",
            "close",
            "startRun",
            "step",
            "closeRun",
            "openClaim",
            "answerClaim",
            "challenge",
            "resolve",
            "closeClaim"
        ]
    );
    for (tag, name) in names.iter().enumerate() {
        let node = named(&p["instructions"], name);
        assert_eq!(
            node["arguments"][0]["defaultValue"]["number"], tag,
            "{name}'s tag"
        );
    }
    let program_id = curta_interface::id();
    let (authority, weight, model, run_key, runner, dest) =
        (key(1), key(2), key(3), key(4), key(5), key(6));
    let hash: [u8; 32] = core::array::from_fn(|i| 0xa0 ^ i as u8);
    let hex = |b: &[u8]| b.iter().map(|x| format!("{x:02x}")).collect::<String>();
    let weights: Vec<Pubkey> = (10..13).map(key).collect();

    let (pda, _) = state::model_address(&program_id, &authority, &hash);
    check(
        p,
        "createModel",
        json!({"weightsHash": hex(&hash), "sectionLengths": [4096, 70000, 0x01020304]}),
        ix::create_model(&program_id, &authority, hash, &[4096, 70000, 0x01020304]),
        &[],
        0,
        &[
            ("authority", authority),
            ("model", pda),
            ("systemProgram", Pubkey::default()),
        ],
    );
    check(
        p,
        "initWeightAccount",
        json!({"section": 17}),
        ix::init_weight_account(&program_id, &model, &weight, &authority, 17),
        &[],
        0,
        &[
            ("model", model),
            ("weight", weight),
            ("authority", authority),
        ],
    );
    let written: Vec<u8> = (0..300u32).map(|i| (i * 7 + 3) as u8).collect();
    check(
        p,
        "write",
        json!({"offset": 0x00abcdef, "bytes": hex(&written)}),
        ix::write(&program_id, &weight, &authority, 0x00abcdef, &written),
        &[],
        0,
        &[("weight", weight), ("authority", authority)],
    );
    check(
        p,
        "seal",
        json!({"pass": 3, "chunk": 0, "creation": 0x0102030405060708u64}),
        ix::start_seal(
            &program_id,
            &model,
            &weights,
            &authority,
            0x0102030405060708,
            3,
        ),
        &[],
        weights.len() - 1,
        &[
            ("model", model),
            ("weight", weights[0]),
            ("authority", authority),
        ],
    );
    check(
        p,
        "seal",
        json!({"pass": 0xfffffffeu32, "chunk": 161, "creation": u64::MAX - 5}),
        writable_weights(ix::seal(
            &program_id,
            &model,
            &weight,
            u64::MAX - 5,
            0xfffffffe,
            161,
        )),
        &["authority"],
        0,
        &[("model", model), ("weight", weight)],
    );
    check(
        p,
        "seal",
        json!({"pass": 2, "chunk": 9, "creation": 5}),
        writable_weights(ix::seal_every_section(
            &program_id,
            &model,
            &weights,
            5,
            2,
            9,
        )),
        &["authority"],
        weights.len() - 1,
        &[("model", model), ("weight", weights[0])],
    );
    check(
        p,
        "reopen",
        json!({}),
        ix::reopen(&program_id, &model, &authority, &weights),
        &[],
        weights.len(),
        &[("model", model), ("authority", authority)],
    );
    check(
        p,
        "close",
        json!({}),
        ix::close(&program_id, &model, &authority, &dest, &weights),
        &[],
        weights.len(),
        &[
            ("model", model),
            ("authority", authority),
            ("destination", dest),
        ],
    );
    check(
        p,
        "step",
        json!({"ticket": 0xdeadbeefu32, "budget": 1_175_000}),
        ix::step(
            &program_id,
            &run_key,
            &model,
            &weights,
            0xdeadbeef,
            1_175_000,
        ),
        &[],
        weights.len(),
        &[
            ("run", run_key),
            ("model", model),
            ("slotHashes", slot_hashes()),
        ],
    );
    assert_eq!(ix::SLOT_HASHES, slot_hashes());
    check(
        p,
        "closeRun",
        json!({"runSeeds": null}),
        ix::close_run(&program_id, &run_key, &runner),
        &[],
        0,
        &[("run", run_key), ("runner", runner)],
    );
    check(
        p,
        "closeRun",
        json!({"runSeeds": {"model": model.to_string(), "nonce": 0x2a}}),
        ix::close_run_at(&program_id, &run_key, &runner, &model, 0x2a),
        &[],
        0,
        &[("run", run_key), ("runner", runner)],
    );
    start_runs(p, run_key, runner, model, weight);
    claims::claim_instructions(p);
}

/// The IDL's name of a seed source (its variant), by the crate's byte.
fn source_name(source: SeedSource) -> &'static str {
    ["none", "drawn", "chosen"][source as usize]
}

fn slot_hashes() -> Pubkey {
    Pubkey::from_str("SysvarS1otHashes111111111111111111111111111").unwrap()
}

/// StartRun with each seed source and both prompt kinds.
fn start_runs(p: &Value, run_key: Pubkey, runner: Pubkey, model: Pubkey, section_zero: Pubkey) {
    let program_id = curta_interface::id();
    let cases = [
        // (temperature, top-p, seed, seed source, prompt)
        (
            0u32,
            0x10000u32,
            0u64,
            SeedSource::None,
            OwnedPrompt::Text(b"Once upon a time".to_vec()),
        ),
        (
            52_429,
            58_982,
            0x1122334455667788,
            SeedSource::Drawn,
            OwnedPrompt::Tokens(vec![1, 403, 0x01020304]),
        ),
        (
            65_536,
            1,
            u64::MAX,
            SeedSource::Chosen,
            OwnedPrompt::Tokens(vec![]),
        ),
    ];
    for (temperature, top_p, seed, source, prompt) in cases {
        let prompt_json = match &prompt {
            OwnedPrompt::Text(t) => {
                json!({"text": [t.iter().map(|b| format!("{b:02x}")).collect::<String>()]})
            }
            OwnedPrompt::Tokens(ids) => json!({"tokenIds": [ids]}),
        };
        let args = json!({
            "nonce": 0x0badcafe, "steps": 300, "temperature": temperature, "topP": top_p,
            "seed": seed, "seedSource": source_name(source), "prompt": prompt_json,
        });
        let settings = curta_core::infer::Settings {
            temperature,
            top_p,
            seed,
        };
        let built = ix::start_run(
            &program_id,
            &run_key,
            &runner,
            &model,
            &section_zero,
            0x0badcafe,
            300,
            &settings,
            source,
            prompt.clone(),
        );
        check(
            p,
            "startRun",
            args,
            built,
            &[],
            0,
            &[
                ("run", run_key),
                ("runner", runner),
                ("model", model),
                ("sectionZero", section_zero),
            ],
        );
    }
}

/// (offset, size) of every field of an account's data struct, by name.
fn layout(p: &Value, account: &str) -> BTreeMap<String, (usize, Option<usize>)> {
    let types = Types::of(p);
    let node = named(&p["accounts"], account);
    let mut at = 0;
    let mut out = BTreeMap::new();
    for f in node["data"]["fields"].as_array().unwrap() {
        let size = types.fixed_size(&f["type"]);
        out.insert(f["name"].as_str().unwrap().to_string(), (at, size));
        at += size.unwrap_or(0);
    }
    out
}

fn check_fields(
    account: &str,
    layout: &BTreeMap<String, (usize, Option<usize>)>,
    expected: &[(&str, usize, usize)],
) {
    for (name, offset, size) in expected {
        let found = layout
            .get(*name)
            .unwrap_or_else(|| panic!("{account}: the IDL has no field {name}"));
        assert_eq!(
            *found,
            (*offset, Some(*size)),
            "{account}.{name}: (offset, size) in the IDL vs the crate"
        );
    }
}

/// The end of the fixed part of a layout (the first field of no fixed size, or the whole).
fn fixed_end(layout: &BTreeMap<String, (usize, Option<usize>)>) -> usize {
    layout
        .values()
        .map(|(at, size)| at + size.unwrap_or(0))
        .max()
        .unwrap()
}

fn discriminator(p: &Value, account: &str) -> Vec<u8> {
    let d = &named(&p["accounts"], account)["discriminators"][0];
    assert_eq!(d["kind"], "constantDiscriminatorNode");
    assert_eq!(d["offset"], 0);
    assert_eq!(d["constant"]["value"]["encoding"], "utf8");
    d["constant"]["value"]["data"]
        .as_str()
        .unwrap()
        .as_bytes()
        .to_vec()
}

fn default_number(p: &Value, account: &str, field: &str) -> u64 {
    let f = named(&named(&p["accounts"], account)["data"]["fields"], field);
    f["defaultValue"]["number"].as_u64().unwrap()
}

#[test]
fn account_layouts_are_the_crates() {
    let idl = idl();
    let p = program(&idl);

    let model = layout(p, "model");
    use model_field as m;
    check_fields(
        "model",
        &model,
        &[
            ("magic", m::MAGIC, 8),
            ("version", m::VERSION, 1),
            ("state", m::STATE, 1),
            ("bump", m::BUMP, 1),
            ("sectionCount", m::SECTION_COUNT, 1),
            ("sealPass", m::SEAL_PASS, 4),
            ("authority", m::AUTHORITY, 32),
            ("weightsHash", m::WEIGHTS_HASH, 32),
            ("runningHash", m::RUNNING_HASH, 32),
            ("sealCursor", m::SEAL_CURSOR, 4),
            ("totalChunks", m::TOTAL_CHUNKS, 4),
            ("config", m::CONFIG, 28),
            ("sealSectionFirstChunk", m::SEAL_SECTION_FIRST, 2),
            ("sealSection", m::SEAL_SECTION, 1),
            ("creation", m::CREATION, 8),
            (
                "sectionLengths",
                m::SECTION_LENGTHS,
                4 * state::MAX_SECTIONS,
            ),
            (
                "weightAccounts",
                m::WEIGHT_ACCOUNTS,
                32 * state::MAX_SECTIONS,
            ),
        ],
    );
    assert_eq!(fixed_end(&model), state::MODEL_LEN);
    assert_eq!(named(&p["accounts"], "model")["size"], state::MODEL_LEN);
    assert_eq!(discriminator(p, "model"), state::MODEL_MAGIC);
    assert_eq!(
        default_number(p, "model", "version"),
        state::LAYOUT_VERSION as u64
    );
    // The state enum's values are ModelState's.
    let states = &Types::of(p).0["modelState"]["variants"];
    for (name, s) in [
        ("open", state::ModelState::Open),
        ("sealing", state::ModelState::Sealing),
        ("mismatch", state::ModelState::Mismatch),
        ("sealed", state::ModelState::Sealed),
    ] {
        assert_eq!(named(states, name)["discriminator"], s as u8);
    }

    let weight = layout(p, "weight");
    use weight_field as w;
    check_fields(
        "weight",
        &weight,
        &[
            ("magic", w::MAGIC, 8),
            ("version", w::VERSION, 1),
            ("frozen", w::FROZEN, 1),
            ("section", w::SECTION, 2),
            ("length", w::LENGTH, 4),
            ("model", w::MODEL, 32),
            ("authority", w::AUTHORITY, 32),
        ],
    );
    assert_eq!(weight["sectionBytes"], (state::WEIGHT_HEADER_LEN, None));
    assert_eq!(discriminator(p, "weight"), state::WEIGHT_MAGIC);
    assert_eq!(
        default_number(p, "weight", "version"),
        state::LAYOUT_VERSION as u64
    );

    let run_layout = layout(p, "run");
    use run_field as r;
    check_fields(
        "run",
        &run_layout,
        &[
            ("magic", r::MAGIC, 8),
            ("version", r::VERSION, 1),
            ("nonce", r::NONCE, 4),
            ("model", r::MODEL, 32),
            ("runner", r::RUNNER, 32),
            ("stepsLanded", r::STEPS_LANDED, 4),
            ("textLength", r::TEXT_LEN, 4),
            ("textCapacity", r::TEXT_CAPACITY, 4),
            ("stateLength", r::STATE_LEN, 4),
            ("seedSource", r::SEED_SOURCE, 1),
            ("dispute", r::DISPUTE, 1),
            ("temperature", r::TEMPERATURE, 4),
            ("topP", r::TOP_P, 4),
            ("runnerSeed", r::RUNNER_SEED, 8),
            ("startSlot", r::START_SLOT, 8),
            ("seedSlot", r::SEED_SLOT, 8),
            ("seedInForce", r::SEED, 8),
            ("slotHash", r::SLOT_HASH, 32),
            ("encoding", r::ENCODING, 4),
        ],
    );
    assert_eq!(run_layout["body"], (run::RUN_HEADER_LEN, None));
    assert_eq!(discriminator(p, "run"), run::RUN_MAGIC);
    assert_eq!(default_number(p, "run", "version"), run::RUN_VERSION as u64);
    claims::claim_layout(p);
    // The seed source enum's variants are SeedSource's bytes, in order.
    let sources = &Types::of(p).0["seedSource"]["variants"];
    for source in [SeedSource::None, SeedSource::Drawn, SeedSource::Chosen] {
        let variants = sources.as_array().unwrap();
        assert_eq!(variants[source as usize]["name"], source_name(source));
        assert_eq!(SeedSource::from_u8(source as u8), Some(source));
    }
    assert_eq!(SeedSource::from_u8(3), None);
    assert_eq!(sources.as_array().unwrap().len(), 3);
}

#[test]
fn errors_are_the_crates() {
    let idl = idl();
    let errors = program(&idl)["errors"].as_array().unwrap().clone();
    assert_eq!(
        errors.len(),
        CurtaError::ALL.len(),
        "one IDL error per CurtaError"
    );
    for (node, e) in errors.iter().zip(CurtaError::ALL) {
        let debug = format!("{e:?}");
        let camel = debug[..1].to_lowercase() + &debug[1..];
        assert_eq!(node["kind"], "errorNode");
        assert_eq!(node["code"], e as u32, "{debug}'s code");
        assert_eq!(node["name"], camel, "error {}'s name", e as u32);
        assert_eq!(node["message"], e.to_string(), "{debug}'s message");
    }
}

#[test]
fn the_model_pda_seeds_give_the_crates_address() {
    let idl = idl();
    let p = program(&idl);
    let pda = named(&p["pdas"], "model");
    let (authority, hash) = (key(9), [0x5au8; 32]);
    let seeds: Vec<Vec<u8>> = pda["seeds"]
        .as_array()
        .unwrap()
        .iter()
        .map(
            |s| match (s["kind"].as_str().unwrap(), s["name"].as_str()) {
                ("constantPdaSeedNode", _) => {
                    s["value"]["string"].as_str().unwrap().as_bytes().to_vec()
                }
                ("variablePdaSeedNode", Some("authority")) => authority.to_bytes().to_vec(),
                ("variablePdaSeedNode", Some("weightsHash")) => hash.to_vec(),
                other => panic!("seed {other:?}"),
            },
        )
        .collect();
    let refs: Vec<&[u8]> = seeds.iter().map(Vec::as_slice).collect();
    let program_id = curta_interface::id();
    assert_eq!(
        Pubkey::find_program_address(&refs, &program_id),
        state::model_address(&program_id, &authority, &hash)
    );
}
