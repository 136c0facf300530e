// The format documentation's TypeScript snippets and sdk/README.md's run snippet (test/snippets/,
// copied as written) run against the built package (`@curta/sdk` resolves to dist/) in a
// directory holding stories260K.curta.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { execFileSync } from 'node:child_process'
import { copyFileSync, mkdtempSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { artifactPath, golden, sdkDir } from './support/files.js'

function run(snippet: string): string {
  const dir = mkdtempSync(join(tmpdir(), 'curta-snippet-'))
  copyFileSync(artifactPath('stories260K'), join(dir, 'stories260K.curta'))
  const tsx = import.meta.resolve('tsx')
  return execFileSync(process.execPath, ['--import', tsx, join(sdkDir, 'test', 'snippets', snippet)], {
    cwd: dir,
    encoding: 'utf8',
  })
}

test('"The hash" snippet prints the weights hash of stories260K', () => {
  assert.equal(run('hash.ts'), golden('stories260K').weightsHash + '\n')
})

test('"Read an artifact" snippet prints the configuration, section lengths and the embedding', () => {
  const g = golden('stories260K')
  const out = run('read.ts')
  const c = g.config
  const e = g.matrices[0]
  const expected =
    `{\n  dim: ${c.dim},\n  hiddenDim: ${c.hiddenDim},\n  layers: ${c.layers},\n  heads: ${c.heads},\n` +
    `  kvHeads: ${c.kvHeads},\n  vocabSize: ${c.vocabSize},\n  contextLength: ${c.contextLength}\n}\n` +
    `[ ${g.sections.map((s: { length: number }) => s.length).join(', ')} ]\n` +
    `{ section: ${e.section}, columns: ${e.columns}, rows: ${e.rows}, rowBytes: ${e.rowBytes}, offset: ${e.offset} }\n`
  assert.equal(out, expected)
})

test('sdk/README.md\'s run snippet streams the Rust core\'s 32 greedy tokens and prints its scores', () => {
  const g = golden('run')
  const v = g.runs[0]
  const s = g.scores[0]
  assert.deepEqual([v.model, v.prompt, v.steps, v.temperature], ['stories260K', 'Once upon a time', 32, '0'])
  assert.deepEqual(s.tokens, v.promptTokens)
  const mean = s.nll.reduce((a: number, b: number) => a + b, 0) / s.nll.length
  assert.equal(run('run.ts'), `${v.text}\n${s.argmax.join(' ')} ${Math.exp(mean).toFixed(4)}\n`)
})

test('@curta/sdk/bundle (dist/browser/curta-sdk.js, one file with its dependencies) reads and hashes the same', async () => {
  const sdk = await import('@curta/sdk/bundle')
  const { readFileSync } = await import('node:fs')
  const a = sdk.decodeArtifact(new Uint8Array(readFileSync(artifactPath('stories260K'))))
  assert.equal(sdk.toHex(await sdk.weightsCommitment(a.sections, { engine: 'webcrypto' })), golden('stories260K').weightsHash)
})
