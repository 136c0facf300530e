/**
 * The Curta program's account layouts (docs/program.md): the 808-byte model account and the
 * 2,048-byte header of a weight account. Decoding checks what the program's `Model::unpack` and
 * `WeightHeader::unpack` check and throws CurtaAccountError naming the field.
 */

import { type Address, getAddressDecoder } from '@solana/kit'
import { CurtaAccountError } from './errors.js'
import { type Config, CONFIG_FIELDS, MAX_SECTIONS, MIN_SECTIONS } from './layout.js'

export const MODEL_LEN = 808
export const WEIGHT_HEADER_LEN = 2048
export const MODEL_MAGIC = 'CURTAMDL'
export const WEIGHT_MAGIC = 'CURTAWSC'
export const LAYOUT_VERSION = 1
/** First seed of the model PDA: [b"model", authority, weights hash]. */
export const MODEL_SEED = 'model'

/** Model account field offsets. */
export const MODEL_FIELD = {
  magic: 0,
  version: 8,
  state: 9,
  bump: 10,
  sectionCount: 11,
  sealPass: 12,
  authority: 16,
  weightsHash: 48,
  runningHash: 80,
  sealCursor: 112,
  totalChunks: 116,
  config: 120,
  sectionLengths: 160,
  weightAccounts: 232,
} as const

/** Weight account header field offsets. */
export const WEIGHT_FIELD = { magic: 0, version: 8, frozen: 9, section: 10, length: 12, model: 16, authority: 48 } as const

export type ModelState = 'Open' | 'Sealing' | 'Mismatch' | 'Sealed'
const STATES: Record<number, ModelState> = { 1: 'Open', 2: 'Sealing', 3: 'Mismatch', 4: 'Sealed' }

export interface ModelAccount {
  state: ModelState
  /** The state byte: 1 Open, 2 Sealing, 3 Mismatch, 4 Sealed. */
  stateCode: number
  bump: number
  sectionCount: number
  /** 0 at creation, +1 at each Reopen. */
  sealPass: number
  authority: Address
  /** The declared weights hash. */
  weightsHash: Uint8Array
  /** Zero while Open, the chain so far while Sealing, the computed hash in Mismatch, the declared hash once Sealed. */
  runningHash: Uint8Array
  /** Index over the whole artifact of the next chunk to hash. */
  sealCursor: number
  totalChunks: number
  /** Written when section zero's header is checked (chunk 0), zeroed by Reopen; meaningful once Sealed. */
  config: Config
  /** One declared length per section. */
  sectionLengths: number[]
  /** The weight account of each section, or null until it is initialized. */
  weightAccounts: (Address | null)[]
  /** Seal progress: chunks hashed of the total, as a fraction in 0..1. */
  sealProgress: { chunksHashed: number; totalChunks: number; fraction: number }
}

export interface WeightHeader {
  frozen: boolean
  section: number
  /** The section's length; the account's data is 2,048 bytes more. */
  length: number
  model: Address
  authority: Address
}

const ascii = (bytes: Uint8Array) => String.fromCharCode(...bytes)
const dv = (b: Uint8Array) => new DataView(b.buffer, b.byteOffset, b.byteLength)
const addressDecoder = getAddressDecoder()
const addressAt = (b: Uint8Array, at: number) => addressDecoder.decode(b.subarray(at, at + 32))
const isZero = (b: Uint8Array) => b.every((x) => x === 0)

function notA(code: string, what: string, field: string, expected: string, found: string, address?: string) {
  return new CurtaAccountError(code, `not ${what}: ${field} is ${found}, expected ${expected}`, { field, expected, found }, address)
}

/**
 * Decodes a model account's data: exactly 808 bytes, the magic CURTAMDL, layout version 1, a
 * known state and a section count of 2 to 18 (anything else is `NotAModel`).
 */
export function decodeModelAccount(data: Uint8Array, address?: string): ModelAccount {
  const f = MODEL_FIELD
  const bad = (field: string, expected: string, found: string) =>
    notA('NotAModel', 'a Curta model account', field, expected, found, address)
  if (data.length !== MODEL_LEN) throw bad('data length', `${MODEL_LEN} bytes`, `${data.length} bytes`)
  const magic = data.subarray(f.magic, f.magic + 8)
  if (ascii(magic) !== MODEL_MAGIC) throw bad('magic (byte 0)', JSON.stringify(MODEL_MAGIC), JSON.stringify(ascii(magic)))
  if (data[f.version] !== LAYOUT_VERSION) throw bad('layout version (byte 8)', `${LAYOUT_VERSION}`, `${data[f.version]}`)
  const stateCode = data[f.state]!
  const state = STATES[stateCode]
  if (state === undefined) throw bad('state (byte 9)', '1 to 4 (Open, Sealing, Mismatch, Sealed)', `${stateCode}`)
  const sectionCount = data[f.sectionCount]!
  if (sectionCount < MIN_SECTIONS || sectionCount > MAX_SECTIONS)
    throw bad('section count (byte 11)', `${MIN_SECTIONS} to ${MAX_SECTIONS}`, `${sectionCount}`)
  const v = dv(data)
  const u32 = (at: number) => v.getUint32(at, true)
  const config = {} as Config
  CONFIG_FIELDS.forEach((key, i) => (config[key] = u32(f.config + 4 * i)))
  const sectionLengths: number[] = []
  const weightAccounts: (Address | null)[] = []
  for (let i = 0; i < sectionCount; i++) {
    sectionLengths.push(u32(f.sectionLengths + 4 * i))
    const at = f.weightAccounts + 32 * i
    weightAccounts.push(isZero(data.subarray(at, at + 32)) ? null : addressAt(data, at))
  }
  const sealCursor = u32(f.sealCursor)
  const totalChunks = u32(f.totalChunks)
  return {
    state,
    stateCode,
    bump: data[f.bump]!,
    sectionCount,
    sealPass: u32(f.sealPass),
    authority: addressAt(data, f.authority),
    weightsHash: data.slice(f.weightsHash, f.weightsHash + 32),
    runningHash: data.slice(f.runningHash, f.runningHash + 32),
    sealCursor,
    totalChunks,
    config,
    sectionLengths,
    weightAccounts,
    sealProgress: {
      chunksHashed: sealCursor,
      totalChunks,
      fraction: state === 'Sealed' ? 1 : totalChunks === 0 ? 0 : Math.min(1, sealCursor / totalChunks),
    },
  }
}

/**
 * Decodes the header of an initialized weight account: the magic CURTAWSC, layout version 1,
 * frozen 0 or 1, and (given the account's data length, `space`) a data length of exactly 2,048 +
 * the section length. `data` is the whole account or at least its first 2,048 bytes.
 */
export function decodeWeightHeader(data: Uint8Array, space: number = data.length, address?: string): WeightHeader {
  const f = WEIGHT_FIELD
  const bad = (field: string, expected: string, found: string) =>
    notA('NotInitialized', 'an initialized Curta weight account', field, expected, found, address)
  if (data.length < WEIGHT_HEADER_LEN) throw bad('data length', `at least ${WEIGHT_HEADER_LEN} bytes`, `${data.length} bytes`)
  const magic = data.subarray(f.magic, f.magic + 8)
  if (ascii(magic) !== WEIGHT_MAGIC) throw bad('magic (byte 0)', JSON.stringify(WEIGHT_MAGIC), JSON.stringify(ascii(magic)))
  if (data[f.version] !== LAYOUT_VERSION) throw bad('layout version (byte 8)', `${LAYOUT_VERSION}`, `${data[f.version]}`)
  if (data[f.frozen]! > 1) throw bad('frozen (byte 9)', '0 or 1', `${data[f.frozen]}`)
  const v = dv(data)
  const length = v.getUint32(f.length, true)
  if (space !== WEIGHT_HEADER_LEN + length)
    throw bad('data length', `${WEIGHT_HEADER_LEN} + the section length ${length} = ${WEIGHT_HEADER_LEN + length} bytes`, `${space} bytes`)
  return {
    frozen: data[f.frozen] === 1,
    section: v.getUint16(f.section, true),
    length,
    model: addressAt(data, f.model),
    authority: addressAt(data, f.authority),
  }
}
