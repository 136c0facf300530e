//! A model's transactions, planned from on-chain state: which bytes still differ (the Write
//! transactions), which accounts are missing (the create transactions), which chunks remain
//! (the seals), the Reopen and the Close; each with its compute-unit policy and barrier.

use super::accounts::{OnChain, Weight};
use crate::send::format::{transaction_len_in, Format, PACKET_LEN};
use crate::send::{Bar, Item, Settle, Units};
use crate::Error;
use curta_interface::instruction as ix;
use curta_interface::state::Model;
use curta_interface::state::{weight_seed, WEIGHT_HEADER_LEN};
use solana_instruction::Instruction;
use solana_pubkey::Pubkey;
use solana_system_interface::instruction as system_instruction;

/// The labels of a model's transactions, as errors and reports name them.
pub const CREATE: &str = "create";
pub const WRITE: &str = "write";
pub const SEAL: &str = "seal";
pub const REOPEN: &str = "reopen";
pub const CLOSE: &str = "close";

/// The compute-unit limit of each transaction where a simulation cannot measure it (a Write
/// or a Seal before its accounts exist): what the VM measured on the SBF binary with a margin
/// of at least 1.2 (docs/client.md, "Compute-unit limits"; the test `compute_units` checks
/// that each covers its measure).
pub const CREATE_UNITS: u32 = 100_000;
pub const WRITE_UNITS: u32 = 2_000;
pub const SEAL_UNITS: u32 = 120_000;
pub const REOPEN_UNITS: u32 = 50_000;
pub const CLOSE_UNITS: u32 = 50_000;
/// The limit chunk 0's Seal always carries, with or without a price: it checks section zero,
/// every sorted token id among it (about 10 units an id: a 32,000-token model's is over the
/// default 200,000), for any vocabulary up to 65,536 (test `compute_units`: the largest, with
/// 18 sections, about 700,000, times 1.2).
pub const SEAL_START_UNITS: u32 = 870_000;
/// The least limit of a Seal: a full chunk's measure with a margin (whichever chunk was
/// simulated, any later one may be full).
pub const SEAL_CHUNK_UNITS: u32 = 41_000;

/// Creates carry different numbers and kinds of instructions: each list is measured.
const CREATE_POLICY: Units = Units::MeasuredEach {
    fallback: CREATE_UNITS,
    floor: 0,
};

/// A Write item of `bytes` payload bytes into `section` (its first account the weight
/// account): it counts its bytes and moves the section's bar.
pub fn write_item(section: usize, bytes: usize, instruction: Instruction) -> Item {
    let item = Item::new(
        WRITE,
        Units::Measured {
            fallback: WRITE_UNITS,
            floor: 0,
        },
        vec![instruction],
    )
    .carrying(bytes)
    .bar(Bar::Bytes(section));
    match item.account(0) {
        Some(weight) => item.about(format!("section {section} (weight account {weight})")),
        None => item,
    }
}

/// A Seal item of chunk `chunk` (its second account the first weight account). Chunk 0 starts
/// a pass and is a barrier: it waits for what was sent before it to land, as it freezes every
/// section (a Write that lands again after a fork is then refused, SectionFrozen, and can at
/// worst leave the pass at Mismatch, which `seal` with the artifact repairs).
pub fn seal_item(chunk: u32, instruction: Instruction) -> Item {
    let item = Item::new(
        SEAL,
        match chunk {
            // Over the default 200,000 units for a large vocabulary: always carried.
            0 => Units::Fixed(SEAL_START_UNITS),
            _ => Units::Measured {
                fallback: SEAL_UNITS,
                floor: SEAL_CHUNK_UNITS,
            },
        },
        vec![instruction],
    )
    .bar(Bar::Count);
    let item = match chunk {
        0 => item.barrier(Settle::Landed),
        _ => item,
    };
    match item.account(1) {
        Some(weight) => item.about(format!("chunk {chunk} (weight account {weight})")),
        None => item,
    }
}

/// Most payload bytes one Write carries in `format` with one signer (the authority paying),
/// with or without a price (legacy: the two compute-budget instructions; v1: its priority
/// fee). Only sizes matter: the three keys stand for any authority, weight account and
/// program id.
pub fn write_capacity_in(format: Format, priced: bool) -> usize {
    let authority = Pubkey::new_from_array([1; 32]);
    let weight = Pubkey::new_from_array([2; 32]);
    let program = Pubkey::new_from_array([3; 32]);
    let packet = format.packet_len();
    let mut bytes = packet;
    while bytes > 1 {
        let write = ix::write(&program, &weight, &authority, u32::MAX, &vec![0xff; bytes]);
        if transaction_len_in(format, &authority, priced, &[write]) <= packet {
            break;
        }
        bytes -= 1;
    }
    bytes
}

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
                .map(|(offset, len)| {
                    let bytes = &wanted[offset as usize..(offset + len) as usize];
                    let write = ix::write(&program, &weight.address, authority, offset, bytes);
                    write_item(i, len as usize, write)
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
        .map(|instructions| Item::new(CREATE, CREATE_POLICY, instructions));
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
        return vec![seal_item(
            0,
            ix::start_seal(
                program,
                model_address,
                model.weights(),
                &model.authority,
                model.creation,
                model.seal_pass,
            ),
        )];
    }
    // Every later chunk at once: each seal carries every section's weight account and hashes
    // the chunk at the cursor whichever section it is in, so they land in any order. (A model
    // CreateModel accepts fits one transaction's loaded data with all its accounts.)
    (model.seal_cursor..model.total_chunks)
        .map(|chunk| {
            let seal = ix::seal_every_section(
                program,
                model_address,
                model.weights(),
                model.creation,
                model.seal_pass,
                chunk,
            );
            seal_item(chunk, seal)
        })
        .collect()
}

/// The Reopen of the model: every weight account, in section order. A barrier that waits for
/// finality: a late Write or Reopen would change the pass it opens.
pub fn reopen(chain: &OnChain, authority: &Pubkey) -> Item {
    let weights = chain.weight_addresses();
    let reopen = ix::reopen(&chain.program_id, &chain.address, authority, &weights);
    let units = Units::Measured {
        fallback: REOPEN_UNITS,
        floor: 0,
    };
    Item::new(REOPEN, units, vec![reopen]).barrier(Settle::Final)
}

/// The Close of the model, its rent going to `destination`. A barrier that waits for
/// finality: a late transaction would land on the model created again at the address.
pub fn close(chain: &OnChain, authority: &Pubkey, destination: &Pubkey) -> Item {
    let weights = chain.weight_addresses();
    let close = ix::close(
        &chain.program_id,
        &chain.address,
        authority,
        destination,
        &weights,
    );
    let units = Units::Measured {
        fallback: CLOSE_UNITS,
        floor: 0,
    };
    Item::new(CLOSE, units, vec![close]).barrier(Settle::Final)
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::send::format::{transaction_len, v1_message, V1_LOADED_DATA_LIMIT, V1_PACKET_LEN};
    use crate::send::transport::wire_bytes;
    use agave_transaction_view::sanitize::SanitizeConfig;
    use agave_transaction_view::transaction_version::TransactionVersion as ViewVersion;
    use agave_transaction_view::transaction_view::SanitizedTransactionView;
    use solana_hash::Hash;
    use solana_keypair::Keypair;
    use solana_message::{Message, VersionedMessage};
    use solana_signer::Signer;
    use solana_transaction::versioned::VersionedTransaction;

    /// A Write of `bytes` payload bytes by `authority`, as publish plans it.
    fn write(authority: &Pubkey, bytes: usize) -> solana_instruction::Instruction {
        curta_interface::instruction::write(
            &curta_interface::id(),
            &Pubkey::new_unique(),
            authority,
            123_456,
            &vec![0xa5; bytes],
        )
    }

    fn view_config() -> SanitizeConfig {
        SanitizeConfig {
            min_requested_heap_size: 32 * 1024,
            max_requested_heap_size: 256 * 1024,
            max_instructions: 64,
            max_accounts_per_instruction: Some(255),
        }
    }

    #[test]
    fn a_v1_write_of_full_capacity_fills_the_packet_and_decodes_as_agave_decodes_it() {
        let payer = Keypair::new();
        for (priced, fee) in [(false, None), (true, Some(7_777))] {
            let capacity = write_capacity_in(Format::V1, priced);
            // SIMD-0385's layout: version 1 + header 3 + config mask 4 + blockhash 32 + two
            // counts 2 + three keys 96 + the limits 4 + 4 (+ the fee 8) + the instruction's
            // header 4 (program index, account count, u16 data length) + two account indices
            // + the Write's tag, offset and length 9 + one signature 64 = 225 (233) bytes
            // around the payload.
            assert_eq!(capacity, if priced { 4_096 - 233 } else { 4_096 - 225 });
            let ix = write(&payer.pubkey(), capacity);
            let blockhash = Hash::new_unique();
            let message = v1_message(
                &payer.pubkey(),
                std::slice::from_ref(&ix),
                blockhash,
                2_000,
                fee,
            );
            let tx = VersionedTransaction::try_new(message.clone(), &[&payer]).unwrap();
            let wire = wire_bytes(&tx);

            // The length the planner counts is the serialized length, and capacity is the
            // most that fits: one byte more does not.
            assert_eq!(
                transaction_len_in(Format::V1, &payer.pubkey(), priced, &[ix]),
                wire.len()
            );
            assert_eq!(wire.len(), V1_PACKET_LEN);
            let over = write(&payer.pubkey(), capacity + 1);
            assert_eq!(
                transaction_len_in(Format::V1, &payer.pubkey(), priced, &[over]),
                V1_PACKET_LEN + 1
            );

            // The wincode form solana-client sends (sendTransaction, simulateTransaction) is
            // these bytes, and decodes back to the same transaction.
            assert_eq!(wincode::serialize(&tx).unwrap(), wire);
            let decoded: VersionedTransaction = wincode::deserialize(&wire).unwrap();
            assert_eq!(decoded, tx);
            assert!(decoded.verify_with_results().iter().all(|ok| *ok));

            // The message bytes first (version byte 0x81), then the signature, no count.
            assert_eq!(wire[0], solana_message::v1::V1_PREFIX);
            assert_eq!(&wire[wire.len() - 64..], tx.signatures[0].as_ref());
            let decoded_message = solana_message::v1::deserialize(&wire[1..wire.len() - 64])
                .expect("the message decodes");
            assert_eq!(VersionedMessage::V1(decoded_message), message);

            // agave's own parser (what sigverify and banking read from the packet).
            let view = SanitizedTransactionView::try_new_sanitized(&wire[..], &view_config())
                .expect("agave's transaction view accepts it");
            assert!(matches!(view.version(), ViewVersion::V1));
            assert_eq!(view.num_signatures(), 1);
            assert_eq!(view.signatures()[0], tx.signatures[0]);
            assert_eq!(view.recent_blockhash(), &blockhash);
            assert_eq!(view.num_instructions(), 1);
            let config = view.transaction_config().expect("a v1 config");
            assert_eq!(config.compute_unit_limit(), Some(2_000));
            assert_eq!(
                config.loaded_accounts_data_size_limit(),
                Some(V1_LOADED_DATA_LIMIT)
            );
            assert_eq!(config.priority_fee_lamports(), fee);
            assert_eq!(config.requested_heap_size(), None);
            let data = view.instructions_iter().next().unwrap().data;
            assert_eq!(data.len(), 1 + 4 + 4 + capacity);
        }
    }

    #[test]
    fn legacy_lengths_and_capacities_are_unchanged() {
        let payer = Keypair::new();
        assert_eq!(write_capacity_in(Format::Legacy, false), 1_019);
        assert_eq!(write_capacity_in(Format::Legacy, true), 967);
        let ix = write(&payer.pubkey(), 1_019);
        let message = Message::new_with_blockhash(
            std::slice::from_ref(&ix),
            Some(&payer.pubkey()),
            &Hash::new_unique(),
        );
        let tx =
            VersionedTransaction::try_new(VersionedMessage::Legacy(message), &[&payer]).unwrap();
        let wire = wire_bytes(&tx);
        assert_eq!(wire, bincode::serialize(&tx).unwrap());
        assert_eq!(wire, wincode::serialize(&tx).unwrap());
        assert_eq!(wire.len(), PACKET_LEN);
        assert_eq!(
            transaction_len_in(
                Format::Legacy,
                &payer.pubkey(),
                false,
                std::slice::from_ref(&ix)
            ),
            wire.len()
        );
        assert_eq!(transaction_len(&payer.pubkey(), false, &[ix]), wire.len());
    }
}
