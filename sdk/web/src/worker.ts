// The page's run worker: the model's engine (@curta/sdk's Runner, curta-core's inference in
// WebAssembly) runs here, off the page's thread, so the page stays responsive while it works.
// Messages in: compile (the page starts its first worker when it loads, and this compiles the
// engine's module then, not when a model comes), load (the artifact's bytes, and the module the
// first worker compiled, for the workers after it), run (prompt and settings), stop, answer (a
// claim's answer from its model's bytes, terms and seed, for the claim card). Messages
// out: compiled (the module, for the page to hand to later workers), loaded, answer, tokens (the tokens
// produced since the last message, at most every 16 ms, with the rate so far: one message per
// token would cost the small models a third of their speed), done, error.
import { Runner, engineModule, type GenerateOptions } from '../../src/run.js'
import { type ClaimTerms, claimAnswer } from '../../src/claim-answer.js'

export type WorkerRequest =
  | { type: 'compile' }
  | { type: 'load'; bytes: Uint8Array; module?: WebAssembly.Module }
  | { type: 'run'; prompt: string; steps: number; temperature: string; topP: string; seed: string }
  | { type: 'stop' }
  /** A claim's answer: a fresh engine over `bytes` (the claim's model), the claim's terms and seed; the worker is not reused. */
  | { type: 'answer'; bytes: Uint8Array; module?: WebAssembly.Module; terms: ClaimTerms; seed: string }

export type WorkerReply =
  | { type: 'compiled'; module: WebAssembly.Module; ms: number }
  | { type: 'loaded'; contextLength: number; vocabSize: number; warmUp: { ms: number; tokens: number } }
  | { type: 'tokens'; ids: number[]; text: string; count: number; tokensPerSecond: number }
  | {
      type: 'done'
      promptTokens: number[]
      tokens: number[]
      text: string
      tokensPerSecond: number
      seconds: number
      seed: string
      end: string
    }
  | { type: 'error'; name: string; code: string; message: string }
  | { type: 'answer'; promptTokens: number[]; ids: number[]; text: Uint8Array; hash: Uint8Array; end: string; ms: number }

let runner: Runner | undefined
let stop: AbortController | undefined
const post = (m: WorkerReply) => (self as unknown as Worker).postMessage(m)

function fail(e: unknown): void {
  const err = e as { name?: string; code?: string; message?: string }
  post({ type: 'error', name: err?.name ?? 'Error', code: err?.code ?? '', message: err?.message ?? String(e) })
}

async function run(m: Extract<WorkerRequest, { type: 'run' }>): Promise<void> {
  if (!runner) throw new Error('no model is loaded')
  stop = new AbortController()
  const options: GenerateOptions = {
    prompt: m.prompt,
    steps: m.steps,
    temperature: m.temperature,
    topP: m.topP,
    signal: stop.signal,
    yieldMs: 15,
  }
  if (m.seed.trim() !== '') {
    if (!/^\d+$/.test(m.seed.trim())) throw new Error(`seed ${JSON.stringify(m.seed)} is not a whole number`)
    options.seed = BigInt(m.seed.trim())
  }
  const started = performance.now()
  const it = runner.generate(options)
  let ids: number[] = []
  let text = ''
  let flushed = started
  let count = 0
  const flush = (at: number) => {
    if (ids.length === 0) return
    post({ type: 'tokens', ids, text, count, tokensPerSecond: count / Math.max((at - started) / 1000, 1e-9) })
    ids = []
    text = ''
    flushed = at
  }
  for (;;) {
    const n = await it.next()
    if (n.done) {
      flush(performance.now())
      const g = n.value
      const wall = (performance.now() - started) / 1000
      post({
        type: 'done',
        promptTokens: g.promptTokens,
        tokens: g.tokens,
        text: g.text,
        // As `client run` times it: from the start to the last token, everything included
        // (encoding, decoding, handing each token to the page, the event loop's turns).
        tokensPerSecond: g.tokens.length / Math.max(wall, 1e-9),
        seconds: wall,
        seed: String(g.seed),
        end: g.end,
      })
      return
    }
    ids.push(n.value.id)
    text += n.value.text
    count++
    const at = performance.now()
    if (at - flushed >= 16) flush(at)
  }
}

/**
 * Runs the freshly loaded model for WARM_UP_MS before the page may run it (greedy from token 1,
 * the tokens thrown away; each run starts from a fresh state, so nothing carries over). Without
 * it the first run after a load went at about half the speed of the next ones, the module
 * compiled at page load or not (sdk/README.md, "The verifier page", has the figures); a
 * generation of about 15 ms did about as well as 250 ms, so what the first run paid for is a
 * first-use cost (V8 compiling the module's functions when first called, the JavaScript around
 * them, memory touched the first time), not pinned down further.
 */
const WARM_UP_MS = 250

async function warmUp(r: Runner): Promise<{ ms: number; tokens: number }> {
  const started = performance.now()
  let tokens = 0
  if (r.contextLength < 2) return { ms: 0, tokens }
  const done = new AbortController()
  const timer = setTimeout(() => done.abort(), WARM_UP_MS)
  try {
    while (!done.signal.aborted) {
      const g = await r.run({ prompt: [1], steps: Math.min(256, r.contextLength - 1), temperature: 0, signal: done.signal, yieldMs: 15 })
      tokens += g.tokens.length
    }
  } finally {
    clearTimeout(timer)
  }
  return { ms: performance.now() - started, tokens }
}

self.onmessage = (e: MessageEvent<WorkerRequest>) => {
  const m = e.data
  if (m.type === 'stop') {
    stop?.abort()
    return
  }
  if (m.type === 'compile') {
    const started = performance.now()
    engineModule().then((module) => post({ type: 'compiled', module, ms: performance.now() - started }), fail)
    return
  }
  if (m.type === 'answer') {
    ;(async () => {
      const r = await Runner.create(m.bytes, { module: m.module ?? (await engineModule()) })
      const started = performance.now()
      const a = claimAnswer(r, m.terms, BigInt(m.seed))
      post({ type: 'answer', promptTokens: a.promptTokens, ids: a.ids, text: a.text, hash: a.hash, end: a.end, ms: performance.now() - started })
    })().catch(fail)
    return
  }
  if (m.type === 'load') {
    ;(async () => {
      const r = await Runner.create(m.bytes, { module: m.module ?? (await engineModule()) })
      const warm = await warmUp(r)
      runner = r
      post({ type: 'loaded', contextLength: r.contextLength, vocabSize: r.vocabSize, warmUp: warm })
    })().catch(fail)
    return
  }
  run(m).catch(fail)
}
