//! The Codama IDL of the Curta program, rendered from the interface crate's description of the
//! contract ([`curta_interface::describe`], [`CurtaInstruction::DESCRIPTION`], [`CurtaError::ALL`]):
//! nothing here knows an instruction, a field or an error by name. idl/curta.json is this
//! crate's output; the SDK's generated code is rendered from that file (docs/idl.md).

use curta_interface::describe::{
    AccountDoc, DefinedDoc, DefinedKind, FieldDoc, InstructionDoc, LayoutDoc, PdaDoc, RemainingDoc,
    SeedDoc, TypeDoc, VariantDoc, ACCOUNTS, DEFINED_TYPES, PDAS, PROGRAM_DOCS,
};
use curta_interface::error::CurtaError;
use curta_interface::instruction::CurtaInstruction;
use serde_json::{json, Value};

/// The IDL as pretty-printed JSON (two-space indents, keys sorted, a final newline).
pub fn render_text() -> String {
    let mut text = serde_json::to_string_pretty(&render()).expect("a JSON value always prints");
    text.push('\n');
    text
}

/// The IDL: a Codama `rootNode`.
pub fn render() -> Value {
    json!({
        "kind": "rootNode",
        "standard": "codama",
        "version": "1.0.0",
        "program": {
            "kind": "programNode",
            "name": "curta",
            "publicKey": curta_interface::id().to_string(),
            "version": env!("CARGO_PKG_VERSION"),
            "docs": docs(PROGRAM_DOCS),
            "accounts": ACCOUNTS.iter().map(account).collect::<Vec<_>>(),
            "instructions": CurtaInstruction::DESCRIPTION.iter().map(instruction).collect::<Vec<_>>(),
            "definedTypes": DEFINED_TYPES.iter().map(defined_type).collect::<Vec<_>>(),
            "pdas": PDAS.iter().map(pda).collect::<Vec<_>>(),
            "errors": CurtaError::ALL.iter().map(error).collect::<Vec<_>>(),
        },
        "additionalPrograms": [],
    })
}

/// `snake_case` or `PascalCase` to Codama's `camelCase`.
pub fn camel(name: &str) -> String {
    let mut out = String::with_capacity(name.len());
    let mut upper = false;
    for (i, c) in name.chars().enumerate() {
        match c {
            '_' => upper = true,
            c if i == 0 => out.push(c.to_ascii_lowercase()),
            c if upper => {
                out.push(c.to_ascii_uppercase());
                upper = false;
            }
            c => out.push(c),
        }
    }
    out
}

/// Doc lines as Codama holds them: one string per paragraph. Rust's `///` lines arrive one by
/// one with their leading space; an empty line ends a paragraph.
fn docs(lines: &[&str]) -> Value {
    let mut paragraphs: Vec<String> = Vec::new();
    let mut open = false;
    for line in lines.iter().map(|l| l.trim()) {
        match (line.is_empty(), open) {
            (true, _) => open = false,
            (false, true) => {
                let last = paragraphs.last_mut().expect("an open paragraph");
                last.push(' ');
                last.push_str(line);
            }
            (false, false) => {
                paragraphs.push(line.to_string());
                open = true;
            }
        }
    }
    json!(paragraphs)
}

fn number(format: &str) -> Value {
    json!({ "kind": "numberTypeNode", "format": format, "endian": "le" })
}

fn bytes() -> Value {
    json!({ "kind": "bytesTypeNode" })
}

fn fixed_bytes(size: usize) -> Value {
    json!({ "kind": "fixedSizeTypeNode", "size": size, "type": bytes() })
}

fn type_node(ty: &TypeDoc) -> Value {
    match *ty {
        TypeDoc::U8 | TypeDoc::Version(_) => number("u8"),
        TypeDoc::U16 => number("u16"),
        TypeDoc::U32 => number("u32"),
        TypeDoc::U64 => number("u64"),
        TypeDoc::Bool => json!({ "kind": "booleanTypeNode", "size": number("u8") }),
        TypeDoc::Pubkey => json!({ "kind": "publicKeyTypeNode" }),
        TypeDoc::Bytes(size) | TypeDoc::Reserved(size) => fixed_bytes(size),
        TypeDoc::Magic(text) => fixed_bytes(text.len()),
        TypeDoc::PrefixedBytes => {
            json!({ "kind": "sizePrefixTypeNode", "type": bytes(), "prefix": number("u32") })
        }
        TypeDoc::U32List => json!({
            "kind": "arrayTypeNode",
            "item": number("u32"),
            "count": { "kind": "prefixedCountNode", "prefix": number("u32") },
        }),
        TypeDoc::Rest => bytes(),
        TypeDoc::Array(item, count) => json!({
            "kind": "arrayTypeNode",
            "item": type_node(item),
            "count": { "kind": "fixedCountNode", "value": count },
        }),
        TypeDoc::Defined(name) => json!({ "kind": "definedTypeLinkNode", "name": camel(name) }),
        TypeDoc::RemainderOption(fields) => {
            json!({ "kind": "remainderOptionTypeNode", "item": struct_node(fields) })
        }
    }
}

/// A struct's fields; reserved bytes are named after their offset, when it is known.
fn struct_node(fields: &[FieldDoc]) -> Value {
    let mut at = Some(0);
    let fields: Vec<Value> = fields
        .iter()
        .map(|f| {
            let node = field(f, at);
            at = at.zip(f.ty.size()).map(|(at, size)| at + size);
            node
        })
        .collect();
    json!({ "kind": "structTypeNode", "fields": fields })
}

fn field(f: &FieldDoc, at: Option<usize>) -> Value {
    let mut node = json!({
        "kind": "structFieldTypeNode",
        "name": camel(f.name),
        "docs": docs(f.docs),
        "type": type_node(&f.ty),
    });
    match (f.ty, at) {
        (TypeDoc::Reserved(size), Some(at)) => {
            node["name"] = json!(format!("reserved{at}"));
            node["docs"] = json!([format!("bytes {at}..{}, zero", at + size)]);
        }
        (TypeDoc::Magic(text), _) => {
            node["docs"] = json!([format!("\"{text}\"")]);
            node["defaultValue"] =
                json!({ "kind": "bytesValueNode", "data": text, "encoding": "utf8" });
            node["defaultValueStrategy"] = json!("omitted");
        }
        (TypeDoc::Version(version), _) => {
            node["docs"] = json!([format!("layout version, {version}")]);
            node["defaultValue"] = json!({ "kind": "numberValueNode", "number": version });
            node["defaultValueStrategy"] = json!("omitted");
        }
        _ => {}
    }
    node
}

fn instruction(ix: &InstructionDoc) -> Value {
    let discriminator = json!({
        "kind": "instructionArgumentNode",
        "name": "discriminator",
        "docs": [],
        "type": number("u8"),
        "defaultValue": { "kind": "numberValueNode", "number": ix.tag },
        "defaultValueStrategy": "omitted",
    });
    let arguments: Vec<Value> = std::iter::once(discriminator)
        .chain(ix.args.iter().map(|a| {
            json!({
                "kind": "instructionArgumentNode",
                "name": camel(a.name),
                "docs": docs(a.docs),
                "type": type_node(&a.ty),
            })
        }))
        .collect();
    let optional = ix.accounts.iter().any(|a| a.optional);
    json!({
        "kind": "instructionNode",
        "name": camel(ix.name),
        "docs": docs(ix.docs),
        "optionalAccountStrategy": if optional { "omitted" } else { "programId" },
        "accounts": ix.accounts.iter().map(instruction_account).collect::<Vec<_>>(),
        "arguments": arguments,
        "remainingAccounts": ix.remaining.iter().map(remaining).collect::<Vec<_>>(),
        "discriminators": [{ "kind": "fieldDiscriminatorNode", "name": "discriminator", "offset": 0 }],
    })
}

fn instruction_account(a: &AccountDoc) -> Value {
    let mut node = json!({
        "kind": "instructionAccountNode",
        "name": camel(a.name),
        "docs": docs(a.docs),
        "isWritable": a.writable,
        "isSigner": a.signer,
    });
    if a.optional {
        node["isOptional"] = json!(true);
    }
    if let Some(address) = a.address {
        node["defaultValue"] = json!({ "kind": "publicKeyValueNode", "publicKey": address });
    }
    node
}

fn remaining(r: &RemainingDoc) -> Value {
    json!({
        "kind": "instructionRemainingAccountsNode",
        "docs": [r.docs],
        "isWritable": r.writable,
        "isSigner": false,
        "value": { "kind": "argumentValueNode", "name": camel(r.name) },
    })
}

fn account(layout: &LayoutDoc) -> Value {
    let magic = layout.fields.iter().find_map(|f| match f.ty {
        TypeDoc::Magic(text) => Some(text),
        _ => None,
    });
    let mut node = json!({
        "kind": "accountNode",
        "name": camel(layout.name),
        "docs": docs(layout.docs),
        "discriminators": magic.map(|text| vec![json!({
            "kind": "constantDiscriminatorNode",
            "constant": {
                "kind": "constantValueNode",
                "type": bytes(),
                "value": { "kind": "bytesValueNode", "data": text, "encoding": "utf8" },
            },
            "offset": 0,
        })]).unwrap_or_default(),
        "data": struct_node(layout.fields),
    });
    if let Some(size) = layout.size {
        node["size"] = json!(size);
    }
    if let Some(pda) = layout.pda {
        node["pda"] = json!({ "kind": "pdaLinkNode", "name": camel(pda) });
    }
    node
}

fn defined_type(defined: &DefinedDoc) -> Value {
    let ty = match defined.kind {
        DefinedKind::Struct(fields) => struct_node(fields),
        DefinedKind::Enum(variants) => json!({
            "kind": "enumTypeNode",
            "variants": variants.iter().map(variant).collect::<Vec<_>>(),
            "size": number("u8"),
        }),
    };
    json!({
        "kind": "definedTypeNode",
        "name": camel(defined.name),
        "docs": docs(defined.docs),
        "type": ty,
    })
}

fn variant(v: &VariantDoc) -> Value {
    let mut node = match v.item {
        None => json!({ "kind": "enumEmptyVariantTypeNode", "name": camel(v.name) }),
        Some(item) => json!({
            "kind": "enumTupleVariantTypeNode",
            "name": camel(v.name),
            "tuple": { "kind": "tupleTypeNode", "items": [type_node(&item)] },
        }),
    };
    if let Some(discriminator) = v.discriminator {
        node["discriminator"] = json!(discriminator);
    }
    node
}

fn pda(p: &PdaDoc) -> Value {
    let seeds: Vec<Value> = p
        .seeds
        .iter()
        .map(|seed| match *seed {
            SeedDoc::Constant(text) => json!({
                "kind": "constantPdaSeedNode",
                "type": { "kind": "stringTypeNode", "encoding": "utf8" },
                "value": { "kind": "stringValueNode", "string": text },
            }),
            SeedDoc::Variable(name, ty) => json!({
                "kind": "variablePdaSeedNode",
                "name": camel(name),
                "docs": [],
                "type": type_node(&ty),
            }),
        })
        .collect();
    json!({ "kind": "pdaNode", "name": camel(p.name), "docs": docs(p.docs), "seeds": seeds })
}

fn error(e: &CurtaError) -> Value {
    json!({
        "kind": "errorNode",
        "name": camel(&format!("{e:?}")),
        "code": *e as u32,
        "message": e.to_string(),
        "docs": [],
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_camel_case() {
        assert_eq!(camel("seal_section_first_chunk"), "sealSectionFirstChunk");
        assert_eq!(camel("CreateModel"), "createModel");
        assert_eq!(camel("model"), "model");
    }

    #[test]
    fn doc_lines_join_into_paragraphs() {
        let lines = [" One", " two.", "", " Three."];
        assert_eq!(docs(&lines), json!(["One two.", "Three."]));
    }

    /// idl/curta.json is committed: it must be what the interface describes today.
    #[test]
    fn the_committed_idl_is_the_interfaces() {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("curta.json");
        let committed = std::fs::read_to_string(&path).expect("idl/curta.json");
        assert!(
            committed == render_text(),
            "idl/curta.json is not what the interface describes: run `cargo run -p curta-idl`"
        );
    }
}
