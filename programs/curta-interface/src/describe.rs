//! The contract described as data: every instruction's arguments and accounts, every account
//! layout, the defined types and the model PDA. The instruction list ([`crate::instruction`])
//! and the layouts ([`crate::state`], [`crate::run`]) are written once, here in the interface, and
//! both the code that reads and writes them and these descriptions come from that one place;
//! `idl/` renders the descriptions as the Codama IDL (idl/curta.json), from which the SDK's
//! builders, decoders and error table are generated (docs/idl.md).
//!
//! Only constants: nothing here costs the program a byte unless it reads it.

/// A field's type on the wire or in an account.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TypeDoc {
    U8,
    U16,
    U32,
    U64,
    /// A byte, 0 or 1.
    Bool,
    /// A 32-byte address.
    Pubkey,
    /// Exactly this many bytes.
    Bytes(usize),
    /// A u32 count, then that many bytes.
    PrefixedBytes,
    /// A u32 count, then that many u32s.
    U32List,
    /// Every byte to the end of the account.
    Rest,
    /// Exactly this many items.
    Array(&'static TypeDoc, usize),
    /// A type of [`DEFINED_TYPES`], by name.
    Defined(&'static str),
    /// Nothing, or (to the end of the data) a struct of these fields.
    RemainderOption(&'static [FieldDoc]),
    /// Bytes that must be zero (rendered as a field named after its offset).
    Reserved(usize),
    /// An account's 8-byte magic: this text.
    Magic(&'static str),
    /// An account's layout version (a u8): this number.
    Version(u8),
}

impl TypeDoc {
    /// The bytes a value of this type takes, when every value takes the same.
    pub const fn size(&self) -> Option<usize> {
        match self {
            TypeDoc::U8 | TypeDoc::Bool | TypeDoc::Version(_) => Some(1),
            TypeDoc::U16 => Some(2),
            TypeDoc::U32 => Some(4),
            TypeDoc::U64 => Some(8),
            TypeDoc::Pubkey => Some(32),
            TypeDoc::Magic(_) => Some(8),
            TypeDoc::Bytes(n) | TypeDoc::Reserved(n) => Some(*n),
            TypeDoc::Array(item, n) => match item.size() {
                Some(size) => Some(size * *n),
                None => None,
            },
            TypeDoc::Defined(name) => defined_size(name),
            TypeDoc::PrefixedBytes
            | TypeDoc::U32List
            | TypeDoc::Rest
            | TypeDoc::RemainderOption(_) => None,
        }
    }
}

/// A named field of an instruction's data, a struct or an account layout.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FieldDoc {
    /// snake_case, as in the Rust (the IDL renders it in camelCase).
    pub name: &'static str,
    pub ty: TypeDoc,
    pub docs: &'static [&'static str],
}

impl FieldDoc {
    pub const fn new(name: &'static str, ty: TypeDoc, docs: &'static [&'static str]) -> Self {
        FieldDoc { name, ty, docs }
    }
}

/// One account an instruction takes, in order.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AccountDoc {
    pub name: &'static str,
    pub writable: bool,
    pub signer: bool,
    /// Present only in some forms of the instruction (Seal's authority, at chunk 0).
    pub optional: bool,
    /// The address it always has (a program or a sysvar), base58.
    pub address: Option<&'static str>,
    pub docs: &'static [&'static str],
}

/// An account that is neither written nor signs.
pub const fn read(name: &'static str, docs: &'static [&'static str]) -> AccountDoc {
    AccountDoc {
        name,
        writable: false,
        signer: false,
        optional: false,
        address: None,
        docs,
    }
}

/// A written account.
pub const fn written(name: &'static str, docs: &'static [&'static str]) -> AccountDoc {
    AccountDoc {
        writable: true,
        ..read(name, docs)
    }
}

/// A signing account that is not written.
pub const fn signer(name: &'static str, docs: &'static [&'static str]) -> AccountDoc {
    AccountDoc {
        signer: true,
        ..read(name, docs)
    }
}

/// The accounts after the named ones: the model's weight accounts, in section order.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RemainingDoc {
    pub name: &'static str,
    pub writable: bool,
    pub docs: &'static str,
}

/// An instruction: its tag (data byte 0), arguments (the data after the tag, in order) and
/// accounts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct InstructionDoc {
    pub tag: u8,
    /// PascalCase, as the Rust variant.
    pub name: &'static str,
    pub docs: &'static [&'static str],
    pub args: &'static [FieldDoc],
    pub accounts: &'static [AccountDoc],
    pub remaining: Option<RemainingDoc>,
}

/// An account's layout: its fields from byte 0, in order.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LayoutDoc {
    pub name: &'static str,
    pub docs: &'static [&'static str],
    pub fields: &'static [FieldDoc],
    /// The account's size, when every account of the kind has the same.
    pub size: Option<usize>,
    /// The PDA (of [`PDAS`]) its address is, when it is one.
    pub pda: Option<&'static str>,
}

impl LayoutDoc {
    /// The offset of the field named `name`; a name that is not a field, or follows a field of
    /// no fixed size, fails to compile where this is a constant.
    pub const fn offset(&self, name: &str) -> usize {
        let mut at = 0;
        let mut i = 0;
        while i < self.fields.len() {
            if same_str(self.fields[i].name, name) {
                return at;
            }
            match self.fields[i].ty.size() {
                Some(size) => at += size,
                None => panic!("a field after one of no fixed size"),
            }
            i += 1;
        }
        panic!("no such field")
    }

    /// The bytes of the fields of fixed size before the first that has none (the header).
    pub const fn fixed_len(&self) -> usize {
        fixed_len(self.fields)
    }
}

/// The bytes of the fields of fixed size before the first that has none: an account's header,
/// an instruction's leading fields.
pub const fn fixed_len(fields: &[FieldDoc]) -> usize {
    let mut at = 0;
    let mut i = 0;
    while i < fields.len() {
        match fields[i].ty.size() {
            Some(size) => at += size,
            None => return at,
        }
        i += 1;
    }
    at
}

/// A variant of a defined enum: its name, its byte when not its index, and what follows it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct VariantDoc {
    pub name: &'static str,
    pub discriminator: Option<u8>,
    pub item: Option<TypeDoc>,
}

impl VariantDoc {
    pub const fn unit(name: &'static str) -> Self {
        VariantDoc {
            name,
            discriminator: None,
            item: None,
        }
    }
}

/// What a defined type is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DefinedKind {
    /// A u8 variant byte, then the variant's item if it has one.
    Enum(&'static [VariantDoc]),
    Struct(&'static [FieldDoc]),
}

/// A named type that fields refer to ([`TypeDoc::Defined`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DefinedDoc {
    pub name: &'static str,
    pub docs: &'static [&'static str],
    pub kind: DefinedKind,
}

/// A seed of a PDA.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SeedDoc {
    Constant(&'static str),
    Variable(&'static str, TypeDoc),
}

/// A program-derived address.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PdaDoc {
    pub name: &'static str,
    pub docs: &'static [&'static str],
    pub seeds: &'static [SeedDoc],
}

/// The types that fields name.
pub const DEFINED_TYPES: &[DefinedDoc] = &[
    crate::run::SEED_SOURCE_DOC,
    crate::instruction::PROMPT_DOC,
    crate::state::MODEL_STATE_DOC,
    crate::state::MODEL_CONFIG_DOC,
    crate::claim::CLAIM_STATE_DOC,
];

/// The account layouts.
pub const ACCOUNTS: &[LayoutDoc] = &[
    crate::state::MODEL_LAYOUT,
    crate::state::WEIGHT_LAYOUT,
    crate::run::RUN_LAYOUT,
    crate::claim::CLAIM_LAYOUT,
];

/// The program-derived addresses.
pub const PDAS: &[PdaDoc] = &[crate::state::MODEL_PDA];

/// What the program is, in a line.
pub const PROGRAM_DOCS: &[&str] = &[
    "Curta: llama2.c-style int8 language models stored, sealed and run on Solana (docs/program.md).",
];

const fn defined_size(name: &str) -> Option<usize> {
    let mut i = 0;
    while i < DEFINED_TYPES.len() {
        let defined = &DEFINED_TYPES[i];
        if same_str(defined.name, name) {
            return match defined.kind {
                DefinedKind::Enum(variants) => {
                    let mut v = 0;
                    while v < variants.len() {
                        if variants[v].item.is_some() {
                            return None;
                        }
                        v += 1;
                    }
                    Some(1)
                }
                DefinedKind::Struct(fields) => {
                    let mut size = 0;
                    let mut f = 0;
                    while f < fields.len() {
                        match fields[f].ty.size() {
                            Some(s) => size += s,
                            None => return None,
                        }
                        f += 1;
                    }
                    Some(size)
                }
            };
        }
        i += 1;
    }
    None
}

const fn same_str(a: &str, b: &str) -> bool {
    let (a, b) = (a.as_bytes(), b.as_bytes());
    if a.len() != b.len() {
        return false;
    }
    let mut i = 0;
    while i < a.len() {
        if a[i] != b[i] {
            return false;
        }
        i += 1;
    }
    true
}
