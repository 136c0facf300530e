//! The model and weight accounts' layouts: the one description their offsets (read by the
//! program) and the IDL's account nodes come from (crate::describe).

use super::{ModelState, LAYOUT_VERSION, MAX_SECTIONS, MODEL_LEN, WEIGHT_HEADER_LEN};
use crate::describe::{
    DefinedDoc, DefinedKind, FieldDoc, LayoutDoc, PdaDoc, SeedDoc, TypeDoc, VariantDoc,
};

/// The model account's layout (808 bytes): the one description its offsets and the IDL come from.
pub const MODEL_LAYOUT: LayoutDoc = LayoutDoc {
    name: "model",
    docs: &["A model: its declared weights hash, section lengths, seal progress and weight accounts. 808 bytes."],
    size: Some(MODEL_LEN),
    pda: Some("model"),
    fields: &[
        FieldDoc::new("magic", TypeDoc::Magic("CURTAMDL"), &[]),
        FieldDoc::new("version", TypeDoc::Version(LAYOUT_VERSION), &[]),
        FieldDoc::new("state", TypeDoc::Defined("model_state"), &[]),
        FieldDoc::new("bump", TypeDoc::U8, &["the PDA bump"]),
        FieldDoc::new("section_count", TypeDoc::U8, &["2 to 18"]),
        FieldDoc::new("seal_pass", TypeDoc::U32, &["0 at creation, +1 at each Reopen"]),
        FieldDoc::new("authority", TypeDoc::Pubkey, &[]),
        FieldDoc::new("weights_hash", TypeDoc::Bytes(32), &["the declared weights hash"]),
        FieldDoc::new("running_hash", TypeDoc::Bytes(32), &["the chain so far while Sealing; the declared hash once Sealed"]),
        FieldDoc::new("seal_cursor", TypeDoc::U32, &["index over the whole artifact of the next chunk to hash"]),
        FieldDoc::new("total_chunks", TypeDoc::U32, &[]),
        FieldDoc::new("config", TypeDoc::Defined("model_config"), &["written when section zero's header is checked; meaningful once Sealed"]),
        // Kept by every Seal so that the cursor's section is found without a walk over the
        // sections before it.
        FieldDoc::new("seal_section_first_chunk", TypeDoc::U16, &["while Sealing, the first chunk of the section the seal cursor is in; zero while Open"]),
        FieldDoc::new("seal_section", TypeDoc::U8, &["while Sealing, the section the seal cursor is in; zero while Open"]),
        FieldDoc::new("reserved", TypeDoc::Reserved(1), &[]),
        FieldDoc::new("creation", TypeDoc::U64, &["the slot of the CreateModel that made the model"]),
        FieldDoc::new("section_lengths", TypeDoc::Array(&TypeDoc::U32, MAX_SECTIONS), &["entries past the section count are zero"]),
        FieldDoc::new("weight_accounts", TypeDoc::Array(&TypeDoc::Pubkey, MAX_SECTIONS), &["zero until initialized"]),
    ],
};

/// Model account field offsets (from [`MODEL_LAYOUT`]).
pub mod model_field {
    use super::MODEL_LAYOUT as L;
    pub const MAGIC: usize = L.offset("magic");
    pub const VERSION: usize = L.offset("version");
    pub const STATE: usize = L.offset("state");
    pub const BUMP: usize = L.offset("bump");
    pub const SECTION_COUNT: usize = L.offset("section_count");
    pub const SEAL_PASS: usize = L.offset("seal_pass");
    pub const AUTHORITY: usize = L.offset("authority");
    pub const WEIGHTS_HASH: usize = L.offset("weights_hash");
    pub const RUNNING_HASH: usize = L.offset("running_hash");
    pub const SEAL_CURSOR: usize = L.offset("seal_cursor");
    pub const TOTAL_CHUNKS: usize = L.offset("total_chunks");
    pub const CONFIG: usize = L.offset("config");
    pub const SEAL_SECTION_FIRST: usize = L.offset("seal_section_first_chunk");
    pub const SEAL_SECTION: usize = L.offset("seal_section");
    pub const CREATION: usize = L.offset("creation");
    pub const SECTION_LENGTHS: usize = L.offset("section_lengths");
    pub const WEIGHT_ACCOUNTS: usize = L.offset("weight_accounts");
}

const _: () = assert!(MODEL_LAYOUT.fixed_len() == MODEL_LEN);

/// A weight account's layout: the 2,048-byte header, then the section's bytes.
pub const WEIGHT_LAYOUT: LayoutDoc = LayoutDoc {
    name: "weight",
    docs: &["A section of a model: a 2,048-byte header, then the section's bytes. Address: create_with_seed(authority, \"curta-\" + section as 2 decimal digits + \"-\" + hex of the model address's first 10 bytes, program id)."],
    size: None,
    pda: None,
    fields: &[
        FieldDoc::new("magic", TypeDoc::Magic("CURTAWSC"), &[]),
        FieldDoc::new("version", TypeDoc::Version(LAYOUT_VERSION), &[]),
        FieldDoc::new("frozen", TypeDoc::Bool, &[]),
        FieldDoc::new("section", TypeDoc::U16, &[]),
        FieldDoc::new("length", TypeDoc::U32, &["the section length; the data is 2,048 + this"]),
        FieldDoc::new("model", TypeDoc::Pubkey, &[]),
        FieldDoc::new("authority", TypeDoc::Pubkey, &[]),
        FieldDoc::new("reserved", TypeDoc::Reserved(1968), &[]),
        FieldDoc::new("section_bytes", TypeDoc::Rest, &[]),
    ],
};

/// Weight account header field offsets (from [`WEIGHT_LAYOUT`]).
pub mod weight_field {
    use super::WEIGHT_LAYOUT as L;
    pub const MAGIC: usize = L.offset("magic");
    pub const VERSION: usize = L.offset("version");
    pub const FROZEN: usize = L.offset("frozen");
    pub const SECTION: usize = L.offset("section");
    pub const LENGTH: usize = L.offset("length");
    pub const MODEL: usize = L.offset("model");
    pub const AUTHORITY: usize = L.offset("authority");
}

const _: () = assert!(WEIGHT_LAYOUT.fixed_len() == WEIGHT_HEADER_LEN);

pub const MODEL_STATE_DOC: DefinedDoc = DefinedDoc {
    name: "model_state",
    docs: &[
        "1 Open, 2 Sealing, 3 Mismatch, 4 Sealed; 0 is an account the program never initialized, not a model.",
        "",
        "Every variant's discriminator is its index (Codama's JavaScript renderer reads the index only).",
    ],
    kind: DefinedKind::Enum(&[
        VariantDoc {
            name: "uninitialized",
            discriminator: Some(0),
            item: None,
        },
        VariantDoc {
            name: "open",
            discriminator: Some(ModelState::Open as u8),
            item: None,
        },
        VariantDoc {
            name: "sealing",
            discriminator: Some(ModelState::Sealing as u8),
            item: None,
        },
        VariantDoc {
            name: "mismatch",
            discriminator: Some(ModelState::Mismatch as u8),
            item: None,
        },
        VariantDoc {
            name: "sealed",
            discriminator: Some(ModelState::Sealed as u8),
            item: None,
        },
    ]),
};

pub const MODEL_CONFIG_DOC: DefinedDoc = DefinedDoc {
    name: "model_config",
    docs: &["The model's configuration: header bytes 8..36 of its artifact."],
    kind: DefinedKind::Struct(&[
        FieldDoc::new("dim", TypeDoc::U32, &[]),
        FieldDoc::new("hidden_dim", TypeDoc::U32, &[]),
        FieldDoc::new("layers", TypeDoc::U32, &[]),
        FieldDoc::new("heads", TypeDoc::U32, &[]),
        FieldDoc::new("kv_heads", TypeDoc::U32, &[]),
        FieldDoc::new("vocab_size", TypeDoc::U32, &[]),
        FieldDoc::new("context_length", TypeDoc::U32, &[]),
    ]),
};

/// The model PDA's seeds ([`model_address`]).
pub const MODEL_PDA: PdaDoc = PdaDoc {
    name: "model",
    docs: &["The model account: one per (authority, declared weights hash)."],
    seeds: &[
        SeedDoc::Constant("model"),
        SeedDoc::Variable("authority", TypeDoc::Pubkey),
        SeedDoc::Variable("weights_hash", TypeDoc::Bytes(32)),
    ],
};
