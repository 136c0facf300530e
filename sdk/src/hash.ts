/**
 * The weights hash: h = 32 zero bytes; for each section in order, for each 65,536-byte chunk of
 * it (the last chunk of a section ends where the section ends), h = SHA-256(h || chunk).
 *
 * Three engines compute the same chain. In Node, node:crypto's createHash (OpenSSL: one
 * synchronous update of the previous hash and one of the chunk, no copy). In a browser,
 * WebCrypto's SHA-256 (native); it has no incremental API, so each chunk is one digest call over a
 * buffer holding the previous hash and the chunk. Where neither exists (`crypto.subtle` is missing
 * on a page served over plain http from another host than localhost), @noble/hashes.
 */

import { sha256 } from '@noble/hashes/sha2.js'
import { CHUNK_LEN } from './layout.js'

/** The number of chunks the weights hash takes a section of `length` bytes in. */
export const chunkCount = (length: number): number => Math.ceil(length / CHUNK_LEN)

/** The number of chunks in the whole chain over sections of these lengths (the seal cursor's end). */
export const totalChunks = (lengths: readonly number[]): number => lengths.reduce((n, l) => n + chunkCount(l), 0)

export interface HashProgress {
  /** Chunks hashed so far, over the whole chain. */
  chunksDone: number
  chunksTotal: number
  bytesDone: number
  bytesTotal: number
}

/** Which implementation of SHA-256 computes the chain. */
export type HashEngine = 'node' | 'webcrypto' | 'noble'

export interface HashOptions {
  onProgress?: (progress: HashProgress) => void
  /** Choose the engine; by default node:crypto in Node, WebCrypto in browsers, else @noble/hashes. */
  engine?: HashEngine
}

/** One step of the chain: SHA-256(prev || chunk). */
type Step = (prev: Uint8Array, chunk: Uint8Array) => Uint8Array | Promise<Uint8Array>

interface NodeCrypto {
  createHash(algorithm: 'sha256'): { update(data: Uint8Array): { update(data: Uint8Array): { digest(): Uint8Array } } }
}

let nodeCrypto: Promise<NodeCrypto | undefined> | undefined

function loadNodeCrypto(): Promise<NodeCrypto | undefined> {
  const isNode = typeof (globalThis as { process?: { versions?: { node?: string } } }).process?.versions?.node === 'string'
  // The specifier is kept out of bundlers' sight: browsers never take this path.
  const specifier = 'node:crypto'
  nodeCrypto ??= isNode ? import(/* @vite-ignore */ specifier).catch(() => undefined) : Promise.resolve(undefined)
  return nodeCrypto
}

async function stepOf(engine: HashEngine | undefined): Promise<Step> {
  if (engine === undefined || engine === 'node') {
    const crypto = await loadNodeCrypto()
    if (crypto) return (prev, chunk) => new Uint8Array(crypto.createHash('sha256').update(prev).update(chunk).digest())
    if (engine === 'node') throw new Error('node:crypto is not available here')
  }
  const subtle = globalThis.crypto?.subtle
  if ((engine === undefined || engine === 'webcrypto') && subtle) {
    const buffer = new Uint8Array(32 + CHUNK_LEN)
    return async (prev, chunk) => {
      buffer.set(prev, 0)
      buffer.set(chunk, 32)
      // digest copies its input before it returns, so the buffer is refilled for the next step.
      const data = buffer.subarray(0, 32 + chunk.length) as Uint8Array<ArrayBuffer>
      return new Uint8Array(await subtle.digest('SHA-256', data))
    }
  }
  if (engine === 'webcrypto') throw new Error('WebCrypto (crypto.subtle) is not available here')
  return (prev, chunk) => sha256.create().update(prev).update(chunk).digest()
}

/** The chain fed one section at a time, e.g. as sections arrive from accounts. */
export class WeightsHasher {
  private hash: Uint8Array = new Uint8Array(32)
  private readonly step: Promise<Step>

  constructor(options: { engine?: HashEngine } = {}) {
    this.step = stepOf(options.engine)
    // Reported by the first chunk(); not an unhandled rejection before it.
    this.step.catch(() => undefined)
  }

  /** One step: h = SHA-256(h || chunk). The chunk is at most 65,536 bytes. */
  async chunk(chunk: Uint8Array): Promise<void> {
    if (chunk.length > CHUNK_LEN) throw new RangeError(`a chunk is at most ${CHUNK_LEN} bytes, got ${chunk.length}`)
    const step = await this.step
    this.hash = await step(this.hash, chunk)
  }

  /** Chains every chunk of one whole section; `onChunk` after each. */
  async section(section: Uint8Array, onChunk?: (bytes: number) => void): Promise<void> {
    for (let at = 0; at < section.length; at += CHUNK_LEN) {
      const chunk = section.subarray(at, Math.min(at + CHUNK_LEN, section.length))
      await this.chunk(chunk)
      onChunk?.(chunk.length)
    }
  }

  /** The hash so far (a copy). */
  value(): Uint8Array {
    return this.hash.slice()
  }
}

/** The weights hash of the sections, in order: 32 bytes. */
export async function weightsCommitment(sections: readonly Uint8Array[], options: HashOptions = {}): Promise<Uint8Array> {
  const hasher = new WeightsHasher(options)
  const bytesTotal = sections.reduce((n, s) => n + s.length, 0)
  const progress: HashProgress = {
    chunksDone: 0,
    chunksTotal: totalChunks(sections.map((s) => s.length)),
    bytesDone: 0,
    bytesTotal,
  }
  for (const section of sections) {
    await hasher.section(section, (bytes) => {
      progress.chunksDone += 1
      progress.bytesDone += bytes
      options.onProgress?.({ ...progress })
    })
  }
  return hasher.value()
}

/** Lower-case hex of bytes. */
export function toHex(bytes: Uint8Array): string {
  let out = ''
  for (const b of bytes) out += b.toString(16).padStart(2, '0')
  return out
}

/** Bytes of a hex string (even length, 0-9a-fA-F). */
export function fromHex(hex: string): Uint8Array {
  if (hex.length % 2 !== 0 || !/^[0-9a-fA-F]*$/.test(hex)) throw new TypeError(`not a hex string: ${hex}`)
  const out = new Uint8Array(hex.length / 2)
  for (let i = 0; i < out.length; i++) out[i] = parseInt(hex.slice(2 * i, 2 * i + 2), 16)
  return out
}
