// Damaged artifacts (the classes of core/tests/decode_errors.rs and more, listed with the Rust
// reader's error for each in golden/malformed.json): the SDK throws CurtaFormatError with the same
// code and the same message. Random damage never escapes as anything else (no RangeError).
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { decodeArtifact, CurtaFormatError, CurtaError } from '../src/index.js'
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
