//! The cost model of a run: the estimated compute units of a step's items (`step_cost`) and of a
//! text prompt's encoding (`encode_cost`), which the program's StartRun and Step count against
//! their budgets. A run's state after each step depends on it, so it is contract: a client
//! simulates the steps with the same functions.

use curta_core::infer::state::HIST_LEN;
use curta_core::infer::{EncodeItem, Stage};
use curta_core::Config;

/// The estimated compute units of one item of `stage` at `pos` on the SBF binary, in a run of
/// temperature `temperature` (greedy sampling costs less): what a Step's budget counts
/// (`Run::advance_by`, through [`step_costs`]). Per stage a cost per multiply-accumulate and a
/// cost per item, calibrated by scripts/bench-cu (docs/program.md, "Runs"); every estimate is at
/// or above what the VM measured.
pub fn step_cost(stage: Stage, c: &Config, pos: u32, temperature: u32) -> u64 {
    let (d, h, v) = (c.dim as u64, c.hidden_dim as u64, c.vocab_size as u64);
    // The temperature no longer changes an estimate: sampling is split into its stages,
    // which a greedy run (Max alone) and a sampled run share.
    let _ = temperature;
    let kv = c.kv_dim() as u64;
    let positions = pos as u64 + 1;
    match stage {
        Stage::Embed => 12 * d + 200,
        Stage::AttentionNorm(_) | Stage::FeedForwardNorm(_) | Stage::FinalNorm => 32 * d + 600,
        Stage::Query(_) => matrix(d, d),
        Stage::Key(_) => matrix(d, kv),
        // The row, then its word into the caches' offset binary.
        Stage::Value(_) => matrix(d, kv) + 20,
        Stage::Classifier => matrix(d, v),
        Stage::Rotary(_) => 40 * (d + kv) + 200,
        // A head of eight values takes its own position loop (`kernels::sbf::scores8`).
        Stage::Attention(_) if c.head_size() == 8 => positions * ATTENTION_PER_POSITION_8 + 1_000,
        Stage::Attention(_) => {
            positions * (ATTENTION_PER_VALUE * c.head_size() as u64 + ATTENTION_PER_POSITION)
                + 1_500
        }
        // Two rows (gate and up) and the gate's SiLU.
        Stage::Hidden(_) => 2 * row(d) + (5 * d + 300) / h + 60,
        // The row, then the residual: x_i + the product, saturated.
        Stage::Output(_) => matrix(d, d) + 30,
        Stage::Down(_) => matrix(h, d) + 30,
        // Sampling, an id per item (the cut one item); the stages past Max only with a
        // temperature.
        Stage::Max => MAX_PER_ID,
        Stage::Weigh => WEIGH_PER_ID,
        Stage::Cut => CUT_PER_INDEX * HIST_LEN as u64 + 2_000,
        Stage::Draw => DRAW_PER_ID,
    }
}

/// One row of a matrix of `rows` rows and `columns` columns: [`row`], and the stage's own
/// work (widening the input, about 5 units a value, and 300 more) shared by its rows.
fn matrix(columns: u64, rows: u64) -> u64 {
    row(columns) + (5 * columns + 300) / rows
}

/// One row product of `columns` columns (`curta_core::infer::kernels::sbf`): three rows a turn
/// at 10 units per column and 5 per 32 columns, 55/16 units a column with the group's share;
/// the columns past a multiple of 32 half a unit more each (turns of four), those past a
/// multiple of 4 eight more each; and 36 for the row itself (its scale, rounding, saturation
/// and store).
fn row(columns: u64) -> u64 {
    55 * columns / 16 + columns % 32 / 2 + 8 * (columns % 4) + 36
}

/// One head's attention, per position: per value of the head (a score and a value term) and
/// per position (the score's rounding, the exponential, the weight); a head of eight values
/// per position in all.
const ATTENTION_PER_VALUE: u64 = 9;
const ATTENTION_PER_POSITION: u64 = 76;
const ATTENTION_PER_POSITION_8: u64 = 104;
/// Sampling, per id of the vocabulary: the highest logit, the weighing, the walk to the drawn
/// token; the cut per index of the exponential table (at worst every index).
const MAX_PER_ID: u64 = 10;
const WEIGH_PER_ID: u64 = 28;
const DRAW_PER_ID: u64 = 31;
const CUT_PER_INDEX: u64 = 17;

/// The cost function of a run whose temperature is `temperature` (state byte 40): what the
/// program passes to `Run::advance_by`, and what a client passes to simulate the steps.
pub fn step_costs(temperature: u32) -> impl Fn(Stage, &Config, u32) -> u64 + Copy {
    move |stage, c, pos| step_cost(stage, c, pos, temperature)
}

/// The estimated compute units of one item of a text prompt's encoding (curta-core's
/// `Encoding`) on the SBF binary, for a tokenizer of `vocab` tokens: what StartRun's
/// [`START_ENCODE_BUDGET`] and, while a run is encoding, a Step's budget count. A lookup is a
/// binary search (one probe per bit of the vocabulary and one more, each a sorted id, a token's
/// entry and a comparison of strings); a known item is a memo or cache hit; a round is a scan
/// of the kept candidates (per pair: an id, and a key where there is a candidate) and its merge
/// (three `sol_memmove_` of the words past it). Upper bounds of what the VM measured on the
/// 733-byte English text and llama2.c's 32,000-token tokenizer (test
/// `runs::encode_cost_covers_what_the_vm_measures`): a lone round took 17 units a pair (every
/// pair with a candidate, the worst case) and about 3,000 of its own with the step's checks, a
/// step's mix about 8 a pair; lookups 600 to 1,000. So a step of the full budget stays under
/// 1,200,000 units whatever the text.
pub fn encode_cost(item: EncodeItem, vocab: u32) -> u64 {
    match item {
        EncodeItem::Lookup => LOOKUP_PER_PROBE * (33 - vocab.leading_zeros()) as u64 + LOOKUP_BASE,
        EncodeItem::Known => KNOWN,
        EncodeItem::Scan(pairs) => SCAN_PER_PAIR * pairs as u64 + SCAN_BASE,
    }
}

const LOOKUP_PER_PROBE: u64 = 60;
const LOOKUP_BASE: u64 = 400;
const KNOWN: u64 = 90;
const SCAN_PER_PAIR: u64 = 18;
const SCAN_BASE: u64 = 2_500;

/// The encoding StartRun does itself, in [`encode_cost`]'s units: with the checks, the run
/// address's derivation and `Run::start` a StartRun stays under 1,200,000 units; what is left
/// of the encoding is continued by the first Steps.
pub const START_ENCODE_BUDGET: u64 = 1_000_000;

/// [`encode_cost`] as `Encoding::advance` takes it.
pub fn encode_costs() -> impl Fn(EncodeItem, u32) -> u64 + Copy {
    encode_cost
}

/// The compute units a dispute's Step transaction asks (its compute-budget limit): a step's
/// budget, [`crate::run::MAX_STEP_BUDGET`], and its fixed work fit under it.
pub const STEP_UNITS: u64 = 1_250_000;
/// A transaction's base fee: lamports per signature (one, a step's sender).
pub const BASE_FEE: u64 = 5_000;
/// Transactions of a dispute besides its steps: Challenge (with the run's creation) and Resolve.
pub const DISPUTE_EXTRA_TRANSACTIONS: u64 = 2;

/// An upper bound of the Step transactions a run of `prompt_tokens` prompt ids and `steps`
/// tokens of a model of configuration `c` at `temperature` takes at the full budget
/// ([`crate::run::MAX_STEP_BUDGET`]). A step stops only when its next item would not fit, or
/// at a generated token: so every step carries more than the budget less the largest item, but
/// the last before each token and the run's last.
pub fn run_transactions_bound(c: &Config, prompt_tokens: u32, steps: u32, temperature: u32) -> u64 {
    let units = RunUnits::of(c, temperature);
    let (forced, generated) = (prompt_tokens.max(1) as u64 - 1, steps as u64);
    let positions = forced + generated;
    // Σ (pos + 1) over the positions: attention's growth.
    let attended = positions * (positions + 1) / 2;
    let total = positions * units.layers + attended * units.per_position + generated * units.end;
    let largest = units
        .largest
        .max(positions * units.head_per_position + units.head);
    let sure = (crate::run::MAX_STEP_BUDGET as u64)
        .saturating_sub(largest)
        .max(1);
    total.div_ceil(sure) + generated + 1
}

/// A token's estimated units ([`step_cost`] summed over every item of every stage) in closed
/// form: the positions' share without attention, attention's per position attended, the end's
/// (the final normalization, the classifier and sampling) for a generated token. Evaluated as
/// a formula, not by calling [`step_cost`] for each stage: the program's OpenClaim reads it, and
/// a second call site of the cost model made the step loop compile to up to 3,000 more units
/// a step on SBF (measured). Test `cost_tests` checks it equals the stage-by-stage sum.
pub struct RunUnits {
    /// Embed and every layer's items but attention's per-position part.
    pub layers: u64,
    /// Every layer's attention heads, per position attended (pos + 1).
    pub per_position: u64,
    /// The end's items (a generated token only).
    pub end: u64,
    /// The largest item of any stage but attention.
    pub largest: u64,
    /// One attention head's item: `head + head_per_position × (pos + 1)`.
    pub head: u64,
    pub head_per_position: u64,
}

impl RunUnits {
    pub fn of(c: &Config, temperature: u32) -> RunUnits {
        let (d, h, v) = (c.dim as u64, c.hidden_dim as u64, c.vocab_size as u64);
        let (kv, heads, l) = (c.kv_dim() as u64, c.heads as u64, c.layers as u64);
        let (head, head_per_position) = match c.head_size() {
            8 => (1_000, ATTENTION_PER_POSITION_8),
            hs => (
                1_500,
                ATTENTION_PER_VALUE * hs as u64 + ATTENTION_PER_POSITION,
            ),
        };
        let norm = 32 * d + 600;
        // A matrix stage's rows: each row's product and its share of the stage's own work.
        let rows =
            |n: u64, columns: u64, extra: u64| n * (row(columns) + extra + (5 * columns + 300) / n);
        let hidden_item = 2 * row(d) + (5 * d + 300) / h + 60;
        let layer = 2 * norm
            + rows(d, d, 0)
            + rows(kv, d, 0)
            + rows(kv, d, 20)
            + 40 * (d + kv)
            + 200
            + heads * head
            + rows(d, d, 30)
            + h * hidden_item
            + rows(d, h, 30);
        let sampled = match temperature {
            0 => 0,
            _ => (WEIGH_PER_ID + DRAW_PER_ID) * v + CUT_PER_INDEX * HIST_LEN as u64 + 2_000,
        };
        let cut = match temperature {
            0 => 0,
            _ => CUT_PER_INDEX * HIST_LEN as u64 + 2_000,
        };
        let largest = [
            12 * d + 200,
            norm,
            40 * (d + kv) + 200,
            hidden_item,
            row(d) + (5 * d + 300) / kv + 20,
            row(d) + (5 * d + 300) / d + 30,
            row(h) + (5 * h + 300) / d + 30,
            row(d) + (5 * d + 300) / v,
            cut,
        ];
        RunUnits {
            layers: 12 * d + 200 + l * layer,
            per_position: l * heads * head_per_position,
            end: norm + rows(v, d, 0) + MAX_PER_ID * v + sampled,
            largest: largest.into_iter().max().unwrap_or(0),
            head,
            head_per_position,
        }
    }
}

/// An upper bound of the Step transactions that finish encoding a text of `text_len` bytes for
/// a tokenizer of `vocab` tokens: at most a lookup per character, per initial pair and two per
/// merge (4 x len + 2 in all), and a scan of at most `len` pairs per merge (at most `len`
/// merges), over what a step is sure to carry, plus one.
pub fn encode_transactions_bound(text_len: u32, vocab: u32) -> u64 {
    let n = text_len as u64;
    let lookup = encode_cost(EncodeItem::Lookup, vocab);
    let scan = encode_cost(EncodeItem::Scan(text_len), vocab);
    let units = (4 * n + 2) * lookup + n * scan;
    let sure = (crate::run::MAX_STEP_BUDGET as u64)
        .saturating_sub(lookup.max(scan))
        .max(1);
    units.div_ceil(sure) + 1
}

/// The most prompt ids a prompt can make: its ids, or for a text one per byte, the start token
/// and the space prefix.
pub fn prompt_tokens_bound(prompt: &crate::instruction::Prompt) -> u32 {
    match prompt {
        crate::instruction::Prompt::Text(text) => (text.len() as u32).saturating_add(2),
        crate::instruction::Prompt::Tokens(ids) => ids.len() as u32,
    }
}

/// The transactions a claim's dispute takes at most: its steps (and a text prompt's encoding)
/// and [`DISPUTE_EXTRA_TRANSACTIONS`].
pub fn dispute_transactions(
    c: &Config,
    prompt: &crate::instruction::Prompt,
    steps: u32,
    temperature: u32,
) -> u64 {
    let encoding = match prompt {
        crate::instruction::Prompt::Text(text) => {
            encode_transactions_bound(text.len() as u32, c.vocab_size)
        }
        crate::instruction::Prompt::Tokens(_) => 0,
    };
    run_transactions_bound(c, prompt_tokens_bound(prompt), steps, temperature)
        + encoding
        + DISPUTE_EXTRA_TRANSACTIONS
}

/// The highest priority price a claim may record, in micro-lamports per compute unit (10,000
/// lamports a unit, far above any fee market): it keeps [`claim_bond`] within a u64 for the
/// largest model the format allows.
pub const MAX_PRIORITY_PRICE: u64 = 10_000_000_000;

/// The least bond a claim posts (and a challenger posts the same): every transaction of its
/// dispute ([`dispute_transactions`]) at the base fee and [`STEP_UNITS`] at `priority_price`
/// micro-lamports a unit, so that whoever is right is paid back for stepping the dispute.
/// `None` above [`MAX_PRIORITY_PRICE`]. (Plain multiplications: the SBF route has no 128-bit
/// multiply, which a checked one needs.)
pub fn claim_bond(
    c: &Config,
    prompt: &crate::instruction::Prompt,
    steps: u32,
    temperature: u32,
    priority_price: u64,
) -> Option<u64> {
    if priority_price > MAX_PRIORITY_PRICE {
        return None;
    }
    let priority = (priority_price * STEP_UNITS).div_ceil(1_000_000);
    Some(dispute_transactions(c, prompt, steps, temperature) * (BASE_FEE + priority))
}

#[cfg(test)]
#[path = "cost_tests.rs"]
mod tests;
