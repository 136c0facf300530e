/** The fixed numbers of the CURTAW01 format and the model configuration they derive from. */

import { formatError } from './errors.js'

/** The format's tag, the first 8 bytes of the file. */
export const TAG = 'CURTAW01'
export const HEADER_LEN = 4096
/** A Solana account's 10,485,760 bytes less the 2,048-byte header of a weight account. */
export const MAX_SECTION_LEN = 10_483_712
/** The weights hash takes each section this many bytes at a time. */
export const CHUNK_LEN = 65_536
export const MIN_SECTIONS = 2
export const MAX_SECTIONS = 18
export const SECTION_TABLE_OFFSET = 128
export const SECTION_ENTRY_LEN = 16
export const MATRIX_TABLE_OFFSET = 512
export const DESCRIPTOR_LEN = 24
export const TOKEN_ENTRY_LEN = 16
export const MAX_TOKEN_LEN = 128
export const EXP_TABLE_LEN = 4097
export const SILU_TABLE_LEN = 4097
/** At this many matrix weights or more, every layer gets a section of its own. */
export const MULTI_SECTION_WEIGHTS = 1_000_000

/** Header field offsets (all u32). */
export const FIELD = {
  dim: 8,
  hiddenDim: 12,
  layers: 16,
  heads: 20,
  kvHeads: 24,
  vocabSize: 28,
  contextLength: 32,
  sectionCount: 36,
  norm: 40,
  rotary: 44,
  exp: 48,
  silu: 52,
  tokenEntries: 56,
  sortedIds: 60,
  tokenStrings: 64,
  invSqrtHeadSize: 68,
} as const

/** The model's shape: the first seven fields of the header, in header order. */
export interface Config {
  dim: number
  hiddenDim: number
  layers: number
  heads: number
  kvHeads: number
  vocabSize: number
  contextLength: number
}

/** The seven fields' keys in header order (header bytes 8 to 36, model account bytes 120 to 148). */
export const CONFIG_FIELDS = ['dim', 'hiddenDim', 'layers', 'heads', 'kvHeads', 'vocabSize', 'contextLength'] as const

export const LAYER_MATRICES = [
  'query',
  'key',
  'value',
  'attention output',
  'feed-forward gate',
  'feed-forward down',
  'feed-forward up',
] as const

function checkRange(field: string, value: number, min: number, max: number): void {
  if (value < min || value > max) throw formatError.fieldOutOfRange(field, value, min, max)
}

/**
 * The spec's ranges, and D10: heads divide the dimension, key and value heads divide the heads,
 * the head size is even and at most 64. Throws CurtaFormatError, checking in the Rust reader's order.
 */
export function validateConfig(c: Config): void {
  checkRange('dimension', c.dim, 1, 512)
  checkRange('hidden dimension', c.hiddenDim, 1, 2048)
  checkRange('layers', c.layers, 1, 16)
  checkRange('heads', c.heads, 1, 16)
  if (c.dim % c.heads !== 0) throw formatError.notADivisor('heads', c.heads, 'dimension', c.dim)
  checkRange('key and value heads', c.kvHeads, 1, c.heads)
  if (c.heads % c.kvHeads !== 0) throw formatError.notADivisor('key and value heads', c.kvHeads, 'heads', c.heads)
  checkRange('vocabulary', c.vocabSize, 259, 65_536)
  checkRange('context', c.contextLength, 1, 512)
  const hs = headSize(c)
  if (hs % 2 !== 0 || hs > 64) throw formatError.headSize(hs)
}

/** Dimension divided by heads. */
export const headSize = (c: Config): number => Math.floor(c.dim / c.heads)

/** Dimension times key and value heads divided by heads. */
export const kvDim = (c: Config): number => Math.floor((c.dim * c.kvHeads) / c.heads)

/** 2 + 7 × layers. */
export const matrixCount = (c: Config): number => 2 + 7 * c.layers

/** d × v + L × (2d² + 2dk + 3dh): the embedding counted once. */
export function weightCount(c: Config): number {
  const d = c.dim
  return d * c.vocabSize + c.layers * (2 * d * d + 2 * d * kvDim(c) + 3 * d * c.hiddenDim)
}

/** Two sections under 1,000,000 matrix weights, L + 2 from there on. */
export const sectionCount = (c: Config): number => (weightCount(c) < MULTI_SECTION_WEIGHTS ? 2 : c.layers + 2)

/** The section that holds matrix `index` in this configuration's layout. */
export function matrixSection(c: Config, index: number): number {
  if (sectionCount(c) === 2 || index < 2) return 1
  return 2 + Math.floor((index - 2) / 7)
}

/** [rows, columns] of matrix `index` in the spec's tensor order. */
export function matrixShape(c: Config, index: number): [rows: number, columns: number] {
  const [d, h, k, v] = [c.dim, c.hiddenDim, kvDim(c), c.vocabSize]
  if (index < 2) return [v, d]
  switch ((index - 2) % 7) {
    case 0:
    case 3:
      return [d, d]
    case 1:
    case 2:
      return [k, d]
    case 4:
    case 6:
      return [h, d]
    default:
      return [d, h]
  }
}

/** The spec's name of matrix `index`. */
export function matrixName(index: number): string {
  if (index === 0) return 'token embedding'
  if (index === 1) return 'classifier'
  return LAYER_MATRICES[(index - 2) % 7]!
}

/** Normalization coefficients: (2 × layers + 1) × dimension i32 values. */
export const normLen = (c: Config): number => (2 * c.layers + 1) * c.dim

/** Rotary coefficients: context × head size i32 values (cosine, sine pairs). */
export const rotaryLen = (c: Config): number => c.contextLength * headSize(c)

/** Row length in bytes: columns plus eight, rounded up to a multiple of eight. */
export const rowLength = (columns: number): number => Math.ceil((columns + 8) / 8) * 8

/**
 * round(2^24 / sqrt(head size)) in integers: n is the nearest integer to sqrt(2^48 / h) exactly
 * when (2n - 1)^2 <= 2^50 / h < (2n + 1)^2, so n = ceil(isqrt(floor(2^50 / h)) / 2).
 */
export function invSqrtHeadSize(headSize: number): number {
  const q = (1n << 50n) / BigInt(headSize)
  let s = BigInt(Math.floor(Math.sqrt(Number(q))))
  while (s * s > q) s -= 1n
  while ((s + 1n) * (s + 1n) <= q) s += 1n
  return Number((s + 1n) / 2n)
}
