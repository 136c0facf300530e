// The tokenizer read from section zero encodes as llama2.c's encode does over the original
// tokenizer file (a transliteration of run.c's encode below, reading models/tok512.bin with its
// float scores and a sorted-by-strcmp vocabulary: a second path, independent of the artifact).
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { decodeArtifact, BOS, EOS } from '../src/index.js'
import { readArtifact, readModel } from './support/files.js'

interface RefTokenizer {
  vocab: Uint8Array[]
  scores: Float32Array
  sorted: { str: string; id: number }[]
}

/** run.c's build_tokenizer: max length, then per token a float score, a length and the bytes. */
function readTokenizer(file: Uint8Array, vocabSize: number): RefTokenizer {
  const v = new DataView(file.buffer, file.byteOffset, file.byteLength)
  let at = 4
  const vocab: Uint8Array[] = []
  const scores = new Float32Array(vocabSize)
  for (let i = 0; i < vocabSize; i++) {
    scores[i] = v.getFloat32(at, true)
    const len = v.getInt32(at + 4, true)
    vocab.push(file.slice(at + 8, at + 8 + len))
    at += 8 + len
  }
  // strcmp order over latin1 strings (one char per byte).
  const latin1 = (b: Uint8Array) => String.fromCharCode(...b)
  const sorted = vocab.map((b, id) => ({ str: latin1(b), id })).sort((a, b) => (a.str < b.str ? -1 : a.str > b.str ? 1 : a.id - b.id))
  return { vocab, scores, sorted }
}

function strLookup(t: RefTokenizer, str: string): number {
  let lo = 0
  let hi = t.sorted.length - 1
  while (lo <= hi) {
    const mid = (lo + hi) >> 1
    const s = t.sorted[mid]!.str
    if (s === str) return t.sorted[mid]!.id
    if (s < str) lo = mid + 1
    else hi = mid - 1
  }
  return -1
}

/** run.c's encode(t, text, bos=1, eos=0). */
function refEncode(t: RefTokenizer, text: Uint8Array, bos = true, eos = false): number[] {
  const latin1 = (b: Uint8Array | number[]) => String.fromCharCode(...b)
  const tokens: number[] = []
  if (bos) tokens.push(1)
  if (text.length > 0) tokens.push(strLookup(t, ' '))
  let buf: number[] = []
  for (let i = 0; i < text.length; i++) {
    const c = text[i]!
    if ((c & 0xc0) !== 0x80) buf = []
    buf.push(c)
    if (i + 1 < text.length && (text[i + 1]! & 0xc0) === 0x80 && buf.length < 4) continue
    const id = strLookup(t, latin1(buf))
    if (id !== -1) tokens.push(id)
    else for (const b of buf) tokens.push(b + 3)
    buf = []
  }
  for (;;) {
    let bestScore = -1e10
    let bestId = -1
    let bestIdx = -1
    for (let i = 0; i < tokens.length - 1; i++) {
      const id = strLookup(t, latin1(t.vocab[tokens[i]!]!) + latin1(t.vocab[tokens[i + 1]!]!))
      if (id !== -1 && t.scores[id]! > bestScore) {
        bestScore = t.scores[id]!
        bestId = id
        bestIdx = i
      }
    }
    if (bestIdx === -1) break
    tokens.splice(bestIdx, 2, bestId)
  }
  if (eos) tokens.push(2)
  return tokens
}

const TEXTS = [
  '',
  'Once upon a time',
  'Once upon a time, there was a little girl named Lily. She loved to play outside.',
  ' leading and  double  spaces ',
  'Zoë naïve café — “quotes” 日本語 🙂',
  'tabs\tand\nnewlines\r\n',
  '0123456789 !"#$%&\'()*+,-./:;<=>?@[\\]^_`{|}~',
  'aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa',
]

const artifact = decodeArtifact(readArtifact('stories260K'))
const tok = artifact.tokenizer
const ref = readTokenizer(readModel('tok512.bin'), 512)

for (const text of TEXTS) {
  test(`encode ${JSON.stringify(text)} as llama2.c does`, () => {
    const bytes = new TextEncoder().encode(text)
    assert.deepEqual(tok.encode(text), refEncode(ref, bytes))
    assert.deepEqual(tok.encode(bytes, { bos: false, eos: true }), refEncode(ref, bytes, false, true))
  })
}

test('a piece of text round-trips through encode and decode (the space prefix dropped after token 1)', () => {
  for (const text of TEXTS.slice(1)) assert.equal(tok.decodeText(tok.encode(text)), text)
})

test('decode: tokens 1 and 2 add no text, <0xXX> tokens are their byte, others their bytes', () => {
  assert.deepEqual(tok.decode(BOS), new Uint8Array())
  assert.deepEqual(tok.decode(EOS), new Uint8Array())
  // Tokens 3..258 are <0x00>..<0xFF> in llama2.c tokenizers: token b + 3 is byte b.
  for (const b of [0x00, 0x0a, 0x41, 0xe6, 0xff]) {
    assert.equal(new TextDecoder().decode(tok.tokenBytes(b + 3)), `<0x${b.toString(16).toUpperCase().padStart(2, '0')}>`)
    assert.deepEqual(tok.decode(b + 3), Uint8Array.of(b))
  }
  // A token with a leading space: after token 1 llama2.c drops the space.
  const id = tok.lookup(new TextEncoder().encode(' a'))
  assert.ok(id !== undefined && id > 258)
  assert.equal(new TextDecoder().decode(tok.decode(id)), ' a')
  assert.equal(new TextDecoder().decode(tok.decode(id, BOS)), 'a')
  assert.equal(new TextDecoder().decode(tok.decode(id, id)), ' a')
})

test('lookup finds every token by its bytes, and nothing else', () => {
  for (let id = 0; id < tok.vocabSize; id++) {
    const found = tok.lookup(tok.tokenBytes(id))
    assert.ok(found !== undefined)
    assert.deepEqual(tok.tokenBytes(found), tok.tokenBytes(id), `token ${id}`)
    assert.ok(found <= id, 'the lowest id with these bytes')
  }
  assert.equal(tok.lookup(new TextEncoder().encode('no such token here')), undefined)
})

test('score keys order as the float scores do (spec: bits | 0x80000000, or !bits for negative)', () => {
  const order = (a: number, b: number) => Math.sign(a - b)
  for (let i = 0; i + 1 < 512; i++) {
    const [fa, fb] = [ref.scores[i]!, ref.scores[i + 1]!]
    if (fa === fb) continue
    assert.equal(order(tok.scoreKey(i), tok.scoreKey(i + 1)), order(fa, fb), `tokens ${i}, ${i + 1}`)
  }
  const bits = new DataView(new Float32Array([ref.scores[300]!]).buffer).getUint32(0, true)
  const key = bits >>> 31 ? ~bits >>> 0 : (bits | 0x8000_0000) >>> 0
  assert.equal(tok.scoreKey(300), key)
})

test('stories15M shape with the 32,000-token tokenizer encodes as llama2.c does', () => {
  const big = decodeArtifact(readArtifact('stories15M')).tokenizer
  const ref32k = readTokenizer(readModel('tokenizer.bin'), 32_000)
  for (const text of TEXTS) {
    const bytes = new TextEncoder().encode(text)
    assert.deepEqual(big.encode(text), refEncode(ref32k, bytes), text)
  }
  // llama2.c with tokenizer.bin: "Once upon a time" is [1, 9038, 2501, 263, 931].
  assert.deepEqual(big.encode('Once upon a time'), [1, 9038, 2501, 263, 931])
})

test('a token entry over 128 bytes or outside section zero reads as no bytes (D13), as curta-core reads it', () => {
  const file = readArtifact('stories260K')
  const view = new DataView(file.buffer, file.byteOffset, file.byteLength)
  const id = tok.lookup(new TextEncoder().encode(' a'))!
  const entry = view.getUint32(56, true) + 16 * id
  const zeroLength = Number(view.getBigUint64(136, true))
  for (const [length, offset] of [
    [129, view.getUint32(entry + 8, true)],
    [4, zeroLength - 2],
  ] as const) {
    const bad = file.slice()
    const v = new DataView(bad.buffer)
    v.setUint32(entry + 4, length, true)
    v.setUint32(entry + 8, offset, true)
    const a = decodeArtifact(bad)
    // The strict accessor still names the entry; the tokenizer reads it as empty.
    assert.throws(() => a.sectionZero.tokenBytes(id), /TokenOutOfBounds|not inside the token strings/)
    assert.deepEqual(a.tokenizer.decode(id), new Uint8Array())
    assert.deepEqual(a.tokenizer.decode(id, BOS), new Uint8Array())
    // Text still encodes: " a" is now spelled by its byte tokens or other merges.
    const ids = a.tokenizer.encode('a cat')
    assert.ok(!ids.includes(id))
  }
})
