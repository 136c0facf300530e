/**
 * Optimistic claims over @solana/kit (docs/program.md, "Claims"): `openClaim` (the claim account
 * created with its rent and the bond, and OpenClaim, in one transaction), `answerClaim` (the answer
 * computed with the WebAssembly engine and posted), `verifyClaim` (recomputed and compared),
 * `watchClaims` (every claim of a model, as it lands and changes), and the thin builders of the
 * rest of a claim's life: `challengeClaim`, `resolveClaim`, `closeClaim`.
 */

import {
  type Address,
  type Base58EncodedBytes,
  type GetProgramAccountsApi,
  type Rpc,
  type Signature,
  type TransactionSigner,
  address as toAddress,
  getBase58Decoder,
  getBase64Encoder,
} from '@solana/kit'
import type { Artifact } from './artifact.js'
import type { Config } from './layout.js'
import { CURTA_PROGRAM_ID, fetchModel, verifyModel } from './chain.js'
import {
  type ClaimAccount,
  CLAIM_FIELD,
  CLAIM_VERSION,
  MIN_WINDOW,
  claimAccountLength,
  claimAddress,
  claimDrawnSeed,
  claimSeed,
  claimSeedInForce,
  decodeClaim,
} from './claim-account.js'
import { type ClaimAnswer, claimAnswer } from './claim-answer.js'
import { claimBond } from './claim-cost.js'
import { CurtaAccountError, CurtaError } from './errors.js'
import {
  CLAIM_DISCRIMINATOR,
  getAnswerClaimInstruction,
  getChallengeInstruction,
  getCloseClaimInstruction,
  getOpenClaimInstruction,
  getResolveInstruction,
} from './generated/index.js'
import { type RunPrompt, type SeedSourceName, promptArgs, seedSourceCode } from './program.js'
import { runAccountLength, runAddress, runSeed, stateLength, TEXT_PER_STEP } from './run-account.js'
import { Runner } from './run.js'
import { type RunRpc, type SendOptions, computeUnitLimitInstruction, createAccountWithSeedInstruction, sendInstructions, sleep } from './send.js'
import { type ReadRpc, readAccount } from './trust.js'

/** The SlotHashes sysvar: the hashes of the last 512 slots, newest first. */
export const SLOT_HASHES_ID = toAddress('SysvarS1otHashes111111111111111111111111111')

/** The compute-budget and the system instruction beside a claim instruction: 150 units each. */
const BESIDE = 300
const units = (n: number) => Math.min(Math.ceil(n), 1_400_000)

/**
 * The compute units each claim transaction asks (its SetComputeUnitLimit): about twice what the
 * VM measured (tests/program/claims.rs, `compute_units_of_claims`: the stories15M shape, token 1,
 * 256 steps), with twice what grows with the claim and 300 for the compute-budget and system
 * instructions. test/chain-claims.test.ts simulates each transaction on the program first and
 * checks that it uses at most two thirds of its limit. Each function takes `computeUnits` to ask
 * another.
 */
export const claimComputeUnits = {
  /** OpenClaim with the account's creation: 3,032 measured for one id; each id more about 36 (checked, then copied). */
  open: (prompt: RunPrompt): number => units(2 * 3_032 + BESIDE + ('tokenIds' in prompt ? 2 * 36 * prompt.tokenIds.length : 0)),
  /**
   * AnswerClaim: 1,592 measured for a drawn seed whose open slot is the newest in SlotHashes;
   * the sysvar is read newest first, about 36 units an entry, so at most 511 entries before it.
   */
  answer: (): number => units(2 * (1_592 + 36 * 511) + BESIDE),
  /**
   * Challenge with the dispute run's creation: 21,311 measured for an ids prompt, the run's state
   * zeroed among them (a unit per 250 bytes: 2,718 for stories15M's 679,480); and twice the
   * zeroing of this model's state. A text prompt's encoding begins in it as in StartRun (up to
   * `START_ENCODE_BUDGET`, 1,000,000 units): 1,400,000, as `startRun` asks.
   */
  challenge: (prompt: RunPrompt, config: Config): number => ('text' in prompt ? 1_400_000 : units(2 * 21_311 + BESIDE + (2 * stateLength(config)) / 250)),
  /**
   * Resolve: 2,498 measured (6 tokens); SHA-256 of the dispute run's ids and text, half a unit a
   * byte, at most 4 + `TEXT_PER_STEP` bytes a step.
   */
  resolve: (steps: number): number => units(2 * 2_498 + BESIDE + (4 + TEXT_PER_STEP) * steps),
  /** CloseClaim: 415 measured (an overturned claim); a settled one reads the clock, 582 on the test node. */
  close: (): number => units(2 * 582 + BESIDE),
}

/** Fetches and decodes a claim account, checking that the program owns it. */
export async function fetchClaim(rpc: ReadRpc, claim: Address, programId: Address = CURTA_PROGRAM_ID): Promise<ClaimAccount> {
  const account = await readAccount(rpc, claim)
  if (account === null) throw new CurtaAccountError('AccountNotFound', 'no claim account at this address', { what: 'claim' }, claim)
  if (account.owner !== programId)
    throw new CurtaAccountError('WrongOwner', `claim account owned by ${account.owner}, expected the program ${programId}`, { field: 'owner', expected: programId, found: account.owner }, claim)
  return decodeClaim(account.data, claim)
}

/** A model to compute answers with: a runner already holding it, or what `Runner.create` takes. */
export type ClaimEngine = Runner | Artifact | Uint8Array | readonly Uint8Array[]

const runnerOf = (engine: ClaimEngine): Promise<Runner> => (engine instanceof Runner ? Promise.resolve(engine) : Runner.create(engine))

export interface ClaimVerification {
  /**
   * `agrees`: the engine's answer has the claim's token count and answer hash (a dispute run
   * would uphold it); `disagrees`: it does not (a dispute run would overturn it); `unanswered`:
   * the claim holds no answer yet.
   */
  verdict: 'agrees' | 'disagrees' | 'unanswered'
  /** The engine's answer; undefined for a drawn claim before its answer (its seed is not drawn yet). */
  answer?: ClaimAnswer
  seed?: bigint
  /** What differs: `token count` (the claim's and the engine's), `answer hash`. */
  differences: string[]
  /**
   * A drawn claim decoded with its address: whether the seed AnswerClaim recorded is the
   * derivation of the claimer's seed, the claim address, the open slot and the recorded slot hash.
   */
  seedDerivation?: boolean
}

/**
 * Recomputes a claim's answer with the engine from its prompt, steps, settings and seed in force,
 * and says whether the claim's answer (token count and hash) is it. `model` is the claim's model:
 * a runner holding it, or its bytes (`verifyModel(..., { keepSections: true })` gives them checked
 * against the chain). `options.seed` gives a drawn claim's seed before its answer (`claimDrawnSeed`).
 */
export async function verifyClaim(claim: ClaimAccount, model: ClaimEngine, options: { seed?: bigint } = {}): Promise<ClaimVerification> {
  const seed = claimSeedInForce(claim) ?? options.seed
  const answered = claim.state !== 'open'
  const seedDerivation =
    claim.seedSource === 'drawn' && answered && claim.address !== undefined
      ? claimDrawnSeed(claim.claimerSeed, claim.address, claim.openSlot, claim.slotHash) === claim.seedInForce
      : undefined
  const result = (r: Omit<ClaimVerification, 'seedDerivation'>): ClaimVerification => (seedDerivation === undefined ? r : { ...r, seedDerivation })
  if (seed === undefined) return result({ verdict: 'unanswered', differences: [] })
  const answer = claimAnswer(await runnerOf(model), claim, seed)
  if (!answered) return result({ verdict: 'unanswered', answer, seed, differences: [] })
  const differences: string[] = []
  if (answer.tokenCount !== claim.tokenCount) differences.push(`token count: the claim says ${claim.tokenCount}, the engine made ${answer.tokenCount}`)
  if (!answer.hash.every((b, i) => b === claim.answerHash[i])) differences.push('answer hash: the claim\'s is not the hash of the engine\'s ids and text')
  return result({ verdict: differences.length === 0 ? 'agrees' : 'disagrees', answer, seed, differences })
}

export interface OpenClaimOptions extends SendOptions {
  claimer: TransactionSigner
  /** Pays the fees, the account's rent and the bond (default the claimer). */
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
  /** The claimer's seed; default 0 when greedy, a random u64 otherwise. */
  seed?: bigint
  /** The challenge window in slots, 150 to 432,000 (default 150). */
  window?: number
  /** Micro-lamports per compute unit the bond covers a dispute's steps at: 0 (the default) to `MAX_PRIORITY_PRICE`. */
  priorityPrice?: bigint
  /** Lamports (default and least: `claimBond` of the model's configuration, the prompt, the steps, the temperature and the price). */
  bond?: bigint
  /** The transaction's compute-unit limit (default `claimComputeUnits.open(prompt)`). */
  computeUnits?: number
  programId?: Address
}

function randomU64(): bigint {
  const b = new BigUint64Array(1)
  crypto.getRandomValues(b)
  return b[0]! === 0n ? 1n : b[0]!
}

/**
 * Opens a claim: creates the claim account at the claim address (create_account_with_seed, the
 * header and the prompt's bytes of space, rent-exempt plus the bond) and sends OpenClaim, in one
 * transaction. The bond defaults to the least the program takes (`claimBond`).
 */
export async function openClaim(rpc: RunRpc, options: OpenClaimOptions): Promise<{ claim: Address; nonce: number; bond: bigint; signature: Signature; account: ClaimAccount }> {
  const programId = options.programId ?? CURTA_PROGRAM_ID
  const model = await fetchModel(rpc, options.model, programId)
  if (model.state !== 'Sealed') throw new CurtaAccountError('NotSealed', `the model is ${model.state}, expected Sealed`, { field: 'state' }, options.model)
  const nonce = options.nonce ?? crypto.getRandomValues(new Uint32Array(1))[0]!
  const temperature = options.temperature ?? 0
  const seedSource = options.seedSource ?? (temperature === 0 ? 'none' : 'drawn')
  const seed = options.seed ?? (seedSource === 'none' ? 0n : randomU64())
  const priorityPrice = options.priorityPrice ?? 0n
  // The least bond, computed even when a bond is given: a price above MAX_PRIORITY_PRICE throws here.
  const least = claimBond(model.config, options.prompt, options.steps, temperature, priorityPrice)
  const bond = options.bond ?? least
  const claim = await claimAddress(programId, options.claimer.address, options.model, nonce)
  const space = claimAccountLength(options.prompt)
  const rent = await rpc.getMinimumBalanceForRentExemption(BigInt(space)).send()
  const payer = options.payer ?? options.claimer
  const signature = await sendInstructions(
    rpc,
    payer,
    [
      computeUnitLimitInstruction(options.computeUnits ?? claimComputeUnits.open(options.prompt)),
      createAccountWithSeedInstruction({ payer, to: claim, base: options.claimer, seed: claimSeed(options.model, nonce), lamports: rent + bond, space, owner: programId }),
      getOpenClaimInstruction(
        {
          claim,
          claimer: options.claimer,
          model: options.model,
          nonce,
          steps: options.steps,
          temperature,
          topP: options.topP ?? 58_982,
          seed,
          seedSource: seedSourceCode(seedSource),
          window: options.window ?? MIN_WINDOW,
          priorityPrice,
          bond,
          prompt: promptArgs(options.prompt),
        },
        { programAddress: programId },
      ),
    ],
    options,
  )
  return { claim, nonce, bond, signature, account: await fetchClaim(rpc, claim, programId) }
}

/** The hash of `slot` in the SlotHashes sysvar, or undefined; `oldest` is the oldest slot it holds. */
export async function slotHash(rpc: ReadRpc, slot: bigint): Promise<{ hash?: Uint8Array; oldest?: bigint; newest?: bigint }> {
  const account = await readAccount(rpc, SLOT_HASHES_ID)
  if (account === null) return {}
  const v = new DataView(account.data.buffer, account.data.byteOffset, account.data.byteLength)
  const count = Math.min(Number(v.getBigUint64(0, true)), Math.floor((account.data.length - 8) / 40))
  const at = (i: number) => v.getBigUint64(8 + 40 * i, true)
  for (let i = 0; i < count; i++) if (at(i) === slot) return { hash: account.data.slice(16 + 40 * i, 48 + 40 * i), newest: at(0), oldest: at(count - 1) }
  return count === 0 ? {} : { newest: at(0), oldest: at(count - 1) }
}

/**
 * Computes a claim's answer with the engine and posts it (AnswerClaim). A drawn claim waits
 * until the open slot's hash is in SlotHashes and draws its seed from it as the program will.
 * `engine` is the claim's model (by default fetched from the chain and verified against its
 * declared hash). Throws `AlreadyAnswered`, `NotTheClaimer`, `SeedExpired` (the open slot's hash
 * left SlotHashes: the claim cannot be answered) or, after the answer landed, `SeedMismatch`.
 */
export async function answerClaim(
  rpc: RunRpc,
  options: SendOptions & { claim: Address; claimer: TransactionSigner; payer?: TransactionSigner; engine?: ClaimEngine; programId?: Address; signal?: AbortSignal; computeUnits?: number },
): Promise<{ signature: Signature; answer: ClaimAnswer; account: ClaimAccount }> {
  const programId = options.programId ?? CURTA_PROGRAM_ID
  const c = await fetchClaim(rpc, options.claim, programId)
  if (c.state !== 'open') throw new CurtaAccountError('AlreadyAnswered', `the claim is ${c.state}, not open`, { field: 'state', found: c.state }, options.claim)
  if (c.claimer !== options.claimer.address)
    throw new CurtaAccountError('NotTheClaimer', `the claim's claimer is ${c.claimer}, not ${options.claimer.address}`, { field: 'claimer', expected: c.claimer, found: options.claimer.address }, options.claim)
  let seed = claimSeedInForce(c)
  if (seed === undefined) {
    const deadline = Date.now() + (options.timeoutMs ?? 60_000)
    for (;;) {
      options.signal?.throwIfAborted()
      const found = await slotHash(rpc, c.openSlot)
      if (found.hash) {
        seed = claimDrawnSeed(c.claimerSeed, options.claim, c.openSlot, found.hash)
        break
      }
      if (found.oldest !== undefined && found.oldest > c.openSlot)
        throw new CurtaError('SeedExpired', `slot ${c.openSlot}'s hash has left SlotHashes (its oldest slot is ${found.oldest}): the claim can no longer be answered`, { openSlot: c.openSlot })
      if (Date.now() > deadline) throw new CurtaError('Timeout', `slot ${c.openSlot}'s hash did not appear in SlotHashes`, {})
      await sleep(options.pollMs ?? 100)
    }
  }
  const runner = options.engine ? await runnerOf(options.engine) : await Runner.fromVerified(await verifyModel(rpc, c.model, { programId, keepSections: true }))
  const answer = claimAnswer(runner, c, seed)
  const ix = getAnswerClaimInstruction({ claim: options.claim, claimer: options.claimer, tokenCount: answer.tokenCount, answerHash: answer.hash }, { programAddress: programId })
  const limit = computeUnitLimitInstruction(options.computeUnits ?? claimComputeUnits.answer())
  const signature = await sendInstructions(rpc, options.payer ?? options.claimer, [limit, ix], options)
  const account = await fetchClaim(rpc, options.claim, programId)
  if (c.seedSource === 'drawn' && account.seedInForce !== seed)
    throw new CurtaError('SeedMismatch', `the answer landed (${signature}), but the program drew seed ${account.seedInForce}, not ${seed}`, { drawn: account.seedInForce, computed: seed })
  return { signature, answer, account }
}

/** Closes a claim: every lamport (its rent and what is left of the bond) to the claimer, who signs. */
export function closeClaim(
  rpc: RunRpc,
  options: SendOptions & { claim: Address; claimer: TransactionSigner; payer?: TransactionSigner; programId?: Address; computeUnits?: number },
): Promise<Signature> {
  const ix = getCloseClaimInstruction({ claim: options.claim, claimer: options.claimer }, { programAddress: options.programId ?? CURTA_PROGRAM_ID })
  return sendInstructions(rpc, options.payer ?? options.claimer, [computeUnitLimitInstruction(options.computeUnits ?? claimComputeUnits.close()), ix], options)
}

/**
 * Challenges an answered claim within its window: creates the dispute run's account at the
 * challenger's run address of the claim's model and `nonce` (rent-exempt for the claim's steps)
 * and sends Challenge, which takes the bond from the challenger and starts the run. Step it with
 * `stepRun`; once it has finished, `resolveClaim`.
 */
export async function challengeClaim(
  rpc: RunRpc,
  options: SendOptions & { claim: Address; challenger: TransactionSigner; payer?: TransactionSigner; nonce?: number; programId?: Address; computeUnits?: number },
): Promise<{ run: Address; nonce: number; signature: Signature }> {
  const programId = options.programId ?? CURTA_PROGRAM_ID
  const c = await fetchClaim(rpc, options.claim, programId)
  const model = await fetchModel(rpc, c.model, programId)
  const sectionZero = model.weightAccounts[0]
  if (!sectionZero) throw new CurtaAccountError('WeightAccountsMissing', 'the model records no weight account for section zero', {}, c.model)
  const nonce = options.nonce ?? crypto.getRandomValues(new Uint32Array(1))[0]!
  const run = await runAddress(programId, options.challenger.address, c.model, nonce)
  const space = runAccountLength(model.config, c.steps)
  const lamports = await rpc.getMinimumBalanceForRentExemption(BigInt(space)).send()
  const payer = options.payer ?? options.challenger
  const signature = await sendInstructions(
    rpc,
    payer,
    [
      computeUnitLimitInstruction(options.computeUnits ?? claimComputeUnits.challenge(c.prompt, model.config)),
      createAccountWithSeedInstruction({ payer, to: run, base: options.challenger, seed: runSeed(c.model, nonce), lamports, space, owner: programId }),
      getChallengeInstruction({ claim: options.claim, challenger: options.challenger, run, model: c.model, sectionZero, nonce }, { programAddress: programId }),
    ],
    options,
  )
  return { run, nonce, signature }
}

/** Resolves a challenged claim whose dispute run has finished (anyone may send it; `payer` pays the fee). */
export async function resolveClaim(rpc: RunRpc, options: SendOptions & { claim: Address; payer: TransactionSigner; programId?: Address; computeUnits?: number }): Promise<Signature> {
  const programId = options.programId ?? CURTA_PROGRAM_ID
  const c = await fetchClaim(rpc, options.claim, programId)
  if (c.disputeRun === null || c.challenger === null)
    throw new CurtaAccountError('NotChallenged', `the claim is ${c.state}: nothing to resolve`, { field: 'state', found: c.state }, options.claim)
  const ix = getResolveInstruction({ claim: options.claim, run: c.disputeRun, claimer: c.claimer, challenger: c.challenger }, { programAddress: programId })
  return sendInstructions(rpc, options.payer, [computeUnitLimitInstruction(options.computeUnits ?? claimComputeUnits.resolve(c.steps)), ix], options)
}

export type ClaimsRpc = Rpc<GetProgramAccountsApi>

/** A claim seen by `watchClaims`: new (first seen, including every claim there at the start), changed, or closed (gone; `claim` is the last seen). */
export interface ClaimEvent {
  kind: 'new' | 'changed' | 'closed'
  address: Address
  claim: ClaimAccount
}

/**
 * The program's claim accounts of `model`: getProgramAccounts with two memcmp filters, the magic
 * and layout version at byte 0 and the model at byte 16. An account that matches them but does
 * not decode goes to `onError` (with its address) and is left out.
 */
export async function listClaims(
  rpc: ClaimsRpc,
  model: Address,
  options: { programId?: Address; onError?: (error: unknown, address: Address) => void } = {},
): Promise<Map<Address, ClaimAccount>> {
  const head = new Uint8Array([...CLAIM_DISCRIMINATOR, CLAIM_VERSION])
  const filters = [
    { memcmp: { offset: 0n, bytes: getBase58Decoder().decode(head) as Base58EncodedBytes, encoding: 'base58' as const } },
    { memcmp: { offset: BigInt(CLAIM_FIELD.model), bytes: model as string as Base58EncodedBytes, encoding: 'base58' as const } },
  ]
  const accounts = await rpc.getProgramAccounts(options.programId ?? CURTA_PROGRAM_ID, { encoding: 'base64', commitment: 'confirmed', filters }).send()
  const base64 = getBase64Encoder()
  const out = new Map<Address, ClaimAccount>()
  for (const { pubkey, account } of accounts) {
    try {
      out.set(pubkey, decodeClaim(new Uint8Array(base64.encode(account.data[0])), pubkey))
    } catch (e) {
      options.onError?.(e, pubkey)
    }
  }
  return out
}

/** What changes in a claim's life (and what a claim closed and opened again at its address changes). */
const claimKey = (c: ClaimAccount) =>
  [c.stateCode, c.openSlot, c.answerSlot, c.tokenCount, c.seedInForce, c.challenger, c.disputeRun, c.bond, c.steps, c.temperature, c.topP, c.window, c.claimerSeed, c.answerHash.join(), c.promptBytes.join()].join('|')
const sameClaim = (a: ClaimAccount, b: ClaimAccount) => claimKey(a) === claimKey(b)

/**
 * Watches the claims of a model: polls `listClaims` every `intervalMs` (default 1,000) and calls
 * `onClaim` for each claim first seen (every claim there at the start is new), each that changed
 * (answered, challenged, resolved, or closed and opened again at its address) and each that is
 * gone. Stops when `signal` aborts or `stop()` is called; `done` settles then (and rejects on the
 * first failed poll unless `onError` takes it, when the watch goes on).
 */
export function watchClaims(
  rpc: ClaimsRpc,
  model: Address,
  onClaim: (event: ClaimEvent) => void | Promise<void>,
  options: { programId?: Address; intervalMs?: number; signal?: AbortSignal; onError?: (error: unknown, address?: Address) => void } = {},
): { stop(): void; done: Promise<void> } {
  const stopper = new AbortController()
  const signal = options.signal ? AbortSignal.any([options.signal, stopper.signal]) : stopper.signal
  const seen = new Map<Address, ClaimAccount>()
  const done = (async () => {
    while (!signal.aborted) {
      let now: Map<Address, ClaimAccount>
      try {
        now = await listClaims(rpc, model, { ...(options.programId ? { programId: options.programId } : {}), onError: (e, at) => options.onError?.(e, at) })
      } catch (e) {
        if (!options.onError) throw e
        options.onError(e)
        now = seen
      }
      if (signal.aborted) return
      for (const [address, claim] of now) {
        const before = seen.get(address)
        if (before === undefined) await onClaim({ kind: 'new', address, claim })
        else if (!sameClaim(before, claim)) await onClaim({ kind: 'changed', address, claim })
      }
      for (const [address, claim] of seen) if (!now.has(address)) await onClaim({ kind: 'closed', address, claim })
      if (now !== seen) {
        seen.clear()
        for (const [a, c] of now) seen.set(a, c)
      }
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, options.intervalMs ?? 1_000)
        signal.addEventListener('abort', () => (clearTimeout(timer), resolve()), { once: true })
      })
    }
  })()
  return { stop: () => stopper.abort(), done }
}
