// Whole runs of stories260K on chain through the SDK (startRun, stepRun, watchRun, runTrust,
// closeRun over @solana/kit) against the project's JSON-RPC test node: tests/support/rpc_shim.rs,
// the Curta program's SBF binary on a solana-program-test bank, started by the Rust example
// `sdk_node --movable` with the model published and sealed through it (its bank moves to the
// next slot only when the test asks). Each run's tokens and text must equal `client run` on the
// same artifact (the CLI, natively) and the SDK's WebAssembly engine, and `client run --from-run`
// must recompute the finished account and agree: greedy, a seed the runner chose, a seed drawn
// from the chain.
//
// scripts/sdk-test builds both binaries and sets CURTA_SDK_NODE and CURTA_CLIENT; without them
// (a plain `npm test`) these tests are skipped and say so.
import { test, before, after } from 'node:test'
import assert from 'node:assert/strict'
import { execFile } from 'node:child_process'
import { readFileSync } from 'node:fs'
import { promisify } from 'node:util'
import { type Address, type KeyPairSigner, address, createKeyPairSignerFromBytes, createSolanaRpc } from '@solana/kit'
import {
  CurtaTransactionError,
  Runner,
  closeRun,
  computeUnitLimitInstruction,
  drawnSeed,
  fetchModel,
  fetchRun,
  runAddress,
  runTrust,
  sendInstructions,
  startRun,
  getStepInstruction,
  stepRun,
  watchRun,
  type RunUpdate,
} from '../src/index.js'
import { type ChainNode, type NodeInfo, clientBin, clientRun as cli, skipChain as skip, startChainNode } from './support/chain-node.js'

let node: ChainNode | undefined
let info: NodeInfo
let rpc: ReturnType<typeof createSolanaRpc>
let runner: KeyPairSigner
let stranger: KeyPairSigner
let engine: Runner

before(async () => {
  if (skip) return
  node = await startChainNode({ movable: true })
  info = node.info
  rpc = createSolanaRpc(info.url)
  runner = await createKeyPairSignerFromBytes(new Uint8Array(info.runnerKeypair))
  stranger = await createKeyPairSignerFromBytes(new Uint8Array(info.strangerKeypair))
  engine = await Runner.create(new Uint8Array(readFileSync(info.artifact)))
})

after(async () => {
  await node?.stop()
})

const clientRun = (args: string[]) => cli(info.artifact, args)

/** `client run --from-run RUN --url NODE --output json`. */
async function fromRun(run: Address): Promise<{ agrees: boolean; state: unknown }> {
  const { stdout } = await promisify(execFile)(clientBin!, ['run', '--from-run', run, '--url', info.url, '--output', 'json'], { maxBuffer: 1 << 24 })
  return JSON.parse(stdout) as { agrees: boolean; state: unknown }
}

const balance = async (a: Address) => (await rpc.getBalance(a, { commitment: 'confirmed' }).send()).value

async function runThrough(options: Parameters<typeof startRun>[1], watch = false, inFlight = 1) {
  const before = await balance(runner.address)
  const started = await startRun(rpc, options)
  assert.equal(started.run, await runAddress(address(info.programId), runner.address, address(info.model), started.nonce))
  assert.equal(started.account.finished, false)
  assert.deepEqual(started.account.generatedTokens, [])
  // An unfinished run is not trusted.
  const early = await runTrust(rpc, started.run, { expectedModel: address(info.model) })
  assert.equal(early.trusted, false)
  assert.deepEqual(
    early.checks.filter((c) => !c.ok).map((c) => c.name),
    ['finished'],
  )
  const updates: RunUpdate[] = []
  const watching = watch
    ? (async () => {
        for await (const u of watchRun(rpc, started.run, { intervalMs: 20 })) updates.push(u)
      })()
    : undefined
  let steps = 0
  // A stranger steps the run: anyone may, and the runner then pays only the start and the close.
  const ended = await stepRun(rpc, { run: started.run, payer: stranger, inFlight, onStep: () => steps++ })
  await watching
  assert.equal(ended.finished, true)
  assert.equal(ended.stepsLanded, steps)
  const trust = await runTrust(rpc, started.run, { expectedModel: address(info.model) })
  assert.deepEqual(
    trust.checks.filter((c) => !c.ok),
    [],
  )
  assert.equal(trust.trusted, true)
  // The CLI recomputes the run from the account's own fields and the sealed model: it agrees.
  const replay = await fromRun(started.run)
  assert.equal(replay.agrees, true, JSON.stringify(replay))
  assert.equal(replay.state, 'equal')
  return { started, ended, updates, before }
}

async function closeAndCount(run: Address, before: bigint) {
  await closeRun(rpc, { run, runner })
  assert.equal((await rpc.getAccountInfo(run, { commitment: 'confirmed' }).send()).value, null)
  // The rent came back: the runner paid two fees (start and close) of 5,000 lamports a signature.
  assert.equal(before - (await balance(runner.address)), 10_000n)
}

test('a greedy run with a text prompt, through the SDK: the tokens and text of client run and of the WebAssembly engine; watchRun streams them', { skip }, async () => {
  const steps = 24
  const { started, ended, updates, before } = await runThrough(
    { runner, model: address(info.model), steps, prompt: { text: 'Once upon a time' }, temperature: 0 },
    true,
  )
  assert.equal(started.account.seedSource, 'none')
  assert.equal(started.account.seedInForce, 0n)
  const cli = await clientRun(['--prompt', 'Once upon a time', '--steps', `${steps}`, '--temperature', '0'])
  const wasm = await engine.run({ prompt: 'Once upon a time', steps, temperature: 0 })
  assert.deepEqual(ended.promptTokens, cli.prompt_tokens)
  assert.deepEqual(ended.generatedTokens, cli.tokens)
  assert.equal(new TextDecoder().decode(ended.text), cli.text)
  assert.deepEqual(ended.generatedTokens, wasm.tokens)
  assert.equal(new TextDecoder().decode(ended.text), wasm.text)
  // watchRun: updates as steps landed, the tokens in order, each once, the text growing to the end.
  assert.ok(updates.length >= 2, `${updates.length} updates`)
  assert.deepEqual(
    updates.flatMap((u) => u.newTokens),
    cli.tokens,
  )
  updates.forEach((u, i) => i > 0 && assert.ok(u.text.startsWith(updates[i - 1]!.text)))
  assert.equal(updates.at(-1)!.text, cli.text)
  assert.equal(updates.at(-1)!.run.finished, true)
  // The consumer's rule, by parts: a greedy run has no seed anybody chose, and none drawn.
  const failing = async (rule: Parameters<typeof runTrust>[2]) =>
    (await runTrust(rpc, started.run, rule)).checks.filter((c) => !c.ok).map((c) => c.name)
  assert.deepEqual(await failing({ expectedModel: address(info.model), prompt: cli.prompt_tokens, settings: { temperature: 0, topP: 58_982 }, seed: 'notChosen', startSlot: started.account.startSlot }), [])
  assert.deepEqual(await failing({ seed: 'drawn' }), ['seed'])
  assert.deepEqual(await failing({ prompt: [1] }), ['prompt'])
  assert.deepEqual(await failing({ settings: { temperature: 65_536, topP: 58_982 } }), ['settings'])
  assert.deepEqual(await failing({ expectedModel: runner.address }), ['expected model'])
  console.log(`greedy: ${ended.generatedTokens.length} tokens in ${ended.stepsLanded} steps, ${updates.length} updates: ${JSON.stringify(cli.text)}`)
  await closeAndCount(started.run, before)
})

test('a sampled run with a seed the runner chose, stepped four steps in flight: the tokens and text of client run with that seed', { skip }, async () => {
  const seed = BigInt.asUintN(64, BigInt(Math.floor(Math.random() * 2 ** 53)) * 2048n + 1n)
  console.log(`sampled run, runner's seed ${seed}`)
  const steps = 20
  const { started, ended, before } = await runThrough({
    runner,
    model: address(info.model),
    steps,
    prompt: { tokenIds: [1] },
    temperature: 52_429, // 0.8
    topP: 58_982, // 0.9
    seedSource: 'chosen',
    seed,
  }, false, 4)
  assert.equal(started.account.seedSource, 'chosen')
  assert.equal(started.account.runnerSeed, seed)
  assert.equal(started.account.seedInForce, seed)
  const cli = await clientRun(['--prompt-tokens', '1', '--steps', `${steps}`, '--temperature', '0.8', '--top-p', '0.9', '--seed', `${seed}`])
  assert.equal(BigInt(cli.seed), seed)
  const wasm = await engine.run({ prompt: [1], steps, temperature: '0.8', topP: '0.9', seed })
  assert.deepEqual(ended.generatedTokens, cli.tokens)
  assert.equal(new TextDecoder().decode(ended.text), cli.text)
  assert.deepEqual(ended.generatedTokens, wasm.tokens)
  // A runner-chosen seed fails a rule that wants a seed nobody chose.
  const chosenTrust = await runTrust(rpc, started.run, { seed: 'notChosen' })
  assert.deepEqual(
    chosenTrust.checks.filter((c) => !c.ok).map((c) => c.name),
    ['seed'],
  )
  const again = await fetchRun(rpc, started.run)
  assert.deepEqual(again.generatedTokens, ended.generatedTokens)
  await closeAndCount(started.run, before)
})

test('a run whose seed is drawn from the chain: recorded as drawn, and a step in its start slot is refused with SeedNotReady (the node moves only when asked)', { skip }, async () => {
  const before = await balance(runner.address)
  const seed = 0x0123456789abcdefn
  const started = await startRun(rpc, { runner, model: address(info.model), steps: 4, prompt: { tokenIds: [1] }, temperature: 65_536, seed })
  const slot = await rpc.getSlot({ commitment: 'confirmed' }).send()
  assert.equal(started.account.seedSource, 'drawn')
  assert.equal(started.account.runnerSeed, seed)
  assert.equal(started.account.startSlot, slot)
  assert.deepEqual([started.account.seedSlot, started.account.seedInForce], [0n, 0n])
  assert.deepEqual([...started.account.slotHash], Array(32).fill(0))
  const model = await fetchModel(rpc, address(info.model))
  const step = getStepInstruction({ run: started.run, model: address(info.model), weights: model.weightAccounts as Address[], ticket: 1, budget: 1_175_000 })
  await assert.rejects(
    sendInstructions(rpc, stranger, [computeUnitLimitInstruction(1_250_000), step]),
    (e: unknown) => e instanceof CurtaTransactionError && e.code === 'SeedNotReady' && e.details.code === 42,
  )
  const after = await fetchRun(rpc, started.run)
  assert.equal(after.stepsLanded, 0)
  await closeAndCount(started.run, before)
})

test('a sampled run whose seed is drawn from the chain: the seed in force is SHA-256 of the runner\'s seed, the run address, the start slot and its hash, and the tokens are client run\'s with that seed', { skip }, async () => {
  const seed = BigInt.asUintN(64, BigInt(Math.floor(Math.random() * 2 ** 53)) * 4096n + 7n)
  console.log(`drawn run, runner's seed ${seed}`)
  const steps = 16
  const before = await balance(runner.address)
  const started = await startRun(rpc, { runner, model: address(info.model), steps, prompt: { tokenIds: [1] }, temperature: 52_429, topP: 58_982, seed })
  assert.equal(started.account.seedSource, 'drawn')
  assert.deepEqual([started.account.seedSlot, started.account.seedInForce], [0n, 0n])
  const startSlot = started.account.startSlot
  // stepRun waits until the node is past the start slot: move it meanwhile.
  const moved = node!.passSlot()
  const ended = await stepRun(rpc, { run: started.run, payer: stranger, pollMs: 20 })
  assert.equal(await moved, startSlot + 1n)
  assert.equal(ended.finished, true)
  assert.equal(ended.seedSlot, startSlot)
  assert.notDeepEqual([...ended.slotHash], Array(32).fill(0))
  // The seed in force, recomputed here from the header's own fields (drawnSeed is checked
  // against node:crypto's SHA-256 in idl.test.ts).
  assert.equal(ended.seedInForce, drawnSeed(seed, started.run, startSlot, ended.slotHash))
  const cli = await clientRun(['--prompt-tokens', '1', '--steps', `${steps}`, '--temperature', '0.8', '--top-p', '0.9', '--seed', `${ended.seedInForce}`])
  assert.deepEqual(ended.generatedTokens, cli.tokens)
  assert.equal(new TextDecoder().decode(ended.text), cli.text)
  const wasm = await engine.run({ prompt: [1], steps, temperature: '0.8', topP: '0.9', seed: ended.seedInForce })
  assert.deepEqual(ended.generatedTokens, wasm.tokens)
  const replay = await fromRun(started.run)
  assert.equal(replay.agrees, true, JSON.stringify(replay))
  const rule = { expectedModel: address(info.model), prompt: [1], settings: { temperature: 52_429, topP: 58_982 }, seed: 'drawn' as const, startSlot }
  assert.equal((await runTrust(rpc, started.run, rule)).trusted, true)
  // Pinned to another start slot (a run closed and created again at its address has one): refused.
  const elsewhere = await runTrust(rpc, started.run, { ...rule, startSlot: startSlot + 1n })
  assert.deepEqual(
    elsewhere.checks.filter((c) => !c.ok).map((c) => c.name),
    ['start slot'],
  )
  await closeAndCount(started.run, before)
})
