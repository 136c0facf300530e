/**
 * The Curta program's instructions (docs/program.md, "Instructions"; idl/curta.json): one builder
 * per instruction, returning a @solana/kit `Instruction` (with the signer in its account meta
 * when a `TransactionSigner` is passed, so `signTransactionMessageWithSigners` signs it), and the
 * program's error codes. Each builder's bytes and accounts are checked against the IDL by
 * test/idl.test.ts, and the IDL against the interface crate by tests/idl.rs.
 */

import { type AccountMeta, AccountRole, type Address, type Instruction, type TransactionSigner, address as toAddress, getAddressEncoder } from '@solana/kit'
import { CURTA_PROGRAM_ID } from './chain.js'

/** The SlotHashes sysvar: a Step's third account (a drawn seed is the hash of a slot it holds). */
export const SLOT_HASHES_SYSVAR = toAddress('SysvarS1otHashes111111111111111111111111111')
export const SYSTEM_PROGRAM_ID = toAddress('11111111111111111111111111111111')
/** Most section bytes one Write carries in a 1,232-byte packet with one signer. */
export const MAX_WRITE_BYTES = 1019
/** The largest step budget, in estimated compute units. */
export const MAX_STEP_BUDGET = 1_175_000

/** The instruction tags (the first data byte). */
export const TAG = {
  createModel: 0,
  initWeightAccount: 1,
  write: 2,
  seal: 3,
  reopen: 4,
  close: 5,
  startRun: 6,
  step: 7,
  closeRun: 8,
} as const

/** Where a run's seed comes from (StartRun byte 25, run header byte 9). */
export type SeedSource = 'none' | 'drawn' | 'chosen'
export const SEED_SOURCES: readonly SeedSource[] = ['none', 'drawn', 'chosen']

/** A run's prompt: text (tokenized on chain) or token ids. */
export type RunPrompt = { text: string | Uint8Array } | { tokenIds: readonly number[] }

/** An account given as an address, or as a signer (then it signs the transaction). */
export type AccountInput = Address | TransactionSigner

const addressEncoder = getAddressEncoder()
const addressOf = (a: AccountInput): Address => (typeof a === 'string' ? a : a.address)

function meta(a: AccountInput, writable: boolean, signer = false): AccountMeta {
  const role = signer
    ? writable
      ? AccountRole.WRITABLE_SIGNER
      : AccountRole.READONLY_SIGNER
    : writable
      ? AccountRole.WRITABLE
      : AccountRole.READONLY
  return signer && typeof a !== 'string' ? ({ address: a.address, role, signer: a } as AccountMeta) : { address: addressOf(a), role }
}

/** Little-endian writer of instruction data. */
class Writer {
  private parts: number[] = []
  u8(v: number) {
    checkUint(v, 0xff, 'u8')
    this.parts.push(v)
    return this
  }
  u32(v: number) {
    checkUint(v, 0xffff_ffff, 'u32')
    for (let i = 0; i < 4; i++) this.parts.push((v >>> (8 * i)) & 0xff)
    return this
  }
  u64(v: bigint | number) {
    const b = BigInt(v)
    if (b < 0n || b >= 1n << 64n) throw new RangeError(`${v} is not a u64`)
    for (let i = 0n; i < 8n; i++) this.parts.push(Number((b >> (8n * i)) & 0xffn))
    return this
  }
  bytes(b: Uint8Array) {
    for (const x of b) this.parts.push(x)
    return this
  }
  done(): Uint8Array {
    return new Uint8Array(this.parts)
  }
}

function checkUint(v: number, max: number, what: string) {
  if (!Number.isInteger(v) || v < 0 || v > max) throw new RangeError(`${v} is not a ${what}`)
}

function instruction(programId: Address, accounts: AccountMeta[], data: Uint8Array): Instruction {
  return { programAddress: programId, accounts, data }
}

export interface ProgramOption {
  /** The program id (default CURTA_PROGRAM_ID). */
  programId?: Address
}

/** 0 CreateModel: accounts authority (signer, writable), the model PDA (writable), the system program. */
export function createModelInstruction(
  args: { authority: AccountInput; model: Address; weightsHash: Uint8Array; sectionLengths: readonly number[] } & ProgramOption,
): Instruction {
  if (args.weightsHash.length !== 32) throw new RangeError(`a weights hash is 32 bytes, got ${args.weightsHash.length}`)
  const w = new Writer().u8(TAG.createModel).bytes(args.weightsHash).u32(args.sectionLengths.length)
  args.sectionLengths.forEach((l) => w.u32(l))
  return instruction(
    args.programId ?? CURTA_PROGRAM_ID,
    [meta(args.authority, true, true), meta(args.model, true), meta(SYSTEM_PROGRAM_ID, false)],
    w.done(),
  )
}

/** 1 InitWeightAccount: model (writable), weight account (writable), authority (signer). */
export function initWeightAccountInstruction(
  args: { model: Address; weight: Address; authority: AccountInput; section: number } & ProgramOption,
): Instruction {
  return instruction(
    args.programId ?? CURTA_PROGRAM_ID,
    [meta(args.model, true), meta(args.weight, true), meta(args.authority, false, true)],
    new Writer().u8(TAG.initWeightAccount).u8(args.section).done(),
  )
}

/** 2 Write: weight account (writable), authority (signer); `bytes` at `offset` of the section. */
export function writeInstruction(args: { weight: Address; authority: AccountInput; offset: number; bytes: Uint8Array } & ProgramOption): Instruction {
  return instruction(
    args.programId ?? CURTA_PROGRAM_ID,
    [meta(args.weight, true), meta(args.authority, false, true)],
    new Writer().u8(TAG.write).u32(args.offset).u32(args.bytes.length).bytes(args.bytes).done(),
  )
}

/**
 * 3 Seal. Chunk 0 starts a pass and freezes every section: model (writable), section zero's
 * weight account (writable), the authority (signer), then the other sections' weight accounts
 * (writable): pass `weights`, every section's in section order. A later chunk: model (writable)
 * and either `weight`, the cursor's section's weight account, or `weights`, every section's,
 * so that the seal hashes the chunk at the cursor whichever section it is in (the whole pass in
 * flight at once); the weight accounts read only (no later seal writes them).
 */
export function sealInstruction(
  args: {
    model: Address
    weight?: Address
    weights?: readonly Address[]
    authority?: AccountInput
    pass: number
    chunk: number
    creation: bigint | number
  } & ProgramOption,
): Instruction {
  const data = new Writer().u8(TAG.seal).u32(args.pass).u32(args.chunk).u64(args.creation).done()
  const programId = args.programId ?? CURTA_PROGRAM_ID
  if (args.chunk === 0) {
    if (args.authority === undefined) throw new TypeError('the seal of chunk 0 starts a pass: it needs the authority')
    if (args.weights === undefined || args.weights.length < 2) {
      throw new TypeError('the seal of chunk 0 freezes every section: it needs weights, every section\'s weight account')
    }
    const [zero, ...later] = args.weights
    return instruction(programId, [meta(args.model, true), meta(zero!, true), meta(args.authority, false, true), ...later.map((w) => meta(w, true))], data)
  }
  if ((args.weight === undefined) === (args.weights === undefined)) {
    throw new TypeError('a later seal takes either weight (the cursor\'s section) or weights (every section)')
  }
  const weights = args.weights ?? [args.weight!]
  return instruction(programId, [meta(args.model, true), ...weights.map((w) => meta(w, false))], data)
}

/** 4 Reopen: model (writable), authority (signer), every section's weight account (writable). */
export function reopenInstruction(args: { model: Address; authority: AccountInput; weights: readonly Address[] } & ProgramOption): Instruction {
  return instruction(
    args.programId ?? CURTA_PROGRAM_ID,
    [meta(args.model, true), meta(args.authority, false, true), ...args.weights.map((w) => meta(w, true))],
    new Uint8Array([TAG.reopen]),
  )
}

/** 5 Close: model, authority (signer), destination, every section's weight address (all writable but the authority). */
export function closeInstruction(
  args: { model: Address; authority: AccountInput; destination: Address; weights: readonly Address[] } & ProgramOption,
): Instruction {
  return instruction(
    args.programId ?? CURTA_PROGRAM_ID,
    [meta(args.model, true), meta(args.authority, false, true), meta(args.destination, true), ...args.weights.map((w) => meta(w, true))],
    new Uint8Array([TAG.close]),
  )
}

export interface StartRunArgs extends ProgramOption {
  run: Address
  runner: AccountInput
  model: Address
  /** The model's weight account of section zero. */
  sectionZero: Address
  nonce: number
  steps: number
  /** 16 fractional bits; 0 is greedy. */
  temperature: number
  /** 16 fractional bits. */
  topP: number
  /** The runner's seed (u64). */
  seed: bigint | number
  seedSource: SeedSource
  prompt: RunPrompt
}

/** 6 StartRun: run (writable), runner (signer), model, section zero's weight account. */
export function startRunInstruction(args: StartRunArgs): Instruction {
  const source = SEED_SOURCES.indexOf(args.seedSource)
  if (source < 0) throw new RangeError(`seed source ${String(args.seedSource)} is not none, drawn or chosen`)
  const w = new Writer().u8(TAG.startRun).u32(args.nonce).u32(args.steps).u32(args.temperature).u32(args.topP).u64(args.seed).u8(source)
  if ('text' in args.prompt) {
    const text = typeof args.prompt.text === 'string' ? new TextEncoder().encode(args.prompt.text) : args.prompt.text
    w.u8(0).u32(text.length).bytes(text)
  } else {
    w.u8(1).u32(args.prompt.tokenIds.length)
    args.prompt.tokenIds.forEach((id) => w.u32(id))
  }
  return instruction(
    args.programId ?? CURTA_PROGRAM_ID,
    [meta(args.run, true), meta(args.runner, false, true), meta(args.model, false), meta(args.sectionZero, false)],
    w.done(),
  )
}

/**
 * 7 Step: run (writable), model, the SlotHashes sysvar, section zero's weight account, then any of
 * the other sections' in section order (every section's, or those the step's items read). No signer.
 */
export function stepInstruction(
  args: { run: Address; model: Address; weights: readonly Address[]; ticket: number; budget: number } & ProgramOption,
): Instruction {
  return instruction(
    args.programId ?? CURTA_PROGRAM_ID,
    [meta(args.run, true), meta(args.model, false), meta(SLOT_HASHES_SYSVAR, false), ...args.weights.map((w) => meta(w, false))],
    new Writer().u8(TAG.step).u32(args.ticket).u32(args.budget).done(),
  )
}

/**
 * 8 CloseRun: run (writable), runner (signer, writable). With `model` and `nonce` it also closes
 * an account at the run's address that StartRun never initialized.
 */
export function closeRunInstruction(args: { run: Address; runner: AccountInput; model?: Address; nonce?: number } & ProgramOption): Instruction {
  const w = new Writer().u8(TAG.closeRun)
  if ((args.model === undefined) !== (args.nonce === undefined)) throw new TypeError('CloseRun names both the model and the nonce, or neither')
  if (args.model !== undefined) w.bytes(addressEncoder.encode(args.model) as Uint8Array).u32(args.nonce!)
  return instruction(args.programId ?? CURTA_PROGRAM_ID, [meta(args.run, true), meta(args.runner, true, true)], w.done())
}

/** The program's errors by code: [name, message] (the program's CurtaError). */
export const PROGRAM_ERRORS: readonly (readonly [string, string])[] = [
  ["WrongOwner", "account is not owned by the expected program"],
  ["Unauthorized", "signer is not the model's authority"],
  ["InvalidSectionCount", "section count must be 2 to 18"],
  ["InvalidSectionLength", "section length must be 1 to 10,483,712 bytes"],
  ["ModelAddressMismatch", "model account is not the PDA of [\"model\", authority, weights hash]"],
  ["WeightAddressMismatch", "weight account is not the seed-derived address of (authority, model, section)"],
  ["WeightSizeMismatch", "weight account data length is not 2,048 + the section length"],
  ["AlreadyInitialized", "account or section is already initialized"],
  ["SectionOutOfRange", "section index is not below the model's section count"],
  ["NotRentExempt", "account does not hold the rent-exempt minimum"],
  ["NotInitialized", "weight account is not initialized"],
  ["WrongModel", "weight account belongs to another model"],
  ["WrongSection", "weight account holds another section than the one expected"],
  ["WriteOutOfBounds", "write reaches past the end of the section"],
  ["EmptyWrite", "write carries no bytes"],
  ["SectionFrozen", "section is frozen: a seal pass started; Reopen unfreezes it"],
  ["ModelSealed", "model is sealed and can never change or close"],
  ["WrongState", "instruction is not allowed in the model's current state"],
  ["UnexpectedChunk", "seal names another chunk than the model's seal cursor"],
  ["StalePass", "seal names another seal pass than the model's"],
  ["WeightAccountsMissing", "not every section's weight account is initialized"],
  ["InvalidSectionZero", "section zero's header is not a valid CURTAW01 header"],
  ["SectionTableMismatch", "section zero's section table differs from the declared section lengths"],
  ["WrongAccountCount", "wrong number of accounts for this instruction"],
  ["NotAModel", "account is not a Curta model account"],
  ["NotWritable", "account must be writable"],
  ["InvalidDestination", "destination must not be one of the accounts being closed"],
  ["Overflow", "arithmetic overflow"],
  ["SealStartNeedsAuthority", "the seal of chunk 0 starts a pass: it needs the model's authority as third account, signing"],
  ["UnrecognizedWeightAccount", "account at a weight address holds neither a zero header nor a valid weight header"],
  ["SectionZeroTooShort", "section zero must hold at least the 4,096-byte header"],
  ["StaleCreation", "seal names another creation of the model than the one at this address"],
  ["ModelTooLarge", "the model's accounts would hold more than 66,060,288 bytes: one Reopen or Close transaction could not load them"],
  ["NotARun", "account is not a Curta run account"],
  ["RunAddressMismatch", "run account is not the seed-derived address of (runner, model, nonce)"],
  ["RunSizeMismatch", "run account data length is not 128 + the model's state length + 128 x steps"],
  ["StaleCursor", "no longer returned: steps are order-free (the code stays reserved)"],
  ["RunEnded", "the run has ended: no step is left to do"],
  ["InvalidRun", "the run's prompt, steps or sampling settings are refused (the reason is logged)"],
  ["InvalidStepBudget", "step budget must be 1 to 1,175,000 estimated compute units"],
  ["ModelNotSealed", "runs take a Sealed model only"],
  ["RunTooLarge", "no longer returned: a Step carries only the sections it reads, so every run can be stepped (the code stays reserved)"],
  ["SeedNotReady", "a run whose seed is drawn from the chain steps only after the slot it started in: the start slot's hash is not in SlotHashes yet"],
  ["SeedExpired", "the start slot's hash has left SlotHashes (512 slots) before the run's seed was drawn: the run can only be closed"],
  ["NotSlotHashes", "the account is not the SlotHashes sysvar"],
  ["PromptTooLongToEncode", "the text prompt's working state (curta-core's Encoding) does not fit the run's state buffer: send the prompt as token ids"],
  ["SectionNotLoaded", "the step's next item reads a section whose weight account the step does not carry (the section is logged)"],
]

/** The program error of a custom error code, or undefined for a code the program does not use. */
export function programError(code: number): { code: number; name: string; message: string } | undefined {
  const e = PROGRAM_ERRORS[code]
  return e === undefined ? undefined : { code, name: e[0], message: e[1] }
}
