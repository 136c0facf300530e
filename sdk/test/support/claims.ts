// Claim accounts written by hand for the tests, from the layout of docs/program.md and
// programs/curta-interface/src/claim.rs (CLAIM_LAYOUT): every offset below is written out here,
// not taken from the SDK, so a test that decodes these bytes checks the SDK's reading of them.
import { type Address, getAddressEncoder } from '@solana/kit'
import { createHash } from 'node:crypto'

export interface ClaimFields {
  /** 1 open, 2 answered, 3 challenged, 4 upheld, 5 overturned. */
  state: number
  /** 0 none, 1 drawn, 2 chosen. */
  seedSource: number
  nonce: number
  model: Address
  claimer: Address
  challenger?: Address
  disputeRun?: Address
  steps: number
  temperature: number
  topP: number
  window: number
  claimerSeed: bigint
  openSlot: bigint
  answerSlot: bigint
  seedInForce: bigint
  slotHash?: Uint8Array
  bond: bigint
  priorityPrice: bigint
  tokenCount: number
  answerHash?: Uint8Array
  /** The prompt's wire bytes (`textWire`, `idsWire`). */
  prompt: Uint8Array
}

const enc = getAddressEncoder()

/** A text prompt's wire bytes: kind 0, a u32 length, the bytes. */
export function textWire(text: string | Uint8Array): Uint8Array {
  const bytes = typeof text === 'string' ? new TextEncoder().encode(text) : text
  const out = new Uint8Array(5 + bytes.length)
  new DataView(out.buffer).setUint32(1, bytes.length, true)
  out.set(bytes, 5)
  return out
}

/** An ids prompt's wire bytes: kind 1, a u32 count, the ids (u32 LE each). */
export function idsWire(ids: readonly number[]): Uint8Array {
  const out = new Uint8Array(5 + 4 * ids.length)
  const v = new DataView(out.buffer)
  out[0] = 1
  v.setUint32(1, ids.length, true)
  ids.forEach((id, i) => v.setUint32(5 + 4 * i, id, true))
  return out
}

/** A claim account's data: the 280-byte header at the layout's offsets, then the prompt's wire bytes. */
export function writeClaim(f: ClaimFields): Uint8Array {
  const data = new Uint8Array(280 + f.prompt.length)
  const v = new DataView(data.buffer)
  data.set(new TextEncoder().encode('CURTACLM'), 0)
  data[8] = 1 // layout version
  data[9] = f.state
  data[10] = f.seedSource
  // byte 11 reserved
  v.setUint32(12, f.nonce, true)
  data.set(enc.encode(f.model), 16)
  data.set(enc.encode(f.claimer), 48)
  if (f.challenger) data.set(enc.encode(f.challenger), 80)
  if (f.disputeRun) data.set(enc.encode(f.disputeRun), 112)
  v.setUint32(144, f.steps, true)
  v.setUint32(148, f.temperature, true)
  v.setUint32(152, f.topP, true)
  v.setUint32(156, f.window, true)
  v.setBigUint64(160, f.claimerSeed, true)
  v.setBigUint64(168, f.openSlot, true)
  v.setBigUint64(176, f.answerSlot, true)
  v.setBigUint64(184, f.seedInForce, true)
  if (f.slotHash) data.set(f.slotHash, 192)
  v.setBigUint64(224, f.bond, true)
  v.setBigUint64(232, f.priorityPrice, true)
  v.setUint32(240, f.tokenCount, true)
  v.setUint32(244, f.prompt.length, true)
  if (f.answerHash) data.set(f.answerHash, 248)
  data.set(f.prompt, 280)
  return data
}

/** SHA-256 of the ids (u32 LE each) then the text, by node:crypto. */
export function nodeAnswerHash(ids: readonly number[], text: Uint8Array): Uint8Array {
  const h = createHash('sha256')
  for (const id of ids) {
    const b = Buffer.alloc(4)
    b.writeUInt32LE(id)
    h.update(b)
  }
  return new Uint8Array(h.update(text).digest())
}

/** The SlotHashes sysvar's data: a u64 count, then (slot u64, hash) pairs, newest first. */
export function slotHashesData(entries: [bigint, Uint8Array][]): Uint8Array {
  const data = new Uint8Array(8 + 40 * entries.length)
  const v = new DataView(data.buffer)
  v.setBigUint64(0, BigInt(entries.length), true)
  entries.forEach(([slot, hash], i) => {
    v.setBigUint64(8 + 40 * i, slot, true)
    data.set(hash, 16 + 40 * i)
  })
  return data
}
