/**
 * Runs on chain: the run account (docs/program.md, "Run account": a 192-byte header, the state
 * buffer of docs/inference.md, then the text), its address, whether a run can be trusted for its
 * model, and a run's life over @solana/kit: `startRun`, `stepRun`, `closeRun`, `watchRun`.
 *
 * Transactions are sent with `sendTransaction` and confirmed by polling `getSignatureStatuses`
 * (no RPC subscriptions needed), as legacy messages.
 */

import {
  type Address,
  type Base64EncodedWireTransaction,
  type GetAccountInfoApi,
  type GetLatestBlockhashApi,
  type GetMinimumBalanceForRentExemptionApi,
  type GetSignatureStatusesApi,
  type GetSlotApi,
  type Instruction,
  type Rpc,
  type SendTransactionApi,
  type Signature,
  type TransactionSigner,
  AccountRole,
  address as toAddress,
  appendTransactionMessageInstructions,
  createAddressWithSeed,
  createTransactionMessage,
  getAddressDecoder,
  getAddressEncoder,
  getBase64EncodedWireTransaction,
  getBase64Encoder,
  getSignatureFromTransaction,
  pipe,
  setTransactionMessageFeePayerSigner,
  setTransactionMessageLifetimeUsingBlockhash,
  signTransactionMessageWithSigners,
} from '@solana/kit'
import { sha256 } from '@noble/hashes/sha2.js'
import type { ModelAccount } from './accounts.js'
import { CURTA_PROGRAM_ID, fetchModel, modelAddress } from './chain.js'
import { CurtaAccountError, CurtaError } from './errors.js'
import { toHex } from './hash.js'
import { type Config, CONFIG_FIELDS } from './layout.js'
import {
  type RunPrompt,
  type SeedSource,
  MAX_STEP_BUDGET,
  SEED_SOURCES,
  SYSTEM_PROGRAM_ID,
  closeRunInstruction,
  programError,
  startRunInstruction,
  stepInstruction,
} from './program.js'

export const RUN_HEADER_LEN = 192
export const RUN_MAGIC = 'CURTARUN'
export const RUN_VERSION = 2
/** Text room per step of the budget: the longest token's bytes. */
export const TEXT_PER_STEP = 128

/** Run account header field offsets. */
export const RUN_FIELD = {
  magic: 0,
  version: 8,
  seedSource: 9,
  nonce: 12,
  model: 16,
  runner: 48,
  stepsLanded: 80,
  textLength: 84,
  textCapacity: 88,
  stateLength: 92,
  temperature: 96,
  topP: 100,
  runnerSeed: 104,
  startSlot: 112,
  seedSlot: 120,
  seedInForce: 128,
  slotHash: 136,
  encoding: 168,
} as const

/** State buffer header field offsets (docs/inference.md, "The state buffer"). */
export const STATE_FIELD = {
  tag: 0,
  promptLength: 8,
  steps: 12,
  generated: 16,
  status: 20,
  mode: 24,
  position: 28,
  stage: 32,
  item: 36,
  temperature: 40,
  topP: 44,
  generator: 48,
  config: 76,
} as const
export const STATE_HEADER_LEN = 128
export const STATE_TAG = 'CURTAS01'

/** The state buffer's length for a model's configuration (curta-core's `state_len`). */
export function stateLength(c: Config): number {
  const kv = (c.dim / c.heads) * c.kvHeads
  return (
    STATE_HEADER_LEN +
    4 * (c.contextLength + 1) + // tokens
    3 * 4 * c.dim + // x, xb, q
    4 * c.hiddenDim + // hb
    4 * c.contextLength + // att
    4 * c.vocabSize + // logits
    4 * 4097 + // sampling's histogram
    2 * 4 * c.layers * c.contextLength * kv // keys and values
  )
}

/** A run account's data length: the header, the state, 128 bytes of text per step. */
export function runAccountLength(c: Config, steps: number): number {
  return RUN_HEADER_LEN + stateLength(c) + TEXT_PER_STEP * steps
}

/** "run-" + hex of the model address's first 8 bytes + "-" + the nonce as 8 hex digits. */
export function runSeed(model: Address, nonce: number): string {
  if (!Number.isInteger(nonce) || nonce < 0 || nonce > 0xffff_ffff) throw new RangeError(`nonce ${nonce} is not a u32`)
  const bytes = addressBytes(model)
  return `run-${toHex(bytes.subarray(0, 8))}-${nonce.toString(16).padStart(8, '0')}`
}

/** The run's address: create_with_seed(runner, runSeed(model, nonce), program id). */
export function runAddress(programId: Address, runner: Address, model: Address, nonce: number): Promise<Address> {
  return createAddressWithSeed({ baseAddress: runner, programAddress: programId, seed: runSeed(model, nonce) })
}

export type RunStatus = 'running' | 'ended' | 'done'
const STATUSES: Record<number, RunStatus> = { 0: 'running', 1: 'ended', 2: 'done' }

export interface RunAccount {
  version: number
  seedSource: SeedSource
  nonce: number
  model: Address
  runner: Address
  /** Every Step that landed, anyone's. */
  stepsLanded: number
  textLength: number
  textCapacity: number
  stateLength: number
  /** 16 fractional bits; 0 is greedy. */
  temperature: number
  /** 16 fractional bits. */
  topP: number
  /** The runner's seed, as StartRun gave it. */
  runnerSeed: bigint
  /** The slot StartRun landed in. */
  startSlot: bigint
  /** Drawn: the slot whose hash was drawn (the start slot), 0 before the draw. */
  seedSlot: bigint
  /** The seed the run samples with: drawn (0 until drawn), the runner's when chosen, 0 when greedy. */
  seedInForce: bigint
  /** Drawn: the slot hash the seed was drawn from; zero otherwise. */
  slotHash: Uint8Array
  /**
   * The text prompt is still being tokenized (header byte 168): the state buffer holds the
   * encoding's working state, which the next Steps continue; `state` then reads as a running run
   * at position 0 with no tokens yet (its `config` all zero), `finished` false.
   */
  encoding: boolean
  /** The state buffer's header. */
  state: {
    status: RunStatus
    /** 0 running, 1 ended by token 1 or 2, 2 steps done. */
    statusCode: number
    position: number
    steps: number
    promptLength: number
    generated: number
    config: Config
  }
  promptTokens: number[]
  generatedTokens: number[]
  /** The text of the generated tokens, `textLength` bytes. */
  text: Uint8Array
  /** Whether the run has ended (status 1 or 2). */
  finished: boolean
}

const ascii = (bytes: Uint8Array) => String.fromCharCode(...bytes)
const addressDecoder = getAddressDecoder()
const addressEncoder = getAddressEncoder()
const addressBytes = (a: Address): Uint8Array => new Uint8Array(addressEncoder.encode(a))

/**
 * Decodes a run account's data as the program reads it (`RunAccount::new`: magic CURTARUN, layout
 * version 2, 192 + state length + text capacity bytes, text length within the capacity) and its
 * state buffer's header, prompt and generated ids (`NotARun` otherwise, naming the field).
 */
export function decodeRunAccount(data: Uint8Array, address?: string): RunAccount {
  const f = RUN_FIELD
  const bad = (field: string, expected: string, found: string) =>
    new CurtaAccountError('NotARun', `not a Curta run account: ${field} is ${found}, expected ${expected}`, { field, expected, found }, address)
  if (data.length < RUN_HEADER_LEN) throw bad('data length', `at least ${RUN_HEADER_LEN} bytes`, `${data.length} bytes`)
  const magic = ascii(data.subarray(0, 8))
  if (magic !== RUN_MAGIC) throw bad('magic (byte 0)', JSON.stringify(RUN_MAGIC), JSON.stringify(magic))
  if (data[f.version] !== RUN_VERSION) throw bad('layout version (byte 8)', `${RUN_VERSION}`, `${data[f.version]}`)
  const v = new DataView(data.buffer, data.byteOffset, data.byteLength)
  const u32 = (at: number) => v.getUint32(at, true)
  const u64 = (at: number) => v.getBigUint64(at, true)
  const seedSource = SEED_SOURCES[data[f.seedSource]!]
  if (seedSource === undefined) throw bad('seed source (byte 9)', '0 none, 1 drawn or 2 chosen', `${data[f.seedSource]}`)
  const stateLen = u32(f.stateLength)
  const textCapacity = u32(f.textCapacity)
  const textLength = u32(f.textLength)
  if (RUN_HEADER_LEN + stateLen + textCapacity !== data.length)
    throw bad('data length', `${RUN_HEADER_LEN} + state length ${stateLen} + text capacity ${textCapacity}`, `${data.length} bytes`)
  if (textLength > textCapacity) throw bad('text length (byte 84)', `at most the capacity ${textCapacity}`, `${textLength}`)
  if (stateLen < STATE_HEADER_LEN) throw bad('state length (byte 92)', `at least ${STATE_HEADER_LEN}`, `${stateLen}`)
  const s = RUN_HEADER_LEN
  const header = {
    version: data[f.version]!,
    seedSource,
    nonce: u32(f.nonce),
    model: addressDecoder.decode(data.subarray(f.model, f.model + 32)),
    runner: addressDecoder.decode(data.subarray(f.runner, f.runner + 32)),
    stepsLanded: u32(f.stepsLanded),
    textLength,
    textCapacity,
    stateLength: stateLen,
    temperature: u32(f.temperature),
    topP: u32(f.topP),
    runnerSeed: u64(f.runnerSeed),
    startSlot: u64(f.startSlot),
    seedSlot: u64(f.seedSlot),
    seedInForce: u64(f.seedInForce),
    slotHash: data.slice(f.slotHash, f.slotHash + 32),
    encoding: u32(f.encoding) === 1,
  }
  if (header.encoding) {
    const config = {} as Config
    CONFIG_FIELDS.forEach((key) => (config[key] = 0))
    return {
      ...header,
      state: { status: 'running', statusCode: 0, position: 0, steps: textCapacity / TEXT_PER_STEP, promptLength: 0, generated: 0, config },
      promptTokens: [],
      generatedTokens: [],
      text: data.slice(RUN_HEADER_LEN + stateLen, RUN_HEADER_LEN + stateLen + textLength),
      finished: false,
    }
  }
  const tag = ascii(data.subarray(s, s + 8))
  if (tag !== STATE_TAG) throw bad(`state tag (byte ${s})`, JSON.stringify(STATE_TAG), JSON.stringify(tag))
  const config = {} as Config
  CONFIG_FIELDS.forEach((key, i) => (config[key] = u32(s + STATE_FIELD.config + 4 * i)))
  const promptLength = u32(s + STATE_FIELD.promptLength)
  const generated = u32(s + STATE_FIELD.generated)
  const statusCode = u32(s + STATE_FIELD.status)
  const status = STATUSES[statusCode]
  if (status === undefined) throw bad(`state status (byte ${s + STATE_FIELD.status})`, '0, 1 or 2', `${statusCode}`)
  const validConfig = CONFIG_FIELDS.every((k) => config[k] > 0) && config.dim % config.heads === 0 && config.heads % config.kvHeads === 0
  if (!validConfig || stateLength(config) !== stateLen)
    throw bad('state length (byte 92)', validConfig ? `the state length of its configuration, ${stateLength(config)}` : 'the state of a valid configuration', `${stateLen}`)
  if (promptLength + generated > config.contextLength + 1)
    throw bad('state token counts', `prompt + generated within the context ${config.contextLength}`, `${promptLength} + ${generated}`)
  const ids = (from: number, n: number) => Array.from({ length: n }, (_, i) => u32(s + STATE_HEADER_LEN + 4 * (from + i)))
  const textAt = RUN_HEADER_LEN + stateLen
  return {
    ...header,
    state: {
      status,
      statusCode,
      position: u32(s + STATE_FIELD.position),
      steps: u32(s + STATE_FIELD.steps),
      promptLength,
      generated,
      config,
    },
    promptTokens: ids(0, promptLength),
    generatedTokens: ids(promptLength, generated),
    text: data.slice(textAt, textAt + textLength),
    finished: statusCode === 1 || statusCode === 2,
  }
}

/** The longest prefix of UTF-8 `bytes` that ends on a whole character, decoded. */
export function completeUtf8(bytes: Uint8Array): string {
  let end = bytes.length
  // Back over at most 3 continuation bytes to the last lead byte; cut it if its character is incomplete.
  for (let back = 1; back <= Math.min(4, bytes.length); back++) {
    const b = bytes[bytes.length - back]!
    if ((b & 0xc0) === 0x80) continue
    const need = b >= 0xf0 ? 4 : b >= 0xe0 ? 3 : b >= 0xc0 ? 2 : 1
    if (need > back) end = bytes.length - back
    break
  }
  return new TextDecoder().decode(bytes.subarray(0, end))
}

/** SHA-256 ("curta-seed" ‖ runner seed u64 LE ‖ run address ‖ start slot u64 LE ‖ slot hash), first 8 bytes LE; 1 if 0. */
export function drawnSeed(seed: bigint, run: Address, startSlot: bigint, slotHash: Uint8Array): bigint {
  const message = new Uint8Array(10 + 8 + 32 + 8 + 32)
  const v = new DataView(message.buffer)
  message.set(new TextEncoder().encode('curta-seed'), 0)
  v.setBigUint64(10, seed, true)
  message.set(addressBytes(run), 18)
  v.setBigUint64(50, startSlot, true)
  message.set(slotHash, 58)
  const digest = sha256(message)
  const drawn = new DataView(digest.buffer, digest.byteOffset, 8).getBigUint64(0, true)
  return drawn === 0n ? 1n : drawn
}

// ---------------------------------------------------------------------------------------------
// Over RPC.

type ReadRpc = Rpc<GetAccountInfoApi>
export type RunRpc = Rpc<
  GetAccountInfoApi & GetLatestBlockhashApi & GetMinimumBalanceForRentExemptionApi & GetSignatureStatusesApi & GetSlotApi & SendTransactionApi
>

const base64 = getBase64Encoder()

async function readAccount(rpc: ReadRpc, at: Address): Promise<{ owner: Address; data: Uint8Array } | null> {
  const { value } = await rpc.getAccountInfo(at, { encoding: 'base64', commitment: 'confirmed' }).send()
  if (value === null) return null
  return { owner: value.owner, data: new Uint8Array(base64.encode(value.data[0])) }
}

/** Fetches and decodes a run account, checking that the program owns it. */
export async function fetchRun(rpc: ReadRpc, run: Address, programId: Address = CURTA_PROGRAM_ID): Promise<RunAccount> {
  const account = await readAccount(rpc, run)
  if (account === null) throw new CurtaAccountError('AccountNotFound', 'no run account at this address', { what: 'run' }, run)
  if (account.owner !== programId)
    throw new CurtaAccountError(
      'WrongOwner',
      `run account owned by ${account.owner}, expected the program ${programId}`,
      { field: 'owner', expected: programId, found: account.owner },
      run,
    )
  return decodeRunAccount(account.data, run)
}

export interface RunTrust {
  /** Every check holds. */
  trusted: boolean
  /** Each check, in order, with what was found: `owner`, `layout`, `address`, `expected model`, `finished`, `prompt`, `settings`, `seed`, `start slot`, `model owner`, `model sealed`, `model address`. */
  checks: { name: string; ok: boolean; detail: string }[]
  run?: RunAccount
  model?: ModelAccount
}

/** What a consumer requires of a run, beside its model (`curta_interface::trust::RunRule`). */
export interface RunRule {
  programId?: Address
  /** The model the run must be of (the PDA of the expected authority and weights hash). */
  expectedModel?: Address
  /** The prompt's token ids. */
  prompt?: readonly number[]
  /** Temperature and top-p, 16 fractional bits. */
  settings?: { temperature: number; topP: number }
  /** Which seed sources are accepted: `any` (the default), `notChosen` (drawn, or greedy), `drawn`. */
  seed?: 'any' | 'notChosen' | 'drawn'
  /** The slot the run must have started in (a run closed and created again at its address has another). */
  startSlot?: bigint
}

/**
 * Whether a run can be trusted, the rule of docs/program.md, "Trusting a run" (the interface
 * crate's `trusted_run`), off chain: the account is owned by the program and is a run (magic,
 * version, lengths, state tag, a state length that is its configuration's), it sits at the run
 * address of its runner, model and nonce, it is of the expected model (when given), it has
 * finished (status 1 or 2), it has the rule's prompt, settings, seed source and start slot where
 * the rule names them; and its model account is owned by the program, Sealed and at the PDA of its
 * authority and declared hash. A consumer acting on the run in a transaction re-checks it there:
 * a run can be closed and re-created at its address.
 */
export async function runTrust(rpc: ReadRpc, run: Address, rule: RunRule = {}): Promise<RunTrust> {
  const programId = rule.programId ?? CURTA_PROGRAM_ID
  const checks: RunTrust['checks'] = []
  const check = (name: string, ok: boolean, detail: string) => (checks.push({ name, ok, detail }), ok)
  const account = await readAccount(rpc, run)
  const result = (extra: Partial<RunTrust> = {}): RunTrust => ({ trusted: checks.every((c) => c.ok), checks, ...extra })
  if (!check('exists', account !== null, account === null ? 'no account at this address' : 'the account exists')) return result()
  if (!check('owner', account!.owner === programId, `owned by ${account!.owner}${account!.owner === programId ? ', the program' : `, not the program ${programId}`}`))
    return result()
  let r: RunAccount
  try {
    r = decodeRunAccount(account!.data, run)
    check('layout', true, `a run account, layout version ${r.version}`)
  } catch (e) {
    check('layout', false, e instanceof Error ? e.message : String(e))
    return result()
  }
  const expectedAddress = await runAddress(programId, r.runner, r.model, r.nonce)
  check('address', expectedAddress === run, expectedAddress === run ? 'the run address of its runner, model and nonce' : `the run address of its runner, model and nonce is ${expectedAddress}`)
  if (rule.expectedModel !== undefined)
    check('expected model', r.model === rule.expectedModel, `the run's model is ${r.model}${r.model === rule.expectedModel ? '' : `, expected ${rule.expectedModel}`}`)
  check('finished', r.finished, `status ${r.state.statusCode} (${r.state.status})`)
  if (rule.prompt !== undefined)
    check('prompt', r.promptTokens.join() === rule.prompt.join(), `prompt ids ${r.promptTokens.join(' ')}${r.promptTokens.join() === rule.prompt.join() ? '' : `, expected ${rule.prompt.join(' ')}`}`)
  if (rule.settings !== undefined) {
    const ok = r.temperature === rule.settings.temperature && r.topP === rule.settings.topP
    check('settings', ok, `temperature ${r.temperature}, top-p ${r.topP}${ok ? '' : `, expected ${rule.settings.temperature} and ${rule.settings.topP}`}`)
  }
  const seedRule = rule.seed ?? 'any'
  if (seedRule !== 'any') {
    const ok = seedRule === 'drawn' ? r.seedSource === 'drawn' : r.seedSource !== 'chosen'
    check('seed', ok, `seed source ${r.seedSource}${ok ? '' : seedRule === 'drawn' ? ', expected drawn from the chain' : ', expected one nobody chose (drawn, or none)'}`)
  }
  if (rule.startSlot !== undefined)
    check('start slot', r.startSlot === rule.startSlot, `started in slot ${r.startSlot}${r.startSlot === rule.startSlot ? '' : `, expected ${rule.startSlot}`}`)
  const modelAccount = await readAccount(rpc, r.model)
  if (!check('model owner', modelAccount !== null && modelAccount.owner === programId, modelAccount === null ? 'no model account' : `model owned by ${modelAccount.owner}`))
    return result({ run: r })
  let model: ModelAccount
  try {
    model = await fetchModel(rpc, r.model, programId)
  } catch (e) {
    check('model', false, e instanceof Error ? e.message : String(e))
    return result({ run: r })
  }
  check('model sealed', model.state === 'Sealed', `the model is ${model.state}`)
  const pda = await modelAddress(programId, model.authority, model.weightsHash)
  check(
    'model address',
    pda.address === r.model && pda.bump === model.bump,
    pda.address === r.model ? 'the PDA of its authority and declared hash' : `the PDA of its authority and hash is ${pda.address}`,
  )
  return result({ run: r, model })
}

const COMPUTE_BUDGET = toAddress('ComputeBudget111111111111111111111111111111')

/** SetComputeUnitLimit (compute budget instruction 2). */
export function computeUnitLimitInstruction(units: number): Instruction {
  const data = new Uint8Array(5)
  data[0] = 2
  new DataView(data.buffer).setUint32(1, units, true)
  return { programAddress: COMPUTE_BUDGET, accounts: [], data }
}

/** The system program's CreateAccountWithSeed (instruction 3). */
export function createAccountWithSeedInstruction(args: {
  payer: TransactionSigner
  to: Address
  base: TransactionSigner
  seed: string
  lamports: bigint
  space: number
  owner: Address
}): Instruction {
  const seed = new TextEncoder().encode(args.seed)
  const data = new Uint8Array(4 + 32 + 8 + seed.length + 8 + 8 + 32)
  const v = new DataView(data.buffer)
  v.setUint32(0, 3, true)
  data.set(addressBytes(args.base.address), 4)
  v.setBigUint64(36, BigInt(seed.length), true)
  data.set(seed, 44)
  let at = 44 + seed.length
  v.setBigUint64(at, args.lamports, true)
  v.setBigUint64(at + 8, BigInt(args.space), true)
  at += 16
  data.set(addressBytes(args.owner), at)
  return {
    programAddress: SYSTEM_PROGRAM_ID,
    accounts: [
      { address: args.payer.address, role: AccountRole.WRITABLE_SIGNER, signer: args.payer },
      { address: args.to, role: AccountRole.WRITABLE },
      { address: args.base.address, role: AccountRole.READONLY_SIGNER, signer: args.base },
    ] as Instruction['accounts'],
    data,
  }
}

/** A transaction the chain refused: `code` is the program's error name when it was one. */
export class CurtaTransactionError extends CurtaError {
  override name = 'CurtaTransactionError'
  readonly signature: string
  readonly err: unknown
  constructor(signature: string, err: unknown) {
    const custom = customCode(err)
    const known = custom === undefined ? undefined : programError(custom)
    super(
      known?.name ?? 'TransactionFailed',
      `transaction ${signature} failed: ${known ? `${known.name} (${known.code}): ${known.message}` : JSON.stringify(err, (_, x) => (typeof x === 'bigint' ? x.toString() : x))}`,
      known ? { code: known.code } : {},
    )
    this.signature = signature
    this.err = err
  }
}

function customCode(err: unknown): number | undefined {
  const ie = (err as { InstructionError?: [unknown, unknown] } | null)?.InstructionError
  const custom = (ie?.[1] as { Custom?: number | bigint } | undefined)?.Custom
  return custom === undefined ? undefined : Number(custom)
}

export interface SendOptions {
  /** Polls of getSignatureStatuses, at this interval (default 100 ms). */
  pollMs?: number
  /** Give up after this long (default 60 s). */
  timeoutMs?: number
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))

/** Signs `instructions` with their signers and `payer`, sends them, and waits until confirmed. */
export async function sendInstructions(rpc: RunRpc, payer: TransactionSigner, instructions: Instruction[], options: SendOptions = {}): Promise<Signature> {
  const { value: latest } = await rpc.getLatestBlockhash({ commitment: 'confirmed' }).send()
  const message = pipe(
    createTransactionMessage({ version: 'legacy' }),
    (m) => setTransactionMessageFeePayerSigner(payer, m),
    (m) => setTransactionMessageLifetimeUsingBlockhash(latest, m),
    (m) => appendTransactionMessageInstructions(instructions, m),
  )
  const tx = await signTransactionMessageWithSigners(message)
  const signature = getSignatureFromTransaction(tx)
  const wire: Base64EncodedWireTransaction = getBase64EncodedWireTransaction(tx)
  await rpc.sendTransaction(wire, { encoding: 'base64', skipPreflight: true }).send()
  const deadline = Date.now() + (options.timeoutMs ?? 60_000)
  for (;;) {
    const { value } = await rpc.getSignatureStatuses([signature]).send()
    const status = value[0]
    if (status) {
      if (status.err) throw new CurtaTransactionError(signature, status.err)
      if (status.confirmationStatus === 'confirmed' || status.confirmationStatus === 'finalized') return signature
    }
    if (Date.now() > deadline) throw new CurtaError('Timeout', `transaction ${signature} not confirmed in ${options.timeoutMs ?? 60_000} ms`, {})
    await sleep(options.pollMs ?? 100)
  }
}

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
  seedSource?: SeedSource
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
      startRunInstruction({
        programId,
        run,
        runner: options.runner,
        model: options.model,
        sectionZero,
        nonce,
        steps: options.steps,
        temperature,
        topP: options.topP ?? 58_982,
        seed,
        seedSource,
        prompt: options.prompt,
      }),
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
      [computeUnitLimitInstruction(1_250_000), stepInstruction({ programId, run: options.run, model: run.model, weights, ticket, budget })],
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
  const ix = closeRunInstruction({
    programId: options.programId ?? CURTA_PROGRAM_ID,
    run: options.run,
    runner: options.runner,
    ...(options.model !== undefined ? { model: options.model, nonce: options.nonce ?? 0 } : {}),
  })
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
