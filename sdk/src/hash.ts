/**
 * The weights hash: h = 32 zero bytes; for each section in order, for each 65,536-byte chunk of
 * it (the last chunk of a section ends where the section ends), h = SHA-256(h || chunk).
 *
 * WebCrypto's SHA-256 (native, hardware-accelerated where the CPU has it) is used when the page
 * or runtime has it; it has no incremental API, so each chunk is one digest call over a buffer
 * holding the previous hash and the chunk. Where `crypto.subtle` is missing (a page served over
 * plain http from another host than localhost), @noble/hashes computes the same chain.
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

export interface HashOptions {
  onProgress?: (progress: HashProgress) => void
  /** Use @noble/hashes even where WebCrypto is available. */
  forceFallback?: boolean
}

type Digest = (data: Uint8Array) => Promise<Uint8Array>

function subtleDigest(): Digest | undefined {
  const subtle = globalThis.crypto?.subtle
  if (!subtle) return undefined
  return async (data) => new Uint8Array(await subtle.digest('SHA-256', data as Uint8Array<ArrayBuffer>))
}

const nobleDigest: Digest = async (data) => sha256(data)

/** The chain fed one section at a time, e.g. as sections arrive from accounts. */
export class WeightsHasher {
  private hash: Uint8Array = new Uint8Array(32)
  private readonly buffer = new Uint8Array(32 + CHUNK_LEN)
  private readonly digest: Digest

  constructor(options: { forceFallback?: boolean } = {}) {
    this.digest = (options.forceFallback ? undefined : subtleDigest()) ?? nobleDigest
  }

  /** One step: h = SHA-256(h || chunk). The chunk is at most 65,536 bytes. */
  async chunk(chunk: Uint8Array): Promise<void> {
    if (chunk.length > CHUNK_LEN) throw new RangeError(`a chunk is at most ${CHUNK_LEN} bytes, got ${chunk.length}`)
    this.buffer.set(this.hash, 0)
    this.buffer.set(chunk, 32)
    // digest copies its input before it returns, so the buffer can be refilled for the next step.
    this.hash = await this.digest(this.buffer.subarray(0, 32 + chunk.length))
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
