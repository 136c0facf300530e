/**
 * The run account (docs/program.md, "Run account"): its 192-byte header, decoded by the codec
 * Codama renders from idl/curta.json (src/generated/accounts/run.ts), then what the IDL leaves as
 * bytes (`body`): the state buffer of docs/inference.md, whose header, prompt and generated ids are
 * read here, and the text. Also the run's address, its size, and the seed a drawn run samples with.
 */

import { type Address, createAddressWithSeed, getAddressEncoder } from '@solana/kit'
import { sha256 } from '@noble/hashes/sha2.js'
import { CurtaAccountError } from './errors.js'
import { RUN_DISCRIMINATOR, type Run, getRunDecoder } from './generated/index.js'
import { toHex } from './hash.js'
import { type Config, CONFIG_FIELDS } from './layout.js'
import { type SeedSourceName, SEED_SOURCES } from './program.js'

/** The header before the state buffer. Not in the IDL's account size: the body's length varies. */
export const RUN_HEADER_LEN = 192
export const RUN_VERSION = 2
/** Text room per step of the budget: the longest token's bytes. */
export const TEXT_PER_STEP = 128

/** State buffer header field offsets (docs/inference.md, "The state buffer"). */
export const STATE_FIELD = {
  tag: 0,
  promptLength: 8,
  steps: 12,
  generated: 16,
  status: 20,
  mode: 24,
  position: 28,
  stage: 32,
  item: 36,
  temperature: 40,
  topP: 44,
  generator: 48,
  config: 76,
} as const

export const STATE_HEADER_LEN = 128
export const STATE_TAG = 'CURTAS01'

/** The state buffer's length for a model's configuration (curta-core's `state_len`). */
export function stateLength(c: Config): number {
  const kv = (c.dim / c.heads) * c.kvHeads
  return (
    STATE_HEADER_LEN +
    4 * (c.contextLength + 1) + // tokens
    3 * 4 * c.dim + // x, xb, q
    4 * c.hiddenDim + // hb
    4 * c.contextLength + // att
    4 * c.vocabSize + // logits
    4 * 4097 + // sampling's histogram
    2 * 4 * c.layers * c.contextLength * kv // keys and values
  )
}

/** A run account's data length: the header, the state, 128 bytes of text per step. */
export function runAccountLength(c: Config, steps: number): number {
  return RUN_HEADER_LEN + stateLength(c) + TEXT_PER_STEP * steps
}

/** "run-" + hex of the model address's first 8 bytes + "-" + the nonce as 8 hex digits. */
export function runSeed(model: Address, nonce: number): string {
  if (!Number.isInteger(nonce) || nonce < 0 || nonce > 0xffff_ffff) throw new RangeError(`nonce ${nonce} is not a u32`)
  const bytes = addressBytes(model)
  return `run-${toHex(bytes.subarray(0, 8))}-${nonce.toString(16).padStart(8, '0')}`
}

/** The run's address: create_with_seed(runner, runSeed(model, nonce), program id). */
export function runAddress(programId: Address, runner: Address, model: Address, nonce: number): Promise<Address> {
  return createAddressWithSeed({ baseAddress: runner, programAddress: programId, seed: runSeed(model, nonce) })
}

export type RunStatus = 'running' | 'ended' | 'done'
const STATUSES: Record<number, RunStatus> = { 0: 'running', 1: 'ended', 2: 'done' }

/**
 * A run account: the generated `Run` header's fields (their docs are the IDL's) but the magic, the
 * reserved bytes and the body, with the seed source by name, then what the body holds.
 */
export type RunAccount = Omit<Run, 'magic' | 'reserved11' | 'reserved172' | 'body' | 'seedSource' | 'slotHash' | 'encoding'> & {
  seedSource: SeedSourceName
  slotHash: Uint8Array
  /**
   * The text prompt is still being tokenized (header byte 168): the state buffer holds the
   * encoding's working state, which the next Steps continue; `state` then reads as a running run
   * at position 0 with no tokens yet (its `config` all zero), `finished` false.
   */
  encoding: boolean
  /** The state buffer's header. */
  state: {
    status: RunStatus
    /** 0 running, 1 ended by token 1 or 2, 2 steps done. */
    statusCode: number
    position: number
    steps: number
    promptLength: number
    generated: number
    config: Config
  }
  promptTokens: number[]
  generatedTokens: number[]
  /** The text of the generated tokens, `textLength` bytes. */
  text: Uint8Array
  /** Whether the run has ended (status 1 or 2). */
  finished: boolean
}

const ascii = (bytes: ArrayLike<number>) => String.fromCharCode(...Array.from(bytes))
const addressBytes = (a: Address): Uint8Array => new Uint8Array(getAddressEncoder().encode(a))

/**
 * Decodes a run account's data as the program reads it (`RunAccount::new`: magic CURTARUN, layout
 * version 2, 192 + state length + text capacity bytes, text length within the capacity) and its
 * state buffer's header, prompt and generated ids (`NotARun` otherwise, naming the field).
 */
export function decodeRunAccount(data: Uint8Array, address?: string): RunAccount {
  const bad = (field: string, expected: string, found: string) =>
    new CurtaAccountError('NotARun', `not a Curta run account: ${field} is ${found}, expected ${expected}`, { field, expected, found }, address)
  if (data.length < RUN_HEADER_LEN) throw bad('data length', `at least ${RUN_HEADER_LEN} bytes`, `${data.length} bytes`)
  const [magic, want] = [ascii(data.subarray(0, 8)), ascii(RUN_DISCRIMINATOR)]
  if (magic !== want) throw bad('magic (byte 0)', JSON.stringify(want), JSON.stringify(magic))
  if (data[8] !== RUN_VERSION) throw bad('layout version (byte 8)', `${RUN_VERSION}`, `${data[8]}`)
  const seedSource: SeedSourceName | undefined = SEED_SOURCES[data[9]!]
  if (seedSource === undefined) throw bad('seed source (byte 9)', '0 none, 1 drawn or 2 chosen', `${data[9]}`)
  const h = getRunDecoder().decode(data)
  if (RUN_HEADER_LEN + h.stateLength + h.textCapacity !== data.length)
    throw bad('data length', `${RUN_HEADER_LEN} + state length ${h.stateLength} + text capacity ${h.textCapacity}`, `${data.length} bytes`)
  if (h.textLength > h.textCapacity) throw bad('text length (byte 84)', `at most the capacity ${h.textCapacity}`, `${h.textLength}`)
  if (h.stateLength < STATE_HEADER_LEN) throw bad('state length (byte 92)', `at least ${STATE_HEADER_LEN}`, `${h.stateLength}`)
  const { magic: _m, reserved11: _r11, reserved172: _r172, body: _b, ...fields } = h
  const header = { ...fields, seedSource, slotHash: Uint8Array.from(h.slotHash), encoding: h.encoding === 1 }
  const textAt = RUN_HEADER_LEN + h.stateLength
  const text = data.slice(textAt, textAt + h.textLength)
  if (header.encoding) {
    const config = Object.fromEntries(CONFIG_FIELDS.map((key) => [key, 0])) as unknown as Config
    const state = { status: 'running', statusCode: 0, position: 0, steps: h.textCapacity / TEXT_PER_STEP, promptLength: 0, generated: 0, config } as const
    return { ...header, state, promptTokens: [], generatedTokens: [], text, finished: false }
  }
  const { state, promptTokens, generatedTokens } = decodeState(data.subarray(RUN_HEADER_LEN, textAt), bad)
  return { ...header, state, promptTokens, generatedTokens, text, finished: state.statusCode === 1 || state.statusCode === 2 }
}

/** The state buffer's header (docs/inference.md), checked against its own length, and its token ids. */
function decodeState(s: Uint8Array, bad: (field: string, expected: string, found: string) => Error) {
  const v = new DataView(s.buffer, s.byteOffset, s.byteLength)
  const u32 = (at: number) => v.getUint32(at, true)
  const tag = ascii(s.subarray(0, 8))
  if (tag !== STATE_TAG) throw bad(`state tag (byte ${RUN_HEADER_LEN})`, JSON.stringify(STATE_TAG), JSON.stringify(tag))
  const config = {} as Config
  CONFIG_FIELDS.forEach((key, i) => (config[key] = u32(STATE_FIELD.config + 4 * i)))
  const [promptLength, generated, statusCode] = [u32(STATE_FIELD.promptLength), u32(STATE_FIELD.generated), u32(STATE_FIELD.status)]
  const status = STATUSES[statusCode]
  if (status === undefined) throw bad(`state status (byte ${RUN_HEADER_LEN + STATE_FIELD.status})`, '0, 1 or 2', `${statusCode}`)
  const validConfig = CONFIG_FIELDS.every((k) => config[k] > 0) && config.dim % config.heads === 0 && config.heads % config.kvHeads === 0
  if (!validConfig || stateLength(config) !== s.length)
    throw bad('state length (byte 92)', validConfig ? `the state length of its configuration, ${stateLength(config)}` : 'the state of a valid configuration', `${s.length}`)
  if (promptLength + generated > config.contextLength + 1)
    throw bad('state token counts', `prompt + generated within the context ${config.contextLength}`, `${promptLength} + ${generated}`)
  const ids = (from: number, n: number) => Array.from({ length: n }, (_, i) => u32(STATE_HEADER_LEN + 4 * (from + i)))
  const state = { status, statusCode, position: u32(STATE_FIELD.position), steps: u32(STATE_FIELD.steps), promptLength, generated, config }
  return { state, promptTokens: ids(0, promptLength), generatedTokens: ids(promptLength, generated) }
}

/** The longest prefix of UTF-8 `bytes` that ends on a whole character, decoded. */
export function completeUtf8(bytes: Uint8Array): string {
  let end = bytes.length
  // Back over at most 3 continuation bytes to the last lead byte; cut it if its character is incomplete.
  for (let back = 1; back <= Math.min(4, bytes.length); back++) {
    const b = bytes[bytes.length - back]!
    if ((b & 0xc0) === 0x80) continue
    const need = b >= 0xf0 ? 4 : b >= 0xe0 ? 3 : b >= 0xc0 ? 2 : 1
    if (need > back) end = bytes.length - back
    break
  }
  return new TextDecoder().decode(bytes.subarray(0, end))
}

/** SHA-256 ("curta-seed" ‖ runner seed u64 LE ‖ run address ‖ start slot u64 LE ‖ slot hash), first 8 bytes LE; 1 if 0. */
export function drawnSeed(seed: bigint, run: Address, startSlot: bigint, slotHash: Uint8Array): bigint {
  const message = new Uint8Array(10 + 8 + 32 + 8 + 32)
  const v = new DataView(message.buffer)
  message.set(new TextEncoder().encode('curta-seed'), 0)
  v.setBigUint64(10, seed, true)
  message.set(addressBytes(run), 18)
  v.setBigUint64(50, startSlot, true)
  message.set(slotHash, 58)
  const digest = sha256(message)
  const drawn = new DataView(digest.buffer, digest.byteOffset, 8).getBigUint64(0, true)
  return drawn === 0n ? 1n : drawn
}

