// Model and weight accounts as the real program wrote them (golden/chain.json, recorded by
// tests/sdk_accounts.rs on solana-program-test), decoded by the SDK; addresses derived by the
// SDK against the ones the Rust program derived, and against node:crypto's SHA-256.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { createHash, createPrivateKey, createPublicKey } from 'node:crypto'
import { address, getAddressEncoder, getBase58Decoder } from '@solana/kit'
import {
  CurtaAccountError,
  CURTA_PROGRAM_ID,
  decodeArtifact,
  decodeModelAccount,
  decodeWeightHeader,
  modelAddress,
  weightAddress,
  weightSeed,
} from '../src/index.js'
import { golden, readArtifact, hex, unhex } from './support/files.js'

const g = golden('chain')
const art = golden('stories260K')
const program = address(g.programId)
const authority = address(g.authority)
const model = address(g.model)
const enc = getAddressEncoder()

test('the recorded program id is the SDK default', () => {
  assert.equal(CURTA_PROGRAM_ID, program)
})

test('the authority is the ed25519 public key of the fixed secret [7; 32]', () => {
  const der = Buffer.concat([Buffer.from('302e020100300506032b657004220420', 'hex'), Buffer.alloc(32, 7)])
  const jwk = createPublicKey(createPrivateKey({ key: der, format: 'der', type: 'pkcs8' })).export({ format: 'jwk' })
  const pub = new Uint8Array(Buffer.from(jwk.x!, 'base64url'))
  assert.equal(getBase58Decoder().decode(pub), authority)
})

test('modelAddress gives the PDA the program created, with its bump', async () => {
  const { address: derived, bump } = await modelAddress(program, authority, unhex(g.weightsHash))
  assert.equal(derived, model)
  assert.equal(bump, decodeModelAccount(unhex(g.sealed.data)).bump)
  const other = await modelAddress(program, authority, unhex(g.mismatchWeightsHash))
  assert.equal(other.address, g.mismatchModel)
})

test('weightSeed and weightAddress: curta-NN-<hex of the model address[0..10]>, SHA-256(base || seed || owner)', async () => {
  const modelBytes = enc.encode(model) as Uint8Array
  for (let s = 0; s < g.weights.length; s++) {
    const seed = weightSeed(model, s)
    assert.equal(seed, `curta-0${s}-${hex(modelBytes.subarray(0, 10))}`)
    assert.equal(seed.length, 29)
    const digest = createHash('sha256')
      .update(enc.encode(authority) as Uint8Array)
      .update(seed)
      .update(enc.encode(program) as Uint8Array)
      .digest()
    const at = await weightAddress(program, authority, model, s)
    assert.equal(at, getBase58Decoder().decode(digest))
    assert.equal(at, g.weights[s].address)
  }
  assert.throws(() => weightSeed(model, 100), RangeError)
})

test('decodeModelAccount: Open, Sealing, Sealed and Mismatch as the program wrote them', () => {
  const lengths = art.sections.map((s: { length: number }) => s.length)
  const total = lengths.reduce((n: number, l: number) => n + Math.ceil(l / 65_536), 0)
  assert.equal(total, 2 + 5, '68,512 bytes are 2 chunks, 288,704 bytes 5')
  const zeroConfig = { dim: 0, hiddenDim: 0, layers: 0, heads: 0, kvHeads: 0, vocabSize: 0, contextLength: 0 }
  const cases = [
    ['open', 'Open', 1, 0, new Uint8Array(32), zeroConfig, g.weightsHash],
    ['sealing', 'Sealing', 2, 1, undefined, art.config, g.weightsHash],
    ['sealed', 'Sealed', 4, total, unhex(g.weightsHash), art.config, g.weightsHash],
    ['mismatch', 'Mismatch', 3, total, unhex(g.weightsHash), art.config, g.mismatchWeightsHash],
  ] as const
  for (const [key, state, code, cursor, running, config, declared] of cases) {
    const m = decodeModelAccount(unhex(g[key].data))
    assert.equal(m.state, state, key)
    assert.equal(m.stateCode, code)
    assert.equal(m.sealCursor, cursor, key)
    assert.equal(m.totalChunks, total)
    assert.equal(m.sealPass, 0)
    assert.equal(m.sectionCount, 2)
    assert.equal(m.authority, authority)
    assert.equal(hex(m.weightsHash), declared)
    assert.deepEqual(m.sectionLengths, lengths)
    assert.deepEqual(m.config, config, key)
    if (running) assert.deepEqual(m.runningHash, running, key)
    assert.equal(m.sealProgress.chunksHashed, cursor)
    assert.equal(m.sealProgress.fraction, state === 'Open' ? 0 : state === 'Sealing' ? 1 / total : 1)
    if (key !== 'mismatch') assert.deepEqual(m.weightAccounts, g.weights.map((w: { address: string }) => w.address))
  }
  // Sealing: the running hash is SHA-256(32 zero bytes || section zero's first chunk).
  const zero = decodeArtifact(readArtifact('stories260K')).sections[0]!
  const first = createHash('sha256').update(Buffer.alloc(32)).update(zero.subarray(0, 65_536)).digest('hex')
  assert.equal(hex(decodeModelAccount(unhex(g.sealing.data)).runningHash), first)
})

test('decodeWeightHeader: frozen, section, length, model and authority of each sealed section', () => {
  g.weights.forEach((w: { data: string; space: number }, s: number) => {
    const h = decodeWeightHeader(unhex(w.data), w.space)
    assert.deepEqual(h, { frozen: true, section: s, length: art.sections[s].length, model, authority })
    assert.equal(w.space, 2048 + art.sections[s].length)
  })
})

function throwsAccount(fn: () => unknown, code: string, field: string, message: RegExp) {
  assert.throws(fn, (e: unknown) => {
    assert.ok(e instanceof CurtaAccountError, String(e))
    assert.equal(e.code, code)
    assert.equal(e.details.field, field)
    assert.match(e.message, message)
    return true
  })
}

test('a damaged model account is NotAModel, naming the field and what was expected', () => {
  const good = unhex(g.sealed.data)
  const with_ = (at: number, v: number) => {
    const d = good.slice()
    d[at] = v
    return d
  }
  throwsAccount(() => decodeModelAccount(good.subarray(0, 807), 'Acc'), 'NotAModel', 'data length', /^account Acc: not a Curta model account: data length is 807 bytes, expected 808 bytes$/)
  throwsAccount(() => decodeModelAccount(with_(0, 0x41)), 'NotAModel', 'magic (byte 0)', /"AURTAMDL", expected "CURTAMDL"/)
  throwsAccount(() => decodeModelAccount(with_(8, 2)), 'NotAModel', 'layout version (byte 8)', /is 2, expected 1/)
  throwsAccount(() => decodeModelAccount(with_(9, 0)), 'NotAModel', 'state (byte 9)', /is 0, expected 1 to 4/)
  throwsAccount(() => decodeModelAccount(with_(9, 5)), 'NotAModel', 'state (byte 9)', /is 5/)
  throwsAccount(() => decodeModelAccount(with_(11, 1)), 'NotAModel', 'section count (byte 11)', /is 1, expected 2 to 18/)
  throwsAccount(() => decodeModelAccount(with_(11, 19)), 'NotAModel', 'section count (byte 11)', /is 19/)
  // A weight account is not a model.
  throwsAccount(() => decodeModelAccount(unhex(g.weights[0].data)), 'NotAModel', 'data length', /2048 bytes/)
})

test('a damaged weight header is NotInitialized, naming the field', () => {
  const w = g.weights[1]
  const good = unhex(w.data)
  const with_ = (at: number, v: number) => {
    const d = good.slice()
    d[at] = v
    return d
  }
  throwsAccount(() => decodeWeightHeader(good.subarray(0, 2047)), 'NotInitialized', 'data length', /at least 2048 bytes/)
  throwsAccount(() => decodeWeightHeader(with_(7, 0x4d), w.space), 'NotInitialized', 'magic (byte 0)', /"CURTAWSM", expected "CURTAWSC"/)
  throwsAccount(() => decodeWeightHeader(with_(8, 0), w.space), 'NotInitialized', 'layout version (byte 8)', /is 0, expected 1/)
  throwsAccount(() => decodeWeightHeader(with_(9, 2), w.space), 'NotInitialized', 'frozen (byte 9)', /is 2, expected 0 or 1/)
  throwsAccount(() => decodeWeightHeader(good, w.space + 1), 'NotInitialized', 'data length', new RegExp(`is ${w.space + 1} bytes, expected 2048 \\+ the section length ${w.space - 2048} = ${w.space} bytes`))
  // A model account is not a weight account.
  throwsAccount(() => decodeWeightHeader(unhex(g.sealed.data)), 'NotInitialized', 'data length', /808 bytes/)
})
