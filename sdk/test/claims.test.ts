// Claims in the SDK against the interface crate and the Rust core, off chain:
// - golden/claims.json is what the interface crate computes (test/claims-reference, run by
//   scripts/sdk-test and compared with the committed file): claim addresses, the bond rule and
//   each count it is made of (greedy and sampled), RunUnits (the closed form the program
//   evaluates), answer hashes, a drawn claim's seed, and a claim account written at the crate's
//   own field offsets; one bond worked out by hand from cost.rs's formula;
// - claim accounts written here by hand from the layout's offsets (support/claims.ts), decoded,
//   and every refusal of the program's `ClaimView::new`;
// - the five claim instructions' bytes and accounts, written out by hand;
// - verifyClaim on stories260K against the Rust core's runs (golden/run.json): agrees on the
//   honest answer, disagrees on one id changed, one token fewer, or the text changed.
import { test, before } from 'node:test'
import assert from 'node:assert/strict'
import { type Address, AccountRole, createNoopSigner, getAddressDecoder } from '@solana/kit'
import {
  CLAIM_HEADER_LEN,
  CURTA_PROGRAM_ID,
  CurtaAccountError,
  Runner,
  answerHash,
  claimAccountLength,
  claimAddress,
  claimAnswer,
  claimBond,
  claimDrawnSeed,
  claimSeed,
  claimSettled,
  decodeClaim,
  disputeTransactions,
  encodeTransactionsBound,
  MAX_PRIORITY_PRICE,
  getAnswerClaimInstruction,
  getChallengeInstruction,
  getCloseClaimInstruction,
  getOpenClaimInstruction,
  getResolveInstruction,
  programError,
  promptArgs,
  promptTokensBound,
  promptWireBytes,
  runTransactionsBound,
  runUnits,
  seedSourceCode,
  verifyClaim,
  type ClaimAccount,
  type RunPrompt,
} from '../src/index.js'
import { golden, hex, readArtifact, unhex } from './support/files.js'
import { type ClaimFields, idsWire, nodeAnswerHash, textWire, writeClaim } from './support/claims.js'

const ref = golden('claims')
const program = ref.programId as Address
const model = ref.model as Address
const claimer = ref.claimer as Address
const key = (seed: number): Address => getAddressDecoder().decode(Uint8Array.from({ length: 32 }, (_, i) => (seed * 31 + i * 7) & 0xff))
const le = (v: number | bigint, size: number) => Array.from({ length: size }, (_, i) => Number((BigInt(v) >> BigInt(8 * i)) & 0xffn))
const refPrompt = (p: { textHex?: string; tokenIds?: number[] }): RunPrompt => (p.textHex !== undefined ? { text: unhex(p.textHex) } : { tokenIds: p.tokenIds! })

test('claimSeed and claimAddress are the interface crate\'s (golden/claims.json, from claim_seed and claim_address)', async () => {
  for (const a of ref.addresses) {
    assert.equal(claimSeed(model, a.nonce), a.seed)
    assert.equal(a.seed.length, 31)
    assert.equal(await claimAddress(program, claimer, model, a.nonce), a.address, `nonce ${a.nonce}`)
  }
  assert.throws(() => claimSeed(model, -1), /not a u32/)
  assert.throws(() => claimSeed(model, 2 ** 32), /not a u32/)
})

test('claimBond and every count it is made of are the interface crate\'s cost.rs, case by case (stories260K, the stories15M shape, a grouped-query shape; greedy and sampled; text and ids; prices to MAX_PRIORITY_PRICE and past it)', () => {
  let refused = 0
  for (const b of ref.bonds) {
    const prompt = refPrompt(b.prompt)
    const what = `${JSON.stringify(b.config)} ${JSON.stringify(b.prompt).slice(0, 40)} steps ${b.steps} temperature ${b.temperature} price ${b.priorityPrice}`
    assert.equal(promptTokensBound(prompt), b.promptTokensBound, `${what}: prompt tokens`)
    assert.equal(runTransactionsBound(b.config, b.promptTokensBound, b.steps, b.temperature), BigInt(b.runTransactions), `${what}: run transactions`)
    if ('text' in prompt) assert.equal(encodeTransactionsBound((prompt.text as Uint8Array).length, b.config.vocabSize), BigInt(b.encodeTransactions), `${what}: encoding`)
    assert.equal(disputeTransactions(b.config, prompt, b.steps, b.temperature), BigInt(b.disputeTransactions), `${what}: dispute transactions`)
    if (b.bond === null) {
      // claim_bond is None above MAX_PRIORITY_PRICE (OpenClaim refuses: InvalidPriorityPrice).
      assert.throws(() => claimBond(b.config, prompt, b.steps, b.temperature, BigInt(b.priorityPrice)), (e: unknown) => e instanceof RangeError && /MAX_PRIORITY_PRICE/.test(e.message), what)
      refused++
    } else assert.equal(claimBond(b.config, prompt, b.steps, b.temperature, BigInt(b.priorityPrice)), BigInt(b.bond), `${what}: bond`)
  }
  assert.equal(refused, 2)
  const s260 = { dim: 64, hiddenDim: 172, layers: 5, heads: 8, kvHeads: 4, vocabSize: 512, contextLength: 512 }
  // By hand from cost.rs, independently of the crate: stories260K, ids [1], 64 greedy steps at
  // price 0. kv = 64·4/8 = 32, head size 8 (head 1,000, 104 a position); row(64) = 220 + 0 + 0 +
  // 36 = 256, row(172) = 591 + 6 + 0 + 36 = 633; a layer: norms 2·2,648, query 64·(256 + 620/64)
  // = 16,960, key 32·(256 + 19) = 8,800, value 32·295 = 9,440, rotary 4,040, attention 8·1,000,
  // output 64·295 = 18,880, hidden 172·(512 + 620/172 + 60) = 98,900, down 64·(633 + 30 +
  // 1,160/64) = 43,584: 213,900; layers 968 + 5·213,900 = 1,070,468; per position 5·8·104 =
  // 4,160; end (greedy) 2,648 + 512·(256 + 1) + 10·512 = 139,352; largest item rotary's 4,040,
  // attention at the last position 64·104 + 1,000 = 7,656. Units: 64·1,070,468 + (64·65/2)·4,160
  // + 64·139,352 = 86,081,280, over 1,175,000 − 7,656 = 1,167,344 a step: 74, plus a stop a token
  // (64) and one: 139 steps; with Challenge and Resolve 141 transactions at 5,000 lamports.
  assert.deepEqual(runUnits(s260, 0), { layers: 1_070_468n, perPosition: 4_160n, end: 139_352n, largest: 4_040n, head: 1_000n, headPerPosition: 104n })
  assert.equal(runTransactionsBound(s260, 1, 64, 0), 139n)
  assert.equal(claimBond(s260, { tokenIds: [1] }, 64, 0, 0n), 141n * 5_000n)
  // docs/program.md's figure: 256 sampled tokens of the stories15M shape from token 1 is at most
  // 14,842 step transactions, a bond of 92,775,000 lamports at 1,000 micro-lamports a unit.
  const s15 = { dim: 288, hiddenDim: 768, layers: 6, heads: 6, kvHeads: 6, vocabSize: 32_000, contextLength: 256 }
  assert.equal(runTransactionsBound(s15, 1, 256, 52_429), 14_842n)
  assert.equal(claimBond(s15, { tokenIds: [1] }, 256, 52_429, 1_000n), 92_775_000n)
  // A string prompt counts its UTF-8 bytes, as the wire carries them.
  const accented = ref.bonds.find((b: { prompt: { textHex?: string } }) => b.prompt.textHex === hex(new TextEncoder().encode('héllo ✓')))
  assert.equal(claimBond(s260, { text: 'héllo ✓' }, 9, accented.temperature, 999_999n), BigInt(accented.bond))
  // The temperature counts only by being 0 or not.
  assert.equal(claimBond(s260, { tokenIds: [1] }, 64, 1, 0n), claimBond(s260, { tokenIds: [1] }, 64, 65_536, 0n))
  assert.ok(claimBond(s260, { tokenIds: [1] }, 64, 1, 0n) > claimBond(s260, { tokenIds: [1] }, 64, 0, 0n))
  assert.ok(claimBond(s260, { tokenIds: [1] }, 1, 0, MAX_PRIORITY_PRICE) > 0n)
  assert.throws(() => claimBond(s260, { tokenIds: [1] }, 1, 0, MAX_PRIORITY_PRICE + 1n), RangeError)
  assert.throws(() => claimBond(s260, { tokenIds: [1] }, 1, 0, -1n), RangeError)
})

test('runUnits is cost.rs\'s RunUnits::of, greedy and sampled (stories260K, the stories15M shape, a grouped-query shape, 16 layers of heads of eight values)', () => {
  assert.equal(ref.runUnits.length, 8)
  for (const { config, temperature, ...expected } of ref.runUnits) {
    const ours = runUnits(config, temperature)
    assert.deepEqual(
      Object.fromEntries(Object.entries(ours).map(([k, v]) => [k, v.toString()])),
      expected,
      `${JSON.stringify(config)} temperature ${temperature}`,
    )
  }
})

test('answerHash is the interface crate\'s answer_hash, and node:crypto\'s SHA-256 of the ids (u32 LE) then the text', () => {
  for (const a of ref.answerHashes) {
    assert.equal(hex(answerHash(a.ids, unhex(a.textHex))), a.hash)
    assert.equal(hex(nodeAnswerHash(a.ids, unhex(a.textHex))), a.hash)
  }
  assert.throws(() => answerHash([-1], new Uint8Array()), /not a u32/)
})

test('claimDrawnSeed is the run derivation over the claim address and open slot, as the crate computes it', () => {
  const d = ref.drawnSeed
  assert.equal(claimDrawnSeed(BigInt(d.claimerSeed), d.claim, BigInt(d.openSlot), unhex(d.slotHash)), BigInt(d.seed))
})

const sample: ClaimFields = {
  state: 3,
  seedSource: 2,
  nonce: 0xdeadbeef,
  model,
  claimer,
  challenger: key(7),
  disputeRun: key(8),
  steps: 64,
  temperature: 52_429,
  topP: 58_982,
  window: 432_000,
  claimerSeed: 0xfedc_ba98_7654_3210n,
  openSlot: 1_000_000n,
  answerSlot: 1_000_002n,
  seedInForce: 0xfedc_ba98_7654_3210n,
  slotHash: Uint8Array.from({ length: 32 }, (_, i) => 255 - i),
  bond: 985_000n,
  priorityPrice: 10_000n,
  tokenCount: 33,
  answerHash: Uint8Array.from({ length: 32 }, (_, i) => i * 5),
  prompt: idsWire([1, 400, 0xffff_ffff]),
}

test('decodeClaim reads a claim account written by hand at the layout\'s offsets, field by field', () => {
  const data = writeClaim(sample)
  assert.equal(data.length, CLAIM_HEADER_LEN + 5 + 12)
  assert.equal(data.length, claimAccountLength({ tokenIds: [1, 400, 0xffff_ffff] }))
  const c = decodeClaim(data, key(9))
  const expected: Omit<ClaimAccount, 'slotHash' | 'answerHash' | 'promptBytes'> = {
    address: key(9),
    version: 1,
    state: 'challenged',
    stateCode: 3,
    seedSource: 'chosen',
    nonce: 0xdeadbeef,
    model,
    claimer,
    challenger: key(7),
    disputeRun: key(8),
    steps: 64,
    temperature: 52_429,
    topP: 58_982,
    window: 432_000,
    claimerSeed: 0xfedc_ba98_7654_3210n,
    openSlot: 1_000_000n,
    answerSlot: 1_000_002n,
    seedInForce: 0xfedc_ba98_7654_3210n,
    bond: 985_000n,
    priorityPrice: 10_000n,
    tokenCount: 33,
    promptLength: 17,
    prompt: { tokenIds: [1, 400, 0xffff_ffff] },
    windowEnd: 1_432_002n,
  }
  const { slotHash, answerHash: hash, promptBytes, ...rest } = c
  assert.deepEqual(rest, expected)
  assert.deepEqual([...slotHash], [...sample.slotHash!])
  assert.deepEqual([...hash], [...sample.answerHash!])
  assert.deepEqual([...promptBytes], [...sample.prompt])
  // An open claim: no challenger, no dispute run, no window end yet; a text prompt.
  const open = decodeClaim(writeClaim({ ...sample, state: 1, seedSource: 1, challenger: undefined, disputeRun: undefined, answerSlot: 0n, seedInForce: 0n, prompt: textWire('Once upon a time') }))
  assert.deepEqual([open.state, open.seedSource, open.challenger, open.disputeRun, open.windowEnd, open.address], ['open', 'drawn', null, null, 0n, undefined])
  assert.deepEqual(open.prompt, { text: new TextEncoder().encode('Once upon a time') })
  // The SDK's prompt wire bytes are the layout's.
  assert.deepEqual([...promptWireBytes({ text: 'Once upon a time' })], [...textWire('Once upon a time')])
  assert.deepEqual([...promptWireBytes({ tokenIds: [1, 400, 0xffff_ffff] })], [...idsWire([1, 400, 0xffff_ffff])])
})

test('decodeClaim reads the claim account the interface crate wrote at its own field offsets (claim_field)', () => {
  const c = decodeClaim(unhex(ref.account.data))
  const d = ref.drawnSeed
  assert.deepEqual(
    [c.state, c.seedSource, c.nonce, c.model, c.claimer, c.challenger, c.disputeRun, c.steps, c.temperature, c.topP, c.window],
    ['answered', 'drawn', 42, model, claimer, null, null, 64, 52_429, 58_982, 150],
  )
  assert.deepEqual([c.claimerSeed, c.openSlot, c.answerSlot, c.seedInForce, c.bond, c.priorityPrice, c.tokenCount], [BigInt(d.claimerSeed), BigInt(d.openSlot), BigInt(d.openSlot) + 3n, BigInt(d.seed), 985_000n, 17n, 33])
  assert.equal(hex(c.slotHash), d.slotHash)
  assert.equal(hex(c.answerHash), ref.answerHashes[0].hash)
  assert.deepEqual(c.prompt, { text: new TextEncoder().encode('Once upon a time') })
  assert.equal(c.windowEnd, BigInt(d.openSlot) + 3n + 150n)
})

test('decodeClaim refuses what ClaimView::new refuses, naming the field (NotAClaim)', () => {
  const data = writeClaim(sample)
  const refused = (bytes: Uint8Array, field: RegExp) =>
    assert.throws(
      () => decodeClaim(bytes),
      (e: unknown) => e instanceof CurtaAccountError && e.code === 'NotAClaim' && field.test(e.message),
      field.source,
    )
  const changed = (f: (d: Uint8Array) => void) => {
    const d = data.slice()
    f(d)
    return d
  }
  refused(data.slice(0, 279), /data length is 279 bytes, expected at least 280 bytes/)
  refused(changed((d) => (d[0] = 0x41)), /magic \(byte 0\) is "AURTACLM"/)
  refused(changed((d) => (d[8] = 2)), /layout version \(byte 8\) is 2, expected 1/)
  refused(changed((d) => (d[9] = 0)), /state \(byte 9\) is 0, expected 1 to 5/)
  refused(changed((d) => (d[9] = 6)), /state \(byte 9\) is 6/)
  refused(changed((d) => (d[10] = 3)), /seed source \(byte 10\) is 3/)
  // The prompt length is the rest of the data: one byte more or less is refused.
  refused(data.slice(0, data.length - 1), /prompt length \(byte 244\) is 17, expected the data after the 280-byte header, 16/)
  const longer = new Uint8Array(data.length + 1)
  longer.set(data)
  refused(longer, /prompt length \(byte 244\) is 17, expected .* 18/)
  // The prompt's own bytes must be exactly one prompt.
  refused(changed((d) => (d[280] = 2)), /prompt \(byte 280\)/)
  refused(changed((d) => new DataView(d.buffer).setUint32(281, 2, true)), /prompt \(byte 280\)/)
  refused(writeClaim({ ...sample, prompt: new Uint8Array([0, 1, 0]) }), /prompt \(byte 280\)/)
  // The reserved byte is not checked (ClaimView::new does not either).
  assert.equal(decodeClaim(changed((d) => (d[11] = 9))).nonce, 0xdeadbeef)
})

test('claimSettled: answered and past its window, or upheld', () => {
  const c = decodeClaim(writeClaim({ ...sample, state: 2 }))
  assert.equal(claimSettled(c, 1_432_002n), false)
  assert.equal(claimSettled(c, 1_432_003n), true)
  for (const [state, settled] of [[1, false], [3, false], [4, true], [5, false]] as const)
    assert.equal(claimSettled(decodeClaim(writeClaim({ ...sample, state })), 2n ** 40n), settled, `state ${state}`)
})

test('the claim instructions\' bytes and accounts, written out by hand (OpenClaim 9 to CloseClaim 13), and their errors by name', () => {
  const [claim, run, sectionZero, challenger] = [key(1), key(2), key(3), key(4)]
  const [R, W, RS, WS] = [AccountRole.READONLY, AccountRole.WRITABLE, AccountRole.READONLY_SIGNER, AccountRole.WRITABLE_SIGNER]
  const roles = (ix: { accounts: readonly { address: Address; role: AccountRole }[] }) => ix.accounts.map((a) => [a.address, a.role])
  const open = getOpenClaimInstruction({
    claim, claimer: createNoopSigner(claimer), model, nonce: 7, steps: 64, temperature: 52_429, topP: 58_982, seed: 0x0102030405060708n,
    seedSource: seedSourceCode('drawn'), window: 150, priorityPrice: 10_000n, bond: 985_000n, prompt: promptArgs({ text: 'Once' }),
  })
  // 0 tag; 1 nonce; 5 steps; 9 temperature; 13 top-p; 17 seed; 25 seed source; 26 window; 30 priority price; 38 bond; 46 prompt.
  assert.deepEqual([...open.data], [9, ...le(7, 4), ...le(64, 4), ...le(52_429, 4), ...le(58_982, 4), ...le(0x0102030405060708n, 8), 1, ...le(150, 4), ...le(10_000, 8), ...le(985_000, 8), 0, ...le(4, 4), ...new TextEncoder().encode('Once')])
  assert.deepEqual(roles(open), [[claim, W], [claimer, RS], [model, R]])
  const hash = Uint8Array.from({ length: 32 }, (_, i) => i)
  const answer = getAnswerClaimInstruction({ claim, claimer: createNoopSigner(claimer), tokenCount: 33, answerHash: hash })
  assert.deepEqual([...answer.data], [10, ...le(33, 4), ...hash])
  assert.deepEqual(roles(answer), [[claim, W], [claimer, RS], ['SysvarS1otHashes111111111111111111111111111', R]])
  const challenge = getChallengeInstruction({ claim, challenger: createNoopSigner(challenger), run, model, sectionZero, nonce: 0xabcdef01 })
  assert.deepEqual([...challenge.data], [11, ...le(0xabcdef01, 4)])
  assert.deepEqual(roles(challenge), [[claim, W], [challenger, WS], [run, W], [model, R], [sectionZero, R], ['11111111111111111111111111111111', R]])
  const resolve = getResolveInstruction({ claim, run, claimer, challenger })
  assert.deepEqual([...resolve.data], [12])
  assert.deepEqual(roles(resolve), [[claim, W], [run, W], [claimer, W], [challenger, W]])
  const close = getCloseClaimInstruction({ claim, claimer: createNoopSigner(claimer) })
  assert.deepEqual([...close.data], [13])
  assert.deepEqual(roles(close), [[claim, W], [claimer, WS]])
  for (const ix of [open, answer, challenge, resolve, close]) assert.equal(ix.programAddress, CURTA_PROGRAM_ID)
  assert.deepEqual(
    [47, 51, 54, 58, 60, 61].map((code) => programError(code)?.name),
    ['NotAClaim', 'BondTooLow', 'WindowClosed', 'DisputeRunLocked', 'InvalidAnswer', 'InvalidPriorityPrice'],
  )
  assert.equal(programError(62), undefined)
})

// verifyClaim on stories260K against the Rust core's runs (golden/run.json).
let runner: Runner
before(async () => {
  runner = await Runner.create(readArtifact('stories260K'))
})

interface GoldenRun {
  model: string
  prompt?: string
  promptTokens: number[]
  steps: number
  temperature: string
  topP: string
  seed: string
  tokens: number[]
  text: string
}
const runs: GoldenRun[] = golden('run').runs
const fixed16 = (decimal: string) => Math.round(Number(decimal) * 65_536)

/** An answered claim of a golden run, with the answer the test gives it (the Rust core's by default). */
function claimOf(r: GoldenRun, seedSource: number, answer: { ids: number[]; text: Uint8Array } = { ids: r.tokens, text: new TextEncoder().encode(r.text) }): ClaimAccount {
  // Every text below is ASCII, so its UTF-8 bytes are the pieces' bytes.
  assert.match(r.text, /^[\x20-\x7e]*$/)
  return decodeClaim(
    writeClaim({
      ...sample,
      state: 2,
      seedSource,
      challenger: undefined,
      disputeRun: undefined,
      steps: r.steps,
      temperature: fixed16(r.temperature),
      topP: fixed16(r.topP),
      claimerSeed: BigInt(r.seed),
      seedInForce: seedSource === 0 ? 0n : BigInt(r.seed),
      tokenCount: answer.ids.length,
      answerHash: nodeAnswerHash(answer.ids, answer.text),
      prompt: r.prompt !== undefined ? textWire(r.prompt) : idsWire(r.promptTokens),
    }),
  )
}

test('verifyClaim agrees with the honest answer of a greedy text-prompt claim (the Rust core\'s 32 tokens), and the answer is the Rust core\'s', async () => {
  const r = runs[0]!
  assert.deepEqual([r.model, r.prompt, r.temperature, r.steps], ['stories260K', 'Once upon a time', '0', 32])
  const v = await verifyClaim(claimOf(r, 0), runner)
  assert.equal(v.verdict, 'agrees', v.differences.join('; '))
  assert.deepEqual(v.differences, [])
  assert.equal(v.seed, 0n)
  assert.deepEqual(v.answer!.promptTokens, r.promptTokens)
  assert.deepEqual(v.answer!.ids, r.tokens)
  assert.equal(new TextDecoder().decode(v.answer!.text), r.text)
  assert.equal(v.answer!.tokenCount, 32)
  assert.equal(v.answer!.end, 'done')
  assert.equal(hex(v.answer!.hash), hex(nodeAnswerHash(r.tokens, new TextEncoder().encode(r.text))))
  assert.equal(v.seedDerivation, undefined)
})

test('verifyClaim disagrees with one id changed, one token fewer, or one byte of text changed', async () => {
  const r = runs[0]!
  const text = new TextEncoder().encode(r.text)
  const oneId = [...r.tokens]
  oneId[17] = oneId[17]! + 1
  const changedId = await verifyClaim(claimOf(r, 0, { ids: oneId, text }), runner)
  assert.equal(changedId.verdict, 'disagrees')
  assert.deepEqual(changedId.differences, ["answer hash: the claim's is not the hash of the engine's ids and text"])
  const fewer = await verifyClaim(claimOf(r, 0, { ids: r.tokens.slice(0, 31), text }), runner)
  assert.equal(fewer.verdict, 'disagrees')
  assert.deepEqual(fewer.differences, ['token count: the claim says 31, the engine made 32', "answer hash: the claim's is not the hash of the engine's ids and text"])
  const otherText = text.slice()
  otherText[0] ^= 0x20
  assert.equal((await verifyClaim(claimOf(r, 0, { ids: r.tokens, text: otherText }), runner)).verdict, 'disagrees')
})

test('verifyClaim agrees with a sampled claim of a chosen seed (temperature 0.8, top-p 0.9, seed 7) and an ids-prompt claim, as the Rust core ran them', async () => {
  const sampled = runs.find((r) => r.model === 'stories260K' && r.seed === '7')!
  const v = await verifyClaim(claimOf(sampled, 2), runner)
  assert.equal(v.verdict, 'agrees', v.differences.join('; '))
  assert.equal(v.seed, 7n)
  assert.deepEqual(v.answer!.ids, sampled.tokens)
  const ids = runs.find((r) => r.model === 'stories260K' && r.prompt === undefined && r.temperature === '0')!
  assert.deepEqual(ids.promptTokens, [1])
  const w = await verifyClaim(claimOf(ids, 0), readArtifact('stories260K'))
  assert.equal(w.verdict, 'agrees')
  assert.deepEqual(w.answer!.ids, ids.tokens)
})

test('verifyClaim of a drawn claim: the recorded seed is used and its derivation checked; before its answer, nothing to compare', async () => {
  const sampled = runs.find((r) => r.model === 'stories260K' && r.seed === '7')!
  // Seed 7 recorded as drawn: the answer agrees (the dispute run takes the recorded seed), but 7
  // is not the derivation of the recorded slot hash.
  const drawn = { ...claimOf(sampled, 1), address: key(9) }
  const v = await verifyClaim(drawn, runner)
  assert.equal(v.verdict, 'agrees')
  assert.equal(v.seedDerivation, false)
  const seed = claimDrawnSeed(drawn.claimerSeed, key(9), drawn.openSlot, drawn.slotHash)
  const derived = await verifyClaim({ ...drawn, seedInForce: seed }, runner)
  assert.equal(derived.seedDerivation, true)
  assert.equal(derived.verdict, 'disagrees')
  // Open and drawn: the seed is not drawn yet; given it, the engine's answer is computed.
  const open = { ...drawn, state: 'open' as const, stateCode: 1, seedInForce: 0n, tokenCount: 0 }
  assert.deepEqual(await verifyClaim(open, runner), { verdict: 'unanswered', differences: [] })
  const ahead = await verifyClaim(open, runner, { seed: 7n })
  assert.equal(ahead.verdict, 'unanswered')
  assert.deepEqual(ahead.answer!.ids, sampled.tokens)
})

test('claimAnswer ends at an end token, which it counts, and its text is the pieces\' bytes', () => {
  // The grouped-query model's run that ends at once with token 1 (golden/run.json).
  const r = runs.find((x) => x.model === 'gqa' && x.tokens.length === 1)!
  return Runner.create(readArtifact('gqa')).then((gqa) => {
    const a = claimAnswer(gqa, { prompt: { tokenIds: r.promptTokens }, steps: r.steps, temperature: 0, topP: 65_536 }, 0n)
    assert.deepEqual([a.ids, a.tokenCount, a.text.length, a.end], [[1], 1, 0, 'end-token'])
    assert.equal(hex(a.hash), hex(nodeAnswerHash([1], new Uint8Array())))
  })
})
