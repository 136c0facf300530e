// The SDK's contract code against the Codama IDL (idl/curta.json, itself checked against the
// interface crate by tests/idl.rs) and against docs/program.md. The builders, codecs and error
// codes are Codama's render of the IDL (src/generated/, kept equal to a fresh render by
// `node scripts/generate.mjs --check`); what is checked here is what the render does not
// guarantee: the bytes and accounts the builders produce against docs/program.md's layouts written
// out by hand, the SDK's hand-written wrappers (Seal's two forms, prompts, seed sources, error
// names), the decoders on accounts written by an encoder driven by the IDL's type nodes, the run
// account's state buffer, and that a changed IDL changes the render.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { createHash } from 'node:crypto'
import { spawnSync } from 'node:child_process'
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { getNodeCodec } from '@codama/dynamic-codecs'
import { join } from 'node:path'
import { type Address, AccountRole, type Instruction, createNoopSigner, getAddressDecoder, getAddressEncoder } from '@solana/kit'
import {
  CURTA_PROGRAM_ID,
  SEED_SOURCES,
  SeedSource,
  CurtaAccountError,
  completeUtf8,
  decodeModelAccount,
  decodeRunAccount,
  decodeWeightHeader,
  drawnSeed,
  decodeClaim,
  getAnswerClaimInstruction,
  getChallengeInstruction,
  getCloseClaimInstruction,
  getOpenClaimInstruction,
  getResolveInstruction,
  getCloseInstruction,
  getCloseRunInstruction,
  getCreateModelInstruction,
  getInitWeightAccountInstruction,
  getReopenInstruction,
  getStartRunInstruction,
  getStepInstruction,
  getWriteInstruction,
  programError,
  promptArgs,
  runAccountLength,
  runAddress,
  runSeed,
  sealInstruction,
  seedSourceCode,
  stateLength,
} from '../src/index.js'
import { repoDir, sdkDir } from './support/files.js'

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Node = any
const idl: Node = JSON.parse(readFileSync(join(repoDir, 'idl', 'curta.json'), 'utf8'))
const program: Node = idl.program
const definedTypes = new Map<string, Node>(program.definedTypes.map((t: Node) => [t.name, t.type]))
const named = (list: Node[], name: string): Node => {
  const found = list.find((n) => n.name === name)
  assert.ok(found, `the IDL has no ${name}`)
  return found
}
const resolve = (t: Node): Node => (t.kind === 'definedTypeLinkNode' ? definedTypes.get(t.name) : t)
const enc = getAddressEncoder()
const dec = getAddressDecoder()

function numberSize(t: Node): number {
  assert.equal(t.kind, 'numberTypeNode')
  assert.equal(t.endian, 'le')
  return { u8: 1, u16: 2, u32: 4, u64: 8 }[t.format as string]!
}

function encodeNumber(t: Node, v: number | bigint, out: number[]) {
  const size = numberSize(t)
  let b = BigInt(v)
  assert.ok(b >= 0n && b < 1n << BigInt(8 * size), `${v} fits ${size} bytes`)
  for (let i = 0; i < size; i++, b >>= 8n) out.push(Number(b & 0xffn))
}

/** Encodes `value` as the IDL type node `t` says. */
function encode(t: Node, value: Node, out: number[]): void {
  t = resolve(t)
  switch (t.kind) {
    case 'numberTypeNode':
      return encodeNumber(t, value, out)
    case 'booleanTypeNode':
      return encodeNumber(t.size, value ? 1 : 0, out)
    case 'publicKeyTypeNode':
      out.push(...enc.encode(value))
      return
    case 'bytesTypeNode':
      out.push(...(value as Uint8Array))
      return
    case 'fixedSizeTypeNode': {
      const inner: number[] = []
      encode(t.type, value, inner)
      assert.equal(inner.length, t.size)
      out.push(...inner)
      return
    }
    case 'sizePrefixTypeNode': {
      const inner: number[] = []
      encode(t.type, value, inner)
      encodeNumber(t.prefix, inner.length, out)
      out.push(...inner)
      return
    }
    case 'arrayTypeNode': {
      const items = value as Node[]
      if (t.count.kind === 'prefixedCountNode') encodeNumber(t.count.prefix, items.length, out)
      else if (t.count.kind === 'fixedCountNode') assert.equal(items.length, t.count.value)
      items.forEach((item) => encode(t.item, item, out))
      return
    }
    case 'structTypeNode':
      for (const f of t.fields) encode(f.type, value[f.name], out)
      return
    case 'tupleTypeNode':
      t.items.forEach((item: Node, i: number) => encode(item, value[i], out))
      return
    case 'remainderOptionTypeNode':
      if (value !== null) encode(t.item, value, out)
      return
    case 'enumTypeNode': {
      const [name, items] = typeof value === 'string' ? [value, undefined] : Object.entries(value)[0]!
      const index = t.variants.findIndex((v: Node) => v.name === name)
      assert.ok(index >= 0, `variant ${name}`)
      const variant = t.variants[index]
      encodeNumber(t.size, variant.discriminator ?? index, out)
      if (variant.kind === 'enumTupleVariantTypeNode') encode(variant.tuple, items, out)
      return
    }
    default:
      throw new Error(`the test's encoder has no ${t.kind}`)
  }
}

function fixedSize(t: Node): number | undefined {
  t = resolve(t)
  switch (t.kind) {
    case 'numberTypeNode':
      return numberSize(t)
    case 'booleanTypeNode':
      return numberSize(t.size)
    case 'publicKeyTypeNode':
      return 32
    case 'fixedSizeTypeNode':
      return t.size
    case 'arrayTypeNode':
      return t.count.kind === 'fixedCountNode' ? t.count.value * fixedSize(t.item)! : undefined
    case 'structTypeNode':
      return t.fields.reduce((n: number | undefined, f: Node) => (n === undefined || fixedSize(f.type) === undefined ? undefined : n + fixedSize(f.type)!), 0)
    case 'enumTypeNode':
      return t.variants.every((v: Node) => v.kind === 'enumEmptyVariantTypeNode') ? numberSize(t.size) : undefined
    default:
      return undefined
  }
}

const key = (seed: number): Address => dec.decode(Uint8Array.from({ length: 32 }, (_, i) => (seed * 31 + i * 7) & 0xff))
const [authority, weight, model, run, runner, destination] = [1, 2, 3, 4, 5, 6].map(key) as [Address, Address, Address, Address, Address, Address]
const weights = [10, 11, 12].map(key)

/** Little-endian bytes of `v` in `size` bytes. */
const le = (v: number | bigint, size: number) => Array.from({ length: size }, (_, i) => Number((BigInt(v) >> BigInt(8 * i)) & 0xffn))
const bytesOf = (a: Address) => [...enc.encode(a)]
const [R, W, RS, WS] = [AccountRole.READONLY, AccountRole.WRITABLE, AccountRole.READONLY_SIGNER, AccountRole.WRITABLE_SIGNER]
const signer = (a: Address) => createNoopSigner(a)

/** An instruction's data and (address, role) accounts, against what docs/program.md lists. */
function expectInstruction(ix: Instruction, data: number[], accounts: [Address, AccountRole][], what: string) {
  assert.equal(ix.programAddress, CURTA_PROGRAM_ID, `${what}: program`)
  assert.deepEqual([...ix.data!], data, `${what}: bytes`)
  assert.deepEqual(
    ix.accounts!.map((a) => [a.address, a.role]),
    accounts,
    `${what}: accounts`,
  )
}

test("every builder writes docs/program.md's bytes and accounts, written out here by hand", () => {
  const hash = Uint8Array.from({ length: 32 }, (_, i) => 0xa0 ^ i)
  const lengths = [4096, 70000, 0x01020304]
  expectInstruction(
    getCreateModelInstruction({ authority: signer(authority), model, weightsHash: hash, sectionLengths: lengths }),
    [0, ...hash, ...le(3, 4), ...lengths.flatMap((l) => le(l, 4))],
    [[authority, WS], [model, W], ['11111111111111111111111111111111' as Address, R]],
    'CreateModel',
  )
  expectInstruction(
    getInitWeightAccountInstruction({ model, weight, authority: signer(authority), section: 17 }),
    [1, 17],
    [[model, W], [weight, W], [authority, RS]],
    'InitWeightAccount',
  )
  const bytes = Uint8Array.from({ length: 300 }, (_, i) => (i * 7 + 3) & 0xff)
  expectInstruction(
    getWriteInstruction({ weight, authority: signer(authority), offset: 0xabcdef, bytes }),
    [2, ...le(0xabcdef, 4), ...le(300, 4), ...bytes],
    [[weight, W], [authority, RS]],
    'Write',
  )
  const seal = (pass: number, chunk: number, creation: bigint) => [3, ...le(pass, 4), ...le(chunk, 4), ...le(creation, 8)]
  // Chunk 0: section zero's weight account, the authority third, the other sections' weight accounts, all writable.
  expectInstruction(
    sealInstruction({ model, weights, authority: signer(authority), pass: 3, chunk: 0, creation: 0x0102030405060708n }),
    seal(3, 0, 0x0102030405060708n),
    [[model, W], [weights[0]!, W], [authority, RS], [weights[1]!, W], [weights[2]!, W]],
    'Seal chunk 0',
  )
  // A later chunk: the cursor's section's weight account, or every section's, read only; no authority.
  expectInstruction(
    sealInstruction({ model, weight, pass: 0xfffffffe, chunk: 161, creation: 2n ** 64n - 6n }),
    seal(0xfffffffe, 161, 2n ** 64n - 6n),
    [[model, W], [weight, R]],
    'Seal, a later chunk',
  )
  expectInstruction(
    sealInstruction({ model, weights, pass: 2, chunk: 9, creation: 5n }),
    seal(2, 9, 5n),
    [[model, W], ...weights.map((w): [Address, AccountRole] => [w, R])],
    'Seal, a later chunk with every section',
  )
  assert.throws(() => sealInstruction({ model, weights, pass: 3, chunk: 0, creation: 1n }), /needs the authority/)
  assert.throws(() => sealInstruction({ model, weights: [weight], authority: signer(authority), pass: 3, chunk: 0, creation: 1n }), /every section's weight account/)
  assert.throws(() => sealInstruction({ model, weight, weights, pass: 3, chunk: 4, creation: 1n }), /either weight .* or weights/)
  expectInstruction(getReopenInstruction({ model, authority: signer(authority), weights }), [4], [[model, W], [authority, RS], ...weights.map((w): [Address, AccountRole] => [w, W])], 'Reopen')
  expectInstruction(
    getCloseInstruction({ model, authority: signer(authority), destination, weights }),
    [5],
    [[model, W], [authority, RS], [destination, W], ...weights.map((w): [Address, AccountRole] => [w, W])],
    'Close',
  )
  expectInstruction(
    getStepInstruction({ run, model, weights, ticket: 0xdeadbeef, budget: 1_175_000 }),
    [7, ...le(0xdeadbeef, 4), ...le(1_175_000, 4)],
    [[run, W], [model, R], ['SysvarS1otHashes111111111111111111111111111' as Address, R], ...weights.map((w): [Address, AccountRole] => [w, R])],
    'Step',
  )
  expectInstruction(getCloseRunInstruction({ run, runner: signer(runner), runSeeds: null }), [8], [[run, W], [runner, WS]], 'CloseRun')
  expectInstruction(
    getCloseRunInstruction({ run, runner: signer(runner), runSeeds: { model, nonce: 42 } }),
    [8, ...bytesOf(model), ...le(42, 4)],
    [[run, W], [runner, WS]],
    'CloseRun with the model and nonce',
  )
})

test('StartRun bytes as docs/program.md lists them, by hand: each seed source and both prompt kinds', () => {
  const start = (seedSource: 'none' | 'drawn' | 'chosen', prompt: Parameters<typeof promptArgs>[0]) =>
    getStartRunInstruction({
      run,
      runner: signer(runner),
      model,
      sectionZero: weight,
      nonce: 7,
      steps: 2,
      temperature: 3,
      topP: 4,
      seed: 5n,
      seedSource: seedSourceCode(seedSource),
      prompt: promptArgs(prompt),
    })
  // 0 tag; 1 nonce; 5 steps; 9 temperature; 13 top-p; 17 seed u64; 25 seed source; 26 prompt kind; 27 n; 31 ids or text.
  const fixed = [6, ...le(7, 4), ...le(2, 4), ...le(3, 4), ...le(4, 4), ...le(5n, 8)]
  expectInstruction(start('chosen', { tokenIds: [9] }), [...fixed, 2, 1, ...le(1, 4), ...le(9, 4)], [[run, W], [runner, RS], [model, R], [weight, R]], 'StartRun')
  assert.deepEqual([...start('drawn', { text: 'Once' }).data!], [...fixed, 1, 0, ...le(4, 4), ...new TextEncoder().encode('Once')])
  assert.deepEqual([...start('none', { text: new Uint8Array([0xe2, 0x82]) }).data!], [...fixed, 0, 0, ...le(2, 4), 0xe2, 0x82])
  assert.deepEqual([...start('none', { tokenIds: [] }).data!], [...fixed, 0, 1, ...le(0, 4)])
  assert.throws(() => seedSourceCode('random' as 'none'), /seed source random is not none, drawn or chosen/)
  // The SDK's seed source names, in the order of the generated enum's values.
  assert.deepEqual(SEED_SOURCES.map((n) => SeedSource[seedSourceCode(n)]), ['None', 'Drawn', 'Chosen'])
})

test('a signer passed to a builder rides in its account meta', () => {
  const s = signer(runner)
  const ix = getCloseRunInstruction({ run, runner: s, runSeeds: null })
  assert.equal((ix.accounts[1] as { signer?: unknown }).signer, s)
  assert.equal(ix.accounts[1].role, AccountRole.WRITABLE_SIGNER)
})

test('programError names every IDL error, code by code, with its message', () => {
  const errors = program.errors
  errors.forEach((e: Node, i: number) => {
    assert.equal(e.code, i)
    assert.deepEqual(programError(i), { code: i, name: e.name[0].toUpperCase() + e.name.slice(1), message: e.message })
  })
  assert.equal(programError(errors.length), undefined)
  assert.equal(programError(42)?.name, 'SeedNotReady')
})

test('a changed IDL changes the render: generate --check names the changed file and exits 1', () => {
  const dir = mkdtempSync(join(tmpdir(), 'curta-idl-'))
  try {
    const check = (idlFile: string) =>
      spawnSync(process.execPath, [join(sdkDir, 'scripts', 'generate.mjs'), '--check', '--idl', idlFile], { cwd: sdkDir, encoding: 'utf8' })
    const same = check(join(repoDir, 'idl', 'curta.json'))
    assert.equal(same.status, 0, same.stderr)
    // Step's budget renamed: the step instruction's file changes, and nothing else.
    const changed = structuredClone(idl)
    named(named(changed.program.instructions, 'step').arguments, 'budget').name = 'unitBudget'
    writeFileSync(join(dir, 'renamed.json'), JSON.stringify(changed))
    const renamed = check(join(dir, 'renamed.json'))
    assert.equal(renamed.status, 1)
    assert.deepEqual(renamed.stderr.split('\n').filter((l) => /^\s+(changed|missing|extra):/.test(l)).map((l) => l.trim()), ['changed: src/generated/instructions/step.ts'])
    // An instruction added: a file the committed folder lacks, and the indexes that list it.
    const added = structuredClone(idl)
    added.program.instructions.push({ ...structuredClone(named(idl.program.instructions, 'reopen')), name: 'reopenAgain' })
    writeFileSync(join(dir, 'added.json'), JSON.stringify(added))
    const more = check(join(dir, 'added.json'))
    assert.equal(more.status, 1)
    assert.match(more.stderr, /missing: src\/generated\/instructions\/reopenAgain\.ts/)
    assert.match(more.stderr, /changed: src\/generated\/instructions\/index\.ts/)
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
})


/** Account bytes from sample field values, written by the IDL encoder. */
function idlAccount(account: string, values: Record<string, Node>): Uint8Array {
  const out: number[] = []
  for (const f of named(program.accounts, account).data.fields) {
    const value =
      f.name in values ? values[f.name] : f.defaultValue?.kind === 'bytesValueNode' ? new TextEncoder().encode(f.defaultValue.data) : (f.defaultValue?.number ?? new Uint8Array(fixedSize(f.type)!))
    encode(f.type, value, out)
  }
  return new Uint8Array(out)
}

test('decodeModelAccount and decodeWeightHeader read IDL-written accounts', () => {
  const config = { dim: 64, hiddenDim: 172, layers: 5, heads: 8, kvHeads: 4, vocabSize: 512, contextLength: 512 }
  const lengths = [70_000, 800_000, ...Array(16).fill(0)]
  const accounts = [key(20), key(21), ...Array(16).fill(dec.decode(new Uint8Array(32)))]
  const data = idlAccount('model', {
    state: 'sealed',
    bump: 254,
    sectionCount: 2,
    sealPass: 3,
    authority,
    weightsHash: new Uint8Array(32).fill(9),
    runningHash: new Uint8Array(32).fill(9),
    sealCursor: 14,
    totalChunks: 14,
    config,
    sealSectionFirstChunk: 2,
    sealSection: 1,
    creation: 77n,
    sectionLengths: lengths,
    weightAccounts: accounts,
  })
  assert.equal(data.length, named(program.accounts, 'model').size)
  const m = decodeModelAccount(data)
  assert.equal(m.state, 'Sealed')
  assert.deepEqual([m.bump, m.sectionCount, m.sealPass, m.sealCursor, m.totalChunks], [254, 2, 3, 14, 14])
  assert.equal(m.authority, authority)
  assert.deepEqual(m.config, config)
  assert.deepEqual(m.sectionLengths, [70_000, 800_000])
  assert.deepEqual(m.weightAccounts, [key(20), key(21)])
  const section = new Uint8Array(100).fill(3)
  const w = idlAccount('weight', { frozen: true, section: 1, length: 100, model, authority, sectionBytes: section })
  assert.deepEqual(decodeWeightHeader(w), { frozen: true, section: 1, length: 100, model, authority })
})

/** A state buffer: its header by hand (docs/inference.md), the prompt and generated ids. */
function stateBuffer(config: Record<string, number>, length: number, s: { prompt: number[]; generated: number[]; status: number; position: number; steps: number }) {
  const b = new Uint8Array(length)
  const v = new DataView(b.buffer)
  b.set(new TextEncoder().encode('CURTAS01'))
  v.setUint32(8, s.prompt.length, true)
  v.setUint32(12, s.steps, true)
  v.setUint32(16, s.generated.length, true)
  v.setUint32(20, s.status, true)
  v.setUint32(28, s.position, true)
  Object.values(config).forEach((x, i) => v.setUint32(76 + 4 * i, x, true))
  ;[...s.prompt, ...s.generated].forEach((id, i) => v.setUint32(128 + 4 * i, id, true))
  return b
}

test('decodeRunAccount reads an IDL-written run account: header, status, position, prompt, generated ids and text', () => {
  const config = { dim: 8, hiddenDim: 16, layers: 1, heads: 2, kvHeads: 1, vocabSize: 32, contextLength: 12 }
  const steps = 3
  const stateLen = stateLength(config)
  // By hand: 128 + tokens 4 × 13 + x, xb, q 3 × 32 + hb 64 + att 48 + logits 128 + hist 16,388 + caches 2 × 4 × 1 × 12 × 4.
  assert.equal(stateLen, 128 + 52 + 96 + 64 + 48 + 128 + 16_388 + 384)
  const text = new TextEncoder().encode(' Once upon')
  const body = new Uint8Array(stateLen + 128 * steps)
  body.set(stateBuffer(config, stateLen, { prompt: [1, 5], generated: [7, 9, 11], status: 2, position: 4, steps }))
  body.set(text, stateLen)
  const slotHash = Uint8Array.from({ length: 32 }, (_, i) => 200 - i)
  const values = {
    seedSource: 'drawn',
    dispute: false,
    nonce: 0x2a,
    model,
    runner,
    stepsLanded: 19,
    textLength: text.length,
    textCapacity: 128 * steps,
    stateLength: stateLen,
    temperature: 52_429,
    topP: 58_982,
    runnerSeed: 0x0102030405060708n,
    startSlot: 1000n,
    seedSlot: 1000n,
    seedInForce: 0xfedcba9876543210n,
    slotHash,
    encoding: 0,
    body,
  }
  const data = idlAccount('run', values)
  assert.equal(data.length, runAccountLength(config, steps))
  const r = decodeRunAccount(data)
  assert.equal(r.version, 2)
  assert.equal(r.seedSource, 'drawn')
  assert.deepEqual(
    [r.nonce, r.model, r.runner, r.stepsLanded, r.textLength, r.textCapacity, r.stateLength, r.temperature, r.topP],
    [0x2a, model, runner, 19, text.length, 384, stateLen, 52_429, 58_982],
  )
  assert.deepEqual([r.runnerSeed, r.startSlot, r.seedSlot, r.seedInForce], [0x0102030405060708n, 1000n, 1000n, 0xfedcba9876543210n])
  assert.deepEqual([...r.slotHash], [...slotHash])
  assert.deepEqual(r.state, { status: 'done', statusCode: 2, position: 4, steps, promptLength: 2, generated: 3, config })
  assert.deepEqual(r.promptTokens, [1, 5])
  assert.deepEqual(r.generatedTokens, [7, 9, 11])
  assert.equal(new TextDecoder().decode(r.text), ' Once upon')
  assert.equal(r.finished, true)
  assert.equal(r.encoding, false)
  assert.equal(r.dispute, false)
  // A claim's dispute run (header byte 10): CloseRun refuses it, Resolve closes it.
  assert.equal(decodeRunAccount(idlAccount('run', { ...values, dispute: true })).dispute, true)

  // A run still tokenizing its text prompt (header byte 168 is 1): its state buffer holds the
  // encoding, not a state; it reads as running at position 0 with no tokens, unfinished.
  const encodingBody = new Uint8Array(stateLen + 128 * steps)
  encodingBody.set(new TextEncoder().encode('ENC1'))
  const tokenizing = decodeRunAccount(idlAccount('run', { ...values, textLength: 0, stepsLanded: 2, encoding: 1, body: encodingBody }))
  assert.equal(tokenizing.encoding, true)
  assert.equal(tokenizing.finished, false)
  assert.equal(tokenizing.stepsLanded, 2)
  assert.deepEqual([tokenizing.state.status, tokenizing.state.position, tokenizing.state.steps, tokenizing.state.generated], ['running', 0, steps, 0])
  assert.deepEqual([tokenizing.promptTokens, tokenizing.generatedTokens, tokenizing.text.length], [[], [], 0])

  // What the program refuses as a run, the decoder refuses too.
  const refused = (bytes: Uint8Array, field: RegExp) =>
    assert.throws(() => decodeRunAccount(bytes), (e: unknown) => e instanceof CurtaAccountError && e.code === 'NotARun' && field.test(e.message))
  refused(data.slice(0, 191), /data length/)
  refused(data.slice(0, data.length - 1), /data length/)
  const wrongVersion = data.slice()
  wrongVersion[8] = 1
  refused(wrongVersion, /layout version/)
  const wrongMagic = data.slice()
  wrongMagic[0] = 0x41
  refused(wrongMagic, /magic/)
  const longText = data.slice()
  new DataView(longText.buffer).setUint32(84, 385, true)
  refused(longText, /text length/)
  const source = data.slice()
  source[9] = 3
  refused(source, /seed source/)
})

test('stateLength is the documented 679,480 bytes for stories260K and 3,692,040 for the stories15M shape', () => {
  assert.equal(stateLength({ dim: 64, hiddenDim: 172, layers: 5, heads: 8, kvHeads: 4, vocabSize: 512, contextLength: 512 }), 679_480)
  assert.equal(stateLength({ dim: 288, hiddenDim: 768, layers: 6, heads: 6, kvHeads: 6, vocabSize: 32_000, contextLength: 256 }), 3_692_040)
})

test('runSeed and runAddress: create_with_seed(runner, "run-<model[..8] hex>-<nonce hex>", program) by node:crypto', async () => {
  const m = dec.decode(Uint8Array.from({ length: 32 }, (_, i) => i * 17))
  assert.equal(runSeed(m, 42), 'run-0011223344556677-0000002a')
  assert.equal(runSeed(m, 0xffffffff), 'run-0011223344556677-ffffffff')
  const expected = createHash('sha256')
    .update(enc.encode(runner) as Uint8Array)
    .update('run-0011223344556677-0000002a')
    .update(enc.encode(CURTA_PROGRAM_ID) as Uint8Array)
    .digest()
  assert.equal(await runAddress(CURTA_PROGRAM_ID, runner, m, 42), dec.decode(new Uint8Array(expected)))
})

test('drawnSeed is the first 8 bytes of SHA-256("curta-seed" ‖ seed ‖ run ‖ start slot ‖ slot hash), by node:crypto', () => {
  const slotHash = Uint8Array.from({ length: 32 }, (_, i) => i + 100)
  const le = (v: bigint) => {
    const b = Buffer.alloc(8)
    b.writeBigUInt64LE(v)
    return b
  }
  const digest = createHash('sha256')
    .update('curta-seed')
    .update(le(0xabcdefn))
    .update(enc.encode(run) as Uint8Array)
    .update(le(123_456n))
    .update(slotHash)
    .digest()
  assert.equal(drawnSeed(0xabcdefn, run, 123_456n, slotHash), digest.readBigUInt64LE(0))
})

test('completeUtf8 stops before a character split over tokens', () => {
  const bytes = new TextEncoder().encode('a€b😀')
  assert.equal(completeUtf8(bytes), 'a€b😀')
  assert.equal(completeUtf8(bytes.subarray(0, 2)), 'a')
  assert.equal(completeUtf8(bytes.subarray(0, 3)), 'a')
  assert.equal(completeUtf8(bytes.subarray(0, 4)), 'a€')
  assert.equal(completeUtf8(bytes.subarray(0, 7)), 'a€b')
  assert.equal(completeUtf8(bytes.subarray(0, 8)), 'a€b')
})

test("Codama's own codecs (@codama/dynamic-codecs) read the IDL: every builder's bytes, and a run account decoded to the SDK's values", () => {
  const codec = (node: Node) => getNodeCodec([idl, program, node] as unknown as Parameters<typeof getNodeCodec>[0])
  const instruction = (name: string) => named(program.instructions, name)
  const b16 = (b: Uint8Array) => ['base16', Buffer.from(b).toString('hex')]
  const encode = (name: string, values: Record<string, unknown>) =>
    [...codec(instruction(name)).encode({ discriminator: instruction(name).arguments[0].defaultValue.number, ...values })]
  const hash = Uint8Array.from({ length: 32 }, (_, i) => i * 3)
  const bytes = Uint8Array.from({ length: 40 }, (_, i) => 255 - i)
  const cases: [string, Record<string, unknown>, Instruction][] = [
    ['createModel', { weightsHash: b16(hash), sectionLengths: [4096, 99] }, getCreateModelInstruction({ authority: signer(authority), model, weightsHash: hash, sectionLengths: [4096, 99] })],
    ['initWeightAccount', { section: 5 }, getInitWeightAccountInstruction({ model, weight, authority: signer(authority), section: 5 })],
    ['write', { offset: 77, bytes: b16(bytes) }, getWriteInstruction({ weight, authority: signer(authority), offset: 77, bytes })],
    ['seal', { pass: 2, chunk: 9, creation: 123_456_789n }, sealInstruction({ model, weight, pass: 2, chunk: 9, creation: 123_456_789n })],
    ['reopen', {}, getReopenInstruction({ model, authority: signer(authority), weights })],
    ['close', {}, getCloseInstruction({ model, authority: signer(authority), destination, weights })],
    [
      'startRun',
      { nonce: 3, steps: 40, temperature: 52_429, topP: 58_982, seed: 0xffee_ddcc_bbaa_9988n, seedSource: 1, prompt: { __kind: 'Text', fields: [b16(new TextEncoder().encode('Once'))] } },
      getStartRunInstruction({ run, runner: signer(runner), model, sectionZero: weight, nonce: 3, steps: 40, temperature: 52_429, topP: 58_982, seed: 0xffee_ddcc_bbaa_9988n, seedSource: seedSourceCode('drawn'), prompt: promptArgs({ text: 'Once' }) }),
    ],
    ['step', { ticket: 11, budget: 1000 }, getStepInstruction({ run, model, weights, ticket: 11, budget: 1000 })],
    ['closeRun', { runSeeds: null }, getCloseRunInstruction({ run, runner: signer(runner), runSeeds: null })],
    ['closeRun', { runSeeds: { model, nonce: 8 } }, getCloseRunInstruction({ run, runner: signer(runner), runSeeds: { model, nonce: 8 } })],
  ]
  for (const [name, values, built] of cases) assert.deepEqual(encode(name, values), [...built.data!], `${name}: Codama's codec`)

  // A run account: Codama's account codec decodes what the IDL encoder wrote, field by field as decodeRunAccount does.
  const config = { dim: 8, hiddenDim: 16, layers: 1, heads: 2, kvHeads: 1, vocabSize: 32, contextLength: 12 }
  const stateLen = stateLength(config)
  const body = new Uint8Array(stateLen + 128)
  body.set(stateBuffer(config, stateLen, { prompt: [1], generated: [4], status: 1, position: 1, steps: 1 }))
  const data = idlAccount('run', {
    seedSource: 'chosen', dispute: false, nonce: 9, model, runner, stepsLanded: 3, textLength: 0, textCapacity: 128, stateLength: stateLen,
    temperature: 1, topP: 2, runnerSeed: 77n, startSlot: 5n, seedSlot: 0n, seedInForce: 77n, slotHash: new Uint8Array(32), encoding: 0, body,
  })
  const decoded = codec(named(program.accounts, 'run')).decode(data) as Record<string, unknown>
  const ours = decodeRunAccount(data)
  assert.equal(decoded.seedSource, SEED_SOURCES.indexOf(ours.seedSource))
  for (const field of ['nonce', 'model', 'runner', 'stepsLanded', 'textLength', 'textCapacity', 'stateLength', 'temperature', 'topP'] as const)
    assert.equal(decoded[field], ours[field], field)
  assert.equal(decoded.encoding, 0)
  assert.equal(ours.encoding, false)
  for (const field of ['runnerSeed', 'startSlot', 'seedSlot', 'seedInForce'] as const) assert.equal(BigInt(decoded[field] as bigint), ours[field], field)
})

test("claims: Codama's codecs encode the claim instructions to the builders' bytes, and decodeClaim reads an IDL-written claim account", () => {
  const codec = (node: Node) => getNodeCodec([idl, program, node] as unknown as Parameters<typeof getNodeCodec>[0])
  const instruction = (name: string) => named(program.instructions, name)
  const b16 = (b: Uint8Array) => ['base16', Buffer.from(b).toString('hex')]
  const encode = (name: string, values: Record<string, unknown>) =>
    [...codec(instruction(name)).encode({ discriminator: instruction(name).arguments[0].defaultValue.number, ...values })]
  const hash = Uint8Array.from({ length: 32 }, (_, i) => 200 - i)
  const terms = { nonce: 3, steps: 64, temperature: 52_429, topP: 58_982, seed: 0xffee_ddcc_bbaa_9988n, window: 150, priorityPrice: 10_000n, bond: 985_000n }
  const cases: [string, Record<string, unknown>, Instruction][] = [
    [
      'openClaim',
      { ...terms, seedSource: 1, prompt: { __kind: 'TokenIds', fields: [[1, 400]] } },
      getOpenClaimInstruction({ claim: run, claimer: signer(runner), model, ...terms, seedSource: seedSourceCode('drawn'), prompt: promptArgs({ tokenIds: [1, 400] }) }),
    ],
    ['answerClaim', { tokenCount: 33, answerHash: b16(hash) }, getAnswerClaimInstruction({ claim: run, claimer: signer(runner), tokenCount: 33, answerHash: hash })],
    ['challenge', { nonce: 9 }, getChallengeInstruction({ claim: run, challenger: signer(runner), run: destination, model, sectionZero: weight, nonce: 9 })],
    ['resolve', {}, getResolveInstruction({ claim: run, run: destination, claimer: runner, challenger: authority })],
    ['closeClaim', {}, getCloseClaimInstruction({ claim: run, claimer: signer(runner) })],
  ]
  for (const [name, values, built] of cases) assert.deepEqual(encode(name, values), [...built.data!], `${name}: Codama's codec`)
  const prompt = new Uint8Array([0, 4, 0, 0, 0, ...new TextEncoder().encode('Once')])
  const values = {
    state: 'answered', seedSource: 'chosen', nonce: 77, model, claimer: runner, challenger: dec.decode(new Uint8Array(32)), disputeRun: dec.decode(new Uint8Array(32)),
    steps: 64, temperature: 52_429, topP: 58_982, window: 150, claimerSeed: 5n, openSlot: 10n, answerSlot: 12n, seedInForce: 5n, slotHash: new Uint8Array(32),
    bond: 985_000n, priorityPrice: 0n, tokenCount: 33, promptLength: prompt.length, answerHash: hash, prompt,
  }
  const data = idlAccount('claim', values)
  const c = decodeClaim(data)
  assert.deepEqual(
    [c.state, c.seedSource, c.nonce, c.model, c.claimer, c.challenger, c.steps, c.window, c.claimerSeed, c.openSlot, c.answerSlot, c.bond, c.tokenCount, c.promptLength],
    ['answered', 'chosen', 77, model, runner, null, 64, 150, 5n, 10n, 12n, 985_000n, 33, 9],
  )
  assert.deepEqual([...c.answerHash], [...hash])
  assert.deepEqual(c.prompt, { text: new TextEncoder().encode('Once') })
  const decoded = codec(named(program.accounts, 'claim')).decode(data) as Record<string, unknown>
  for (const field of ['nonce', 'model', 'claimer', 'steps', 'temperature', 'topP', 'window', 'tokenCount', 'promptLength'] as const) assert.equal(decoded[field], c[field], field)
})
