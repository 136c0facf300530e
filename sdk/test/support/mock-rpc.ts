// A JSON-RPC node serving recorded accounts: getAccountInfo (base64, with dataSlice),
// getMultipleAccounts and getProgramAccounts (memcmp and dataSize filters), getSlot, with CORS
// headers so a page can use it; and, given `onSend`, sendTransaction, getSignatureStatuses,
// getLatestBlockhash and getMinimumBalanceForRentExemption, for the test to play the program. The accounts come from
// golden/chain.json (recorded from the real program on solana-program-test): the model account
// in each of its states and the weight accounts' headers, followed by the artifact's sections.
import { createServer, type IncomingMessage } from 'node:http'
import type { AddressInfo } from 'node:net'
import { getBase58Decoder, getBase58Encoder } from '@solana/kit'
import { decodeArtifact } from '../../src/index.js'
import { golden, readArtifact, unhex } from './files.js'

export interface RecordedAccount {
  owner: string
  lamports: number
  data: Uint8Array
}

export interface ChainFixture {
  programId: string
  authority: string
  model: string
  weightsHash: string
  mismatchModel: string
  /** address -> account, with the model Sealed. */
  accounts: Map<string, RecordedAccount>
  weights: string[]
  /** The model account's data in each recorded state. */
  states: Record<'open' | 'sealing' | 'sealed' | 'mismatch', RecordedAccount>
}

interface JsonAccount {
  address: string
  owner: string
  lamports: number
  space: number
  data: string
}

export function chainFixture(): ChainFixture {
  const g = golden('chain')
  const sections = decodeArtifact(readArtifact('stories260K')).sections
  const account = (a: JsonAccount): RecordedAccount => ({ owner: a.owner, lamports: a.lamports, data: unhex(a.data) })
  const accounts = new Map<string, RecordedAccount>()
  accounts.set(g.model, account(g.sealed))
  accounts.set(g.mismatchModel, account(g.mismatch))
  g.weights.forEach((w: JsonAccount, i: number) => {
    const header = unhex(w.data)
    const data = new Uint8Array(w.space)
    data.set(header)
    data.set(sections[i]!, header.length)
    accounts.set(w.address, { owner: w.owner, lamports: w.lamports, data })
  })
  return {
    programId: g.programId,
    authority: g.authority,
    model: g.model,
    weightsHash: g.weightsHash,
    mismatchModel: g.mismatchModel,
    accounts,
    weights: g.weights.map((w: JsonAccount) => w.address),
    states: { open: account(g.open), sealing: account(g.sealing), sealed: account(g.sealed), mismatch: account(g.mismatch) },
  }
}

export interface MockRpc {
  url: string
  /** Every request's method and params, in order. */
  requests: { method: string; params: unknown[] }[]
  close(): Promise<void>
}

async function body(req: IncomingMessage): Promise<string> {
  let text = ''
  for await (const chunk of req) text += chunk
  return text
}

function accountValue(a: RecordedAccount | undefined, config: { dataSlice?: { offset: number; length: number } } = {}) {
  if (!a) return null
  const slice = config.dataSlice
  const data = slice ? a.data.subarray(slice.offset, slice.offset + slice.length) : a.data
  return {
    data: [Buffer.from(data).toString('base64'), 'base64'],
    executable: false,
    lamports: a.lamports,
    owner: a.owner,
    rentEpoch: 0,
    space: a.data.length,
  }
}

/** A memcmp filter as getProgramAccounts takes it. */
interface Memcmp {
  memcmp: { offset: number; bytes: string; encoding?: 'base58' | 'base64' }
}

const base58 = getBase58Encoder()

function matches(data: Uint8Array, filters: (Memcmp | { dataSize: number })[] = []): boolean {
  return filters.every((f) => {
    if ('dataSize' in f) return data.length === f.dataSize
    const want = f.memcmp.encoding === 'base64' ? new Uint8Array(Buffer.from(f.memcmp.bytes, 'base64')) : new Uint8Array(base58.encode(f.memcmp.bytes))
    const at = Number(f.memcmp.offset)
    return at + want.length <= data.length && want.every((b, i) => data[at + i] === b)
  })
}

export interface MockOptions {
  /** The slot getSlot answers and every answer's context carries (default 1000). */
  slot?: () => number
  /**
   * Called with each sendTransaction's wire bytes (the test may change `accounts` as the program
   * would); what it returns is the transaction's status error (null or undefined: it succeeded).
   */
  onSend?: (wire: Uint8Array) => unknown
}

export async function startMockRpc(accounts: Map<string, RecordedAccount>, options: MockOptions = {}): Promise<MockRpc> {
  const requests: MockRpc['requests'] = []
  const statuses = new Map<string, unknown>()
  const server = createServer(async (req, res) => {
    res.setHeader('Access-Control-Allow-Origin', '*')
    res.setHeader('Access-Control-Allow-Headers', '*')
    res.setHeader('Access-Control-Allow-Methods', 'POST, OPTIONS')
    if (req.method === 'OPTIONS') return res.writeHead(204).end()
    const call = JSON.parse(await body(req)) as { id: number; method: string; params: unknown[] }
    requests.push({ method: call.method, params: call.params })
    const slot = options.slot?.() ?? 1000
    const context = { slot, apiVersion: '2.2.0' }
    let result: unknown
    if (call.method === 'getAccountInfo') {
      const [at, config] = call.params as [string, object]
      result = { context, value: accountValue(accounts.get(at), config) }
    } else if (call.method === 'getMultipleAccounts') {
      const [list, config] = call.params as [string[], object]
      result = { context, value: list.map((at) => accountValue(accounts.get(at), config)) }
    } else if (call.method === 'getProgramAccounts') {
      const [program, config] = call.params as [string, { filters?: Memcmp[] }]
      result = [...accounts]
        .filter(([, a]) => a.owner === program && matches(a.data, config?.filters))
        .map(([pubkey, a]) => ({ pubkey, account: accountValue(a) }))
    } else if (call.method === 'getSlot') {
      result = slot
    } else if (call.method === 'getMinimumBalanceForRentExemption') {
      // The runtime's rule: (128 + data length) bytes at 3,480 lamports a byte-year, for two years.
      result = (128 + Number((call.params as [number])[0])) * 6960
    } else if (call.method === 'getLatestBlockhash') {
      result = { context, value: { blockhash: '11111111111111111111111111111111', lastValidBlockHeight: 2000 } }
    } else if (call.method === 'sendTransaction' && options.onSend) {
      const wire = new Uint8Array(Buffer.from((call.params as [string])[0], 'base64'))
      const signature = getBase58Decoder().decode(wire.subarray(1, 65))
      statuses.set(signature, (await options.onSend(wire)) ?? null)
      result = signature
    } else if (call.method === 'getSignatureStatuses') {
      const [list] = call.params as [string[]]
      result = {
        context,
        value: list.map((s) => (statuses.has(s) ? { slot, confirmations: null, err: statuses.get(s), confirmationStatus: 'confirmed' } : null)),
      }
    } else {
      res.writeHead(200, { 'content-type': 'application/json' })
      return res.end(JSON.stringify({ jsonrpc: '2.0', id: call.id, error: { code: -32601, message: 'Method not found' } }))
    }
    res.writeHead(200, { 'content-type': 'application/json' })
    res.end(JSON.stringify({ jsonrpc: '2.0', id: call.id, result }))
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const { port } = server.address() as AddressInfo
  return {
    url: `http://127.0.0.1:${port}`,
    requests,
    close: () => new Promise((resolve) => server.close(() => resolve())),
  }
}
