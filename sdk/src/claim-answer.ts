/**
 * A claim's answer, computed by the engine (curta-core in WebAssembly), and its hash: what
 * AnswerClaim posts and what a dispute run's bytes hash to on chain. Without @solana/kit, so the
 * verifier page's worker bundles only the engine.
 */

import { sha256 } from '@noble/hashes/sha2.js'
import type { Runner } from './run.js'

/**
 * The answer hash: SHA-256 of the generated ids (u32 little-endian each, an end token 1 or 2
 * included) then the text's bytes, as the program hashes a dispute run's own bytes.
 */
export function answerHash(ids: readonly number[], text: Uint8Array): Uint8Array {
  const bytes = new Uint8Array(4 * ids.length + text.length)
  const v = new DataView(bytes.buffer)
  ids.forEach((id, i) => {
    if (!Number.isInteger(id) || id < 0 || id > 0xffff_ffff) throw new RangeError(`id ${i} is ${id}, not a u32`)
    v.setUint32(4 * i, id, true)
  })
  bytes.set(text, 4 * ids.length)
  return sha256(bytes)
}

/** What a claim fixes of its run: the prompt (text bytes or ids), the most tokens, the settings (16 fractional bits). */
export interface ClaimTerms {
  prompt: { text: Uint8Array } | { tokenIds: readonly number[] }
  steps: number
  temperature: number
  topP: number
}

/** A claim's answer as the engine computes it: the generated ids and text bytes, hashed as AnswerClaim posts them. */
export interface ClaimAnswer {
  promptTokens: number[]
  /** The generated ids, an end token 1 or 2 included. */
  ids: number[]
  /** The text's bytes: each generated token's piece, as a run's text region holds them. */
  text: Uint8Array
  tokenCount: number
  /** SHA-256 of the ids (u32 LE each) then the text (`answerHash`). */
  hash: Uint8Array
  seed: bigint
  end: 'end-token' | 'done'
}

/**
 * The answer of a claim's prompt, steps and settings with `seed`, computed by the engine (curta-core
 * in WebAssembly, the code the dispute run steps on chain): a text prompt encoded as a run
 * encodes it (token 1, the space prefix, merges), then the run to its end. The runner must hold
 * the claim's model, and do nothing else meanwhile.
 */
export function claimAnswer(runner: Runner, claim: ClaimTerms, seed: bigint): ClaimAnswer {
  const promptTokens = 'text' in claim.prompt ? runner.encode(claim.prompt.text) : [...claim.prompt.tokenIds]
  runner.start(promptTokens, claim.steps, { temperature: claim.temperature, topP: claim.topP, seed })
  const ids: number[] = []
  const pieces: Uint8Array[] = []
  let previous = promptTokens[promptTokens.length - 1] ?? 1
  for (;;) {
    const p = runner.advance()
    if (p.kind === 'finished') {
      const text = new Uint8Array(pieces.reduce((n, b) => n + b.length, 0))
      pieces.reduce((at, b) => (text.set(b, at), at + b.length), 0)
      return { promptTokens, ids, text, tokenCount: ids.length, hash: answerHash(ids, text), seed, end: p.status }
    }
    if (p.kind !== 'token') continue
    pieces.push(runner.decode(previous, p.id))
    ids.push(p.id)
    previous = p.id
  }
}

