// The project's JSON-RPC test node for the chain tests: cargo's example `sdk_node`
// (tests/examples/sdk_node.rs: tests/support/rpc_shim.rs over the program's SBF binary on a
// solana-program-test bank, stories260K published and sealed, a funded runner and stranger),
// and `client run` (the CLI) for the expected tokens. scripts/sdk-test builds both and sets
// CURTA_SDK_NODE and CURTA_CLIENT.
import { type ChildProcess, execFile, spawn } from 'node:child_process'
import { createServer, request } from 'node:http'
import type { AddressInfo } from 'node:net'
import { createInterface } from 'node:readline'
import { promisify } from 'node:util'

export const nodeBin = process.env.CURTA_SDK_NODE
export const clientBin = process.env.CURTA_CLIENT
/** Why the chain tests are skipped, or false when they run. */
export const skipChain: string | false =
  !nodeBin || !clientBin ? 'CURTA_SDK_NODE and CURTA_CLIENT are not set: scripts/sdk-test sets them (the node and the CLI, built by cargo)' : false

export interface NodeInfo {
  url: string
  programId: string
  model: string
  weightsHash: string
  /** The published artifact's file (removed when the node stops). */
  artifact: string
  authority: string
  runner: string
  runnerKeypair: number[]
  stranger: string
  strangerKeypair: number[]
  movable: boolean
}

export interface ChainNode {
  info: NodeInfo
  /** A movable node (`startChainNode({ movable: true })`) moves its bank to the next slot. */
  passSlot(): Promise<bigint>
  stop(): Promise<void>
}

/**
 * Starts the node and waits until it has published the model. A movable node's bank moves to
 * its next slot when asked (`passSlot`); otherwise the bank stays in its slot.
 */
export async function startChainNode(options: { movable?: boolean } = {}): Promise<ChainNode> {
  const child: ChildProcess = spawn(nodeBin!, options.movable ? ['--movable'] : [], {
    stdio: ['pipe', 'pipe', 'inherit'],
    env: { ...process.env, RUST_LOG: 'error' },
  })
  const lines = createInterface({ input: child.stdout! })
  const queue: string[] = []
  const waiting: { resolve: (line: string) => void; reject: (e: Error) => void }[] = []
  let exited: Error | undefined
  lines.on('line', (line) => (waiting.length ? waiting.shift()!.resolve(line) : queue.push(line)))
  child.once('exit', (code) => {
    exited = new Error(`the sdk_node example exited (${code})`)
    waiting.splice(0).forEach((w) => w.reject(exited!))
  })
  const next = () =>
    new Promise<string>((resolve, reject) => {
      if (queue.length) return resolve(queue.shift()!)
      if (exited) return reject(exited)
      waiting.push({ resolve, reject })
    })
  const first = await next()
  return {
    info: JSON.parse(first) as NodeInfo,
    passSlot: async () => {
      child.stdin!.write('pass-slot\n')
      const answer = JSON.parse(await next()) as { slot?: number; error?: string }
      if (answer.slot === undefined) throw new Error(`the node did not move: ${answer.error}`)
      return BigInt(answer.slot)
    },
    stop: async () => {
      const exited = new Promise((r) => child.once('exit', r))
      child.stdin!.end()
      await exited
    },
  }
}

export interface ClientRun {
  prompt_tokens: number[]
  tokens: number[]
  text: string
  /** The seed, exact (a u64). */
  seed: string
}

/** `client run ARTIFACT ... --output json`, natively. */
export async function clientRun(artifact: string, args: string[]): Promise<ClientRun> {
  const { stdout } = await promisify(execFile)(clientBin!, ['run', artifact, ...args, '--output', 'json'], { maxBuffer: 1 << 24 })
  return JSON.parse(stdout.replace(/"seed":\s*(\d+)/, '"seed": "$1"')) as ClientRun
}

/**
 * A proxy in front of the node that adds the CORS headers a page needs (the test node, like a
 * validator behind no proxy, does not answer OPTIONS): what a page's RPC provider does.
 */
export async function corsProxy(target: string): Promise<{ url: string; close(): Promise<void> }> {
  const to = new URL(target)
  const server = createServer((req, res) => {
    res.setHeader('Access-Control-Allow-Origin', '*')
    res.setHeader('Access-Control-Allow-Headers', '*')
    res.setHeader('Access-Control-Allow-Methods', 'POST, OPTIONS')
    if (req.method === 'OPTIONS') return res.writeHead(204).end()
    const forward = request(
      { host: to.hostname, port: to.port, path: '/', method: 'POST', headers: { 'content-type': 'application/json', 'content-length': req.headers['content-length'] ?? '0' } },
      (answer) => {
        res.writeHead(answer.statusCode ?? 502, { 'content-type': answer.headers['content-type'] ?? 'application/json' })
        answer.pipe(res)
      },
    )
    forward.on('error', () => res.writeHead(502).end())
    req.pipe(forward)
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const { port } = server.address() as AddressInfo
  return { url: `http://127.0.0.1:${port}`, close: () => new Promise((resolve) => server.close(() => resolve())) }
}
