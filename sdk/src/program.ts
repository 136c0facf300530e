/**
 * The Curta program's instructions and errors. The builders, one per instruction, are Codama's
 * render of idl/curta.json (src/generated/: `getCreateModelInstruction`, ...,
 * `getCloseRunInstruction`, each taking `{ programAddress }` as its second argument). What is
 * here is what the IDL does not say: the two forms of Seal, a run's prompt and seed source by
 * name, the limits the program checks, and the errors by name.
 */

import { AccountRole, type Address, type Instruction, type TransactionSigner } from '@solana/kit'
import * as programErrors from './generated/errors/curta.js'
import { type CurtaProgramError, CURTA_PROGRAM_ADDRESS, type PromptArgs, getCurtaErrorMessage, getSealInstruction } from './generated/index.js'

/** Most section bytes one Write carries in a 1,232-byte packet with one signer. */
export const MAX_WRITE_BYTES = 1019
/** The largest step budget, in estimated compute units. */
export const MAX_STEP_BUDGET = 1_175_000

/** Where a run's seed comes from, by name (the generated `SeedSource` is the byte: 0, 1, 2). */
export type SeedSourceName = 'none' | 'drawn' | 'chosen'
export const SEED_SOURCES: readonly SeedSourceName[] = ['none', 'drawn', 'chosen']

/** A run's prompt: text (tokenized on chain) or token ids. */
export type RunPrompt = { text: string | Uint8Array } | { tokenIds: readonly number[] }

/** StartRun's `prompt` argument (the kind byte, 0 text or 1 token ids, then a u32-prefixed list). */
export function promptArgs(prompt: RunPrompt): PromptArgs {
  if ('text' in prompt) {
    return { __kind: 'Text', fields: [typeof prompt.text === 'string' ? new TextEncoder().encode(prompt.text) : prompt.text] }
  }
  return { __kind: 'TokenIds', fields: [[...prompt.tokenIds]] }
}

/** StartRun's `seedSource` argument: the index of its name. */
export function seedSourceCode(name: SeedSourceName): number {
  const code = SEED_SOURCES.indexOf(name)
  if (code < 0) throw new RangeError(`seed source ${String(name)} is not none, drawn or chosen`)
  return code
}

/**
 * 3 Seal, in its two forms, which the IDL's one account list (optional authority, weight
 * accounts writable) cannot tell apart. Chunk 0 starts a pass and freezes every section: the
 * authority signs and `weights` is every section's weight account, in section order (writable).
 * A later chunk: either `weight`, the cursor's section's weight account, or `weights`, every
 * section's (the whole pass in flight at once); read only, since no later seal writes them and
 * read-only accounts let seals of one pass run in parallel.
 */
export function sealInstruction(
  args: {
    model: Address
    weight?: Address
    weights?: readonly Address[]
    authority?: TransactionSigner
    pass: number
    chunk: number
    creation: bigint | number
  },
  config: { programAddress?: Address } = {},
): Instruction {
  const { model, pass, chunk, creation } = args
  const programAddress = config.programAddress ?? CURTA_PROGRAM_ADDRESS
  if (chunk === 0) {
    if (args.authority === undefined) throw new TypeError('the seal of chunk 0 starts a pass: it needs the authority')
    if (args.weights === undefined || args.weights.length < 2) {
      throw new TypeError("the seal of chunk 0 freezes every section: it needs weights, every section's weight account")
    }
    const [zero, ...later] = args.weights
    return getSealInstruction({ model, weight: zero!, authority: args.authority, pass, chunk, creation, weights: later }, { programAddress })
  }
  if ((args.weight === undefined) === (args.weights === undefined)) {
    throw new TypeError("a later seal takes either weight (the cursor's section) or weights (every section)")
  }
  const [first, ...later] = args.weights ?? [args.weight!]
  const ix = getSealInstruction({ model, weight: first!, pass, chunk, creation, weights: later }, { programAddress })
  return { ...ix, accounts: ix.accounts.map((a, i) => (i === 0 ? a : { ...a, role: AccountRole.READONLY })) }
}

/** The program's error names by code, from the generated `CURTA_ERROR__WRONG_OWNER`-style constants. */
const ERROR_NAMES = new Map(
  Object.entries(programErrors)
    .filter(([key]) => key.startsWith('CURTA_ERROR__'))
    .map(([key, code]) => [code as number, key.slice(13).toLowerCase().replace(/(?:^|_)([a-z])/g, (_, c: string) => c.toUpperCase())]),
)

/**
 * The program error of a custom error code (the name of the program's `CurtaError` variant and
 * its message), or undefined for a code the program does not use. The message is the generated
 * table's, which a bundle built with NODE_ENV=production leaves out (Codama's renderer does so).
 */
export function programError(code: number): { code: number; name: string; message: string } | undefined {
  const name = ERROR_NAMES.get(code)
  return name === undefined ? undefined : { code, name, message: getCurtaErrorMessage(code as CurtaProgramError) }
}
