// The run vectors written by the Rust core (core/examples/golden.rs: golden/run.json, and the
// property test's random.json) and the checks that the WebAssembly engine reproduces them.
import assert from 'node:assert/strict'
import { createHash } from 'node:crypto'
import type { GeneratedToken, Runner } from '../../src/index.js'

export interface RunVector {
  model: string
  prompt?: string
  promptTokens: number[]
  steps: number
  temperature: string
  topP: string
  seed: string
  tokens: number[]
  text: string
  end: 'end-token' | 'done'
  stateLength: number
  stateSha256: string
}
export interface ScoreVector {
  model: string
  tokens: number[]
  argmax: number[]
  nll: number[]
  stateSha256: string
}
export interface RandomModel {
  name: string
  file: string
  config: Record<string, number>
  tied: boolean
  seed: number
  weightsHash: string
}
export interface RunVectors {
  runs: RunVector[]
  scores: ScoreVector[]
  randomModels: RandomModel[]
}

export const sha = (b: Uint8Array) => createHash('sha256').update(b).digest('hex')

export const describeRun = (v: RunVector) =>
  `${v.prompt === undefined ? `tokens [${v.promptTokens}]` : JSON.stringify(v.prompt)}, ${v.steps} steps, temperature ${v.temperature}, top-p ${v.topP}, seed ${v.seed}`

/** SplitMix64 in BigInt: fixed-seed randomness for the tests. */
export function splitmix(seed: bigint) {
  let s = seed
  const M = (1n << 64n) - 1n
  return (n: number) => {
    s = (s + 0x9e3779b97f4a7c15n) & M
    let z = s
    z = ((z ^ (z >> 30n)) * 0xbf58476d1ce4e5b9n) & M
    z = ((z ^ (z >> 27n)) * 0x94d049bb133111ebn) & M
    return Number((z ^ (z >> 31n)) % BigInt(n))
  }
}

/** `generate` gives the vector's tokens, text, end and state bytes, streaming each token as it exists. */
export async function checkGenerate(r: Runner, v: RunVector): Promise<void> {
  assert.equal(r.stateLength, v.stateLength)
  const streamed: GeneratedToken[] = []
  const called: number[] = []
  const it = r.generate({
    prompt: v.prompt ?? v.promptTokens,
    steps: v.steps,
    temperature: v.temperature,
    topP: v.topP,
    seed: BigInt(v.seed),
    onToken: (t) => called.push(t.id),
  })
  let result
  for (;;) {
    const n = await it.next()
    if (n.done) {
      result = n.value
      break
    }
    // Each token is handed over as soon as it exists: the run is still at that token.
    assert.equal(n.value.index, streamed.length)
    assert.equal(n.value.pos, v.promptTokens.length + streamed.length)
    assert.equal(called.length, streamed.length + 1)
    streamed.push(n.value)
  }
  assert.deepEqual(result.promptTokens, v.promptTokens)
  assert.deepEqual(result.tokens, v.tokens)
  assert.deepEqual(streamed.map((t) => t.id), v.tokens)
  assert.deepEqual(called, v.tokens)
  assert.equal(result.text, v.text)
  // The streamed pieces are the text, but for an incomplete character at the very end: only
  // the whole result can say it will not be completed (U+FFFD, as the CLI's JSON has it).
  const joined = streamed.map((t) => t.text).join('')
  assert.ok(result.text === joined || result.text === joined + '\uFFFD', JSON.stringify([joined, result.text]))
  assert.equal(result.end, v.end)
  assert.equal(result.seed, BigInt(v.seed))
  assert.equal(sha(r.stateBytes()), v.stateSha256)
}

/**
 * The vectors' runs with the work split at random into advances (budgets from one item to a few
 * thousand multiply-accumulates), the state moved to `other` mid-run at random: the same tokens
 * and state bytes. Returns how many runs moved.
 */
export function checkSplitRuns(r: Runner, other: Runner, runs: RunVector[], rand: (n: number) => number): number {
  let resumed = 0
  for (const v of runs) {
    r.start(v.promptTokens, v.steps, {
      temperature: r.parseFixed16(v.temperature, 'temperature'),
      topP: r.parseFixed16(v.topP, 'top-p'),
      seed: BigInt(v.seed),
    })
    const tokens: number[] = []
    let advances = 0
    let moved = false
    let active = r
    for (;;) {
      const budget = rand(4) === 0 ? 1 : 1 + rand(rand(2) === 0 ? 200 : 5000)
      const p = active.advance(budget)
      advances++
      if (p.kind === 'token') tokens.push(p.id)
      if (p.kind === 'finished') {
        assert.equal(p.status, v.end)
        break
      }
      if (!moved && tokens.length === Math.floor(v.tokens.length / 2) && rand(2) === 0) {
        other.setState(active.stateBytes())
        active = other
        moved = true
        resumed++
      }
    }
    assert.deepEqual(tokens, v.tokens, `${v.model}: seed ${v.seed}`)
    assert.equal(sha(active.stateBytes()), v.stateSha256, `${v.model}: seed ${v.seed}, ${advances} advances`)
    assert.ok(advances > v.tokens.length, 'the budgets split the tokens')
  }
  return resumed
}

/** `score` gives the vector's argmax, negative log-likelihoods (to 1e-9) and state bytes. */
export function checkScore(r: Runner, s: ScoreVector): void {
  const got = r.score(s.tokens)
  assert.equal(got.tokens, s.tokens.length)
  assert.deepEqual(got.argmax, s.argmax)
  assert.equal(got.nll.length, s.nll.length)
  got.nll.forEach((x, j) => assert.ok(Math.abs(x - s.nll[j]!) <= 1e-9 * Math.max(1, Math.abs(s.nll[j]!)), `position ${j}: ${x} against ${s.nll[j]}`))
  const mean = s.nll.reduce((a, b) => a + b, 0) / s.nll.length
  assert.ok(Math.abs(got.meanNll - mean) < 1e-9)
  // Relative: a random model's perplexity reaches 10^8 and more (seed 1872651578: 3.7e8), where
  // 1e-6 is below a double's resolution; the mean's 1e-9 above allows this much.
  assert.ok(Math.abs(got.perplexity / Math.exp(mean) - 1) < 1e-8, `perplexity ${got.perplexity} against ${Math.exp(mean)}`)
  assert.equal(sha(r.stateBytes()), s.stateSha256)
}
