// The SDK reads the three golden artifacts exactly as the Rust core does (sdk/test/golden/*.json,
// written by `cargo run -p curta-core --example golden`), and agrees with the spec's numbers.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { createHash } from 'node:crypto'
import { decodeArtifact, weightsCommitment, chunkCount } from '../src/index.js'
import { golden, readArtifact, hex } from './support/files.js'

const MODELS = ['stories260K', 'gqa', 'stories15M']

/** The chain by the spec, with node:crypto: h = SHA-256(h || chunk) per 65,536-byte chunk. */
function nodeChain(sections: Uint8Array[]): string {
  let h = Buffer.alloc(32)
  for (const s of sections)
    for (let at = 0; at < s.length; at += 65_536)
      h = createHash('sha256').update(h).update(s.subarray(at, at + 65_536)).digest()
  return h.toString('hex')
}

for (const name of MODELS) {
  test(`${name}: configuration, blocks, sections and descriptors match the Rust core`, () => {
    const g = golden(name)
    const bytes = readArtifact(name)
    assert.equal(bytes.length, g.fileLength)
    const a = decodeArtifact(bytes)
    assert.deepEqual(a.config, g.config)
    assert.deepEqual(Object.keys(a.config), ['dim', 'hiddenDim', 'layers', 'heads', 'kvHeads', 'vocabSize', 'contextLength'])
    assert.deepEqual(a.blocks, g.blocks)
    assert.equal(a.invSqrtHeadSize, g.invSqrtHeadSize)
    assert.deepEqual(a.sectionTable, g.sections)
    assert.deepEqual(
      a.sections.map((s) => s.length),
      g.sections.map((s: { length: number }) => s.length),
    )
    assert.equal(a.matrices.length, g.matrices.length)
    a.matrices.forEach((m, i) => {
      const { firstRowScale, ...want } = g.matrices[i]
      const { index, layer, ...got } = m
      assert.equal(index, i)
      assert.equal(layer, i < 2 ? undefined : Math.floor((i - 2) / 7))
      assert.deepEqual(got, want, `matrix ${i}`)
      assert.equal(a.matrix(i).row(0).scale, firstRowScale, `matrix ${i} row 0 scale`)
      assert.equal(a.matrix(i).row(0).weights.length, m.columns)
    })
    for (const t of g.tokens) {
      assert.equal(a.sectionZero.tokenEntry(t.id).scoreKey, t.scoreKey, `token ${t.id} score key`)
      assert.equal(hex(a.tokenizer.tokenBytes(t.id)), t.bytes, `token ${t.id} bytes`)
    }
    assert.deepEqual(
      g.firstSortedIds.map((_: number, i: number) => a.sectionZero.sortedId(i)),
      g.firstSortedIds,
    )
    const z = a.sectionZero
    assert.deepEqual(
      { norm0: z.norm(0), rotary1: z.rotary(1), exp0: z.exp(0), exp4096: z.exp(4096), silu0: z.silu(0), silu4096: z.silu(4096) },
      g.tables,
    )
  })

  test(`${name}: sections are views of the file, not copies`, () => {
    const bytes = readArtifact(name)
    const a = decodeArtifact(bytes)
    let offset = 0
    for (const s of a.sections) {
      assert.equal(s.buffer, bytes.buffer)
      assert.equal(s.byteOffset, bytes.byteOffset + offset)
      offset += s.length
    }
    assert.equal(offset, bytes.length)
    bytes[a.sections[1]!.length > 0 ? a.sectionTable[1]!.offset : 0] ^= 0xff
    assert.equal(a.sections[1]![0], bytes[a.sectionTable[1]!.offset])
  })

  test(`${name}: weightsCommitment equals the Rust core's hash and node:crypto's chain`, async () => {
    const g = golden(name)
    const a = decodeArtifact(readArtifact(name))
    const seen: number[] = []
    const hash = await weightsCommitment(a.sections, { onProgress: (p) => seen.push(p.chunksDone) })
    assert.equal(hex(hash), g.weightsHash)
    assert.equal(nodeChain(a.sections), g.weightsHash)
    const chunks = a.sections.reduce((n, s) => n + chunkCount(s.length), 0)
    assert.deepEqual(seen, Array.from({ length: chunks }, (_, i) => i + 1))
    for (const engine of ['node', 'webcrypto', 'noble'] as const) {
      if (engine === 'noble' && name === 'stories15M') continue
      assert.equal(hex(await weightsCommitment(a.sections, { engine })), g.weightsHash, engine)
    }
  })
}

test('stories15M shape: the spec numbers (rows of 296 and 776 bytes, section one 9,472,000 bytes, layers 1,019,136)', () => {
  const a = decodeArtifact(readArtifact('stories15M'))
  assert.equal(a.bytes.length, 16_505_688)
  assert.equal(a.sections.length, 8)
  assert.equal(a.sections[1]!.length, 9_472_000)
  for (let l = 0; l < 6; l++) assert.equal(a.sections[2 + l]!.length, 1_019_136)
  assert.equal(a.matrices[0]!.rowBytes, 296)
  assert.equal(a.matrices[7]!.rowBytes, 776)
  assert.deepEqual(a.matrices[1], { ...a.matrices[0], index: 1, name: 'classifier' }, 'tied: descriptor 1 copies descriptor 0')
})

test('gqa: key and value matrices have kv dimension rows (128 × 2 / 8 = 32)', () => {
  const a = decodeArtifact(readArtifact('gqa'))
  assert.equal(a.config.kvHeads, 2)
  for (let l = 0; l < a.config.layers; l++) {
    assert.equal(a.matrices[3 + 7 * l]!.rows, 32)
    assert.equal(a.matrices[4 + 7 * l]!.rows, 32)
    assert.equal(a.matrices[3 + 7 * l]!.section, 2 + l)
  }
  assert.equal(a.sections.length, 8, '6 layers, over 1,000,000 weights: L + 2 sections')
  assert.notDeepEqual(a.matrices[1]!.offset, a.matrices[0]!.offset, 'untied: the classifier has bytes of its own')
})

test('stories260K: one over the square root of head size 8 is 5,931,642', () => {
  assert.equal(decodeArtifact(readArtifact('stories260K')).invSqrtHeadSize, 5_931_642)
})
