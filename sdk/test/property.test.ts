// Property test: the WebAssembly engine equals the Rust core on random small configurations drawn
// afresh on every run. scripts/sdk-test draws a seed, has the Rust core write the models and their
// vectors (`cargo run --release -p curta-core --example golden -- --random SEED COUNT DIR`: odd
// head counts, grouped-query heads, head sizes 2 to 64, hidden dimensions 1 to 300, contexts 4 to
// 67, tied and untied, greedy and sampled), and points CURTA_PROPERTY_VECTORS at DIR. Without it
// the test is skipped and says how to run it; a failure names the seed, which reproduces it.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { Runner, decodeArtifact, toHex, weightsCommitment } from '../src/index.js'
import { checkGenerate, checkScore, checkSplitRuns, describeRun, splitmix, type RunVectors } from './support/run-vectors.js'

const dir = process.env.CURTA_PROPERTY_VECTORS
const skip = dir === undefined && 'CURTA_PROPERTY_VECTORS is not set: scripts/sdk-test sets it (golden --random SEED COUNT DIR)'

if (skip) {
  test('random configurations: WebAssembly = the Rust core', { skip }, () => {})
} else {
  const vectors = JSON.parse(readFileSync(join(dir!, 'random.json'), 'utf8')) as RunVectors
  const seed = process.env.CURTA_PROPERTY_SEED ?? 'unknown'
  const bytes = (file: string) => new Uint8Array(readFileSync(join(dir!, file)))

  test(`seed ${seed}: the vectors hold random configurations`, () => {
    assert.ok(vectors.randomModels.length >= 1)
    for (const m of vectors.randomModels) assert.ok(vectors.runs.some((v) => v.model === m.name) && vectors.scores.some((s) => s.model === m.name), m.name)
  })

  for (const m of vectors.randomModels) {
    test(`seed ${seed}, ${m.name} ${JSON.stringify(m.config)}${m.tied ? ' tied' : ''}: runs, split runs and scores = the Rust core`, async () => {
      const artifact = decodeArtifact(bytes(m.file))
      assert.equal(toHex(await weightsCommitment(artifact.sections)), m.weightsHash)
      const r = await Runner.create(artifact)
      const runs = vectors.runs.filter((v) => v.model === m.name)
      for (const v of runs) await checkGenerate(r, v).catch((e) => assert.fail(`${describeRun(v)}: ${e.message}`))
      checkSplitRuns(r, await Runner.create(bytes(m.file)), runs, splitmix(BigInt(m.seed)))
      for (const s of vectors.scores.filter((x) => x.model === m.name)) checkScore(r, s)
    })
  }
}
