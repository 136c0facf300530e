/**
 * The claim account (docs/program.md, "Claims"; programs/curta-interface/src/claim.rs): its
 * 280-byte header, decoded by the codec Codama renders from idl/curta.json
 * (src/generated/accounts/claim.ts), then the prompt's wire bytes. Also the claim's address, the
 * answer hash, the seed a drawn claim samples with, and when a claim is settled.
 */

import { type Address, createAddressWithSeed, getAddressEncoder } from '@solana/kit'
import { CurtaAccountError } from './errors.js'
import { CLAIM_DISCRIMINATOR, type Claim, getClaimDecoder, getPromptDecoder, getPromptEncoder } from './generated/index.js'
import { toHex } from './hash.js'
import { type RunPrompt, type SeedSourceName, SEED_SOURCES, promptArgs } from './program.js'
import { drawnSeed } from './run-account.js'

/** The header before the prompt's wire bytes. */
export const CLAIM_HEADER_LEN = 280
export const CLAIM_VERSION = 1
/** The shortest challenge window the program takes, in slots (about a minute). */
export const MIN_WINDOW = 150
/** The longest: an epoch (432,000 slots, about two days). */
export const MAX_WINDOW = 432_000

/** Header field offsets (claim.rs's `claim_field`, from the layout the IDL renders). */
export const CLAIM_FIELD = {
  magic: 0,
  version: 8,
  state: 9,
  seedSource: 10,
  nonce: 12,
  model: 16,
  claimer: 48,
  challenger: 80,
  disputeRun: 112,
  steps: 144,
  temperature: 148,
  topP: 152,
  window: 156,
  claimerSeed: 160,
  openSlot: 168,
  answerSlot: 176,
  seedInForce: 184,
  slotHash: 192,
  bond: 224,
  priorityPrice: 232,
  tokenCount: 240,
  promptLength: 244,
  answerHash: 248,
} as const

/** A claim's state (header byte 9): 1 open, 2 answered, 3 challenged, 4 upheld, 5 overturned. */
export type ClaimStateName = 'open' | 'answered' | 'challenged' | 'upheld' | 'overturned'
export const CLAIM_STATES: readonly (ClaimStateName | undefined)[] = [undefined, 'open', 'answered', 'challenged', 'upheld', 'overturned']

const ZERO_ADDRESS = '11111111111111111111111111111111'

/**
 * A claim account: the generated `Claim` header's fields (their docs are the IDL's) but the
 * magic, the reserved byte and the raw prompt, with the state and seed source by name, the
 * prompt read from its wire bytes, and what follows from the header.
 */
export type ClaimAccount = Omit<Claim, 'magic' | 'reserved11' | 'state' | 'seedSource' | 'slotHash' | 'answerHash' | 'prompt' | 'challenger' | 'disputeRun'> & {
  /** The account's address, when the decoder was given it. */
  address?: Address
  state: ClaimStateName
  /** The state byte (1 to 5). */
  stateCode: number
  seedSource: SeedSourceName
  /** Zero (`null`) until challenged. */
  challenger: Address | null
  /** The dispute run Challenge started; `null` until challenged. */
  disputeRun: Address | null
  slotHash: Uint8Array
  answerHash: Uint8Array
  /** The prompt, as OpenClaim carried it: text bytes (tokenized as a run tokenizes them) or token ids. */
  prompt: { text: Uint8Array } | { tokenIds: number[] }
  /** The prompt's wire bytes: the account's data after the header. */
  promptBytes: Uint8Array
  /** Answered (or later): the last slot a challenge may land in, the answer's slot plus the window; 0n before. */
  windowEnd: bigint
}

const ascii = (bytes: ArrayLike<number>) => String.fromCharCode(...Array.from(bytes))
const addressBytes = (a: Address): Uint8Array => new Uint8Array(getAddressEncoder().encode(a))

/** "claim-" + hex of the model address's first 8 bytes + "-" + the nonce as 8 hex digits (31 characters). */
export function claimSeed(model: Address, nonce: number): string {
  if (!Number.isInteger(nonce) || nonce < 0 || nonce > 0xffff_ffff) throw new RangeError(`nonce ${nonce} is not a u32`)
  return `claim-${toHex(addressBytes(model).subarray(0, 8))}-${nonce.toString(16).padStart(8, '0')}`
}

/** The claim's address: create_with_seed(claimer, claimSeed(model, nonce), program id). */
export function claimAddress(programId: Address, claimer: Address, model: Address, nonce: number): Promise<Address> {
  return createAddressWithSeed({ baseAddress: claimer, programAddress: programId, seed: claimSeed(model, nonce) })
}

/** A prompt's wire bytes (what OpenClaim carries and the claim account holds after its header). */
export function promptWireBytes(prompt: RunPrompt): Uint8Array {
  return new Uint8Array(getPromptEncoder().encode(promptArgs(prompt)))
}

/** The claim account's data length for a prompt: the header and the prompt's wire bytes. */
export function claimAccountLength(prompt: RunPrompt): number {
  return CLAIM_HEADER_LEN + promptWireBytes(prompt).length
}

/**
 * A prompt read from its wire bytes exactly (the interface crate's `read_prompt`): a kind byte
 * (0 text, 1 ids), a u32 count, then that many bytes or u32 ids, and nothing after; undefined
 * otherwise.
 */
export function readPromptWire(bytes: Uint8Array): ClaimAccount['prompt'] | undefined {
  if (bytes.length < 5 || bytes[0]! > 1) return undefined
  const n = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength).getUint32(1, true)
  if (bytes.length !== 5 + (bytes[0] === 0 ? n : 4 * n)) return undefined
  const p = getPromptDecoder().decode(bytes)
  return p.__kind === 'Text' ? { text: Uint8Array.from(p.fields[0]) } : { tokenIds: [...p.fields[0]] }
}

/**
 * Decodes a claim account's data as the program reads it (`ClaimView::new`: magic CURTACLM,
 * layout version 1, a state of 1 to 5, a seed source of 0 to 2, the prompt length the rest of
 * the data, the prompt exactly one prompt): `NotAClaim` otherwise, naming the field.
 */
export function decodeClaim(data: Uint8Array, address?: Address): ClaimAccount {
  const bad = (field: string, expected: string, found: string) =>
    new CurtaAccountError('NotAClaim', `not a Curta claim account: ${field} is ${found}, expected ${expected}`, { field, expected, found }, address)
  if (data.length < CLAIM_HEADER_LEN) throw bad('data length', `at least ${CLAIM_HEADER_LEN} bytes`, `${data.length} bytes`)
  const [magic, want] = [ascii(data.subarray(0, 8)), ascii(CLAIM_DISCRIMINATOR)]
  if (magic !== want) throw bad('magic (byte 0)', JSON.stringify(want), JSON.stringify(magic))
  if (data[CLAIM_FIELD.version] !== CLAIM_VERSION) throw bad('layout version (byte 8)', `${CLAIM_VERSION}`, `${data[CLAIM_FIELD.version]}`)
  const state = CLAIM_STATES[data[CLAIM_FIELD.state]!]
  if (state === undefined) throw bad('state (byte 9)', '1 to 5 (open, answered, challenged, upheld, overturned)', `${data[CLAIM_FIELD.state]}`)
  const seedSource: SeedSourceName | undefined = SEED_SOURCES[data[CLAIM_FIELD.seedSource]!]
  if (seedSource === undefined) throw bad('seed source (byte 10)', '0 none, 1 drawn or 2 chosen', `${data[CLAIM_FIELD.seedSource]}`)
  const h = getClaimDecoder().decode(data)
  if (h.promptLength !== data.length - CLAIM_HEADER_LEN)
    throw bad('prompt length (byte 244)', `the data after the ${CLAIM_HEADER_LEN}-byte header, ${data.length - CLAIM_HEADER_LEN}`, `${h.promptLength}`)
  const promptBytes = data.slice(CLAIM_HEADER_LEN)
  const prompt = readPromptWire(promptBytes)
  if (prompt === undefined) throw bad(`prompt (byte ${CLAIM_HEADER_LEN})`, 'one prompt: kind 0 (text) or 1 (ids), a u32 count, that many bytes or ids', `${promptBytes.length} bytes of kind ${promptBytes[0]}`)
  const { magic: _m, reserved11: _r, prompt: _p, state: _s, seedSource: _ss, slotHash, answerHash, challenger, disputeRun, ...fields } = h
  return {
    ...(address === undefined ? {} : { address }),
    ...fields,
    state,
    stateCode: data[CLAIM_FIELD.state]!,
    seedSource,
    challenger: challenger === ZERO_ADDRESS ? null : challenger,
    disputeRun: disputeRun === ZERO_ADDRESS ? null : disputeRun,
    slotHash: Uint8Array.from(slotHash),
    answerHash: Uint8Array.from(answerHash),
    prompt,
    promptBytes,
    windowEnd: state === 'open' ? 0n : h.answerSlot + BigInt(h.window),
  }
}

/** Settled at `slot`: answered and past its window unchallenged, or upheld by its dispute (`ClaimView::settled`). */
export function claimSettled(claim: Pick<ClaimAccount, 'state' | 'answerSlot' | 'window'>, slot: bigint): boolean {
  if (claim.state === 'upheld') return true
  return claim.state === 'answered' && slot > claim.answerSlot + BigInt(claim.window)
}

/**
 * The seed a drawn claim samples with: the run derivation over the claim's address, its open
 * slot and that slot's hash (`drawnSeed(claimer seed, claim address, open slot, slot hash)`).
 */
export function claimDrawnSeed(claimerSeed: bigint, claim: Address, openSlot: bigint, slotHash: Uint8Array): bigint {
  return drawnSeed(claimerSeed, claim, openSlot, slotHash)
}

/**
 * The seed the claim's run samples with, when it is known: none → 0; chosen → the claimer's
 * seed; drawn → the seed AnswerClaim recorded (`undefined` before the answer; `claimDrawnSeed`
 * computes it from the open slot's hash).
 */
export function claimSeedInForce(claim: Pick<ClaimAccount, 'seedSource' | 'claimerSeed' | 'seedInForce'>): bigint | undefined {
  switch (claim.seedSource) {
    case 'none':
      return 0n
    case 'chosen':
      return claim.claimerSeed
    case 'drawn':
      return claim.seedInForce === 0n ? undefined : claim.seedInForce
  }
}
