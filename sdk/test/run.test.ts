// The run in JavaScript is curta-core's: every generation and score of golden/run.json (written
// by `cargo run -p curta-core --example golden`, curta_core::infer run natively) is reproduced by
// the WebAssembly engine with the same tokens, text and state bytes (SHA-256 of the whole state
// buffer), on stories260K, a grouped-query model and eight random small configurations, greedy and
// sampled with several seeds; any split of the work into advances, and a state moved to another
// runner mid-run, ends with the same bytes (the property the Rust core's own tests hold).
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { address, createSolanaRpc } from '@solana/kit'
import { CurtaRunError, Runner, decodeArtifact, engineBytes, engineModule, verifyModel, type VerifyResult } from '../src/index.js'
import { WASM_SHA256 } from '../src/wasm-module.js'
import { golden, readArtifact } from './support/files.js'
import { chainFixture, startMockRpc } from './support/mock-rpc.js'
import { checkGenerate, checkScore, checkSplitRuns, describeRun, sha, splitmix, type RunVectors } from './support/run-vectors.js'

const vectors = golden<RunVectors>('run')

const runners = new Map<string, Promise<Runner>>()
const runner = (name: string) => {
  if (!runners.has(name)) runners.set(name, Runner.create(decodeArtifact(readArtifact(name))))
  return runners.get(name)!
}

test('the embedded module is the one scripts/build-wasm built', () => {
  assert.equal(sha(engineBytes()), WASM_SHA256)
})

test('Runner.create with a module compiled elsewhere (as the page hands one to its workers) runs the same', async () => {
  const v = golden('run').runs[0]
  const module = await WebAssembly.compile(engineBytes() as Uint8Array<ArrayBuffer>)
  assert.notEqual(module, await engineModule(), 'a module of its own, not the cached one')
  const r = await Runner.create(readArtifact('stories260K'), { module })
  const g = await r.run({ prompt: v.prompt, steps: v.steps, temperature: v.temperature })
  assert.deepEqual(g.tokens, v.tokens)
  await assert.rejects(() => Runner.create(readArtifact('stories260K'), { module: engineBytes() as never }), TypeError)
})

test('Runner.create leaves the state as a new one after its warm-up (all zero bytes)', async () => {
  // The warm-up's throwaway run wrote the state; create zeroes it, so that a first run starts
  // from what the native engine starts from (the golden vectors' state hashes check the rest).
  for (const name of ['stories260K', 'gqa']) {
    const r = await Runner.create(readArtifact(name))
    const state = r.stateBytes()
    assert.equal(state.length, r.stateLength)
    assert.ok(state.every((b) => b === 0), `${name}: a byte of the state is not zero after create`)
    r.start([1], 3, { temperature: 0, topP: 65_536, seed: 0n })
    assert.ok(r.stateBytes().some((b) => b !== 0), `${name}: start writes the state`)
  }
})

test('the run vectors cover what the issue asks', () => {
  const on = (m: string) => vectors.runs.filter((v) => v.model === m)
  for (const m of ['stories260K', 'gqa']) {
    assert.ok(on(m).some((v) => v.temperature === '0'), `${m}: greedy`)
    assert.ok(new Set(on(m).filter((v) => v.temperature !== '0').map((v) => v.seed)).size >= 3, `${m}: sampled with several seeds`)
  }
  const gqa = golden('gqa').config
  assert.ok(gqa.kvHeads < gqa.heads, 'gqa is grouped-query')
  assert.equal(vectors.randomModels.length, 8)
  assert.ok(vectors.randomModels.some((m) => m.config.kvHeads! < m.config.heads!))
  assert.ok(vectors.randomModels.some((m) => m.tied) && vectors.randomModels.some((m) => !m.tied))
})

for (const [i, v] of vectors.runs.entries()) {
  test(`generate = the Rust core: ${v.model} #${i}: ${describeRun(v)}`, async () => checkGenerate(await runner(v.model), v))
}

for (const name of [...new Set(vectors.runs.map((v) => v.model))]) {
  test(`${name}: any split of the work into advances, and a state resumed in another runner, give the Rust core's tokens and state bytes`, async () => {
    const rand = splitmix(BigInt(name.length * 7919 + name.charCodeAt(name.length - 1)))
    const runs = vectors.runs.filter((x) => x.model === name)
    const resumed = checkSplitRuns(await runner(name), await Runner.create(readArtifact(name)), runs, rand)
    assert.ok(resumed > 0, 'a state moved to the other runner at least once')
  })
}

for (const [i, s] of vectors.scores.entries()) {
  test(`score = the Rust core: ${s.model} #${i}, ${s.tokens.length} tokens`, async () => checkScore(await runner(s.model), s))
}

test('score: a sequence longer than the context is scored in windows, each token but the first predicted once', async () => {
  const name = vectors.randomModels.find((m) => m.config.contextLength! <= 8)!.name
  const r = await runner(name)
  const c = r.contextLength
  const tokens = Array.from({ length: 2 * c + 3 }, (_, i) => 3 + ((i * 37) % (r.vocabSize - 3)))
  const whole = r.score(tokens)
  assert.equal(whole.argmax.length, tokens.length - 1)
  // The same as scoring each window alone.
  const first = r.score(tokens.slice(0, c))
  const second = r.score(tokens.slice(c - 1, 2 * c - 1))
  assert.deepEqual(whole.argmax.slice(0, c - 1), first.argmax)
  assert.deepEqual(whole.argmax.slice(c - 1, 2 * c - 2), second.argmax)
  assert.deepEqual(whole.nll.slice(0, c - 1), first.nll)
})

test('encode and decode are the Rust core’s (the prompts of the vectors)', async () => {
  const r = await runner('stories260K')
  const a = decodeArtifact(readArtifact('stories260K'))
  for (const v of vectors.runs.filter((x) => x.model === 'stories260K' && x.prompt !== undefined)) {
    assert.deepEqual(r.encode(v.prompt!), v.promptTokens)
    assert.deepEqual(r.encode(v.prompt!), a.tokenizer.encode(v.prompt!))
  }
  for (const [prev, id] of [[1, 300], [300, 301], [5, 1], [5, 2], [1, 3 + 0x41]] as const)
    assert.deepEqual(r.decode(prev, id), a.tokenizer.decode(id, prev))
})

test('stop: an aborted signal ends the run between tokens, with the tokens so far', async () => {
  const v = vectors.runs.find((x) => x.model === 'stories260K' && x.temperature !== '0')!
  const r = await runner('stories260K')
  const stop = new AbortController()
  const got = await r.run({
    prompt: v.prompt ?? v.promptTokens,
    steps: v.steps,
    temperature: v.temperature,
    topP: v.topP,
    seed: BigInt(v.seed),
    signal: stop.signal,
    onToken: (t) => {
      if (t.index === 4) stop.abort()
    },
  })
  assert.equal(got.end, 'stopped')
  assert.deepEqual(got.tokens, v.tokens.slice(0, 5))
})

test('the event loop gets turns during a long run (yieldMs)', async () => {
  const r = await runner('gqa')
  let ticks = 0
  const timer = setInterval(() => ticks++, 0)
  const got = await r.run({ prompt: [1], steps: 100, temperature: 0, yieldMs: 0 })
  clearInterval(timer)
  assert.equal(got.tokens.length, 100)
  assert.ok(ticks > 0, `timers ran ${ticks} times`)
})

test('a sealed model verified against the chain runs to the file’s tokens', async () => {
  const fx = chainFixture()
  const node = await startMockRpc(fx.accounts)
  let result: VerifyResult
  try {
    result = await verifyModel(createSolanaRpc(node.url), address(fx.model), { programId: address(fx.programId), keepSections: true })
  } finally {
    await node.close()
  }
  assert.equal(result.ok, true)
  const r = await Runner.fromVerified(result)
  const v = vectors.runs[0]!
  assert.equal(v.model, 'stories260K')
  const got = await r.run({ prompt: v.prompt, steps: v.steps, temperature: 0 })
  assert.deepEqual(got.tokens, v.tokens)
  assert.equal(sha(r.stateBytes()), v.stateSha256)
  await assert.rejects(Runner.fromVerified({ ...result, ok: false }), (e: unknown) => e instanceof CurtaRunError && e.code === 'NotVerified')
  const { sections, ...noBytes } = result
  await assert.rejects(Runner.fromVerified(noBytes), (e: unknown) => e instanceof CurtaRunError && e.code === 'NoSections')
})

async function refused(p: () => unknown, code: string, message: RegExp | string): Promise<void> {
  await assert.rejects(
    async () => p(),
    (e: unknown) => {
      assert.ok(e instanceof CurtaRunError, `${e}`)
      assert.equal(e.code, code)
      if (typeof message === 'string') assert.equal(e.message, message)
      else assert.match(e.message, message)
      return true
    },
  )
}

test('bad settings and prompts are refused before any work, naming the value (the Rust errors)', async () => {
  const r = await runner('stories260K')
  const before = sha(r.stateBytes())
  const go = (o: Parameters<Runner['run']>[0]) => () => r.run(o)
  await refused(go({ prompt: 'x', steps: 600, temperature: 0 }), 'StepsPastContext', "600 steps after a prompt of 3 tokens run past the model's context of 512 (at most 510 steps)")
  await refused(go({ prompt: 'x', steps: 0, temperature: 0 }), 'NoSteps', 'steps must be at least 1')
  await refused(go({ prompt: Array(513).fill(1), steps: 1, temperature: 0 }), 'PromptTooLong', "the prompt is 513 tokens, longer than the model's context of 512")
  await refused(go({ prompt: [], steps: 1, temperature: 0 }), 'EmptyPrompt', /no tokens/)
  await refused(go({ prompt: [1, 512], steps: 1, temperature: 0 }), 'TokenOutOfRange', 'token 1 of the input is 512, but the vocabulary has 512 tokens (0 to 511)')
  await refused(go({ prompt: [1, -1], steps: 1, temperature: 0 }), 'NotATokenId', /token 1 is -1/)
  await refused(go({ steps: 4, temperature: '0.8', seed: 0 }), 'SeedZero', /seed 0 cannot sample/)
  await refused(go({ steps: 4, temperature: 17, seed: 1 }), 'Temperature', 'temperature 17 is out of range: 0 (greedy) to 16')
  await refused(go({ steps: 4, temperature: 1, topP: 0, seed: 1 }), 'TopP', 'top-p 0 is out of range: above 0, at most 1')
  await refused(go({ steps: 4, temperature: 1, topP: '1.5', seed: 1 }), 'TopP', 'top-p 1.5 is out of range: above 0, at most 1')
  await refused(go({ steps: 4, temperature: '1e-3' }), 'NotADecimal', /temperature "1e-3" is not a decimal/)
  await refused(go({ steps: 4, temperature: -1 }), 'NotADecimal', /temperature -1/)
  await refused(go({ steps: 4, temperature: 1e21 }), 'NotADecimal', /temperature 1e\+21/)
  assert.equal(r.parseFixed16(0.1 + 0.2, 'temperature'), r.parseFixed16('0.3', 'temperature'))
  assert.equal(r.parseFixed16(0.8, 'temperature'), 52_429)
  assert.equal(r.parseFixed16('0.9', 'top-p'), 58_982)
  await assert.rejects(() => Runner.create(undefined as never), TypeError)
  await assert.rejects(() => Runner.create([new Uint8Array(4), 'x'] as never), TypeError)
  await refused(go({ steps: 4, temperature: 'hot' }), 'NotADecimal', /"hot"/)
  await refused(go({ steps: 4, temperature: 1, seed: 2 ** 60 }), 'SeedRange', /not an integer/)
  await refused(go({ steps: 4, temperature: 1, seed: 1n << 64n }), 'SeedRange', /outside 0 to 2\^64/)
  await refused(() => r.score([1]), 'ScoreTooShort', 'teacher forcing needs at least 2 tokens, got 1')
  await refused(() => r.score([1, 600]), 'TokenOutOfRange', /token 1 of the input is 600/)
  assert.equal(sha(r.stateBytes()), before, 'the state is untouched by refused runs')
})

test('a damaged or foreign state is refused by Run::resume, never read out of bounds', async () => {
  const r = await Runner.create(readArtifact('stories260K'))
  await refused(() => r.advance(), 'NotAState', /CURTAS01/)
  r.start([1], 10, { temperature: 0, topP: 65_536, seed: 0n })
  r.advance()
  const good = r.stateBytes()
  const bad = good.slice()
  new DataView(bad.buffer).setUint32(32, 9999, true) // the stage code
  r.setState(bad)
  await refused(() => r.advance(), 'BadState', /stage is 9999/)
  const other = good.slice()
  new DataView(other.buffer).setUint32(76, 65, true) // the configuration's dimension
  r.setState(other)
  await refused(() => r.advance(), 'ModelMismatch', /another model/)
  await refused(() => r.setState(new Uint8Array(10)), 'StateLength', /10 bytes/)
  r.setState(good)
  assert.equal(r.advance().kind, 'token')
})

test('a damaged artifact is refused with the Rust reader’s error, as decodeArtifact gives it', async () => {
  const cases = golden<{ name: string; base: string; patches: { offset: number; bytes: string }[]; length?: number; access?: unknown; error: string; message: string }[]>('malformed')
  let n = 0
  for (const c of cases.filter((c) => c.access === undefined)) {
    let bytes = readArtifact(c.base).slice()
    for (const p of c.patches) bytes.set(Buffer.from(p.bytes, 'hex'), p.offset)
    if (c.length !== undefined) {
      const b = new Uint8Array(c.length)
      b.set(bytes.subarray(0, Math.min(c.length, bytes.length)))
      bytes = b
    }
    await refused(() => Runner.create(bytes), c.error, c.message)
    n++
  }
  assert.equal(n, 49, `${n} cases`)
})

test('one run at a time per runner', async () => {
  const r = await Runner.create(readArtifact('stories260K'))
  const it = r.generate({ prompt: [1], steps: 5, temperature: 0 })
  await it.next()
  await refused(() => r.run({ prompt: [1], steps: 5, temperature: 0 }), 'Busy', /already running/)
  await it.return(undefined as never)
  const again = await r.run({ prompt: [1], steps: 5, temperature: 0 })
  assert.equal(again.tokens.length, 5)
})
