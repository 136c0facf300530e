// The verifier page's form fields and messages, shared by its cards (main.ts, claim.ts): reading
// an RPC URL and an address typed into a field, and what went wrong asking the node, in the
// page's words.

import { SOLANA_ERROR__RPC__TRANSPORT_HTTP_ERROR, address, getBase58Encoder, isAddress, isSolanaError, type Address } from '@solana/kit'

export const $ = <T extends HTMLElement = HTMLElement>(id: string) => document.getElementById(id) as T
export const fmt = (n: number) => n.toLocaleString('en-US')
/** A field of the chain form that holds no usable value: the message names it and what it expects. */
export class FieldError extends Error {
  constructor(readonly input: HTMLInputElement, message: string) {
    super(message)
  }
}

const quote = (v: string) => JSON.stringify(v.length > 48 ? `${v.slice(0, 45)}…` : v)
const NOT_BASE58 = /[^1-9A-HJ-NP-Za-km-z]/g
const RPC_EXPECTED = 'expected the http:// or https:// address of a Solana JSON-RPC node, such as http://127.0.0.1:8899'

export function rpcField(): string {
  const input = $<HTMLInputElement>('rpc-url')
  const v = input.value.trim()
  if (v === '') throw new FieldError(input, `RPC URL is empty: ${RPC_EXPECTED}`)
  let url: URL
  try {
    url = new URL(v)
  } catch {
    throw new FieldError(input, `RPC URL ${quote(v)} is not a URL: ${RPC_EXPECTED}`)
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:')
    throw new FieldError(input, `RPC URL ${quote(v)} is not http:// or https://: ${RPC_EXPECTED}`)
  return v
}

/** A Solana address typed into a field: 32 bytes written in base58 (32 to 44 characters). */
export function addressField(id: string, label: string, what: string): Address {
  const input = $<HTMLInputElement>(id)
  const v = input.value.trim()
  const expected = `expected ${what}, 32 to 44 base58 characters`
  if (v === '') throw new FieldError(input, `${label} is empty: ${expected}`)
  const bad = [...new Set(v.match(NOT_BASE58))]
  if (bad.length > 0)
    throw new FieldError(
      input,
      `${label} ${quote(v)} has ${bad.length === 1 ? 'a character' : 'characters'} that base58 does not use (${bad.map((c) => JSON.stringify(c)).join(', ')}): ${expected}`,
    )
  if (v.length < 32 || v.length > 44) throw new FieldError(input, `${label} ${quote(v)} is ${fmt(v.length)} characters long: ${expected}`)
  if (!isAddress(v))
    throw new FieldError(input, `${label} ${quote(v)} is ${getBase58Encoder().encode(v).length} bytes, not 32: ${expected}`)
  return address(v)
}

/** What went wrong asking the RPC node, in the page's words; a Curta error as it is. */
export function chainMessage(e: unknown, rpcUrl: string): string {
  // fetch's own failure (Chromium: "Failed to fetch", Firefox: "NetworkError ...", Safari:
  // "Load failed"): no HTTP answer at all, which is also what a node without CORS headers gives.
  if (e instanceof TypeError && /fetch|network|load failed/i.test(e.message))
    return `No answer from the RPC URL ${rpcUrl}: expected a Solana JSON-RPC node there (is it running, and does it accept requests from other origins, as solana-test-validator and public RPC nodes do?)`
  if (isSolanaError(e, SOLANA_ERROR__RPC__TRANSPORT_HTTP_ERROR)) {
    const { statusCode, message } = e.context
    return `The RPC URL ${rpcUrl} answered HTTP ${statusCode}${message ? ` (${message})` : ''}: expected a Solana JSON-RPC node there`
  }
  if (e instanceof SyntaxError) return `The RPC URL ${rpcUrl} answered with something other than JSON: expected a Solana JSON-RPC node there`
  if (isSolanaError(e)) {
    const server = (e.context as { __serverMessage?: unknown }).__serverMessage
    return `The RPC node at ${rpcUrl} answered with an error: ${typeof server === 'string' ? server : `Solana error #${e.context.__code}`}`
  }
  return e instanceof Error ? `${e.name}: ${e.message}` : String(e)
}


/** A 16-fractional-bit setting as a decimal (65,536 is 1). */
export const fixed16 = (v: number) => `${(v / 65_536).toFixed(4).replace(/\.?0+$/, '')} (${fmt(v)} / 65,536)`
