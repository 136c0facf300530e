/**
 * Reading a model from the chain through @solana/kit: the model PDA, the weight accounts'
 * seed-derived addresses, fetching and decoding the accounts, and verifying a sealed model:
 * every weight account is the one its address binds to (authority, model, section), frozen,
 * of the declared length, and the SHA-256 chain over their bytes equals the declared hash.
 */

import {
  type Address,
  type GetAccountInfoApi,
  type Rpc,
  createAddressWithSeed,
  getAddressEncoder,
  getBase64Encoder,
} from '@solana/kit'
import { type ModelAccount, type WeightHeader, WEIGHT_HEADER_LEN, decodeModelAccount, decodeWeightHeader } from './accounts.js'
import { CURTA_PROGRAM_ADDRESS, findModelPda } from './generated/index.js'
import { SectionZero } from './artifact.js'
import { CurtaAccountError } from './errors.js'
import { CHUNK_LEN } from './layout.js'
import { WeightsHasher, toHex } from './hash.js'

/** The program id of the Curta program (the IDL's, programs/curta/src/lib.rs's): the generated `CURTA_PROGRAM_ADDRESS`. */
export const CURTA_PROGRAM_ID: Address = CURTA_PROGRAM_ADDRESS

const addressEncoder = getAddressEncoder()

/** The model PDA and its bump: seeds [b"model", authority, weights hash]. */
export async function modelAddress(
  programId: Address,
  authority: Address,
  weightsHash: Uint8Array,
): Promise<{ address: Address; bump: number }> {
  if (weightsHash.length !== 32) throw new TypeError(`a weights hash is 32 bytes, got ${weightsHash.length}`)
  const [address, bump] = await findModelPda({ authority, weightsHash }, { programAddress: programId })
  return { address, bump }
}

/**
 * The seed of section `section`'s weight account: "curta-" + the section as two decimal digits +
 * "-" + lower-case hex of the model address's first 10 bytes (29 characters).
 */
export function weightSeed(model: Address, section: number): string {
  if (!Number.isInteger(section) || section < 0 || section > 99) throw new RangeError(`section ${section} is not 0 to 99`)
  const bytes = addressEncoder.encode(model) as Uint8Array
  return `curta-${String(section).padStart(2, '0')}-${toHex(bytes.subarray(0, 10))}`
}

/** The address of section `section`'s weight account: create_with_seed(authority, seed, program id). */
export function weightAddress(programId: Address, authority: Address, model: Address, section: number): Promise<Address> {
  return createAddressWithSeed({ baseAddress: authority, programAddress: programId, seed: weightSeed(model, section) })
}

type AccountRpc = Rpc<GetAccountInfoApi>

interface FetchedAccount {
  owner: Address
  data: Uint8Array
  space: number | undefined
}

const base64 = getBase64Encoder()

async function getAccount(
  rpc: AccountRpc,
  at: Address,
  slice?: { offset: number; length: number },
): Promise<FetchedAccount | null> {
  const { value } = await rpc
    .getAccountInfo(at, { encoding: 'base64', commitment: 'confirmed', ...(slice ? { dataSlice: slice } : {}) })
    .send()
  if (value === null) return null
  const data = new Uint8Array(base64.encode(value.data[0]))
  const space = (value as { space?: bigint | number }).space
  return { owner: value.owner, data, space: space === undefined ? undefined : Number(space) }
}

function accountError(code: string, message: string, details: Record<string, string | number>, at: string) {
  return new CurtaAccountError(code, message, details, at)
}

function checkOwner(account: FetchedAccount | null, at: Address, programId: Address, what: string): FetchedAccount {
  if (account === null) throw accountError('AccountNotFound', `no ${what} account at this address`, { what }, at)
  if (account.owner !== programId)
    throw accountError(
      'WrongOwner',
      `${what} account owned by ${account.owner}, expected the program ${programId}`,
      { field: 'owner', expected: programId, found: account.owner },
      at,
    )
  return account
}

/** Fetches and decodes a model account, checking that the program owns it. */
export async function fetchModel(rpc: AccountRpc, model: Address, programId: Address = CURTA_PROGRAM_ID): Promise<ModelAccount> {
  const account = checkOwner(await getAccount(rpc, model), model, programId, 'model')
  return decodeModelAccount(account.data, model)
}

export interface VerifyProgress {
  /** `header`: a weight account's header was checked; `bytes`: a slice of its section was fetched and hashed. */
  phase: 'header' | 'bytes'
  section: number
  sectionCount: number
  bytesDone: number
  bytesTotal: number
}

export interface VerifyOptions {
  programId?: Address
  onProgress?: (progress: VerifyProgress) => void
  /** Bytes fetched per request (a multiple of 65,536; default 1 MiB). */
  sliceBytes?: number
  /** Also return the sections' bytes. */
  keepSections?: boolean
}

export interface VerifyResult {
  /** True when the chain over the weight accounts' bytes equals the declared hash. */
  ok: boolean
  model: ModelAccount
  address: Address
  declaredHash: Uint8Array
  computedHash: Uint8Array
  weights: { address: Address; header: WeightHeader }[]
  sections?: Uint8Array[]
}

/** Section `s`'s weight header at `address`: owned by the program, naming this model, section,
 * declared length and authority, frozen. */
async function sealedWeightHeader(rpc: AccountRpc, programId: Address, address: Address, model: Address, m: ModelAccount, s: number) {
  const account = checkOwner(await getAccount(rpc, address, { offset: 0, length: WEIGHT_HEADER_LEN }), address, programId, 'weight')
  const length = m.sectionLengths[s]!
  const header = decodeWeightHeader(account.data, account.space ?? WEIGHT_HEADER_LEN + length, address)
  const checks: [string, string | number | boolean, string | number | boolean][] = [
    ['model', header.model, model],
    ['section', header.section, s],
    ['length', header.length, length],
    ['authority', header.authority, m.authority],
    ['frozen', header.frozen, true],
  ]
  for (const [field, found, want] of checks) {
    if (found !== want)
      throw accountError(
        field === 'model' ? 'WrongModel' : field === 'section' ? 'WrongSection' : 'WrongWeightHeader',
        `weight header field ${field} is ${found}, expected ${want}`,
        { field, expected: String(want), found: String(found), section: s },
        address,
      )
  }
  return header
}

/**
 * Verifies a sealed model against the chain: the model account is the program's, Sealed, and the
 * PDA of its authority and declared hash; each section's weight account is the one the model
 * recorded and the seed-derived address of (authority, model, section), owned by the program,
 * frozen, naming this model, section and authority, 2,048 + the declared length bytes; section
 * zero's header is a valid CURTAW01 header listing the declared lengths. Then the weight
 * accounts' bytes are fetched slice by slice and chained: `ok` says whether the chain equals the
 * declared hash. Throws CurtaAccountError (or CurtaFormatError for section zero) on any failed check.
 */
export async function verifyModel(rpc: AccountRpc, model: Address, options: VerifyOptions = {}): Promise<VerifyResult> {
  const programId = options.programId ?? CURTA_PROGRAM_ID
  const slice = options.sliceBytes ?? 16 * CHUNK_LEN
  if (slice <= 0 || slice % CHUNK_LEN !== 0) throw new RangeError(`sliceBytes must be a positive multiple of ${CHUNK_LEN}`)
  const m = await fetchModel(rpc, model, programId)
  if (m.state !== 'Sealed')
    throw accountError('NotSealed', `the model is ${m.state}, expected Sealed`, { field: 'state', expected: 'Sealed', found: m.state }, model)
  const pda = await modelAddress(programId, m.authority, m.weightsHash)
  if (pda.address !== model || pda.bump !== m.bump)
    throw accountError(
      'ModelAddressMismatch',
      `not the model PDA of its authority and declared hash: that is ${pda.address} (bump ${pda.bump}), the account's bump is ${m.bump}`,
      { field: 'address', expected: pda.address, found: model },
      model,
    )
  const bytesTotal = m.sectionLengths.reduce((a, b) => a + b, 0)
  let bytesDone = 0
  const report = (phase: VerifyProgress['phase'], section: number) =>
    options.onProgress?.({ phase, section, sectionCount: m.sectionCount, bytesDone, bytesTotal })

  const weights: VerifyResult['weights'] = []
  for (let s = 0; s < m.sectionCount; s++) {
    const expected = await weightAddress(programId, m.authority, model, s)
    const recorded = m.weightAccounts[s]
    if (recorded !== expected)
      throw accountError(
        'WeightAddressMismatch',
        `section ${s}: the model records weight account ${recorded ?? 'none'}, expected ${expected}`,
        { section: s, expected, found: recorded ?? 'none' },
        model,
      )
    const header = await sealedWeightHeader(rpc, programId, expected, model, m, s)
    weights.push({ address: expected, header })
    report('header', s)
  }

  const hasher = new WeightsHasher()
  const sections: Uint8Array[] = []
  for (let s = 0; s < m.sectionCount; s++) {
    const { address: at } = weights[s]!
    const length = m.sectionLengths[s]!
    const keep = s === 0 || options.keepSections ? new Uint8Array(length) : undefined
    for (let offset = 0; offset < length; offset += slice) {
      const want = Math.min(slice, length - offset)
      const account = checkOwner(
        await getAccount(rpc, at, { offset: WEIGHT_HEADER_LEN + offset, length: want }),
        at,
        programId,
        'weight',
      )
      if (account.data.length !== want)
        throw accountError(
          'WeightDataLength',
          `section ${s}: ${account.data.length} bytes at section offset ${offset}, expected ${want}`,
          { section: s, offset, expected: want, found: account.data.length },
          at,
        )
      keep?.set(account.data, offset)
      await hasher.section(account.data)
      bytesDone += want
      report('bytes', s)
    }
    if (s === 0) {
      const table = new SectionZero(keep!).sectionTable.map((e) => e.length)
      if (table.join() !== m.sectionLengths.join())
        throw accountError(
          'SectionTableMismatch',
          `section zero's section table lists lengths ${table.join(', ')}, the model declares ${m.sectionLengths.join(', ')}`,
          { field: 'section table', expected: m.sectionLengths.join(', '), found: table.join(', ') },
          at,
        )
    }
    if (keep && options.keepSections) sections.push(keep)
  }
  const computedHash = hasher.value()
  const result: VerifyResult = {
    ok: computedHash.every((b, i) => b === m.weightsHash[i]),
    model: m,
    address: model,
    declaredHash: m.weightsHash,
    computedHash,
    weights,
  }
  if (options.keepSections) result.sections = sections
  return result
}
