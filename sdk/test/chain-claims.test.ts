// Claims of stories260K on chain through the SDK (openClaim, answerClaim, verifyClaim, fetchClaim,
// claimTrust, challengeClaim, stepRun, resolveClaim, closeClaim over @solana/kit) against the
// project's JSON-RPC test node, as test/chain-run.test.ts runs runs: the Curta program's SBF binary
// on a solana-program-test bank (the Rust example `sdk_node --movable`, its bank moved to the next
// slot only when the test asks). The program is the judge: the SDK's least bond is exactly what
// OpenClaim takes (a lamport less is refused), its answers are what the dispute run makes (an
// honest claim upheld, a wrong one overturned, every lamport accounted for), and each claim
// transaction is simulated on the program first, to check that it uses well under the compute
// units the SDK asks for it (claimComputeUnits).
//
// scripts/sdk-test builds the node and the CLI and sets CURTA_SDK_NODE and CURTA_CLIENT; without
// them (a plain `npm test`) these tests are skipped and say so.
import { test, before, after } from 'node:test'
import assert from 'node:assert/strict'
import { readFileSync } from 'node:fs'
import {
  type Address,
  type KeyPairSigner,
  address,
  createKeyPairSignerFromBytes,
  createSolanaRpc,
  getCompiledTransactionMessageDecoder,
  getTransactionDecoder,
} from '@solana/kit'
import {
  CurtaTransactionError,
  MAX_PRIORITY_PRICE,
  Runner,
  answerClaim,
  answerHash,
  challengeClaim,
  claimAccountLength,
  claimAnswer,
  claimAddress,
  claimBond,
  claimDrawnSeed,
  claimSeed,
  claimTrust,
  closeClaim,
  closeRun,
  computeUnitLimitInstruction,
  createAccountWithSeedInstruction,
  decodeClaim,
  disputeTransactions,
  fetchClaim,
  fetchModel,
  fetchRun,
  getAnswerClaimInstruction,
  getOpenClaimInstruction,
  openClaim,
  promptArgs,
  resolveClaim,
  runTransactionsBound,
  sendInstructions,
  seedSourceCode,
  stepRun,
  verifyClaim,
  type Config,
  type RunPrompt,
} from '../src/index.js'
import { type ChainNode, type NodeInfo, clientRun as cli, skipChain as skip, startChainNode } from './support/chain-node.js'

let node: ChainNode | undefined
let info: NodeInfo
let rpc: ReturnType<typeof createSolanaRpc>
/** The same node, each transaction simulated before it is sent: what it used against what it asked. */
let metered: ReturnType<typeof createSolanaRpc>
let claimer: KeyPairSigner
let challenger: KeyPairSigner
let engine: Runner
let model: Address
let config: Config

interface Metered {
  units: number
  limit: number
  err: unknown
}
const simulated: Metered[] = []

const COMPUTE_BUDGET = 'ComputeBudget111111111111111111111111111111'

/** The SetComputeUnitLimit of a transaction's wire bytes (base64). */
function unitLimitOf(wire: string): number {
  const tx = getTransactionDecoder().decode(Buffer.from(wire, 'base64'))
  const m = getCompiledTransactionMessageDecoder().decode(tx.messageBytes) as unknown as {
    staticAccounts: Address[]
    instructions: { programAddressIndex: number; data?: Uint8Array }[]
  }
  const ix = m.instructions.find((i) => m.staticAccounts[i.programAddressIndex] === COMPUTE_BUDGET && i.data?.[0] === 2)
  assert.ok(ix, 'the transaction asks its compute units')
  return new DataView(Uint8Array.from(ix.data!).buffer).getUint32(1, true)
}

before(async () => {
  if (skip) return
  node = await startChainNode({ movable: true })
  info = node.info
  rpc = createSolanaRpc(info.url)
  metered = new Proxy(rpc, {
    get(target, key, receiver) {
      if (key !== 'sendTransaction') return Reflect.get(target, key, receiver)
      return (wire: string, config: Parameters<typeof rpc.sendTransaction>[1]) => ({
        send: async (options?: Parameters<ReturnType<typeof rpc.sendTransaction>['send']>[0]) => {
          const { value } = await target.simulateTransaction(wire as Parameters<typeof rpc.simulateTransaction>[0], { encoding: 'base64', sigVerify: false, commitment: 'confirmed' }).send()
          simulated.push({ units: Number(value.unitsConsumed), limit: unitLimitOf(wire), err: value.err })
          return target.sendTransaction(wire as Parameters<typeof rpc.sendTransaction>[0], config).send(options)
        },
      })
    },
  }) as typeof rpc
  claimer = await createKeyPairSignerFromBytes(new Uint8Array(info.runnerKeypair))
  challenger = await createKeyPairSignerFromBytes(new Uint8Array(info.strangerKeypair))
  engine = await Runner.create(new Uint8Array(readFileSync(info.artifact)))
  model = address(info.model)
  config = (await fetchModel(rpc, model)).config
})

after(async () => {
  await node?.stop()
})

const balance = async (a: Address) => (await rpc.getBalance(a, { commitment: 'confirmed' }).send()).value
const FEE = 5_000n

/** The last transaction sent through `metered` succeeded in simulation and used at most two thirds of what it asked. */
function withinLimit(what: string): Metered {
  const m = simulated.at(-1)!
  assert.equal(m.err, null, `${what}: ${JSON.stringify(m.err)}`)
  assert.ok(m.units * 3 <= m.limit * 2, `${what}: ${m.units} units used of the ${m.limit} asked`)
  console.log(`${what}: ${m.units} compute units of the ${m.limit} asked`)
  return m
}

/** Sends OpenClaim with the claim account's creation, as openClaim does, with the bond and price given. */
async function openRaw(nonce: number, prompt: RunPrompt, steps: number, temperature: number, priorityPrice: bigint, bond: bigint) {
  const claim = await claimAddress(address(info.programId), claimer.address, model, nonce)
  const space = claimAccountLength(prompt)
  const rent = await rpc.getMinimumBalanceForRentExemption(BigInt(space)).send()
  return sendInstructions(rpc, claimer, [
    computeUnitLimitInstruction(100_000),
    createAccountWithSeedInstruction({ payer: claimer, to: claim, base: claimer, seed: claimSeed(model, nonce), lamports: rent + bond, space, owner: address(info.programId) }),
    getOpenClaimInstruction({
      claim, claimer, model, nonce, steps, temperature, topP: 58_982, seed: temperature === 0 ? 0n : 99n, seedSource: seedSourceCode(temperature === 0 ? 'none' : 'drawn'),
      window: 150, priorityPrice, bond, prompt: promptArgs(prompt),
    }),
  ])
}

const refusedWith = (name: string, code: number) => (e: unknown) => e instanceof CurtaTransactionError && e.code === name && e.details.code === code

test('the least bond is exactly what OpenClaim takes: claimBond accepted, a lamport less refused (BondTooLow), greedy and sampled, text and ids; a price above MAX_PRIORITY_PRICE refused by the SDK and by the program (InvalidPriorityPrice)', { skip }, async () => {
  const cases: [RunPrompt, number, number, bigint][] = [
    [{ text: 'Once upon a time' }, 24, 0, 0n],
    [{ text: 'Once upon a time' }, 24, 52_429, 1_000n],
    [{ tokenIds: [1] }, 64, 0, 7n],
    [{ tokenIds: [1, 400, 300] }, 100, 65_536, 0n],
  ]
  let nonce = 1_000
  for (const [prompt, steps, temperature, price] of cases) {
    const least = claimBond(config, prompt, steps, temperature, price)
    const what = `${JSON.stringify(prompt)}, ${steps} steps, temperature ${temperature}, price ${price}: bond ${least}`
    await assert.rejects(openRaw(nonce, prompt, steps, temperature, price, least - 1n), refusedWith('BondTooLow', 51), what)
    await openRaw(nonce, prompt, steps, temperature, price, least)
    const c = await fetchClaim(rpc, await claimAddress(address(info.programId), claimer.address, model, nonce))
    assert.deepEqual([c.state, c.bond, c.priorityPrice, c.temperature, c.steps], ['open', least, price, temperature, steps], what)
    // An open claim closes: its rent and bond back.
    await closeClaim(rpc, { claim: c.address!, claimer })
    nonce++
  }
  await assert.rejects(
    openClaim(rpc, { claimer, model, nonce, steps: 8, prompt: { tokenIds: [1] }, priorityPrice: MAX_PRIORITY_PRICE + 1n }),
    (e: unknown) => e instanceof RangeError && /MAX_PRIORITY_PRICE/.test(e.message),
  )
  await assert.rejects(openRaw(nonce, { tokenIds: [1] }, 8, 0, MAX_PRIORITY_PRICE + 1n, 1_000_000n), refusedWith('InvalidPriorityPrice', 61))
})

test('a greedy claim with a text prompt: openClaim, answerClaim with the engine (client run\'s tokens and text), verifyClaim agrees, decodeClaim reads the account; not closable within its window; settled and trusted past it, then closed', { skip }, async () => {
  const prompt = 'Once upon a time'
  const steps = 24
  const before = await balance(claimer.address)
  const opened = await openClaim(metered, { claimer, model, nonce: 1, steps, prompt: { text: prompt } })
  withinLimit('OpenClaim (a text prompt)')
  assert.equal(opened.claim, await claimAddress(address(info.programId), claimer.address, model, 1))
  assert.equal(opened.bond, claimBond(config, { text: prompt }, steps, 0, 0n))
  assert.deepEqual([opened.account.state, opened.account.seedSource, opened.account.window, opened.account.bond], ['open', 'none', 150, opened.bond])
  const rent = await rpc.getMinimumBalanceForRentExemption(BigInt(claimAccountLength({ text: prompt }))).send()
  assert.equal(await balance(opened.claim), rent + opened.bond)

  const { answer, account } = await answerClaim(metered, { claim: opened.claim, claimer, engine })
  withinLimit('AnswerClaim (greedy)')
  const expected = await cli(info.artifact, ['--prompt', prompt, '--steps', `${steps}`, '--temperature', '0'])
  assert.deepEqual(answer.ids, expected.tokens)
  assert.equal(new TextDecoder().decode(answer.text), expected.text)
  assert.deepEqual(answer.promptTokens, expected.prompt_tokens)
  assert.equal(account.state, 'answered')
  assert.equal(account.tokenCount, expected.tokens.length)
  assert.deepEqual([...account.answerHash], [...answerHash(expected.tokens, new TextEncoder().encode(expected.text))])
  assert.equal(account.windowEnd, account.answerSlot + 150n)
  // decodeClaim of the account's own bytes is what fetchClaim gave.
  const raw = await rpc.getAccountInfo(opened.claim, { encoding: 'base64', commitment: 'confirmed' }).send()
  assert.deepEqual(decodeClaim(new Uint8Array(Buffer.from(raw.value!.data[0], 'base64')), opened.claim), account)
  const v = await verifyClaim(account, engine)
  assert.equal(v.verdict, 'agrees', v.differences.join('; '))

  // Within its window: not settled, not trusted, not closable.
  const early = await claimTrust(rpc, opened.claim, { expectedModel: model })
  assert.deepEqual(early.checks.filter((c) => !c.ok).map((c) => c.name), ['settled'])
  await assert.rejects(closeClaim(metered, { claim: opened.claim, claimer }), refusedWith('ClaimNotClosable', 59))
  // Past its window: settled, trusted with the answer, closed (its rent and bond back).
  while ((await rpc.getSlot({ commitment: 'confirmed' }).send()) <= account.windowEnd) await node!.passSlot()
  const rule = { expectedModel: model, prompt: { text: prompt }, settings: { temperature: 0, topP: 58_982 }, minWindow: 150, answer: { tokenCount: answer.tokenCount, hash: answer.hash } }
  const trust = await claimTrust(rpc, opened.claim, rule)
  assert.deepEqual(trust.checks.filter((c) => !c.ok), [])
  assert.equal(trust.trusted, true)
  await closeClaim(metered, { claim: opened.claim, claimer })
  withinLimit('CloseClaim')
  assert.equal((await rpc.getAccountInfo(opened.claim, { commitment: 'confirmed' }).send()).value, null)
  // Four transactions paid for, one of them the refused close; the rent and the bond came back.
  assert.equal(before - (await balance(claimer.address)), 4n * FEE)
  console.log(`greedy claim: ${answer.tokenCount} tokens, bond ${opened.bond} lamports: ${JSON.stringify(expected.text)}`)
})

test('a sampled claim whose seed is drawn: answerClaim waits for the open slot\'s hash (the node moved), the program drew the seed the SDK drew, the answer is client run\'s with it, verifyClaim agrees and checks the derivation', { skip }, async () => {
  const seed = BigInt.asUintN(64, BigInt(Math.floor(Math.random() * 2 ** 53)) * 4096n + 3n)
  console.log(`drawn claim, claimer's seed ${seed}`)
  const steps = 16
  const opened = await openClaim(metered, { claimer, model, nonce: 2, steps, prompt: { tokenIds: [1] }, temperature: 52_429, topP: 58_982, seed })
  withinLimit('OpenClaim (token 1, sampled)')
  assert.equal(opened.bond, claimBond(config, { tokenIds: [1] }, steps, 52_429, 0n))
  assert.deepEqual([opened.account.seedSource, opened.account.claimerSeed, opened.account.seedInForce], ['drawn', seed, 0n])
  const openSlot = opened.account.openSlot
  // A second claim opened in the same slot, answered 400 slots later: the program finds the
  // open slot's hash 400 entries down SlotHashes (about 36 units an entry).
  const deep = await openClaim(rpc, { claimer, model, nonce: 5, steps: 4, prompt: { tokenIds: [1] }, temperature: 65_536, seed: seed + 1n })
  assert.equal(deep.account.openSlot, openSlot)
  // answerClaim waits until the open slot's hash is in SlotHashes: move the node meanwhile.
  const moved = node!.passSlot()
  const { answer, account } = await answerClaim(metered, { claim: opened.claim, claimer, engine, pollMs: 20 })
  assert.equal(await moved, openSlot + 1n)
  withinLimit('AnswerClaim (drawn)')
  assert.notDeepEqual([...account.slotHash], Array(32).fill(0))
  assert.equal(account.seedInForce, claimDrawnSeed(seed, opened.claim, openSlot, account.slotHash))
  assert.equal(answer.seed, account.seedInForce)
  const expected = await cli(info.artifact, ['--prompt-tokens', '1', '--steps', `${steps}`, '--temperature', '0.8', '--top-p', '0.9', '--seed', `${account.seedInForce}`])
  assert.deepEqual(answer.ids, expected.tokens)
  assert.equal(new TextDecoder().decode(answer.text), expected.text)
  const v = await verifyClaim(account, engine)
  assert.equal(v.verdict, 'agrees', v.differences.join('; '))
  assert.equal(v.seedDerivation, true)
  // Open (never answered) claims close; this one is answered and within its window.
  await assert.rejects(closeClaim(rpc, { claim: opened.claim, claimer }), refusedWith('ClaimNotClosable', 59))
  for (let i = 0; i < 400; i++) await node!.passSlot()
  const late = await answerClaim(metered, { claim: deep.claim, claimer, engine })
  withinLimit('AnswerClaim (drawn, its slot 400 entries down SlotHashes)')
  assert.equal(late.account.seedInForce, claimDrawnSeed(seed + 1n, deep.claim, openSlot, late.account.slotHash))
  assert.equal((await verifyClaim(late.account, engine)).verdict, 'agrees')
})

/**
 * A claim of token 1 and `steps` greedy tokens answered with `ids` (the engine's by default),
 * challenged by the stranger, its dispute run stepped by the stranger to its end and resolved;
 * returns what each party paid or was paid and how many steps the dispute took.
 */
async function dispute(nonce: number, steps: number, wrong: boolean) {
  const [claimerBefore, challengerBefore] = [await balance(claimer.address), await balance(challenger.address)]
  const opened = await openClaim(metered, { claimer, model, nonce, steps, prompt: { tokenIds: [1] } })
  const bond = opened.bond
  const honest = claimAnswer(engine, opened.account, 0n)
  let claimerFees = 2n
  if (wrong) {
    // One id changed: the hash of ids the model does not make.
    const ids = [...honest.ids]
    ids[ids.length - 1] = (ids.at(-1)! + 1) % config.vocabSize
    const ix = getAnswerClaimInstruction({ claim: opened.claim, claimer, tokenCount: ids.length, answerHash: answerHash(ids, honest.text) })
    await sendInstructions(rpc, claimer, [computeUnitLimitInstruction(40_000), ix])
  } else await answerClaim(rpc, { claim: opened.claim, claimer, engine })
  const answered = await fetchClaim(rpc, opened.claim)
  assert.equal((await verifyClaim(answered, engine)).verdict, wrong ? 'disagrees' : 'agrees')

  const { run } = await challengeClaim(metered, { claim: opened.claim, challenger, nonce })
  withinLimit('Challenge (token 1, with the run account\'s creation)')
  const challenged = await fetchClaim(rpc, opened.claim)
  assert.deepEqual([challenged.state, challenged.challenger, challenged.disputeRun], ['challenged', challenger.address, run])
  assert.equal(await balance(opened.claim), (await rpc.getMinimumBalanceForRentExemption(BigInt(claimAccountLength({ tokenIds: [1] }))).send()) + 2n * bond)
  const started = await fetchRun(rpc, run)
  assert.equal(started.dispute, true)
  // Nobody withdraws a dispute run, its runner included: only Resolve closes it.
  await assert.rejects(closeRun(rpc, { run, runner: challenger }), refusedWith('DisputeRunLocked', 58))
  await assert.rejects(resolveClaim(rpc, { claim: opened.claim, payer: challenger }), refusedWith('DisputeNotFinished', 56))
  let stepped = 0
  const ended = await stepRun(rpc, { run, payer: challenger, onStep: () => stepped++ })
  assert.equal(ended.finished, true)
  assert.deepEqual(ended.generatedTokens, honest.ids)
  // The bond counted at most this many transactions: the run's steps, Challenge and Resolve.
  assert.ok(BigInt(stepped) <= runTransactionsBound(config, 1, steps, 0), `${stepped} steps`)
  assert.ok(BigInt(stepped) + 2n <= disputeTransactions(config, { tokenIds: [1] }, steps, 0))

  await resolveClaim(metered, { claim: opened.claim, payer: challenger })
  withinLimit(`Resolve (${steps} tokens)`)
  const resolved = await fetchClaim(rpc, opened.claim)
  assert.equal(resolved.state, wrong ? 'overturned' : 'upheld')
  assert.equal((await rpc.getAccountInfo(run, { commitment: 'confirmed' }).send()).value, null)
  await closeClaim(rpc, { claim: opened.claim, claimer })
  claimerFees += 1n
  // Every lamport: fees of 5,000 a signature (the challenger's refused CloseRun and Resolve
  // included), both rents back, the bonds to the winner.
  const challengerFees = 1n + 2n + BigInt(stepped) + 1n
  const claimerGain = (await balance(claimer.address)) - claimerBefore
  const challengerGain = (await balance(challenger.address)) - challengerBefore
  assert.equal(claimerGain, (wrong ? -bond : bond) - claimerFees * FEE)
  assert.equal(challengerGain, (wrong ? bond : -bond) - challengerFees * FEE)
  return { stepped, bond }
}

test('a wrong answer challenged: the dispute run, stepped to its end, makes the honest tokens; Resolve overturns the claim, both bonds to the challenger, the run closed', { skip }, async () => {
  const { stepped, bond } = await dispute(3, 6, true)
  console.log(`overturned: 6 tokens in ${stepped} steps, bond ${bond} lamports`)
})

test('an honest answer challenged: Resolve upholds it, the challenger\'s bond to the claimer', { skip }, async () => {
  const { stepped, bond } = await dispute(4, 6, false)
  console.log(`upheld: 6 tokens in ${stepped} steps, bond ${bond} lamports`)
})
