/**
 * The embedded WebAssembly module (sdk/wasm: curta-core compiled for wasm32 by
 * scripts/build-wasm): its exports, compiling it, and the errors it reports. The engine
 * (run.ts) and the artifact's reader (artifact.ts) are instances of it.
 */

import { WASM_BASE64 } from './wasm-module.js'

/** The module's exports (sdk/wasm/src/lib.rs). */
export interface Exports {
  memory: WebAssembly.Memory
  curta_error(): number
  curta_error_len(): number
  curta_error_code(): number
  curta_error_code_len(): number
  curta_error_debug(): number
  curta_error_debug_len(): number
  curta_out(): number
  curta_facts(): number
  curta_alloc(len: number): number
  curta_read_artifact(ptr: number, len: number, fileLen: bigint): number
  curta_read_section_zero(ptr: number, len: number): number
  curta_load(ptr: number, len: number): number
  curta_state_len(): number
  curta_logits_offset(): number
  curta_start(state: number, stateLen: number, prompt: number, promptLen: number, steps: number, temperature: number, topP: number, seed: bigint): number
  curta_score(state: number, stateLen: number, tokens: number, len: number): number
  curta_advance(state: number, stateLen: number, budget: bigint): number
  curta_encode(text: number, len: number, out: number, outLen: number): number
  curta_decode(previous: number, token: number, out: number): number
  curta_parse_fixed16(text: number, len: number): bigint
}

let compiled: Promise<WebAssembly.Module> | undefined
let ready: WebAssembly.Module | undefined

/** The decoded base64 bytes of the embedded module. */
export function wasmBytes(): Uint8Array {
  const raw = atob(WASM_BASE64)
  const out = new Uint8Array(raw.length)
  for (let i = 0; i < raw.length; i++) out[i] = raw.charCodeAt(i)
  return out
}

/** The engine's module, compiled once (the bytes are embedded in the package). */
export function engineModule(): Promise<WebAssembly.Module> {
  compiled ??= WebAssembly.compile(wasmBytes() as Uint8Array<ArrayBuffer>).then((m) => (ready ??= m))
  return compiled
}

/**
 * The module now, for the synchronous reader: the one `engineModule()` compiled once it has,
 * else compiled here, synchronously (Node, workers and Chromium's main thread allow it).
 */
export function moduleNow(): WebAssembly.Module {
  ready ??= new WebAssembly.Module(wasmBytes() as Uint8Array<ArrayBuffer>)
  return ready
}

/** A new instance of the module (its own memory). */
export function instantiateNow(): Exports {
  return new WebAssembly.Instance(moduleNow(), {}).exports as unknown as Exports
}

/** The last failed call's error: the Rust variant's name, its Display text and its fields. */
export interface RustError {
  code: string
  message: string
  details: Record<string, string | number | bigint>
}

export function lastError(x: Exports): RustError {
  const text = (ptr: number, len: number) => new TextDecoder().decode(new Uint8Array(x.memory.buffer, ptr, len))
  return {
    code: text(x.curta_error_code(), x.curta_error_code_len()),
    message: text(x.curta_error(), x.curta_error_len()),
    details: debugFields(text(x.curta_error_debug(), x.curta_error_debug_len())),
  }
}

/**
 * The fields of a Rust value's Debug form, `Variant { field_name: value, .. }`, by camelCased
 * name: an integer as a number (a bigint past 2^53), a string unescaped, anything else (a byte
 * array, a nested value) as its Debug text. None for a variant without named fields.
 */
export function debugFields(debug: string): Record<string, string | number | bigint> {
  const out: Record<string, string | number | bigint> = {}
  const open = debug.indexOf(' { ')
  if (open < 0 || !debug.endsWith(' }')) return out
  const body = debug.slice(open + 3, -2)
  let at = 0
  while (at < body.length) {
    const colon = body.indexOf(': ', at)
    if (colon < 0) break
    const name = body.slice(at, colon).replace(/_([a-z])/g, (_, c: string) => c.toUpperCase())
    const [value, end] = debugValue(body, colon + 2)
    out[name] = value
    at = end + 2 // past ", "
  }
  return out
}

/** The value at `start` of a Debug text and where it ends (the next `,` outside brackets). */
function debugValue(text: string, start: number): [string | number | bigint, number] {
  if (text[start] === '"') {
    let s = ''
    let i = start + 1
    for (; i < text.length && text[i] !== '"'; i++) {
      if (text[i] !== '\\') s += text[i]
      else if (text[i + 1] === 'u') {
        const close = text.indexOf('}', i)
        s += String.fromCodePoint(parseInt(text.slice(i + 3, close), 16))
        i = close
      } else s += { n: '\n', r: '\r', t: '\t', '0': '\0' }[text[++i]!] ?? text[i]
    }
    return [s, i + 1]
  }
  let depth = 0
  let i = start
  for (; i < text.length && !(depth === 0 && text[i] === ','); i++) {
    if ('[({'.includes(text[i]!)) depth++
    else if ('])}'.includes(text[i]!)) depth--
  }
  const raw = text.slice(start, i)
  if (!/^\d+$/.test(raw)) return [raw, i]
  const n = BigInt(raw)
  return [n <= BigInt(Number.MAX_SAFE_INTEGER) ? Number(n) : n, i]
}
