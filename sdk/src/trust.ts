/**
 * Reading a run from the chain and whether it can be trusted for its model (docs/program.md,
 * "Trusting a run"; the interface crate's `trusted_run`), off chain.
 */

import { type Address, type GetAccountInfoApi, type Rpc, getBase64Encoder } from '@solana/kit'
import type { ModelAccount } from './accounts.js'
import { CURTA_PROGRAM_ID, fetchModel, modelAddress } from './chain.js'
import { CurtaAccountError } from './errors.js'
import { type RunAccount, decodeRunAccount, runAddress } from './run-account.js'

export type ReadRpc = Rpc<GetAccountInfoApi>

const base64 = getBase64Encoder()

export async function readAccount(rpc: ReadRpc, at: Address): Promise<{ owner: Address; data: Uint8Array } | null> {
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

