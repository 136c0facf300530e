/**
 * The Curta program's model account and the header of a weight account, decoded by the codecs
 * Codama renders from idl/curta.json (src/generated/accounts/). Before decoding, this checks what
 * the program's `Model::unpack` and `WeightHeader::unpack` check, which a codec does not (the
 * length, the magic, the layout version, the state, the section count, the frozen flag), and
 * throws CurtaAccountError naming the field.
 */

import type { Address } from '@solana/kit'
import { CurtaAccountError } from './errors.js'
import { MODEL_DISCRIMINATOR, ModelState, WEIGHT_DISCRIMINATOR, getModelDecoder, getModelSize, getWeightDecoder } from './generated/index.js'
import { type Config, MAX_SECTIONS, MIN_SECTIONS } from './layout.js'

/** A weight account's header; the section's bytes follow it. Not in the IDL (the account's size varies). */
export const WEIGHT_HEADER_LEN = 2048
export const LAYOUT_VERSION = 1

export type ModelStateName = 'Open' | 'Sealing' | 'Mismatch' | 'Sealed'

export interface ModelAccount {
  state: ModelStateName
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

const ascii = (bytes: Uint8Array | readonly number[]) => String.fromCharCode(...bytes)
const ZERO_ADDRESS = '11111111111111111111111111111111'

/** Checks the magic (bytes 0..8) and the layout version (byte 8) as the program does. */
function checkHead(data: Uint8Array, magic: ArrayLike<number>, bad: (field: string, expected: string, found: string) => Error) {
  const [want, found] = [ascii(Array.from(magic)), ascii(data.subarray(0, 8))]
  if (found !== want) throw bad('magic (byte 0)', JSON.stringify(want), JSON.stringify(found))
  if (data[8] !== LAYOUT_VERSION) throw bad('layout version (byte 8)', `${LAYOUT_VERSION}`, `${data[8]}`)
}

const notA = (code: string, what: string, address?: string) => (field: string, expected: string, found: string) =>
  new CurtaAccountError(code, `not ${what}: ${field} is ${found}, expected ${expected}`, { field, expected, found }, address)

/**
 * Decodes a model account's data: exactly 808 bytes, the magic CURTAMDL, layout version 1, a
 * known state and a section count of 2 to 18 (anything else is `NotAModel`).
 */
export function decodeModelAccount(data: Uint8Array, address?: string): ModelAccount {
  const bad = notA('NotAModel', 'a Curta model account', address)
  if (data.length !== getModelSize()) throw bad('data length', `${getModelSize()} bytes`, `${data.length} bytes`)
  checkHead(data, MODEL_DISCRIMINATOR, bad)
  const stateCode = data[9]!
  if (stateCode < ModelState.Open || stateCode > ModelState.Sealed) throw bad('state (byte 9)', '1 to 4 (Open, Sealing, Mismatch, Sealed)', `${stateCode}`)
  const m = getModelDecoder().decode(data)
  if (m.sectionCount < MIN_SECTIONS || m.sectionCount > MAX_SECTIONS)
    throw bad('section count (byte 11)', `${MIN_SECTIONS} to ${MAX_SECTIONS}`, `${m.sectionCount}`)
  const state = ModelState[m.state] as ModelStateName
  return {
    state,
    stateCode,
    bump: m.bump,
    sectionCount: m.sectionCount,
    sealPass: m.sealPass,
    authority: m.authority,
    weightsHash: Uint8Array.from(m.weightsHash),
    runningHash: Uint8Array.from(m.runningHash),
    sealCursor: m.sealCursor,
    totalChunks: m.totalChunks,
    config: { ...m.config },
    sectionLengths: m.sectionLengths.slice(0, m.sectionCount),
    weightAccounts: m.weightAccounts.slice(0, m.sectionCount).map((a) => (a === ZERO_ADDRESS ? null : a)),
    sealProgress: {
      chunksHashed: m.sealCursor,
      totalChunks: m.totalChunks,
      fraction: state === 'Sealed' ? 1 : m.totalChunks === 0 ? 0 : Math.min(1, m.sealCursor / m.totalChunks),
    },
  }
}

/**
 * Decodes the header of an initialized weight account: the magic CURTAWSC, layout version 1,
 * frozen 0 or 1, and (given the account's data length, `space`) a data length of exactly 2,048 +
 * the section length. `data` is the whole account or at least its first 2,048 bytes.
 */
export function decodeWeightHeader(data: Uint8Array, space: number = data.length, address?: string): WeightHeader {
  const bad = notA('NotInitialized', 'an initialized Curta weight account', address)
  if (data.length < WEIGHT_HEADER_LEN) throw bad('data length', `at least ${WEIGHT_HEADER_LEN} bytes`, `${data.length} bytes`)
  checkHead(data, WEIGHT_DISCRIMINATOR, bad)
  if (data[9]! > 1) throw bad('frozen (byte 9)', '0 or 1', `${data[9]}`)
  const { frozen, section, length, model, authority } = getWeightDecoder().decode(data.subarray(0, WEIGHT_HEADER_LEN))
  if (space !== WEIGHT_HEADER_LEN + length)
    throw bad('data length', `${WEIGHT_HEADER_LEN} + the section length ${length} = ${WEIGHT_HEADER_LEN + length} bytes`, `${space} bytes`)
  return { frozen, section, length, model, authority }
}
