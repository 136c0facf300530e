//! Planning from on-chain state: which bytes still differ (the Write transactions), which
//! accounts are missing (the create transactions), which chunks remain (the seals).

use crate::chain::{OnChain, Weight};
use crate::engine::{Item, Kind, Subject, PACKET_LEN};
use crate::Error;
use curta_interface::instruction as ix;
use curta_interface::state::Model;
use curta_interface::state::{weight_seed, WEIGHT_HEADER_LEN};
use solana_instruction::Instruction;
use solana_pubkey::Pubkey;
use solana_system_interface::instruction as system_instruction;

/// New account data one transaction may allocate: the runtime's per-transaction limit
/// (twice the 10 MiB account limit), as the system interface publishes it.
pub const MAX_NEW_DATA_PER_TX: usize =
    solana_system_interface::MAX_PERMITTED_ACCOUNTS_DATA_ALLOCATIONS_PER_TRANSACTION as usize;

/// The byte ranges `(offset, len)` of `wanted` that differ from `onchain` (all zero when the
/// account does not exist yet), each at most `max` bytes. Greedy from the first differing
/// byte, trimmed to the last differing byte of each range: the fewest ranges that cover
/// every differing byte.
pub fn differing_ranges(onchain: Option<&[u8]>, wanted: &[u8], max: usize) -> Vec<(u32, u32)> {
    let differs = |i: usize| onchain.map_or(wanted[i] != 0, |o| o[i] != wanted[i]);
    let mut ranges = Vec::new();
    let mut i = 0;
    while i < wanted.len() {
        if !differs(i) {
            i += 1;
            continue;
        }
        let end = (i + max).min(wanted.len());
        let mut last = end - 1;
        while !differs(last) {
            last -= 1;
        }
        ranges.push((i as u32, (last + 1 - i) as u32));
        i = end;
    }
    ranges
}

/// Count of bytes of `wanted` that differ from `onchain`.
pub fn differing_bytes(onchain: Option<&[u8]>, wanted: &[u8]) -> u64 {
    match onchain {
        Some(o) => o.iter().zip(wanted).filter(|(a, b)| a != b).count() as u64,
        None => wanted.iter().filter(|b| **b != 0).count() as u64,
    }
}

/// The Write items that make every section equal to the artifact, interleaved across
/// sections so that sections are written in parallel.
pub fn writes(
    chain: &OnChain,
    sections: &[&[u8]],
    authority: &Pubkey,
    capacity: usize,
) -> Vec<Item> {
    let program = chain.program_id;
    let mut per_section: Vec<Vec<Item>> = sections
        .iter()
        .enumerate()
        .map(|(i, wanted)| {
            let weight = &chain.weights[i];
            differing_ranges(weight.bytes(), wanted, capacity)
                .into_iter()
                .map(|(offset, len)| Item {
                    kind: Kind::Write,
                    instructions: vec![ix::write(
                        &program,
                        &weight.address,
                        authority,
                        offset,
                        &wanted[offset as usize..(offset + len) as usize],
                    )],
                    subject: Subject::Write {
                        section: i,
                        bytes: len as usize,
                    },
                })
                .collect()
        })
        .collect();
    let mut items = Vec::new();
    let longest = per_section.iter().map(Vec::len).max().unwrap_or(0);
    let mut iters: Vec<_> = per_section.iter_mut().map(|v| v.drain(..)).collect();
    for _ in 0..longest {
        for it in iters.iter_mut() {
            if let Some(item) = it.next() {
                items.push(item);
            }
        }
    }
    items
}

/// The create transactions, in the order the chain needs them.
///
/// InitWeightAccount reads the model account, so no weight account can be initialized before
/// CreateModel has executed. The transaction that creates the model (with as many weight
/// accounts as fit beside it) is therefore `model`, which must land before any of `weights`
/// is sent; `weights` only need the model and may land in any order.
#[derive(Debug, Default)]
pub struct Creates {
    pub model: Option<Item>,
    pub weights: Vec<Item>,
}

impl Creates {
    pub fn is_empty(&self) -> bool {
        self.model.is_none() && self.weights.is_empty()
    }

    /// Every create transaction, the model's first.
    pub fn len(&self) -> usize {
        self.model.is_some() as usize + self.weights.len()
    }

    pub fn items(&self) -> impl Iterator<Item = &Item> {
        self.model.iter().chain(&self.weights)
    }
}

/// The create transactions: CreateModel if the model is missing, then
/// create_account_with_seed + InitWeightAccount for each missing weight account (for a
/// pre-funded address: transfer of the shortfall + allocate_with_seed + InitWeightAccount; for
/// an account created but never initialized: InitWeightAccount alone), grouped so that a
/// transaction allocates at most [`MAX_NEW_DATA_PER_TX`] and `tx_len` (the serialized size of
/// a transaction of these instructions) stays within a packet. `rent(len)` is the rent-exempt
/// minimum.
pub fn creates(
    chain: &OnChain,
    authority: &Pubkey,
    weights_hash: [u8; 32],
    lengths: &[u32],
    rent: &dyn Fn(usize) -> u64,
    tx_len: &dyn Fn(&[Instruction]) -> usize,
) -> Creates {
    let program = chain.program_id;
    let mut groups: Vec<Vec<Instruction>> = Vec::new();
    let mut current: Vec<Instruction> = Vec::new();
    let mut data = 0usize;
    let creates_model = chain.model.is_none();
    if creates_model {
        current.push(ix::create_model(&program, authority, weights_hash, lengths));
        data += curta_interface::state::MODEL_LEN;
    }
    for (section, weight) in chain.weights.iter().enumerate() {
        if weight.header.is_some() {
            continue;
        }
        let (instructions, space) =
            weight_creation(chain, weight, section, authority, lengths, rent);
        let mut candidate = current.clone();
        candidate.extend(instructions.iter().cloned());
        if !current.is_empty()
            && (data + space > MAX_NEW_DATA_PER_TX || tx_len(&candidate) > PACKET_LEN)
        {
            groups.push(std::mem::take(&mut current));
            data = 0;
            current = instructions;
        } else {
            current = candidate;
        }
        data += space;
    }
    if !current.is_empty() {
        groups.push(current);
    }
    let mut items = groups
        .into_iter()
        .map(|instructions| Item::model(Kind::Create, instructions));
    Creates {
        model: if creates_model { items.next() } else { None },
        weights: items.collect(),
    }
}

/// The instructions that create and initialize one missing weight account, and the new
/// account data they allocate.
fn weight_creation(
    chain: &OnChain,
    weight: &Weight,
    section: usize,
    authority: &Pubkey,
    lengths: &[u32],
    rent: &dyn Fn(usize) -> u64,
) -> (Vec<Instruction>, usize) {
    let program = chain.program_id;
    let space = WEIGHT_HEADER_LEN + lengths[section] as usize;
    let init = ix::init_weight_account(
        &program,
        &chain.address,
        &weight.address,
        authority,
        section as u8,
    );
    let seed = weight_seed(&chain.address, section as u8);
    if weight.uninitialized() {
        // Created but never initialized: only the header is missing.
        (vec![init], 0)
    } else if weight.prefunded > 0 {
        // create_account_with_seed refuses an address holding lamports: top it up to the
        // rent-exempt minimum, then allocate (which also assigns it to the program).
        let mut v = Vec::with_capacity(3);
        let shortfall = rent(space).saturating_sub(weight.prefunded);
        if shortfall > 0 {
            v.push(system_instruction::transfer(
                authority,
                &weight.address,
                shortfall,
            ));
        }
        v.push(system_instruction::allocate_with_seed(
            &weight.address,
            authority,
            &seed,
            space as u64,
            &program,
        ));
        v.push(init);
        (v, space)
    } else {
        let create = system_instruction::create_account_with_seed(
            authority,
            &weight.address,
            authority,
            &seed,
            rent(space),
            space as u64,
            &program,
        );
        (vec![create, init], space)
    }
}

/// Seal items from the model's cursor to the last chunk (chunk 0 alone), for the model of
/// program `program`.
pub fn seals(program: &Pubkey, model_address: &Pubkey, model: &Model) -> Vec<Item> {
    if model.seal_cursor == 0 {
        // Starting a pass is the authority's call; it goes alone, and the cranks follow once
        // it landed (a crank before it is refused).
        return vec![Item {
            kind: Kind::Seal,
            instructions: vec![ix::start_seal(
                program,
                model_address,
                model.weights(),
                &model.authority,
                model.creation,
                model.seal_pass,
            )],
            subject: Subject::Chunk(0),
        }];
    }
    // Every later chunk at once: each seal carries every section's weight account and hashes
    // the chunk at the cursor whichever section it is in, so they land in any order. (A model
    // CreateModel accepts fits one transaction's loaded data with all its accounts.)
    (model.seal_cursor..model.total_chunks)
        .map(|chunk| Item {
            kind: Kind::Seal,
            instructions: vec![ix::seal_every_section(
                program,
                model_address,
                model.weights(),
                model.creation,
                model.seal_pass,
                chunk,
            )],
            subject: Subject::Chunk(chunk),
        })
        .collect()
}

/// The Reopen of the model: every weight account, in section order.
pub fn reopen(chain: &OnChain, authority: &Pubkey) -> Item {
    let weights = chain.weight_addresses();
    let reopen = ix::reopen(&chain.program_id, &chain.address, authority, &weights);
    Item::model(Kind::Reopen, vec![reopen])
}

/// The Close of the model, its rent going to `destination`.
pub fn close(chain: &OnChain, authority: &Pubkey, destination: &Pubkey) -> Item {
    let weights = chain.weight_addresses();
    let close = ix::close(
        &chain.program_id,
        &chain.address,
        authority,
        destination,
        &weights,
    );
    Item::model(Kind::Close, vec![close])
}

/// Rent the payer still owes for the accounts that do not exist yet: each one's rent-exempt
/// minimum less what its address already holds.
pub fn missing_rent(chain: &OnChain, lengths: &[u32], rent: &dyn Fn(usize) -> u64) -> u64 {
    let model = if chain.model.is_none() {
        rent(curta_interface::state::MODEL_LEN).saturating_sub(chain.model_lamports)
    } else {
        0
    };
    model
        + chain
            .weights
            .iter()
            .zip(lengths)
            .filter(|(w, _)| w.account.is_none())
            .map(|(w, len)| rent(WEIGHT_HEADER_LEN + *len as usize).saturating_sub(w.prefunded))
            .sum::<u64>()
}

/// An error unless every weight account exists and is initialized.
pub fn require_complete(chain: &OnChain) -> Result<(), Error> {
    match chain.weights.iter().position(|w| w.header.is_none()) {
        Some(section) => Err(Error::Incomplete {
            model: chain.address,
            section,
            address: chain.weights[section].address,
        }),
        None => Ok(()),
    }
}
