// Claims over a JSON-RPC node (support/mock-rpc.ts) whose program the test plays: it serves the
// sealed stories260K model the real program wrote (golden/chain.json), decodes each transaction
// the SDK sends, checks its instructions byte by byte, and writes the claim account as the program
// would. openClaim (the bond is the interface crate's, golden/claims.json), answerClaim with a
// chosen seed (the Rust core's run) and a drawn one (SlotHashes served, waited for, expired),
// challengeClaim, resolveClaim, closeClaim, and watchClaims (getProgramAccounts with memcmp filters
// on the magic and the model: new, changed and closed claims, others' left out), and claimTrust
// (the interface crate's trusted_claim, each check failing alone).
import { test, before } from 'node:test'
import assert from 'node:assert/strict'
import {
  type Address,
  type KeyPairSigner,
  address,
  createSolanaRpc,
  generateKeyPairSigner,
  getBase58Decoder,
  getCompiledTransactionMessageDecoder,
  getTransactionDecoder,
} from '@solana/kit'
import {
  Runner,
  answerClaim,
  challengeClaim,
  claimAddress,
  claimComputeUnits,
  claimDrawnSeed,
  claimTrust,
  closeClaim,
  openClaim,
  resolveClaim,
  runAccountLength,
  runAddress,
  watchClaims,
  type ClaimEvent,
} from '../src/index.js'
import { chainFixture, startMockRpc, type RecordedAccount } from './support/mock-rpc.js'
import { type ClaimFields, nodeAnswerHash, slotHashesData, textWire, writeClaim } from './support/claims.js'
import { golden, readArtifact } from './support/files.js'

const fx = chainFixture()
const program = address(fx.programId)
const model = address(fx.model)
const stories260K = { dim: 64, hiddenDim: 172, layers: 5, heads: 8, kvHeads: 4, vocabSize: 512, contextLength: 512 }
const rent = (space: number) => BigInt((128 + space) * 6960)
const le = (v: number | bigint, size: number) => Array.from({ length: size }, (_, i) => Number((BigInt(v) >> BigInt(8 * i)) & 0xffn))

interface SentInstruction {
  program: Address
  accounts: Address[]
  data: Uint8Array
}

/** A transaction's instructions and signers, decoded from its wire bytes. */
function decodeTransaction(wire: Uint8Array): { instructions: SentInstruction[]; signers: Address[] } {
  const tx = getTransactionDecoder().decode(wire)
  // A legacy message (sendInstructions sends them).
  const m = getCompiledTransactionMessageDecoder().decode(tx.messageBytes) as unknown as {
    staticAccounts: Address[]
    instructions: { programAddressIndex: number; accountIndices?: number[]; data?: Uint8Array }[]
  }
  const instructions = m.instructions.map((i) => ({
    program: m.staticAccounts[i.programAddressIndex]!,
    accounts: (i.accountIndices ?? []).map((k) => m.staticAccounts[k]!),
    data: new Uint8Array(i.data ?? []),
  }))
  return { instructions, signers: Object.keys(tx.signatures) as Address[] }
}

/** The units of a SetComputeUnitLimit (compute budget instruction 2). */
function unitLimit(ix: SentInstruction | undefined): number {
  assert.equal(ix?.program, 'ComputeBudget111111111111111111111111111111')
  assert.equal(ix!.data[0], 2)
  return new DataView(ix!.data.buffer, ix!.data.byteOffset).getUint32(1, true)
}

/** A node with the fixture's accounts and `extra`, whose program is `play`. */
async function withNode<T>(
  extra: [string, RecordedAccount][],
  play: (tx: ReturnType<typeof decodeTransaction>, accounts: Map<string, RecordedAccount>) => unknown,
  fn: (rpc: ReturnType<typeof createSolanaRpc>, accounts: Map<string, RecordedAccount>, node: { requests: { method: string; params: unknown[] }[]; slot: { now: number } }) => Promise<T>,
): Promise<T> {
  const accounts = new Map([...fx.accounts, ...extra])
  const slot = { now: 1000 }
  const node = await startMockRpc(accounts, { slot: () => slot.now, onSend: (wire) => play(decodeTransaction(wire), accounts) })
  try {
    return await fn(createSolanaRpc(node.url), accounts, { requests: node.requests, slot })
  } finally {
    await node.close()
  }
}

const programAccount = (data: Uint8Array): RecordedAccount => ({ owner: fx.programId, lamports: Number(rent(data.length)), data })

interface GoldenRun {
  model: string
  prompt?: string
  steps: number
  temperature: string
  topP: string
  seed: string
  tokens: number[]
  text: string
}
const sampled = (golden('run').runs as GoldenRun[]).find((r) => r.model === 'stories260K' && r.seed === '7')!
let claimer: KeyPairSigner
let runner: Runner

before(async () => {
  claimer = await generateKeyPairSigner()
  runner = await Runner.create(readArtifact('stories260K'))
})

/** An open claim of the fixture's model by `claimer`: the golden sampled run's prompt and settings. */
function openFields(overrides: Partial<ClaimFields> = {}): ClaimFields {
  return {
    state: 1,
    seedSource: 2,
    nonce: 5,
    model,
    claimer: claimer.address,
    steps: sampled.steps,
    temperature: 52_429,
    topP: 58_982,
    window: 150,
    claimerSeed: 7n,
    openSlot: 990n,
    answerSlot: 0n,
    seedInForce: 7n,
    bond: 985_000n,
    priorityPrice: 0n,
    tokenCount: 0,
    prompt: textWire(sampled.prompt!),
    ...overrides,
  }
}

test('openClaim creates the claim account at the claim address with its rent and the least bond (the crate\'s) and sends OpenClaim, in one transaction', async () => {
  let sent: ReturnType<typeof decodeTransaction> | undefined
  const claim = await claimAddress(program, claimer.address, model, 42)
  const result = await withNode(
    [],
    (tx, accounts) => {
      sent = tx
      accounts.set(claim, programAccount(writeClaim(openFields({ nonce: 42, seedSource: 0, temperature: 0, topP: 58_982, claimerSeed: 0n, seedInForce: 0n, steps: 64, openSlot: 1000n }))))
    },
    (rpc) => openClaim(rpc, { claimer, model, nonce: 42, steps: 64, prompt: { text: 'Once upon a time' }, programId: program, pollMs: 5 }),
  )
  assert.equal(result.claim, claim)
  assert.equal(result.nonce, 42)
  // The interface crate's claim_bond of stories260K, this prompt, 64 steps, price 0 (golden/claims.json).
  const bond = BigInt(golden('claims').bonds[0].bond)
  assert.equal(result.bond, bond)
  assert.equal(result.account.state, 'open')
  const [limit, create, open] = sent!.instructions
  assert.deepEqual(sent!.signers, [claimer.address])
  // Twice the 3,032 units the VM measured, and 300 for the compute-budget and system instructions.
  assert.equal(unitLimit(limit), claimComputeUnits.open({ text: 'Once upon a time' }))
  assert.equal(unitLimit(limit), 6_364)
  // CreateAccountWithSeed: 3, base, seed, lamports (rent + bond), space (280 + 21), owner.
  const space = 280 + 5 + 16
  assert.equal(create!.program, '11111111111111111111111111111111')
  assert.deepEqual(create!.accounts, [claimer.address, claim, claimer.address])
  const view = new DataView(create!.data.buffer, create!.data.byteOffset)
  assert.equal(view.getUint32(0, true), 3)
  const seedLength = Number(view.getBigUint64(36, true))
  assert.equal(new TextDecoder().decode(create!.data.subarray(44, 44 + seedLength)), golden('claims').addresses[1].seed)
  assert.equal(view.getBigUint64(44 + seedLength, true), rent(space) + bond)
  assert.equal(view.getBigUint64(52 + seedLength, true), BigInt(space))
  // OpenClaim: greedy, no seed, the least window, price 0, the bond, the text prompt.
  assert.equal(open!.program, program)
  assert.deepEqual(open!.accounts, [claim, claimer.address, model])
  assert.deepEqual([...open!.data], [9, ...le(42, 4), ...le(64, 4), ...le(0, 4), ...le(58_982, 4), ...le(0, 8), 0, ...le(150, 4), ...le(0, 8), ...le(bond, 8), ...textWire('Once upon a time')])
})

test('answerClaim computes a chosen-seed claim\'s answer with the engine (the Rust core\'s run) and posts its count and hash', async () => {
  const claim = await claimAddress(program, claimer.address, model, 5)
  const expected = nodeAnswerHash(sampled.tokens, new TextEncoder().encode(sampled.text))
  let data: Uint8Array | undefined
  const { answer, account } = await withNode(
    [[claim, programAccount(writeClaim(openFields()))]],
    (tx, accounts) => {
      const [limit, ix] = tx.instructions
      assert.equal(unitLimit(limit), claimComputeUnits.answer())
      assert.deepEqual(ix!.accounts, [claim, claimer.address, 'SysvarS1otHashes111111111111111111111111111'])
      data = ix!.data
      accounts.set(claim, programAccount(writeClaim(openFields({ state: 2, answerSlot: 1000n, tokenCount: sampled.tokens.length, answerHash: ix!.data.slice(5) }))))
    },
    (rpc) => answerClaim(rpc, { claim, claimer, engine: runner, programId: program, pollMs: 5 }),
  )
  assert.deepEqual([...data!], [10, ...le(48, 4), ...expected])
  assert.deepEqual(answer.ids, sampled.tokens)
  assert.equal(answer.seed, 7n)
  assert.equal(account.state, 'answered')
  assert.equal(account.windowEnd, 1150n)
})

test('answerClaim of a drawn claim waits for the open slot\'s hash in SlotHashes, draws the seed as the program does, and refuses once the hash is gone', async () => {
  const claim = await claimAddress(program, claimer.address, model, 6)
  const claimerSeed = 0x1234_5678_9abc_def0n
  const hashOf = (slot: number) => Uint8Array.from({ length: 32 }, (_, i) => (slot * 13 + i) & 0xff)
  const slotHashes = (newest: number, count: number) => ({
    owner: 'Sysvar1111111111111111111111111111111111111',
    lamports: 1,
    data: slotHashesData(Array.from({ length: count }, (_, i) => [BigInt(newest - i), hashOf(newest - i)] as [bigint, Uint8Array])),
  })
  const fields = openFields({ nonce: 6, seedSource: 1, claimerSeed, seedInForce: 0n, steps: 16, openSlot: 990n })
  const seed = claimDrawnSeed(claimerSeed, claim, 990n, hashOf(990))
  // What the engine makes with that seed, by the Runner's own generation.
  const expected = await runner.run({ prompt: sampled.prompt!, steps: 16, temperature: '0.8', topP: '0.9', seed })
  let posted: Uint8Array | undefined
  const result = await withNode(
    [[claim, programAccount(writeClaim(fields))], ['SysvarS1otHashes111111111111111111111111111', slotHashes(989, 3)]],
    (tx, accounts) => {
      posted = tx.instructions[1]!.data
      accounts.set(claim, programAccount(writeClaim({ ...fields, state: 2, answerSlot: 992n, seedInForce: seed, slotHash: hashOf(990), tokenCount: 16, answerHash: posted.slice(5) })))
    },
    async (rpc, accounts, node) => {
      // The open slot's hash comes into SlotHashes a little later.
      setTimeout(() => accounts.set('SysvarS1otHashes111111111111111111111111111', slotHashes(991, 3)), 100)
      const r = await answerClaim(rpc, { claim, claimer, engine: runner, programId: program, pollMs: 10 })
      assert.ok(node.requests.filter((q) => q.method === 'getAccountInfo' && q.params[0] === 'SysvarS1otHashes111111111111111111111111111').length >= 2)
      return r
    },
  )
  assert.equal(result.answer.seed, seed)
  assert.deepEqual(result.answer.ids, expected.tokens)
  const pieces = expected.tokens.map((id, i) => runner.decode(i === 0 ? expected.promptTokens.at(-1)! : expected.tokens[i - 1]!, id))
  const text = Uint8Array.from(pieces.flatMap((p) => [...p]))
  assert.deepEqual([...posted!], [10, ...le(16, 4), ...nodeAnswerHash(expected.tokens, text)])
  // The open slot's hash has left SlotHashes: the claim cannot be answered.
  await withNode(
    [[claim, programAccount(writeClaim(fields))], ['SysvarS1otHashes111111111111111111111111111', slotHashes(1600, 512)]],
    () => assert.fail('nothing is sent'),
    (rpc) => assert.rejects(answerClaim(rpc, { claim, claimer, engine: runner, programId: program }), { code: 'SeedExpired' }),
  )
})

test('answerClaim refuses an answered claim and another claimer\'s, before sending anything', async () => {
  const claim = await claimAddress(program, claimer.address, model, 5)
  const stranger = await generateKeyPairSigner()
  await withNode(
    [[claim, programAccount(writeClaim(openFields({ state: 2, answerSlot: 999n })))]],
    () => assert.fail('nothing is sent'),
    (rpc) => assert.rejects(answerClaim(rpc, { claim, claimer, engine: runner, programId: program }), { code: 'AlreadyAnswered' }),
  )
  await withNode(
    [[claim, programAccount(writeClaim(openFields()))]],
    () => assert.fail('nothing is sent'),
    (rpc) => assert.rejects(answerClaim(rpc, { claim, claimer: stranger, engine: runner, programId: program }), { code: 'NotTheClaimer' }),
  )
})

test('challengeClaim creates the dispute run\'s account and sends Challenge; resolveClaim and closeClaim send theirs', async () => {
  const claim = await claimAddress(program, claimer.address, model, 5)
  const challenger = await generateKeyPairSigner()
  const run = await runAddress(program, challenger.address, model, 77)
  const sent: ReturnType<typeof decodeTransaction>[] = []
  await withNode(
    [[claim, programAccount(writeClaim(openFields({ state: 2, answerSlot: 999n })))]],
    (tx, accounts) => {
      sent.push(tx)
      if (tx.instructions.at(-1)!.data[0] === 11)
        accounts.set(claim, programAccount(writeClaim(openFields({ state: 3, answerSlot: 999n, challenger: challenger.address, disputeRun: run }))))
    },
    async (rpc) => {
      assert.deepEqual(await challengeClaim(rpc, { claim, challenger, nonce: 77, programId: program, pollMs: 5 }).then((r) => [r.run, r.nonce]), [run, 77])
      await resolveClaim(rpc, { claim, payer: challenger, programId: program, pollMs: 5 })
      await closeClaim(rpc, { claim, claimer, programId: program, pollMs: 5 })
    },
  )
  const [challenge, resolve, close] = sent
  const [limit, create, ix] = challenge!.instructions
  // A text prompt: its encoding begins in Challenge, as in StartRun.
  assert.equal(unitLimit(limit), 1_400_000)
  assert.deepEqual(create!.accounts, [challenger.address, run, challenger.address])
  const view = new DataView(create!.data.buffer, create!.data.byteOffset)
  assert.equal(view.getBigUint64(44 + 29 + 8, true), BigInt(runAccountLength(stories260K, sampled.steps)))
  assert.deepEqual(ix!.accounts, [claim, challenger.address, run, model, fx.weights[0], '11111111111111111111111111111111'])
  assert.deepEqual([...ix!.data], [11, ...le(77, 4)])
  assert.equal(unitLimit(resolve!.instructions[0]), claimComputeUnits.resolve(sampled.steps))
  assert.deepEqual(resolve!.instructions[1]!.accounts, [claim, run, claimer.address, challenger.address])
  assert.deepEqual([...resolve!.instructions[1]!.data], [12])
  assert.equal(unitLimit(close!.instructions[0]), claimComputeUnits.close())
  assert.deepEqual(close!.instructions[1]!.accounts, [claim, claimer.address])
  assert.deepEqual([...close!.instructions[1]!.data], [13])
  assert.deepEqual(close!.signers, [claimer.address])
})

test('watchClaims reports a model\'s claims (new, changed, closed) from getProgramAccounts filtered on the magic and the model, and leaves the others out', async () => {
  const [a, b, c, d, bad] = await Promise.all([1, 2, 3, 4, 9].map((n) => claimAddress(program, claimer.address, model, n)))
  const otherModel = address('11111111111111111111111111111112')
  const broken = writeClaim(openFields({ nonce: 9 }))
  broken[280] = 7 // not a prompt
  await withNode(
    [
      [a, programAccount(writeClaim(openFields({ nonce: 1 })))],
      [b, programAccount(writeClaim(openFields({ nonce: 2, model: otherModel })))],
      [c, { ...programAccount(writeClaim(openFields({ nonce: 3 }))), owner: '11111111111111111111111111111111' }],
      [bad, programAccount(broken)],
    ],
    () => undefined,
    async (rpc, accounts, node) => {
      const events: ClaimEvent[] = []
      const errors: (string | undefined)[] = []
      const watch = watchClaims(rpc, model, (e) => void events.push(e), { programId: program, intervalMs: 20, onError: (_, at) => errors.push(at) })
      const until = async (n: number) => {
        for (let i = 0; i < 200 && events.length < n; i++) await new Promise((r) => setTimeout(r, 10))
        assert.equal(events.length, n, JSON.stringify(events.map((e) => [e.kind, e.address])))
      }
      await until(1)
      accounts.set(d, programAccount(writeClaim(openFields({ nonce: 4 }))))
      await until(2)
      accounts.set(a, programAccount(writeClaim(openFields({ nonce: 1, state: 2, answerSlot: 1001n, tokenCount: 48 }))))
      await until(3)
      accounts.delete(d)
      await until(4)
      watch.stop()
      await watch.done
      assert.deepEqual(
        events.map((e) => [e.kind, e.address, e.claim.state, e.claim.nonce]),
        [['new', a, 'open', 1], ['new', d, 'open', 4], ['changed', a, 'answered', 1], ['closed', d, 'open', 4]],
      )
      assert.ok(errors.includes(bad))
      const [programId, config] = node.requests.find((q) => q.method === 'getProgramAccounts')!.params as [string, { filters: { memcmp: { offset: number; bytes: string } }[] }]
      assert.equal(programId, program)
      assert.deepEqual(
        config.filters.map((f) => [f.memcmp.offset, f.memcmp.bytes]),
        [[0, getBase58Decoder().decode(new Uint8Array([...new TextEncoder().encode('CURTACLM'), 1]))], [16, model]],
      )
    },
  )
})

test('claimTrust: a settled claim is trusted for the rule\'s model, prompt, settings, seed, window and answer; each check fails alone', async () => {
  const hash = nodeAnswerHash(sampled.tokens, new TextEncoder().encode(sampled.text))
  const settled = openFields({ state: 2, answerSlot: 800n, tokenCount: 48, answerHash: hash })
  const at = await claimAddress(program, claimer.address, model, 5)
  const rule = {
    programId: program,
    expectedModel: model,
    prompt: { text: sampled.prompt! },
    settings: { temperature: 52_429, topP: 58_982 },
    minWindow: 150,
    answer: { tokenCount: 48, hash },
  }
  const judge = (fields: ClaimFields, r: Parameters<typeof claimTrust>[2] = rule, where: string = at, owner: string = fx.programId) =>
    withNode([[where, { ...programAccount(writeClaim(fields)), owner }]], () => undefined, (rpc) => claimTrust(rpc, address(where), r))
  const failed = async (fields: ClaimFields, r: Parameters<typeof claimTrust>[2] = rule, where: string = at, owner?: string) =>
    (await judge(fields, r, where, owner)).checks.filter((c) => !c.ok).map((c) => c.name)
  const t = await judge(settled)
  assert.equal(t.trusted, true, JSON.stringify(t.checks))
  assert.deepEqual(
    t.checks.map((c) => c.name),
    ['exists', 'owner', 'layout', 'address', 'expected model', 'not overturned', 'settled', 'window', 'prompt', 'settings', 'answer', 'model owner', 'model sealed', 'model address'],
  )
  assert.equal(t.checks.find((c) => c.name === 'settled')!.detail, 'answered in slot 800, window to slot 950, now slot 1000')
  assert.equal(t.slot, 1000n)
  // Within its window (answered in slot 900: to slot 1050), challenged, overturned: not settled.
  assert.deepEqual(await failed({ ...settled, answerSlot: 900n }), ['settled'])
  assert.deepEqual(await failed({ ...settled, state: 3 }), ['settled'])
  assert.deepEqual(await failed({ ...settled, state: 5 }), ['not overturned', 'settled'])
  assert.equal((await judge({ ...settled, state: 4 })).trusted, true)
  assert.deepEqual(await failed({ ...settled, state: 1, answerSlot: 0n, tokenCount: 0, answerHash: undefined }), ['settled', 'answer'])
  // The rule's parts, one at a time.
  assert.deepEqual(await failed(settled, { ...rule, expectedModel: address('11111111111111111111111111111112') }), ['expected model'])
  assert.deepEqual(await failed(settled, { ...rule, prompt: { text: 'Once upon a tim' } }), ['prompt'])
  assert.deepEqual(await failed(settled, { ...rule, settings: { temperature: 52_429, topP: 65_536 } }), ['settings'])
  assert.deepEqual(await failed(settled, { ...rule, seed: 'notChosen' }), ['seed'])
  assert.deepEqual(await failed(settled, { ...rule, minWindow: 151 }), ['window'])
  assert.deepEqual(await failed(settled, { ...rule, answer: { tokenCount: 48, hash: new Uint8Array(32) } }), ['answer'])
  // Another address than its claim address; another owner; no account.
  assert.deepEqual(await failed(settled, rule, await claimAddress(program, claimer.address, model, 6)), ['address'])
  assert.deepEqual(await failed(settled, rule, at, '11111111111111111111111111111111'), ['owner'])
  const none = await withNode([], () => undefined, (rpc) => claimTrust(rpc, at, rule))
  assert.deepEqual([none.trusted, none.checks.map((c) => c.name)], [false, ['exists']])
})
