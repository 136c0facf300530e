//! Instructions: the one place each is written (tag, fields, accounts). The wire format is
//! borsh's: a u8 tag, then the fields in order (integers little-endian, a byte or u32 list as a
//! u32 count then its items). The program parses in place ([`CurtaInstruction::parse`]); off
//! chain [`CurtaInstruction::pack`] writes the bytes and [`builders`] the whole instructions;
//! `idl/` renders [`CurtaInstruction::DESCRIPTION`] into the IDL.

#[macro_use]
mod macros;
mod wire;

#[cfg(not(target_os = "solana"))]
mod builders;
#[cfg(not(target_os = "solana"))]
mod claim_builders;

#[cfg(not(target_os = "solana"))]
pub use builders::*;
#[cfg(not(target_os = "solana"))]
pub use claim_builders::*;
pub use wire::{Reader, RunSeeds, U32s, Wire};

use crate::describe::{
    fixed_len, read, signer, written, AccountDoc, DefinedDoc, DefinedKind, FieldDoc,
    InstructionDoc, RemainingDoc, TypeDoc, VariantDoc,
};
pub use crate::run::SeedSource;

/// Most section bytes one Write carries in a 1,232-byte transaction with one signer, three
/// account keys (authority, weight account, program) and no compute-budget instruction:
/// 213 bytes of transaction and instruction framing + 1,019 = 1,232.
pub const MAX_WRITE_BYTES: usize = 1019;

/// The system program's address.
pub const SYSTEM_PROGRAM: &str = "11111111111111111111111111111111";
/// The SlotHashes sysvar's address (a Step's account 2).
pub const SLOT_HASHES_ADDRESS: &str = "SysvarS1otHashes111111111111111111111111111";

instructions! {
    <'a>
    /// Creates the model account (the PDA of ["model", authority, weights hash]), declaring the weights hash and the section lengths.
    0 => CreateModel {
        /// the declared weights hash (SHA-256 chain over 65,536-byte chunks)
        weights_hash: &'a [u8; 32],
        /// 2 to 18 section lengths
        section_lengths: U32s<'a>,
    }
    accounts: &[
        AccountDoc { writable: true, signer: true, ..read("authority", &["the model's authority; pays the rent"]) },
        written("model", &["the model PDA"]),
        AccountDoc { address: Some(SYSTEM_PROGRAM), ..read("system_program", &[]) },
    ],
    remaining: None;

    /// Binds a weight account the authority created (create_account_with_seed at weight_address(authority, model, section), owner the program) to the model's section and writes its header.
    1 => InitWeightAccount { section: u8 }
    accounts: &[written("model", &[]), written("weight", &[]), signer("authority", &[])],
    remaining: None;

    /// Writes bytes at an offset of the weight account's section (data offset 2,048 + offset).
    2 => Write {
        /// offset within the section
        offset: u32,
        /// at most 1,019 bytes in one packet
        bytes: &'a [u8],
    }
    accounts: &[written("weight", &[]), signer("authority", &[])],
    remaining: None;

    /// Hashes the chunk at the seal cursor. Chunk 0 starts a seal pass and freezes every section: it takes section zero's weight account, the authority as third account (signing), then the other sections' weight accounts. A later chunk takes the model and the cursor's section's weight account, or the model and every section's weight account in section order (the whole pass in flight at once), and anyone may send it; its weight accounts may be read only.
    3 => Seal {
        /// the model's seal pass
        pass: u32,
        /// 0 to start the pass; otherwise any chunk of the cursor's section, or of the model when carrying every section
        chunk: u32,
        /// the model's creation id (the slot of its CreateModel)
        creation: u64,
    }
    accounts: &[
        written("model", &[]),
        written("weight", &["section zero's weight account at chunk 0; later, the cursor's section's, or section zero's when carrying every section (read only is enough after chunk 0)"]),
        AccountDoc { optional: true, ..signer("authority", &["only when chunk is 0"]) },
    ],
    remaining: Some(RemainingDoc {
        name: "weights",
        writable: true,
        docs: "at chunk 0, and when a later chunk carries every section: the weight accounts of sections 1 on, in section order (read only is enough after chunk 0)",
    });

    /// Returns a Sealing or Mismatch model to Open: unfreezes every section, starts a new seal pass.
    4 => Reopen {}
    accounts: &[written("model", &[]), signer("authority", &[])],
    remaining: Some(RemainingDoc { name: "weights", writable: true, docs: "every section's weight account, in section order" });

    /// Closes an unsealed model and every weight account of it, every lamport to the destination.
    5 => Close {}
    accounts: &[written("model", &[]), signer("authority", &[]), written("destination", &[])],
    remaining: Some(RemainingDoc {
        name: "weights",
        writable: true,
        docs: "every section's seed-derived weight address, in section order, initialized or not",
    });

    /// Starts a run of a Sealed model in the run account the runner created at create_with_seed(runner, "run-" + hex of the model address's first 8 bytes + "-" + the nonce as 8 hex digits, program id).
    6 => StartRun {
        nonce: u32,
        /// the most tokens to generate
        steps: u32,
        /// 16 fractional bits; 0 is greedy
        temperature: u32,
        /// 16 fractional bits
        top_p: u32,
        /// the runner's seed
        seed: u64,
        seed_source: SeedSource,
        prompt: Prompt<'a>,
    }
    accounts: &[
        written("run", &[]),
        signer("runner", &[]),
        read("model", &["a Sealed model"]),
        read("section_zero", &["the model's weight account of section zero"]),
    ],
    remaining: None;

    /// Advances a run by whole items of at most `budget` estimated compute units, stopping at a generated token. No signer: anyone may step a run, in any order.
    7 => Step {
        /// not read: it makes the transaction unique
        ticket: u32,
        /// estimated compute units, 1 to 1,175,000
        budget: u32,
    }
    accounts: &[
        written("run", &[]),
        read("model", &[]),
        AccountDoc { address: Some(SLOT_HASHES_ADDRESS), ..read("slot_hashes", &["the SlotHashes sysvar"]) },
    ],
    remaining: Some(RemainingDoc {
        name: "weights",
        writable: false,
        docs: "section zero's weight account, then any of the other sections' in section order (every section's, or those the step's items read)",
    });

    /// Closes a run account, every lamport to its runner. With the run's model and nonce it also closes an account at a run address that StartRun never initialized.
    8 => CloseRun {
        /// optional: the run's model address and nonce
        run_seeds: Option<RunSeeds<'a>>,
    }
    accounts: &[written("run", &[]), AccountDoc { writable: true, ..signer("runner", &[]) }],
    remaining: None;

    /// Opens a claim of a Sealed model in the claim account the claimer created at create_with_seed(claimer, "claim-" + hex of the model address's first 8 bytes + "-" + the nonce as 8 hex digits, program id), holding its rent and the bond.
    9 => OpenClaim {
        nonce: u32,
        /// the most tokens to generate
        steps: u32,
        /// 16 fractional bits; 0 is greedy
        temperature: u32,
        /// 16 fractional bits
        top_p: u32,
        /// the claimer's seed
        seed: u64,
        seed_source: SeedSource,
        /// slots after the answer during which anyone may challenge, 150 to 432,000
        window: u32,
        /// micro-lamports per compute unit the bond covers a dispute's steps at
        priority_price: u64,
        /// lamports, at least cost::claim_bond
        bond: u64,
        prompt: Prompt<'a>,
    }
    accounts: &[
        written("claim", &["created by the claimer with its rent and the bond"]),
        signer("claimer", &[]),
        read("model", &["a Sealed model"]),
    ],
    remaining: None;

    /// Posts the claim's answer: its generated ids' count and the answer hash. A drawn seed is drawn here from the open slot's hash, so the answer lands after the open slot and while its hash is in SlotHashes.
    10 => AnswerClaim {
        /// generated ids, an end token included, 1 to the claim's steps
        token_count: u32,
        /// SHA-256 of the generated ids (u32 little-endian each) then the text
        answer_hash: &'a [u8; 32],
    }
    accounts: &[
        written("claim", &[]),
        signer("claimer", &[]),
        AccountDoc { address: Some(SLOT_HASHES_ADDRESS), ..read("slot_hashes", &["the SlotHashes sysvar"]) },
    ],
    remaining: None;

    /// Challenges an answered claim within its window: the challenger posts the claim's bond and starts the dispute run (the claim's model, prompt, settings and seed) in the run account it created at its run address of the model and the nonce; nobody may close that run until Resolve.
    11 => Challenge { nonce: u32 }
    accounts: &[
        written("claim", &[]),
        AccountDoc { writable: true, signer: true, ..read("challenger", &["pays the bond; the dispute run's runner"]) },
        written("run", &["the dispute run, created by the challenger"]),
        read("model", &[]),
        read("section_zero", &["the model's weight account of section zero"]),
        AccountDoc { address: Some(SYSTEM_PROGRAM), ..read("system_program", &[]) },
    ],
    remaining: None;

    /// Decides a challenged claim once its dispute run finished: upheld if the run's ids and text hash to the answer (the challenger's bond to the claimer), overturned otherwise (both bonds to the challenger). The dispute run closes, every lamport to its runner. Anyone may send it.
    12 => Resolve {}
    accounts: &[
        written("claim", &[]),
        written("run", &["the claim's dispute run"]),
        written("claimer", &[]),
        written("challenger", &["the dispute run's runner"]),
    ],
    remaining: None;

    /// Closes a claim, every lamport (its rent and what is left of the bond) to the claimer: an open claim, a settled one, or a resolved one.
    13 => CloseClaim {}
    accounts: &[written("claim", &[]), AccountDoc { writable: true, ..signer("claimer", &[]) }],
    remaining: None;
}

/// A run's prompt on the wire: a kind byte, then text (kind 0: a u32 count then the bytes) or
/// token ids (kind 1: a u32 count then the ids, u32 each).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Prompt<'a> {
    Text(&'a [u8]),
    Tokens(U32s<'a>),
}

pub const PROMPT_DOC: DefinedDoc = DefinedDoc {
    name: "prompt",
    docs: &["A run's prompt: text (tokenized on chain) or token ids."],
    kind: DefinedKind::Enum(&[
        VariantDoc {
            name: "text",
            discriminator: None,
            item: Some(TypeDoc::PrefixedBytes),
        },
        VariantDoc {
            name: "token_ids",
            discriminator: None,
            item: Some(TypeDoc::U32List),
        },
    ]),
};

impl<'a> Wire<'a> for Prompt<'a> {
    const TYPE: TypeDoc = TypeDoc::Defined("prompt");
    #[inline(always)]
    fn read(data: &mut Reader<'a>) -> Option<Self> {
        match u8::read(data)? {
            0 => <&[u8]>::read(data).map(Prompt::Text),
            1 => U32s::read(data).map(Prompt::Tokens),
            _ => None,
        }
    }
    #[cfg(not(target_os = "solana"))]
    fn write(&self, out: &mut alloc::vec::Vec<u8>) {
        match self {
            Prompt::Text(text) => {
                out.push(0);
                text.write(out);
            }
            Prompt::Tokens(ids) => {
                out.push(1);
                ids.write(out);
            }
        }
    }
}
