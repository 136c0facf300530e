// The weights hash of the 16.5 MB stories15M-shaped artifact: weightsCommitment (WebCrypto, one
// digest call per 65,536-byte chunk) against node:crypto's createHash over the same bytes, once
// as one SHA-256 over the whole file and once as the same chain. Median of RUNS (default 15).
//
// npm run bench [-- RUNS]
import { createHash } from 'node:crypto'
import { readFileSync } from 'node:fs'
import { decodeArtifact, weightsCommitment, toHex } from '../src/index.js'
import { artifactPath } from '../test/support/files.js'

const runs = Number(process.argv[2] ?? 15)
const bytes = new Uint8Array(readFileSync(artifactPath('stories15M')))
const { sections } = decodeArtifact(bytes)

async function time(fn: () => unknown): Promise<number> {
  const times: number[] = []
  for (let i = 0; i < runs + 2; i++) {
    const t = performance.now()
    await fn()
    if (i >= 2) times.push(performance.now() - t)
  }
  times.sort((a, b) => a - b)
  return times[Math.floor(times.length / 2)]!
}

function nodeChain(): Buffer {
  let h = Buffer.alloc(32)
  for (const s of sections)
    for (let at = 0; at < s.length; at += 65_536) h = createHash('sha256').update(h).update(s.subarray(at, at + 65_536)).digest()
  return h
}

const sdk = await time(() => weightsCommitment(sections))
const webcrypto = await time(() => weightsCommitment(sections, { engine: 'webcrypto' }))
const noble = await time(() => weightsCommitment(sections, { engine: 'noble' }))
const flat = await time(() => createHash('sha256').update(bytes).digest())
const chain = await time(nodeChain)
for (const engine of ['node', 'webcrypto', 'noble'] as const)
  if (toHex(await weightsCommitment(sections, { engine })) !== nodeChain().toString('hex')) throw new Error(`${engine}: the hashes differ`)
const ms = (x: number) => `${x.toFixed(1).padStart(6)} ms`
console.log(`stories15M-shaped artifact: ${bytes.length} bytes, ${sections.length} sections, median of ${runs} runs`)
console.log(`node:crypto createHash, one pass over the file       ${ms(flat)}`)
console.log(`node:crypto createHash, the chain (by hand)          ${ms(chain)}`)
console.log(`weightsCommitment, default engine in Node (node)     ${ms(sdk)}  ${(sdk / flat).toFixed(2)}x the one pass`)
console.log(`weightsCommitment, engine 'webcrypto' (the browsers') ${ms(webcrypto)}  ${(webcrypto / flat).toFixed(2)}x`)
console.log(`weightsCommitment, engine 'noble' (the fallback)     ${ms(noble)}  ${(noble / flat).toFixed(2)}x`)
