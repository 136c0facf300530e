/**
 * Sending transactions for runs over @solana/kit: the compute-budget and system instructions a run
 * needs beside the program's, and `sendInstructions`, which signs, sends with `sendTransaction`
 * and confirms by polling `getSignatureStatuses` (no RPC subscriptions needed), as legacy messages.
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
  createTransactionMessage,
  getAddressEncoder,
  getBase64EncodedWireTransaction,
  getSignatureFromTransaction,
  pipe,
  setTransactionMessageFeePayerSigner,
  setTransactionMessageLifetimeUsingBlockhash,
  signTransactionMessageWithSigners,
} from '@solana/kit'
import { CurtaError } from './errors.js'
import { programError } from './program.js'

export type RunRpc = Rpc<
  GetAccountInfoApi & GetLatestBlockhashApi & GetMinimumBalanceForRentExemptionApi & GetSignatureStatusesApi & GetSlotApi & SendTransactionApi
>

export const SYSTEM_PROGRAM_ID = toAddress('11111111111111111111111111111111')
const addressBytes = (a: Address): Uint8Array => new Uint8Array(getAddressEncoder().encode(a))

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

export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))

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
