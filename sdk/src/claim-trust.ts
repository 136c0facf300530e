/**
 * Whether a claim can be relied on, off chain: the interface crate's `trusted_claim` (docs/program.md,
 * "Claims"), each check named with what was found, as `runTrust` does for runs.
 */

import type { Address, GetAccountInfoApi, GetSlotApi, Rpc } from '@solana/kit'
import type { ModelAccount } from './accounts.js'
import { CURTA_PROGRAM_ID, fetchModel, modelAddress } from './chain.js'
import { type ClaimAccount, claimAddress, claimSettled, decodeClaim, promptWireBytes } from './claim-account.js'
import { toHex } from './hash.js'
import type { RunPrompt } from './program.js'
import { readAccount } from './trust.js'

/** What a consumer requires of a claim (the interface crate's `ClaimRule`). */
export interface ClaimRule {
  programId?: Address
  /** The model the claim must be of. */
  expectedModel?: Address
  /** The prompt, as the claim carries it (text bytes or ids). */
  prompt?: RunPrompt
  /** Temperature and top-p, 16 fractional bits. */
  settings?: { temperature: number; topP: number }
  /** Which seed sources are accepted: `any` (the default), `notChosen` (drawn, or greedy), `drawn`. */
  seed?: 'any' | 'notChosen' | 'drawn'
  /** The shortest window accepted, in slots: the time the consumer's watchers need (default 0). */
  minWindow?: number
  /** The answer relied on: its generated ids' count and answer hash must be the claim's. */
  answer?: { tokenCount: number; hash: Uint8Array }
}

export interface ClaimTrust {
  /** Every check holds. */
  trusted: boolean
  /** Each check in order, with what was found: `exists`, `owner`, `layout`, `address`, `expected model`, `not overturned`, `settled`, `window`, `prompt`, `settings`, `seed`, `answer`, `model owner`, `model sealed`, `model address`. */
  checks: { name: string; ok: boolean; detail: string }[]
  /** The slot the claim was judged at. */
  slot?: bigint
  claim?: ClaimAccount
  model?: ModelAccount
}

/**
 * The rule of `trusted_claim`, off chain, at the cluster's current (confirmed) slot: the account
 * is the program's and a claim at the claim address of its claimer, model and nonce, of the
 * expected model, not overturned, settled (answered and past its window unchallenged, or upheld),
 * with a window of at least `minWindow`, and the rule's prompt, settings, seed source and answer
 * where it names them; then its model is owned by the program, Sealed, at the PDA of its authority
 * and declared hash. A consumer acting on the claim re-checks it in its transaction.
 */
export async function claimTrust(rpc: Rpc<GetAccountInfoApi & GetSlotApi>, claim: Address, rule: ClaimRule = {}): Promise<ClaimTrust> {
  const programId = rule.programId ?? CURTA_PROGRAM_ID
  const checks: ClaimTrust['checks'] = []
  const check = (name: string, ok: boolean, detail: string) => (checks.push({ name, ok, detail }), ok)
  const [account, slot] = await Promise.all([readAccount(rpc, claim), rpc.getSlot({ commitment: 'confirmed' }).send()])
  const result = (extra: Partial<ClaimTrust> = {}): ClaimTrust => ({ trusted: checks.every((c) => c.ok), checks, slot, ...extra })
  if (!check('exists', account !== null, account === null ? 'no account at this address' : 'the account exists')) return result()
  if (!check('owner', account!.owner === programId, `owned by ${account!.owner}${account!.owner === programId ? ', the program' : `, not the program ${programId}`}`)) return result()
  let c: ClaimAccount
  try {
    c = decodeClaim(account!.data, claim)
    check('layout', true, `a claim account, layout version ${c.version}`)
  } catch (e) {
    check('layout', false, e instanceof Error ? e.message : String(e))
    return result()
  }
  const at = await claimAddress(programId, c.claimer, c.model, c.nonce)
  check('address', at === claim, at === claim ? 'the claim address of its claimer, model and nonce' : `the claim address of its claimer, model and nonce is ${at}`)
  if (rule.expectedModel !== undefined)
    check('expected model', c.model === rule.expectedModel, `the claim's model is ${c.model}${c.model === rule.expectedModel ? '' : `, expected ${rule.expectedModel}`}`)
  check('not overturned', c.state !== 'overturned', `state ${c.state}`)
  const settled = claimSettled(c, slot)
  check(
    'settled',
    settled,
    c.state === 'answered' ? `answered in slot ${c.answerSlot}, window to slot ${c.windowEnd}, now slot ${slot}` : `state ${c.state}${settled ? '' : ', expected answered and past its window, or upheld'}`,
  )
  const minWindow = rule.minWindow ?? 0
  check('window', c.window >= minWindow, `${c.window} slots${c.window >= minWindow ? '' : `, expected at least ${minWindow}`}`)
  if (rule.prompt !== undefined) {
    const ok = toHex(c.promptBytes) === toHex(promptWireBytes(rule.prompt))
    check('prompt', ok, ok ? 'the rule\'s prompt' : 'another prompt than the rule\'s')
  }
  if (rule.settings !== undefined) {
    const ok = c.temperature === rule.settings.temperature && c.topP === rule.settings.topP
    check('settings', ok, `temperature ${c.temperature}, top-p ${c.topP}${ok ? '' : `, expected ${rule.settings.temperature} and ${rule.settings.topP}`}`)
  }
  const seedRule = rule.seed ?? 'any'
  if (seedRule !== 'any') {
    const ok = seedRule === 'drawn' ? c.seedSource === 'drawn' : c.seedSource !== 'chosen'
    check('seed', ok, `seed source ${c.seedSource}${ok ? '' : seedRule === 'drawn' ? ', expected drawn from the chain' : ', expected one nobody chose (drawn, or none)'}`)
  }
  if (rule.answer !== undefined) {
    const ok = rule.answer.tokenCount === c.tokenCount && toHex(rule.answer.hash) === toHex(c.answerHash)
    check('answer', ok, ok ? 'the claim\'s token count and answer hash' : `the claim's answer is ${c.tokenCount} tokens hashing to ${toHex(c.answerHash)}`)
  }
  const modelAccount = await readAccount(rpc, c.model)
  if (!check('model owner', modelAccount !== null && modelAccount.owner === programId, modelAccount === null ? 'no model account' : `model owned by ${modelAccount.owner}`))
    return result({ claim: c })
  let model: ModelAccount
  try {
    model = await fetchModel(rpc, c.model, programId)
  } catch (e) {
    check('model', false, e instanceof Error ? e.message : String(e))
    return result({ claim: c })
  }
  check('model sealed', model.state === 'Sealed', `the model is ${model.state}`)
  const pda = await modelAddress(programId, model.authority, model.weightsHash)
  check('model address', pda.address === c.model && pda.bump === model.bump, pda.address === c.model ? 'the PDA of its authority and declared hash' : `the PDA of its authority and hash is ${pda.address}`)
  return result({ claim: c, model })
}
