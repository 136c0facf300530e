/**
 * A run's life on chain over @solana/kit: `startRun` (the run account created and the run started
 * in one transaction), `stepRun`, `closeRun` and `watchRun`.
 */

import { type Address, type Signature, type TransactionSigner } from '@solana/kit'
import { CURTA_PROGRAM_ID, fetchModel } from './chain.js'
import { CurtaAccountError, CurtaError } from './errors.js'
import { getCloseRunInstruction, getStartRunInstruction, getStepInstruction } from './generated/index.js'
import { type RunPrompt, type SeedSourceName, MAX_STEP_BUDGET, promptArgs, seedSourceCode } from './program.js'
import { type RunAccount, completeUtf8, runAccountLength, runAddress, runSeed } from './run-account.js'
import { type RunRpc, type SendOptions, CurtaTransactionError, computeUnitLimitInstruction, createAccountWithSeedInstruction, sendInstructions, sleep } from './send.js'
import { type ReadRpc, fetchRun } from './trust.js'

export interface StartRunOptions extends SendOptions {
  runner: TransactionSigner
  /** Pays the fees and the run account's rent (default the runner). */
  payer?: TransactionSigner
  model: Address
  /** Default: a random u32. */
  nonce?: number
  steps: number
  prompt: RunPrompt
  /** 16 fractional bits (65,536 is 1.0); 0 is greedy (the default). */
  temperature?: number
  /** 16 fractional bits (default 58,982, 0.9). */
  topP?: number
  /** Default: 'none' when greedy, 'drawn' (from the chain) when sampling. */
  seedSource?: SeedSourceName
  /** The runner's seed; default 0 when greedy, a random u64 otherwise. */
  seed?: bigint
  programId?: Address
}

function randomU64(): bigint {
  const b = new BigUint64Array(1)
  crypto.getRandomValues(b)
  return b[0]! === 0n ? 1n : b[0]!
}

/**
 * Creates the run account (create_account_with_seed at the run address, rent-exempt for the
 * model's state and `steps` tokens of text) and starts the run, in one transaction.
 */
export async function startRun(rpc: RunRpc, options: StartRunOptions): Promise<{ run: Address; nonce: number; signature: Signature; account: RunAccount }> {
  const programId = options.programId ?? CURTA_PROGRAM_ID
  const model = await fetchModel(rpc, options.model, programId)
  if (model.state !== 'Sealed') throw new CurtaAccountError('NotSealed', `the model is ${model.state}, expected Sealed`, { field: 'state' }, options.model)
  const sectionZero = model.weightAccounts[0]
  if (!sectionZero) throw new CurtaAccountError('WeightAccountsMissing', 'the model records no weight account for section zero', {}, options.model)
  const nonce = options.nonce ?? crypto.getRandomValues(new Uint32Array(1))[0]!
  const temperature = options.temperature ?? 0
  const seedSource = options.seedSource ?? (temperature === 0 ? 'none' : 'drawn')
  const seed = options.seed ?? (seedSource === 'none' ? 0n : randomU64())
  const run = await runAddress(programId, options.runner.address, options.model, nonce)
  const space = runAccountLength(model.config, options.steps)
  const lamports = await rpc.getMinimumBalanceForRentExemption(BigInt(space)).send()
  const payer = options.payer ?? options.runner
  const signature = await sendInstructions(
    rpc,
    payer,
    [
      computeUnitLimitInstruction(1_400_000),
      createAccountWithSeedInstruction({ payer, to: run, base: options.runner, seed: runSeed(options.model, nonce), lamports, space, owner: programId }),
      getStartRunInstruction(
        {
          run,
          runner: options.runner,
          model: options.model,
          sectionZero,
          nonce,
          steps: options.steps,
          temperature,
          topP: options.topP ?? 58_982,
          seed,
          seedSource: seedSourceCode(seedSource),
          prompt: promptArgs(options.prompt),
        },
        { programAddress: programId },
      ),
    ],
    options,
  )
  return { run, nonce, signature, account: await fetchRun(rpc, run, programId) }
}

export interface StepRunOptions extends SendOptions {
  run: Address
  /** Pays each step's fee. Anyone may step a run. */
  payer: TransactionSigner
  /** Estimated compute units per step (default and most 1,175,000). */
  budget?: number
  /** Stop after this many steps (default: until the run ends). */
  maxSteps?: number
  /**
   * Steps in flight at once (default 1, at most 64). Steps are order-free: any number may be in
   * flight and land in any order, and the run ends with the same bytes; a step that lands after
   * the run ended is refused (`RunEnded`, its fee paid) and ignored here.
   */
  inFlight?: number
  /** Called after each step that landed, with the run as it then is. */
  onStep?: (run: RunAccount, signature: Signature) => void
  signal?: AbortSignal
  programId?: Address
}

/**
 * Steps a run until it ends (or `maxSteps`), `inFlight` steps at a time, and returns it. A run whose
 * seed is drawn from the chain waits first until the cluster is past its start slot (a step in
 * the start slot itself is refused: its hash is not known yet).
 */
export async function stepRun(rpc: RunRpc, options: StepRunOptions): Promise<RunAccount> {
  const programId = options.programId ?? CURTA_PROGRAM_ID
  const budget = options.budget ?? MAX_STEP_BUDGET
  if (!Number.isInteger(budget) || budget < 1 || budget > MAX_STEP_BUDGET) throw new RangeError(`a step's budget is 1 to ${MAX_STEP_BUDGET}, not ${budget}`)
  let run = await fetchRun(rpc, options.run, programId)
  const model = await fetchModel(rpc, run.model, programId)
  const weights = model.weightAccounts.map((w, i) => {
    if (w === null) throw new CurtaAccountError('WeightAccountsMissing', `the model records no weight account for section ${i}`, {}, run.model)
    return w
  })
  if (run.seedSource === 'drawn' && run.seedSlot === 0n) await waitForSlot(rpc, run.startSlot + 1n, options)
  const inFlight = options.inFlight ?? 1
  if (!Number.isInteger(inFlight) || inFlight < 1 || inFlight > 64) throw new RangeError(`steps in flight are 1 to 64, not ${inFlight}`)
  let ticket = crypto.getRandomValues(new Uint32Array(1))[0]!
  let sent = 0
  let failure: unknown
  const pending = new Set<Promise<void>>()
  const launch = () => {
    ticket = (ticket + 1) >>> 0
    sent++
    const step: Promise<void> = sendInstructions(
      rpc,
      options.payer,
      [computeUnitLimitInstruction(1_250_000), getStepInstruction({ run: options.run, model: run.model, weights, ticket, budget }, { programAddress: programId })],
      options,
    )
      .then(async (signature) => {
        run = await fetchRun(rpc, options.run, programId)
        options.onStep?.(run, signature)
      })
      .catch((e: unknown) => {
        // A step that lands after the run ended (another step of the window finished it).
        if (!(e instanceof CurtaTransactionError && e.code === 'RunEnded')) failure ??= e
      })
      .finally(() => pending.delete(step))
    pending.add(step)
  }
  for (;;) {
    while (failure === undefined && !run.finished && pending.size < inFlight && (options.maxSteps === undefined || sent < options.maxSteps)) {
      options.signal?.throwIfAborted()
      launch()
    }
    if (pending.size === 0) break
    await Promise.race(pending)
  }
  if (failure !== undefined) throw failure
  // The run as it stands now (the window's reads may have resolved out of order).
  return fetchRun(rpc, options.run, programId)
}

async function waitForSlot(rpc: RunRpc, slot: bigint, options: SendOptions & { signal?: AbortSignal }) {
  const deadline = Date.now() + (options.timeoutMs ?? 60_000)
  while ((await rpc.getSlot({ commitment: 'confirmed' }).send()) < slot) {
    options.signal?.throwIfAborted()
    if (Date.now() > deadline) throw new CurtaError('Timeout', `the cluster did not reach slot ${slot}`, {})
    await sleep(options.pollMs ?? 100)
  }
}

/** Closes a run: every lamport of the run account to its runner (who signs). */
export async function closeRun(
  rpc: RunRpc,
  options: SendOptions & { run: Address; runner: TransactionSigner; payer?: TransactionSigner; model?: Address; nonce?: number; programId?: Address },
): Promise<Signature> {
  const runSeeds = options.model !== undefined ? { model: options.model, nonce: options.nonce ?? 0 } : null
  const ix = getCloseRunInstruction({ run: options.run, runner: options.runner, runSeeds }, { programAddress: options.programId ?? CURTA_PROGRAM_ID })
  return sendInstructions(rpc, options.payer ?? options.runner, [ix], options)
}

export interface RunUpdate {
  run: RunAccount
  /** Generated ids that are new since the previous update. */
  newTokens: number[]
  /** The text so far, up to its last whole UTF-8 character. */
  text: string
}

/**
 * Watches a run account: yields the run whenever a step that changed it has landed (polling
 * getAccountInfo every `intervalMs`, default 250 ms), with the tokens new since the last
 * update, and returns once the run has finished (or `signal` aborts; a missing account throws).
 */
export async function* watchRun(
  rpc: ReadRpc,
  run: Address,
  options: { intervalMs?: number; signal?: AbortSignal; programId?: Address } = {},
): AsyncGenerator<RunUpdate, RunAccount | undefined> {
  let seen = -1
  let tokens = 0
  let last: RunAccount | undefined
  for (;;) {
    if (options.signal?.aborted) return last
    const current = await fetchRun(rpc, run, options.programId ?? CURTA_PROGRAM_ID)
    const mark = current.stepsLanded * 2 + (current.finished ? 1 : 0)
    if (mark !== seen) {
      seen = mark
      const newTokens = current.generatedTokens.slice(tokens)
      tokens = current.generatedTokens.length
      last = current
      yield { run: current, newTokens, text: completeUtf8(current.text) }
    }
    if (current.finished) return current
    await sleep(options.intervalMs ?? 250)
  }
}

