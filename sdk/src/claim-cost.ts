/**
 * The bond a claim posts (programs/curta-interface/src/cost.rs: `claim_bond` and what it counts):
 * every transaction a dispute of the claim takes at most, at the base fee and `STEP_UNITS` at the
 * claim's priority price. The program refuses a bond below it (`BondTooLow`), so this is contract:
 * the same integers as the Rust, in BigInt. Only the closed form the program evaluates
 * (`RunUnits`) is mirrored here, not the per-stage step cost model it sums.
 */

import type { Config } from './layout.js'
import { MAX_STEP_BUDGET, type RunPrompt } from './program.js'

/** The compute units a dispute's Step transaction asks. */
export const STEP_UNITS = 1_250_000n
/** A transaction's base fee: lamports per signature. */
export const BASE_FEE = 5_000n
/** Transactions of a dispute besides its steps: Challenge (with the run's creation) and Resolve. */
export const DISPUTE_EXTRA_TRANSACTIONS = 2n
/** The highest priority price a claim may record, micro-lamports a unit (OpenClaim refuses more: `InvalidPriorityPrice`). */
export const MAX_PRIORITY_PRICE = 10_000_000_000n

/** curta-core's `HIST_LEN`: the indices of the exponential table the cut walks. */
const HIST_LEN = 4097n

/**
 * A token's estimated units in closed form (cost.rs's `RunUnits`): `layers` (embed and every
 * layer's items but attention's per-position part), `perPosition` (every layer's heads, per
 * position attended, pos + 1), `end` (a generated token's final norm, classifier and sampling;
 * weigh, cut and draw only with a temperature), `largest` (the largest item of any stage but
 * attention), and one attention head's item, `head + headPerPosition × (pos + 1)`.
 */
export interface RunUnits {
  layers: bigint
  perPosition: bigint
  end: bigint
  largest: bigint
  head: bigint
  headPerPosition: bigint
}

/** One row product of `columns` columns (cost.rs's `row`). */
const row = (columns: bigint) => (55n * columns) / 16n + (columns % 32n) / 2n + 8n * (columns % 4n) + 36n

/** cost.rs's `RunUnits::of`: a run of configuration `c` at `temperature` (0 greedy). */
export function runUnits(c: Config, temperature: number): RunUnits {
  const [d, h, v] = [BigInt(c.dim), BigInt(c.hiddenDim), BigInt(c.vocabSize)]
  const [heads, l] = [BigInt(c.heads), BigInt(c.layers)]
  const kv = (d * BigInt(c.kvHeads)) / heads
  const headSize = d / heads
  const [head, headPerPosition] = headSize === 8n ? [1_000n, 104n] : [1_500n, 9n * headSize + 76n]
  const norm = 32n * d + 600n
  // A matrix stage's rows: each row's product and its share of the stage's own work.
  const rows = (n: bigint, columns: bigint, extra: bigint) => n * (row(columns) + extra + (5n * columns + 300n) / n)
  const hiddenItem = 2n * row(d) + (5n * d + 300n) / h + 60n
  const layer =
    2n * norm + rows(d, d, 0n) + rows(kv, d, 0n) + rows(kv, d, 20n) + 40n * (d + kv) + 200n + heads * head + rows(d, d, 30n) + h * hiddenItem + rows(d, h, 30n)
  const cut = temperature === 0 ? 0n : 17n * HIST_LEN + 2_000n
  const sampled = temperature === 0 ? 0n : (28n + 31n) * v + cut
  const items = [
    12n * d + 200n,
    norm,
    40n * (d + kv) + 200n,
    hiddenItem,
    row(d) + (5n * d + 300n) / kv + 20n,
    row(d) + (5n * d + 300n) / d + 30n,
    row(h) + (5n * h + 300n) / d + 30n,
    row(d) + (5n * d + 300n) / v,
    cut,
  ]
  return {
    layers: 12n * d + 200n + l * layer,
    perPosition: l * heads * headPerPosition,
    end: norm + rows(v, d, 0n) + 10n * v + sampled,
    largest: items.reduce(max),
    head,
    headPerPosition,
  }
}

const ceilDiv = (a: bigint, b: bigint) => (a + b - 1n) / b
const max = (a: bigint, b: bigint) => (a > b ? a : b)

/**
 * An upper bound of the Step transactions a run of `promptTokens` prompt ids and `steps` tokens
 * at `temperature` takes at the full budget (cost.rs's `run_transactions_bound`): the prompt's
 * positions but the last do the layers only, each generated one the end too; every step carries
 * more than the budget less the largest item, but the last before each token and the run's last.
 */
export function runTransactionsBound(c: Config, promptTokens: number, steps: number, temperature: number): bigint {
  const u = runUnits(c, temperature)
  const [forced, generated] = [BigInt(Math.max(promptTokens, 1) - 1), BigInt(steps)]
  const positions = forced + generated
  const attended = (positions * (positions + 1n)) / 2n
  const total = positions * u.layers + attended * u.perPosition + generated * u.end
  const largest = max(u.largest, positions * u.headPerPosition + u.head)
  const sure = max(BigInt(MAX_STEP_BUDGET) - largest, 1n)
  return ceilDiv(total, sure) + generated + 1n
}

/** An upper bound of the Step transactions that finish encoding a text of `textLen` bytes (cost.rs's `encode_transactions_bound`). */
export function encodeTransactionsBound(textLen: number, vocab: number): bigint {
  const n = BigInt(textLen)
  const lookup = 60n * BigInt(33 - Math.clz32(vocab >>> 0)) + 400n
  const scan = 18n * n + 2_500n
  const units = (4n * n + 2n) * lookup + n * scan
  const sure = max(BigInt(MAX_STEP_BUDGET) - max(lookup, scan), 1n)
  return ceilDiv(units, sure) + 1n
}

const textBytes = (prompt: RunPrompt): Uint8Array | undefined =>
  'text' in prompt ? (typeof prompt.text === 'string' ? new TextEncoder().encode(prompt.text) : prompt.text) : undefined

/** The most prompt ids a prompt can make (cost.rs's `prompt_tokens_bound`): its ids, or a text's bytes plus 2. */
export function promptTokensBound(prompt: RunPrompt): number {
  const text = textBytes(prompt)
  return text === undefined ? (prompt as { tokenIds: readonly number[] }).tokenIds.length : Math.min(text.length + 2, 0xffff_ffff)
}

/** The transactions a claim's dispute takes at most: its steps, a text prompt's encoding, Challenge and Resolve. */
export function disputeTransactions(c: Config, prompt: RunPrompt, steps: number, temperature: number): bigint {
  const text = textBytes(prompt)
  const encoding = text === undefined ? 0n : encodeTransactionsBound(text.length, c.vocabSize)
  return runTransactionsBound(c, promptTokensBound(prompt), steps, temperature) + encoding + DISPUTE_EXTRA_TRANSACTIONS
}

/**
 * The least bond a claim posts, in lamports (and a challenger posts the same): every
 * transaction of its dispute at the base fee plus `STEP_UNITS` at `priorityPrice` micro-lamports
 * a unit (cost.rs's `claim_bond`). Throws a RangeError for a price below 0 or above
 * `MAX_PRIORITY_PRICE`, where the Rust returns None and OpenClaim refuses the claim.
 */
export function claimBond(c: Config, prompt: RunPrompt, steps: number, temperature: number, priorityPrice: bigint | number): bigint {
  const price = BigInt(priorityPrice)
  if (price < 0n || price > MAX_PRIORITY_PRICE)
    throw new RangeError(`priority price ${price} is not 0 to ${MAX_PRIORITY_PRICE} micro-lamports a unit (cost::MAX_PRIORITY_PRICE; OpenClaim refuses it: InvalidPriorityPrice)`)
  const priority = ceilDiv(price * STEP_UNITS, 1_000_000n)
  return disputeTransactions(c, prompt, steps, temperature) * (BASE_FEE + priority)
}
