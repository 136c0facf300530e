/**
 * The bond a claim posts (programs/curta-interface/src/cost.rs: `claim_bond` and what it counts):
 * every transaction a dispute of the claim takes at most, at the base fee and `STEP_UNITS` at the
 * claim's priority price. The program refuses a bond below it (`BondTooLow`), so this is contract:
 * the same integers as the Rust, in BigInt (u64 arithmetic, saturating where the Rust saturates).
 */

import type { Config } from './layout.js'
import { MAX_STEP_BUDGET, type RunPrompt } from './program.js'

/** The compute units a dispute's Step transaction asks. */
export const STEP_UNITS = 1_250_000n
/** A transaction's base fee: lamports per signature. */
export const BASE_FEE = 5_000n
/** Transactions of a dispute besides its steps: Challenge (with the run's creation) and Resolve. */
export const DISPUTE_EXTRA_TRANSACTIONS = 2n

const U64_MAX = (1n << 64n) - 1n
const U32_MAX = 0xffff_ffffn
const HIST_LEN = 4097n
const LAYER_STAGES = 10

/** A stage of a run (curta-core's `Stage`), by name; the layer's stages carry their layer. */
export type StageName =
  | 'embed'
  | 'attentionNorm'
  | 'query'
  | 'key'
  | 'value'
  | 'rotary'
  | 'attention'
  | 'output'
  | 'feedForwardNorm'
  | 'hidden'
  | 'down'
  | 'finalNorm'
  | 'classifier'
  | 'max'
  | 'weigh'
  | 'cut'
  | 'draw'

const LAYER: readonly StageName[] = ['attentionNorm', 'query', 'key', 'value', 'rotary', 'attention', 'output', 'feedForwardNorm', 'hidden', 'down']
const TAIL: readonly StageName[] = ['finalNorm', 'classifier', 'max', 'weigh', 'cut', 'draw']

/** Stage code `code` (`Stage::of`): 0 Embed, 1 + 10l + k the k-th stage of layer l, then the final six. */
export function stageOf(code: number, layers: number): StageName | undefined {
  if (code === 0) return 'embed'
  const c = code - 1
  if (c < layers * LAYER_STAGES) return LAYER[c % LAYER_STAGES]
  return TAIL[c - layers * LAYER_STAGES]
}

/** Items of a stage (`Stage::items`). */
export function stageItems(stage: StageName, c: Config): bigint {
  switch (stage) {
    case 'query':
    case 'output':
    case 'down':
      return BigInt(c.dim)
    case 'key':
    case 'value':
      return BigInt((c.dim * c.kvHeads) / c.heads)
    case 'attention':
      return BigInt(c.heads)
    case 'hidden':
      return BigInt(c.hiddenDim)
    case 'classifier':
    case 'max':
    case 'weigh':
    case 'draw':
      return BigInt(c.vocabSize)
    default:
      return 1n
  }
}

/** One row product of `columns` columns (cost.rs's `row`). */
const row = (columns: bigint) => (55n * columns) / 16n + (columns % 32n) / 2n + 8n * (columns % 4n) + 36n
/** One row of a matrix of `rows` rows: the row and its share of the stage's own work (cost.rs's `matrix`). */
const matrix = (columns: bigint, rows: bigint) => row(columns) + (5n * columns + 300n) / rows

/** The estimated compute units of one item of `stage` at `pos` (cost.rs's `step_cost`; the temperature changes nothing). */
export function stepCost(stage: StageName, c: Config, pos: number | bigint): bigint {
  const [d, h, v] = [BigInt(c.dim), BigInt(c.hiddenDim), BigInt(c.vocabSize)]
  const kv = BigInt((c.dim * c.kvHeads) / c.heads)
  const headSize = BigInt(Math.floor(c.dim / c.heads))
  const positions = BigInt(pos) + 1n
  switch (stage) {
    case 'embed':
      return 12n * d + 200n
    case 'attentionNorm':
    case 'feedForwardNorm':
    case 'finalNorm':
      return 32n * d + 600n
    case 'query':
      return matrix(d, d)
    case 'key':
      return matrix(d, kv)
    case 'value':
      return matrix(d, kv) + 20n
    case 'classifier':
      return matrix(d, v)
    case 'rotary':
      return 40n * (d + kv) + 200n
    case 'attention':
      return headSize === 8n ? positions * 104n + 1_000n : positions * (9n * headSize + 76n) + 1_500n
    case 'hidden':
      return 2n * row(d) + (5n * d + 300n) / h + 60n
    case 'output':
      return matrix(d, d) + 30n
    case 'down':
      return matrix(h, d) + 30n
    case 'max':
      return 10n
    case 'weigh':
      return 28n
    case 'cut':
      return 17n * HIST_LEN + 2_000n
    case 'draw':
      return 31n
  }
}

const ceilDiv = (a: bigint, b: bigint) => (a + b - 1n) / b
const max = (a: bigint, b: bigint) => (a > b ? a : b)
const min = (a: bigint, b: bigint) => (a < b ? a : b)

/**
 * An upper bound of the Step transactions a run of `promptTokens` prompt ids and `steps` tokens
 * takes at the full budget (cost.rs's `run_transactions_bound`): per position its items' units
 * over what a step is sure to carry, plus one a position.
 */
export function runTransactionsBound(c: Config, promptTokens: number, steps: number): bigint {
  const positions = BigInt(promptTokens) + BigInt(steps)
  const last = min(max(positions, 1n) - 1n, U32_MAX)
  let [first, second, largest] = [0n, 0n, 0n]
  for (let code = 0, stage = stageOf(0, c.layers); stage !== undefined; stage = stageOf(++code, c.layers)) {
    const items = stageItems(stage, c)
    first += items * stepCost(stage, c, 0)
    second += items * stepCost(stage, c, 1)
    largest = max(largest, stepCost(stage, c, last))
  }
  const slope = second - first
  const units = positions * first + slope * ((positions * max(positions - 1n, 0n)) / 2n)
  const sure = max(max(BigInt(MAX_STEP_BUDGET) - largest, 0n), 1n)
  return ceilDiv(units, sure) + positions
}

/** cost.rs's `encode_cost`: a lookup's and a scan's estimated units. */
function encodeCosts(textLen: bigint, vocab: number): { lookup: bigint; scan: bigint } {
  const bits = BigInt(33 - Math.clz32(vocab >>> 0))
  return { lookup: 60n * bits + 400n, scan: 18n * textLen + 2_500n }
}

/** An upper bound of the Step transactions that finish encoding a text of `textLen` bytes (cost.rs's `encode_transactions_bound`). */
export function encodeTransactionsBound(textLen: number, vocab: number): bigint {
  const n = BigInt(textLen)
  const { lookup, scan } = encodeCosts(n, vocab)
  const units = (4n * n + 2n) * lookup + n * scan
  const sure = max(max(BigInt(MAX_STEP_BUDGET) - max(lookup, scan), 0n), 1n)
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
export function disputeTransactions(c: Config, prompt: RunPrompt, steps: number): bigint {
  const text = textBytes(prompt)
  const encoding = text === undefined ? 0n : encodeTransactionsBound(text.length, c.vocabSize)
  return runTransactionsBound(c, promptTokensBound(prompt), steps) + encoding + DISPUTE_EXTRA_TRANSACTIONS
}

/**
 * The least bond a claim posts, in lamports (and a challenger posts the same): every
 * transaction of its dispute at the base fee plus `STEP_UNITS` at `priorityPrice` micro-lamports
 * a unit (cost.rs's `claim_bond`, saturating at 2^64 − 1 as the Rust does).
 */
export function claimBond(c: Config, prompt: RunPrompt, steps: number, priorityPrice: bigint | number): bigint {
  const price = BigInt(priorityPrice)
  if (price < 0n || price > U64_MAX) throw new RangeError(`priority price ${price} is not a u64`)
  const priority = ceilDiv(min(price * STEP_UNITS, U64_MAX), 1_000_000n)
  return min(disputeTransactions(c, prompt, steps) * min(BASE_FEE + priority, U64_MAX), U64_MAX)
}
