/**
 * Running a model: generation and teacher-forced scoring with curta-core's integer inference,
 * compiled to WebAssembly from the Rust crate (sdk/wasm, built by scripts/build-wasm). There is
 * no TypeScript forward pass: every token, every state byte comes from `curta_core::infer`, the
 * code `client run` and the program run, so a model gives the same tokens here as there
 * (docs/inference.md). JavaScript only moves bytes in and out of the module's memory, turns
 * the decimal settings into their integers (by the core's own parser, in the module) and, for
 * scoring, reads the integer logits to report the negative log-likelihood in floating point.
 */

import type { Artifact } from './artifact.js'
import type { VerifyResult } from './chain.js'
import { CurtaError } from './errors.js'
import { toHex } from './hash.js'
import { engineModule, lastError as rustError, type Exports } from './wasm.js'

/** A run that cannot start or continue: bad settings, a prompt too long, a damaged state. */
export class CurtaRunError extends CurtaError {
  override name = 'CurtaRunError'
}

export { engineModule, wasmBytes as engineBytes } from './wasm.js'

const U64_MAX = (1n << 64n) - 1n

/**
 * The warm-up of `Runner.create`: at most this long, in turns of at most 250,000
 * multiply-accumulates (a token of stories260K is 259,000, of the stories15M shape 15 million).
 */
const WARM_UP_MS = 60
const WARM_UP_BUDGET = 250_000n

/** What one advance reached (docs/inference.md, "Stages"). */
export type Progress =
  | { kind: 'working' }
  | { kind: 'token'; pos: number; id: number }
  | { kind: 'scored'; pos: number; argmax: number }
  | { kind: 'finished'; status: 'end-token' | 'done' }

/** A generated token, as soon as the engine has it. */
export interface GeneratedToken {
  /** The token's id. */
  id: number
  /** Its position in the sequence (the prompt's tokens are 0 to P − 1). */
  pos: number
  /** 0 for the first generated token. */
  index: number
  /** The bytes it adds to the text (none for tokens 1 and 2). */
  bytes: Uint8Array
  /**
   * Those bytes decoded as UTF-8 in a stream: a character split over tokens appears whole, with
   * the token that completes it; invalid bytes as U+FFFD. An incomplete character at the very
   * end appears (as U+FFFD) only in the generation's `text`.
   */
  text: string
}

export interface GenerateOptions {
  /** Text (encoded as `client run --prompt` does: token 1, the space prefix, merges) or token ids. Default: token 1 alone. */
  prompt?: string | readonly number[]
  /** The most tokens to generate (default 256, or what the context leaves). */
  steps?: number
  /**
   * 0 (greedy) to 16, a decimal string, read as `round(value × 2^16)` on its digits by the core's
   * parser (default 1); a number is first written with 12 decimals.
   */
  temperature?: number | string
  /** Above 0, at most 1 (default 0.9). */
  topP?: number | string
  /** The generator's seed, 1 to 2^64 − 1 (needed when sampling; default: from the clock, reported in the result). */
  seed?: bigint | number
  /** Stops the run between tokens. */
  signal?: AbortSignal
  /** Called with each token as it is produced (besides the iterator). */
  onToken?: (token: GeneratedToken) => void
  /** Give the event loop a turn after this many milliseconds of work (default 20; 0: after every token). */
  yieldMs?: number
}

/** The whole of a generation (the JSON of `client run --output json`, plus how it ended). */
export interface Generation {
  promptTokens: number[]
  /** The generated ids (the last may be 1 or 2). */
  tokens: number[]
  text: string
  tokensPerSecond: number
  /** Time in the engine (advancing, decoding), without the consumer's time between tokens. */
  seconds: number
  seed: bigint
  temperature: number
  topP: number
  /** `end-token`: the model produced token 1 or 2; `done`: the steps were made; `stopped`: the signal stopped it. */
  end: 'end-token' | 'done' | 'stopped'
}

/** Teacher-forced scoring (the JSON of `client perplexity --output json`). */
export interface Scores {
  tokens: number
  /** The highest logit's id at each predicted position (n − 1 of them). */
  argmax: number[]
  /** −ln p(next token) at each predicted position, from the integer logits in f64 (a measurement). */
  nll: number[]
  meanNll: number
  perplexity: number
}

const tick: () => Promise<void> =
  typeof setImmediate === 'function'
    ? () => new Promise((r) => setImmediate(r))
    : () =>
        new Promise((r) => {
          const c = new MessageChannel()
          c.port1.onmessage = () => {
            c.port1.close()
            r()
          }
          c.port2.postMessage(0)
        })

const now = () => (typeof performance !== 'undefined' ? performance.now() : Date.now())

/**
 * A model loaded into its own instance of the engine: the artifact's bytes copied once into the
 * module's memory (and checked there by curta-core's `decode`), and one state buffer. A runner
 * does one run at a time.
 */
export class Runner {
  /** The run's state buffer, in bytes (`state_len` of the model's configuration). */
  readonly stateLength: number
  /** The model's vocabulary and context, from the artifact's header. */
  readonly vocabSize: number
  readonly contextLength: number
  private readonly x: Exports
  private readonly state: number
  private scratch = { ptr: 0, cap: 0 }
  private busy = false

  private constructor(x: Exports, vocab: number, context: number) {
    this.x = x
    this.vocabSize = vocab
    this.contextLength = context
    this.stateLength = x.curta_state_len()
    this.state = this.alloc(this.stateLength)
  }

  /**
   * A runner over an artifact's bytes: a decoded `Artifact` (its `bytes`), the whole file, or
   * its sections in order (a weight account's data after its header, each). The module decodes
   * them again with curta-core (CurtaRunError with the Rust reader's code when they are not an
   * artifact). `options.module` is the engine's module compiled elsewhere (`engineModule()` in
   * another thread, handed over with `postMessage`: a page compiles it once, when it loads, and
   * gives it to each worker); by default the module `engineModule()` compiles in this thread.
   */
  static async create(source: Artifact | Uint8Array | readonly Uint8Array[], options: { module?: WebAssembly.Module } = {}): Promise<Runner> {
    let file: Uint8Array
    if (source instanceof Uint8Array) file = source
    else if (Array.isArray(source)) {
      const parts = source as readonly Uint8Array[]
      file = new Uint8Array(parts.reduce((n, s) => n + s.length, 0))
      let at = 0
      for (const s of parts) {
        file.set(s, at)
        at += s.length
      }
    } else file = (source as Artifact | undefined)?.bytes as Uint8Array
    if (!(file instanceof Uint8Array))
      throw new TypeError('Runner.create takes a decoded Artifact, the file as a Uint8Array, or its sections (Uint8Arrays)')
    for (const part of Array.isArray(source) ? (source as readonly unknown[]) : [])
      if (!(part instanceof Uint8Array)) throw new TypeError('Runner.create: every section must be a Uint8Array')
    if (options.module !== undefined && !(options.module instanceof WebAssembly.Module))
      throw new TypeError('Runner.create: options.module must be a WebAssembly.Module (engineModule())')
    const instance = await WebAssembly.instantiate(options.module ?? (await engineModule()), {})
    const x = instance.exports as unknown as Exports
    const ptr = x.curta_alloc(file.length)
    if (ptr === 0) throw new CurtaRunError('OutOfMemory', `the engine cannot hold a ${file.length}-byte artifact`, { bytes: file.length })
    new Uint8Array(x.memory.buffer, ptr, file.length).set(file)
    const fail = x.curta_load(ptr, file.length)
    if (fail < 0) throw lastError(x)
    const cfg = new DataView(x.memory.buffer, ptr, 36)
    const runner = new Runner(x, cfg.getUint32(28, true), cfg.getUint32(32, true))
    runner.warmUp()
    await tick()
    return runner
  }

  /**
   * A throwaway greedy run from token 1 until its tokens come at the optimized code's speed,
   * then the state zeroed as a new runner's is. V8 runs a fresh module's functions in its
   * baseline code (Liftoff: stories260K's tokens at about 0.26 ms against 0.06 ms) until they
   * have run for a while, and its optimized code took 10 to 15 ms more to arrive: a first
   * stories260K run (25 ms warm) took 41 to 51 ms without this (docs/inference.md, "In the
   * browser"). Tokens are timed from the second on (the first includes compiling the functions
   * it meets); the warm-up ends at the first token that took under half of the second's time,
   * or after `WARM_UP_MS`. Best effort: a model whose run cannot start from token 1 skips it.
   */
  private warmUp(): void {
    const deadline = now() + WARM_UP_MS
    try {
      this.start([1], Math.max(1, this.contextLength - 1), { temperature: 0, topP: 65_536, seed: 0n })
      let [previous, tokens, reference] = [1, 0, Infinity]
      let started = now()
      while (now() < deadline) {
        const p = this.advance(WARM_UP_BUDGET)
        if (p.kind === 'finished') break
        if (p.kind !== 'token') continue
        this.decode(previous, p.id)
        const took = now() - started
        if (tokens === 1) reference = took
        else if (tokens > 1 && took < reference / 2) break
        ;[previous, tokens, started] = [p.id, tokens + 1, now()]
      }
    } catch {
      // Nothing to warm up with; the first run tiers the engine up itself.
    }
    this.bytes(this.state, this.stateLength).fill(0)
  }

  /**
   * A runner over a sealed model that `verifyModel` checked against the chain, called with
   * `keepSections: true`: refused unless the weight accounts chained to the declared hash.
   */
  static async fromVerified(result: VerifyResult): Promise<Runner> {
    if (!result.ok)
      throw new CurtaRunError('NotVerified', `the weight accounts of ${result.address} chain to ${toHex(result.computedHash)}, not to the declared ${toHex(result.declaredHash)}: refusing to run them`, {
        model: result.address,
      })
    if (!result.sections)
      throw new CurtaRunError('NoSections', 'verifyModel was called without keepSections: true, so it kept no bytes to run', {})
    return Runner.create(result.sections)
  }

  private alloc(len: number): number {
    const ptr = this.x.curta_alloc(len)
    if (ptr === 0) throw new CurtaRunError('OutOfMemory', `the engine cannot allocate ${len} bytes`, { bytes: len })
    return ptr
  }

  /** Room for `len` bytes, 4-aligned, reused between calls. */
  private room(len: number): number {
    if (len > this.scratch.cap) {
      const cap = Math.max(len, 2 * this.scratch.cap, 4096)
      this.scratch = { ptr: this.alloc(cap), cap }
    }
    return this.scratch.ptr
  }

  private bytes(ptr: number, len: number): Uint8Array {
    return new Uint8Array(this.x.memory.buffer, ptr, len)
  }

  private check(code: number): number {
    if (code < 0) throw lastError(this.x)
    return code
  }

  /**
   * curta-core's `encode` (as `client run --prompt`, and as a run on chain tokenizes a text
   * prompt): token 1, then the text's tokens. The text as a string or as its bytes.
   */
  encode(text: string | Uint8Array): number[] {
    const utf8 = typeof text === 'string' ? new TextEncoder().encode(text) : text
    const ids = utf8.length + 2
    const at = this.room(4 * ids + utf8.length)
    this.bytes(at + 4 * ids, utf8.length).set(utf8)
    const n = this.check(this.x.curta_encode(at + 4 * ids, utf8.length, at, ids))
    return Array.from(new Uint32Array(this.x.memory.buffer, at, n))
  }

  /** curta-core's `decode`: the bytes `token` adds to the text after `previous`. */
  decode(previous: number, token: number): Uint8Array {
    checkId('token', token)
    checkId('previous token', previous)
    const at = this.room(128)
    const n = this.check(this.x.curta_decode(previous >>> 0, token >>> 0, at))
    return this.bytes(at, n).slice()
  }

  /** A decimal setting with 16 fractional bits, by curta-core's `parse_fixed16` (`--temperature 0.8` is 52,429). */
  parseFixed16(value: number | string, what: string): number {
    const text = typeof value === 'number' ? numberText(value, what) : value.trim()
    const utf8 = new TextEncoder().encode(text)
    const at = this.room(utf8.length)
    this.bytes(at, utf8.length).set(utf8)
    const v = this.x.curta_parse_fixed16(at, utf8.length)
    if (v < 0n)
      throw new CurtaRunError('NotADecimal', `${what} ${JSON.stringify(String(value))} is not a decimal number (digits, a point and at most 12 more digits, below 65,536)`, {
        what,
        value: String(value),
      })
    return Number(v)
  }

  private setTokens(tokens: readonly number[]): number {
    tokens.forEach((t, i) => checkId(`token ${i}`, t))
    const at = this.room(4 * tokens.length)
    new Uint32Array(this.x.memory.buffer, at, tokens.length).set(tokens)
    return at
  }

  /**
   * `Run::start` in this runner's state: the low-level entry (tests, benchmarks); `generate`
   * is the usual one. Temperature and top-p have 16 fractional bits here.
   */
  start(prompt: readonly number[], steps: number, settings: { temperature: number; topP: number; seed: bigint }): void {
    checkU32('steps', steps)
    checkU32('temperature', settings.temperature)
    checkU32('top-p', settings.topP)
    const seed = BigInt(settings.seed)
    if (seed < 0n || seed > U64_MAX) throw new CurtaRunError('SeedRange', `seed ${seed} is outside 0 to 2^64 − 1`, { seed: String(seed) })
    const at = this.setTokens(prompt)
    this.check(this.x.curta_start(this.state, this.stateLength, at, prompt.length, steps, settings.temperature, settings.topP, BigInt.asIntN(64, seed)))
  }

  /** `Run::score` in this runner's state (2 tokens up to the context). */
  startScore(tokens: readonly number[]): void {
    const at = this.setTokens(tokens)
    this.check(this.x.curta_score(this.state, this.stateLength, at, tokens.length))
  }

  /**
   * `Run::advance` on the state: whole items of at most `budget` multiply-accumulates (at least
   * one), returning at each token. Without a budget, to the next token.
   */
  advance(budget?: bigint | number): Progress {
    const b = budget === undefined ? U64_MAX : BigInt(budget)
    if (b < 0n || b > U64_MAX) throw new RangeError(`budget ${b} is outside 0 to 2^64 − 1`)
    const kind = this.check(this.x.curta_advance(this.state, this.stateLength, BigInt.asIntN(64, b)))
    const out = new Uint32Array(this.x.memory.buffer, this.x.curta_out(), 4)
    switch (kind) {
      case 0:
        return { kind: 'working' }
      case 1:
        return { kind: 'token', pos: out[0]!, id: out[1]! }
      case 2:
        return { kind: 'scored', pos: out[0]!, argmax: out[1]! }
      default:
        return { kind: 'finished', status: out[2] === 1 ? 'end-token' : 'done' }
    }
  }

  /** A copy of the run's state buffer (docs/inference.md, "The state buffer"). */
  stateBytes(): Uint8Array {
    return this.bytes(this.state, this.stateLength).slice()
  }

  /** Replaces the state buffer's bytes (a saved run to resume; `advance` checks them). */
  setState(bytes: Uint8Array): void {
    if (bytes.length !== this.stateLength)
      throw new CurtaRunError('StateLength', `a state of ${bytes.length} bytes, this model's run needs ${this.stateLength}`, { len: bytes.length, needed: this.stateLength })
    this.bytes(this.state, this.stateLength).set(bytes)
  }

  /** The last classifier's logits (16 fractional bits), a copy. */
  logits(): Int32Array {
    return new Int32Array(this.x.memory.buffer, this.state + this.x.curta_logits_offset(), this.vocabSize).slice()
  }

  private settings(options: GenerateOptions): { temperature: number; topP: number; seed: bigint } {
    const temperature = this.parseFixed16(options.temperature ?? '1', 'temperature')
    const topP = this.parseFixed16(options.topP ?? '0.9', 'top-p')
    let seed: bigint
    if (options.seed === undefined) seed = temperature === 0 ? 0n : BigInt(Date.now()) * 1_000_003n + 1n
    else if (typeof options.seed === 'number' && !Number.isSafeInteger(options.seed))
      throw new CurtaRunError('SeedRange', `seed ${options.seed} is not an integer (pass a bigint above 2^53)`, { seed: String(options.seed) })
    else seed = BigInt(options.seed)
    return { temperature, topP, seed }
  }

  /**
   * Generates after the prompt, yielding each token as it is produced; the iterator's return
   * value is the whole `Generation`. Refused before any work (CurtaRunError, naming the value):
   * a prompt past the context, steps of 0 or past it, a token outside the vocabulary, a
   * temperature or top-p out of range or not a decimal, seed 0 when sampling.
   */
  async *generate(options: GenerateOptions = {}): AsyncGenerator<GeneratedToken, Generation, undefined> {
    if (this.busy) throw new CurtaRunError('Busy', 'this runner is already running (one run at a time: make another Runner)', {})
    const prompt = typeof options.prompt === 'string' ? this.encode(options.prompt) : [...(options.prompt ?? [1])]
    const settings = this.settings(options)
    const steps = options.steps ?? Math.max(1, Math.min(256, this.contextLength + 1 - prompt.length))
    this.start(prompt, steps, settings)
    this.busy = true
    try {
      const yieldMs = options.yieldMs ?? 20
      const text = new TextDecoder('utf-8')
      const tokens: number[] = []
      let out = ''
      let previous = prompt[prompt.length - 1]!
      let end: Generation['end'] = 'done'
      const started = now()
      let lastYield = started
      let spent = 0
      for (;;) {
        if (options.signal?.aborted) {
          end = 'stopped'
          break
        }
        const t0 = now()
        const p = this.advance()
        if (p.kind === 'finished') {
          end = p.status
          break
        }
        if (p.kind !== 'token') continue
        const bytes = this.decode(previous, p.id)
        spent += now() - t0
        previous = p.id
        const piece = text.decode(bytes, { stream: true })
        out += piece
        const token: GeneratedToken = { id: p.id, pos: p.pos, index: tokens.length, bytes, text: piece }
        tokens.push(p.id)
        options.onToken?.(token)
        yield token
        if (now() - lastYield >= yieldMs) {
          await tick()
          lastYield = now()
        }
      }
      out += text.decode()
      const seconds = spent / 1000
      return {
        promptTokens: prompt,
        tokens,
        text: out,
        seconds,
        tokensPerSecond: tokens.length / Math.max(seconds, 1e-9),
        seed: settings.seed,
        temperature: settings.temperature,
        topP: settings.topP,
        end,
      }
    } finally {
      this.busy = false
    }
  }

  /** `generate` to its end: the whole generation (each token also goes to `onToken`). */
  async run(options: GenerateOptions = {}): Promise<Generation> {
    const it = this.generate(options)
    for (;;) {
      const r = await it.next()
      if (r.done) return r.value
    }
  }

  /**
   * Teacher forcing over a text (encoded with token 1 first) or token ids, as `client
   * perplexity`: the argmax and −ln p(next token) at every position; a sequence longer than
   * the context is scored in windows of the context, each after the first starting at the
   * previous one's last token, so every token but the first is predicted once.
   */
  score(input: string | readonly number[]): Scores {
    if (this.busy) throw new CurtaRunError('Busy', 'this runner is already running (one run at a time: make another Runner)', {})
    const tokens = typeof input === 'string' ? this.encode(input) : [...input]
    if (tokens.length < 2)
      throw new CurtaRunError('ScoreTooShort', `teacher forcing needs at least 2 tokens, got ${tokens.length}`, { tokens: tokens.length })
    tokens.forEach((t, i) => {
      checkId(`token ${i}`, t)
      if (t >= this.vocabSize)
        throw new CurtaRunError('TokenOutOfRange', `token ${i} of the input is ${t}, but the vocabulary has ${this.vocabSize} tokens (0 to ${this.vocabSize - 1})`, {
          index: i,
          id: t,
          vocab: this.vocabSize,
        })
    })
    const argmax: number[] = []
    const nll: number[] = []
    const window = Math.max(2, this.contextLength)
    for (let start = 0; start + 1 < tokens.length; ) {
      const end = Math.min(start + window, tokens.length)
      const span = tokens.slice(start, end)
      this.startScore(span)
      for (;;) {
        const p = this.advance()
        if (p.kind === 'finished') break
        if (p.kind !== 'scored') continue
        argmax.push(p.argmax)
        nll.push(negLogLikelihood(this.logits(), span[p.pos + 1]!))
      }
      start = end - 1
    }
    const meanNll = nll.reduce((a, b) => a + b, 0) / nll.length
    return { tokens: tokens.length, argmax, nll, meanNll, perplexity: Math.exp(meanNll) }
  }
}

/** −log softmax(logits)[next] in f64, the logits with 16 fractional bits (as `client perplexity`). */
export function negLogLikelihood(logits: Int32Array, next: number): number {
  let max = -Infinity
  for (const l of logits) max = Math.max(max, l / 65_536)
  let sum = 0
  for (const l of logits) sum += Math.exp(l / 65_536 - max)
  return max + Math.log(sum) - logits[next]! / 65_536
}

function lastError(x: Exports): CurtaRunError {
  const e = rustError(x)
  return new CurtaRunError(e.code || 'RunError', e.message, e.details)
}

function checkU32(what: string, v: number): void {
  if (!Number.isInteger(v) || v < 0 || v > 0xffff_ffff)
    throw new CurtaRunError('NotAnInteger', `${what} ${v} is not an integer from 0 to 4,294,967,295`, { what, value: String(v) })
}

function checkId(what: string, v: number): void {
  if (!Number.isInteger(v) || v < 0 || v > 0xffff_ffff)
    throw new CurtaRunError('NotATokenId', `${what} is ${v}, not a token id (an integer from 0)`, { what, value: String(v) })
}

/**
 * A number's decimal digits for the core's parser: written with 12 decimals (`toFixed(12)`, the
 * parser's limit), trailing zeros dropped, so 0.8 is "0.8" and 0.1 + 0.2 is "0.3".
 */
function numberText(v: number, what: string): string {
  if (!Number.isFinite(v) || v < 0 || v >= 65_536)
    throw new CurtaRunError('NotADecimal', `${what} ${v} is not a decimal number from 0 below 65,536`, { what, value: String(v) })
  return v.toFixed(12).replace(/\.?0+$/, '')
}
