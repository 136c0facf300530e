/**
 * The tokenizer stored in section zero: token entries (score key, length, offset), the ids sorted
 * by their bytes, and the token strings. Encoding follows llama2.c: the opening token, a space
 * prefix, one lookup per UTF-8 character (bytes as tokens byte + 3 when a character has no token),
 * then repeated merging of the adjacent pair whose merged token has the highest score key.
 */

import type { SectionZero } from './artifact.js'

export const BOS = 1
export const EOS = 2
/** Token `byte + 3` is the single byte `byte`. */
export const BYTE_TOKEN_BASE = 3

export interface EncodeOptions {
  /** Open with token 1 (default true). */
  bos?: boolean
  /** End with token 2 (default false). */
  eos?: boolean
}

function compareBytes(a: Uint8Array, b: Uint8Array): number {
  const n = Math.min(a.length, b.length)
  for (let i = 0; i < n; i++) {
    if (a[i] !== b[i]) return a[i]! - b[i]!
  }
  return a.length - b.length
}

/** `<0xXX>` as a byte, or undefined. */
function hexByteToken(bytes: Uint8Array): number | undefined {
  if (bytes.length !== 6) return undefined
  const text = String.fromCharCode(...bytes)
  const m = /^<0x([0-9A-Fa-f]{2})>$/.exec(text)
  return m ? parseInt(m[1]!, 16) : undefined
}

const utf8 = new TextEncoder()

export class Tokenizer {
  readonly vocabSize: number
  private readonly zero: SectionZero

  constructor(zero: SectionZero) {
    this.zero = zero
    this.vocabSize = zero.config.vocabSize
  }

  /**
   * The stored bytes of token `id` (a view of section zero); no bytes for an entry outside the
   * token strings or over 128 bytes (docs/format.md, D13), as curta-core reads it on chain.
   */
  tokenBytes(id: number): Uint8Array {
    return this.zero.tokenText(id)
  }

  /** The score key of token `id`: higher is a higher merge score. */
  scoreKey(id: number): number {
    return this.zero.tokenEntry(id).scoreKey
  }

  /**
   * The bytes token `id` adds to the output: none for tokens 1 and 2, the one byte of a `<0xXX>`
   * token, otherwise its stored bytes. After token 1 (`prev === 1`), llama2.c drops a leading
   * space.
   */
  decode(id: number, prev?: number): Uint8Array {
    if (id === BOS || id === EOS) return new Uint8Array(0)
    let bytes = this.tokenBytes(id)
    const byte = hexByteToken(bytes)
    if (byte !== undefined) return Uint8Array.of(byte)
    if (prev === BOS && bytes[0] === 0x20) bytes = bytes.subarray(1)
    return bytes
  }

  /** The text of a run of tokens (each decoded after the one before it), as UTF-8. */
  decodeText(ids: readonly number[]): string {
    const parts = ids.map((id, i) => this.decode(id, i > 0 ? ids[i - 1] : undefined))
    const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0))
    let at = 0
    for (const p of parts) {
      out.set(p, at)
      at += p.length
    }
    return new TextDecoder().decode(out)
  }

  /** The id whose bytes are `piece` (the lowest such id), by binary search over the sorted ids. */
  lookup(piece: Uint8Array): number | undefined {
    let lo = 0
    let hi = this.vocabSize
    while (lo < hi) {
      const mid = (lo + hi) >>> 1
      if (compareBytes(this.tokenBytes(this.zero.sortedId(mid)), piece) < 0) lo = mid + 1
      else hi = mid
    }
    if (lo === this.vocabSize) return undefined
    const id = this.zero.sortedId(lo)
    return compareBytes(this.tokenBytes(id), piece) === 0 ? id : undefined
  }

  /** Token ids of `text` as llama2.c's `encode` makes them. */
  encode(text: string | Uint8Array, options: EncodeOptions = {}): number[] {
    const bytes = typeof text === 'string' ? utf8.encode(text) : text
    const tokens: number[] = []
    if (options.bos ?? true) tokens.push(BOS)
    if (bytes.length > 0) tokens.push(this.lookup(Uint8Array.of(0x20)) ?? BYTE_TOKEN_BASE + 0x20)
    // One lookup per UTF-8 character: a byte that is not a continuation byte starts a character,
    // which takes up to three continuation bytes after it.
    for (let start = 0; start < bytes.length; ) {
      let end = start + 1
      while (end < bytes.length && (bytes[end]! & 0xc0) === 0x80 && end - start < 4) end++
      const char = bytes.subarray(start, end)
      const id = this.lookup(char)
      if (id !== undefined) tokens.push(id)
      else for (const b of char) tokens.push(b + BYTE_TOKEN_BASE)
      start = end
    }
    for (;;) {
      let best: { key: number; id: number; at: number } | undefined
      for (let i = 0; i + 1 < tokens.length; i++) {
        const a = this.tokenBytes(tokens[i]!)
        const b = this.tokenBytes(tokens[i + 1]!)
        const merged = new Uint8Array(a.length + b.length)
        merged.set(a)
        merged.set(b, a.length)
        const id = this.lookup(merged)
        if (id === undefined) continue
        const key = this.scoreKey(id)
        if (best === undefined || key > best.key) best = { key, id, at: i }
      }
      if (best === undefined) break
      tokens.splice(best.at, 2, best.id)
    }
    if (options.eos ?? false) tokens.push(EOS)
    return tokens
  }
}
