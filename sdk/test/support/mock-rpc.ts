// A JSON-RPC node serving recorded accounts: getAccountInfo (base64, with dataSlice) and
// getMultipleAccounts, with CORS headers so a page can use it. The accounts come from
// golden/chain.json (recorded from the real program on solana-program-test): the model account
// in each of its states and the weight accounts' headers, followed by the artifact's sections.
import { createServer, type IncomingMessage } from 'node:http'
import type { AddressInfo } from 'node:net'
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

export async function startMockRpc(accounts: Map<string, RecordedAccount>): Promise<MockRpc> {
  const requests: MockRpc['requests'] = []
  const server = createServer(async (req, res) => {
    res.setHeader('Access-Control-Allow-Origin', '*')
    res.setHeader('Access-Control-Allow-Headers', '*')
    res.setHeader('Access-Control-Allow-Methods', 'POST, OPTIONS')
    if (req.method === 'OPTIONS') return res.writeHead(204).end()
    const call = JSON.parse(await body(req)) as { id: number; method: string; params: unknown[] }
    requests.push({ method: call.method, params: call.params })
    const context = { slot: 1000, apiVersion: '2.2.0' }
    let result: unknown
    if (call.method === 'getAccountInfo') {
      const [at, config] = call.params as [string, object]
      result = { context, value: accountValue(accounts.get(at), config) }
    } else if (call.method === 'getMultipleAccounts') {
      const [list, config] = call.params as [string[], object]
      result = { context, value: list.map((at) => accountValue(accounts.get(at), config)) }
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
