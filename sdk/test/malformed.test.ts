// Damaged artifacts (the classes of core/tests/decode_errors.rs and more, listed with the Rust
// reader's error for each in golden/malformed.json): the SDK throws CurtaFormatError with the same
// code and the same message. Random damage never escapes as anything else (no RangeError).
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { decodeArtifact, CurtaFormatError, CurtaError, SectionZero } from '../src/index.js'
import { debugFields } from '../src/wasm.js'
import { golden, readArtifact, unhex } from './support/files.js'

interface Damage {
  name: string
  base: string
  patches: { offset: number; bytes: string }[]
  length?: number
  access?: { sortedId?: number; tokenBytes?: number }
  error: string
  message: string
}

const damages = golden<Damage[]>('malformed')

function damaged(d: Damage): Uint8Array {
  const base = readArtifact(d.base)
  let bytes = base.slice()
  for (const p of d.patches) bytes.set(unhex(p.bytes), p.offset)
  if (d.length !== undefined) {
    const out = new Uint8Array(d.length)
    out.set(bytes.subarray(0, Math.min(d.length, bytes.length)))
    bytes = out
  }
  return bytes
}

test('golden/malformed.json covers every class of the Rust reader', () => {
  const codes = new Set(damages.map((d) => d.error))
  for (const code of [
    'Truncated', 'BadTag', 'FieldOutOfRange', 'NotADivisor', 'HeadSize', 'SectionCount', 'SectionOffset',
    'SectionLength', 'FileLength', 'BlockOffset', 'BlockOverlap', 'Descriptor', 'InvSqrtHeadSize', 'Misaligned',
    'DescriptorOutOfBounds', 'TokenOutOfBounds', 'SortedIdOutOfRange', 'ReservedNotZero',
  ])
    assert.ok(codes.has(code), code)
  assert.ok(damages.length >= 50)
})

for (const d of damages) {
  test(`${d.name}: ${d.error}`, () => {
    const bytes = damaged(d)
    const run = () => {
      const a = decodeArtifact(bytes)
      if (d.access?.sortedId !== undefined) a.sectionZero.sortedId(d.access.sortedId)
      // The strict reader of a token entry; the tokenizer reads such an entry as no bytes
      // (docs/format.md D13, tokenizer.test.ts).
      else if (d.access?.tokenBytes !== undefined) a.sectionZero.tokenBytes(d.access.tokenBytes)
      else assert.fail('decoded without an error')
    }
    assert.throws(run, (e: unknown) => {
      assert.ok(e instanceof CurtaFormatError, `a CurtaFormatError, got ${e}`)
      assert.equal(e.code, d.error)
      assert.equal(e.message, d.message)
      return true
    })
  })
}

test('the error names the field and what was expected', () => {
  const bytes = readArtifact('stories260K').slice()
  new DataView(bytes.buffer).setUint32(12, 2049, true)
  assert.throws(() => decodeArtifact(bytes), (e: unknown) => {
    assert.ok(e instanceof CurtaFormatError)
    assert.deepEqual(e.details, { field: 'hidden dimension', value: 2049, min: 1, max: 2048 })
    assert.equal(e.name, 'CurtaFormatError')
    return true
  })
})

// The checks are curta-core's, run in the WebAssembly module: those the SDK's own copy lacked
// (block alignment, the exponential table) come with them, as they do on chain.
test('a block off a multiple of 4 and a changed exponential table are refused, as by the Rust reader', () => {
  const base = readArtifact('stories260K')
  // The sorted ids and the token strings two bytes later: no block runs into another.
  const header = new DataView(base.buffer, base.byteOffset)
  const sorted = header.getUint32(60, true)
  const shifted = base.slice()
  const s = new DataView(shifted.buffer)
  s.setUint32(60, sorted + 2, true)
  s.setUint32(64, header.getUint32(64, true) + 2, true)
  assert.throws(() => decodeArtifact(shifted), (e: unknown) => {
    assert.ok(e instanceof CurtaFormatError)
    assert.equal(e.code, 'BlockMisaligned')
    assert.equal(e.message, `sorted token ids (offset at header byte 60) starts at ${sorted + 2}, not a multiple of 4 (its values are read as words)`)
    assert.deepEqual(e.details, { block: 'sorted token ids', field: 60, offset: sorted + 2 })
    return true
  })
  const exp = new DataView(base.buffer, base.byteOffset).getUint32(48, true)
  const table = base.slice()
  const v = new DataView(table.buffer)
  v.setUint32(exp + 4 * 5, v.getUint32(exp + 4 * 5, true) + 1, true)
  const zero = table.subarray(0, Number(v.getBigUint64(136, true)))
  for (const read of [() => decodeArtifact(table), () => new SectionZero(zero)])
    assert.throws(read, (e: unknown) => {
      assert.ok(e instanceof CurtaFormatError)
      assert.equal(e.code, 'ExpTable')
      assert.match(e.message, /^exponential table entry 5 is \d+, expected \d+ \(round\(e\^\(-5\/256\) x 2\^30\), the spec's value\)$/)
      assert.equal(e.details.index, 5)
      assert.equal(e.details.found, (e.details.expected as number) + 1)
      return true
    })
})

test('a section zero alone is read by Metadata::parse: its section table need not match a file', () => {
  const base = readArtifact('stories260K')
  const a = decodeArtifact(base)
  const zero = new SectionZero(a.sections[0]!)
  assert.deepEqual(zero.sectionTable, a.sectionTable)
  assert.deepEqual(zero.matrices, a.matrices)
  assert.deepEqual(zero.blocks, a.blocks)
  assert.throws(() => new SectionZero(a.sections[0]!.subarray(0, 4000)), {
    name: 'CurtaFormatError',
    code: 'Truncated',
    message: "section zero's header is truncated: it needs 4096 bytes at offset 0, but only 4000 are there",
  })
})

test('an error’s details are the Rust variant’s fields, camelCased', () => {
  assert.deepEqual(debugFields('BadTag { found: [67, 85, 82, 84, 65, 87, 48, 50] }'), { found: '[67, 85, 82, 84, 65, 87, 48, 50]' })
  assert.deepEqual(debugFields('FileLength { sections_end: 18446744073709551615, file_length: 9 }'), {
    sectionsEnd: 18446744073709551615n,
    fileLength: 9,
  })
  assert.deepEqual(debugFields('X { a: "say \\"hi\\", \\u{e9}", b_c: Some(3), d: 0 }'), { a: 'say "hi", \u00e9', bC: 'Some(3)', d: 0 })
  assert.deepEqual(debugFields('NoFields'), {})
})

/** xorshift32: a fixed sequence of damage. */
function rng(seed: number) {
  let x = seed >>> 0
  return (n: number) => {
    x ^= x << 13
    x >>>= 0
    x ^= x >>> 17
    x ^= x << 5
    x >>>= 0
    return x % n
  }
}

test('random damage to the header and tables gives CurtaFormatError or a valid artifact, never another error', () => {
  const base = readArtifact('stories260K')
  const next = rng(260)
  const hot = [8, 12, 16, 20, 24, 28, 32, 36, 40, 44, 48, 52, 56, 60, 64, 68, 128, 136, 144, 152, 512, 516, 520, 524, 528]
  let rejected = 0
  for (let i = 0; i < 3000; i++) {
    let bytes = base.slice()
    const edits = 1 + next(3)
    for (let e = 0; e < edits; e++) {
      const at = next(2) === 0 ? hot[next(hot.length)]! + next(8) : next(4096)
      bytes[at] = next(4) === 0 ? 0xff : next(256)
    }
    if (next(10) === 0) bytes = bytes.subarray(0, next(bytes.length))
    try {
      const a = decodeArtifact(bytes)
      for (let id = 0; id < a.config.vocabSize; id += 37) a.tokenizer.tokenBytes(a.sectionZero.sortedId(id))
    } catch (e) {
      assert.ok(e instanceof CurtaError, `edit ${i}: ${e}`)
      rejected++
    }
  }
  assert.ok(rejected > 2000, `${rejected} of 3000 rejected`)
})

test('not a Uint8Array is a TypeError', () => {
  assert.throws(() => decodeArtifact('CURTAW01' as unknown as Uint8Array), TypeError)
})
