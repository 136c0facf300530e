// The verifier page (web/dist/index.html, opened from disk) in headless Chromium (Debian's
// chromium package, driven by playwright-core; no browser is downloaded): it reads stories260K,
// shows its configuration, sections and matrix directory and computes the weights hash in the
// browser, equal to the Rust core's; it reads the sealed model from a JSON-RPC node serving the
// program's recorded accounts and verifies it with a progress bar. Screenshots go to test/output/.
// Then it runs the models in the page (the run worker, curta-core's WebAssembly engine): a typed
// prompt, 32 greedy tokens of stories260K, equal to the Rust core's (golden/run.json); the same
// from the sealed model verified against the chain; Stop; tokens per second in Chromium.
// And the page's rough edges, one test each: the engine compiled when the page loads (and the
// first run's speed beside the second's, printed), long text without spaces wrapped inside the
// viewport, the stats line after refused settings, the chain form's errors in the page's words,
// the run card after reading a Mismatch model, and no console errors or failed requests when the
// page is served over http.
import { test, before, after } from 'node:test'
import assert from 'node:assert/strict'
import { mkdirSync, mkdtempSync, writeFileSync, existsSync, readFileSync } from 'node:fs'
import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { pathToFileURL } from 'node:url'
import { chromium, type BrowserContext, type Page } from 'playwright-core'
import { artifactPath, golden, readArtifact, sdkDir } from '../support/files.js'
import { chainFixture, startMockRpc, type MockRpc } from '../support/mock-rpc.js'
import { native, type Native } from '../../bench/native.js'
import { clientBin, clientRun } from '../support/chain-node.js'
import { execFile } from 'node:child_process'
import { promisify } from 'node:util'

const CHROMIUM = process.env.CHROMIUM ?? '/usr/bin/chromium'
const output = join(sdkDir, 'test', 'output')
let context: BrowserContext
let page: Page
let rpc: MockRpc
const fx = chainFixture()

before(async () => {
  assert.ok(existsSync(CHROMIUM), `${CHROMIUM} is missing: apt-get install -y chromium (scripts/sdk-test does)`)
  mkdirSync(output, { recursive: true })
  rpc = await startMockRpc(fx.accounts)
  context = await chromium.launchPersistentContext(mkdtempSync(join(tmpdir(), 'curta-chromium-')), {
    executablePath: CHROMIUM,
    headless: true,
    args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'],
    viewport: { width: 1200, height: 900 },
  })
  page = context.pages()[0] ?? (await context.newPage())
  page.on('pageerror', (e) => console.error('page error:', e))
  const url = new URL(pathToFileURL(join(sdkDir, 'web', 'dist', 'index.html')).href)
  url.search = new URLSearchParams({ rpc: rpc.url, program: fx.programId, model: fx.model }).toString()
  await page.goto(url.href)
  await page.waitForSelector('body[data-ready="true"]')
})

const shot = (name: string) => page.screenshot({ path: join(output, name), fullPage: true })

/** The page is no wider than the viewport (nothing pushes it sideways). */
async function assertFitsViewport(what: string): Promise<void> {
  const { scroll, viewport } = await page.evaluate(() => ({ scroll: document.documentElement.scrollWidth, viewport: window.innerWidth }))
  assert.ok(scroll <= viewport, `${what}: the page is ${scroll} px wide in a ${viewport} px viewport`)
}

after(async () => {
  await context?.close()
  await rpc?.close()
})

async function load(path: string): Promise<void> {
  await page.setInputFiles('#file', path)
}

/** The Rust core's 32 greedy tokens after "Once upon a time" on stories260K. */
function greedyVector(): { prompt: string; promptTokens: number[]; tokens: number[]; text: string } {
  const v = golden('run').runs[0]
  assert.equal(v.model, 'stories260K')
  assert.equal(v.prompt, 'Once upon a time')
  assert.equal(v.temperature, '0')
  assert.equal(v.steps, 32)
  return v
}

/** Types the prompt and settings, presses Run and waits for the end. */
async function runInPage(prompt: string, steps: number, temperature: string, topP = '0.9', seed = ''): Promise<void> {
  await page.waitForSelector('#run-card[data-state="ready"]', { timeout: 60_000 })
  await page.fill('#prompt', '')
  await page.locator('#prompt').pressSequentially(prompt)
  await page.fill('#steps', String(steps))
  await page.fill('#temperature', temperature)
  await page.fill('#top-p', topP)
  await page.fill('#seed', seed)
  await page.click('#run')
  await page.waitForSelector('#run-output[data-state="done"], #run-output[data-state="stopped"], #run-output[data-state="error"]', { timeout: 120_000 })
}

/**
 * Tokens per second of 256 greedy tokens from token 1 in the page: the median of 7 runs after
 * warm-ups of at least a second of running in all (and at least two runs: V8 compiles the module
 * with its baseline compiler and tiers its functions up to optimized code while they run; a run
 * of stories260K lasts 30 to 60 ms), each followed by a native run of the same (when built) so
 * that both see the same machine load.
 */
async function speed(name: string, n: Native | undefined): Promise<{ wasm: number; native: number; warmups: number }> {
  const wasm: number[] = []
  const nat: number[] = []
  let warm = 0
  let warmups = 0
  while (wasm.length < 7) {
    await runInPage('', 256, '0')
    assert.equal(await page.getAttribute('#run-output', 'data-state'), 'done')
    const m = /^256 tokens in ([0-9.]+) s, ([0-9.]+) tokens\/s;/.exec((await page.textContent('#run-stats'))!)
    assert.ok(m, 'the page reports tokens per second')
    if (warmups < 2 || warm < 1) {
      warm += Number(m[1])
      warmups++
      continue
    }
    wasm.push(Number(m[2]))
    if (n) nat.push(n.run(artifactPath(name)).tokensPerSecond)
  }
  const median = (v: number[]) => [...v].sort((a, b) => a - b)[Math.floor(v.length / 2)] ?? NaN
  return { wasm: median(wasm), native: median(nat), warmups }
}

const pageTokens = async () => (await page.getAttribute('#run-output', 'data-tokens'))!.split(',').map(Number)

test('the engine’s WebAssembly module is compiled when the page loads, before any model', async () => {
  await page.waitForSelector('#engine[data-state="compiled"]', { timeout: 30_000 })
  assert.match((await page.textContent('#engine'))!, /^Engine: curta-core's WebAssembly module, compiled when the page loaded \([0-9,]+ ms\)\.$/)
  assert.equal(await page.isHidden('#run-card'), true, 'no model is loaded yet')
  await shot('engine-compiled.png')
})

test('stories260K: the page shows the configuration, sections and matrices, and the Rust core’s hash', async () => {
  const g = golden('stories260K')
  await load(artifactPath('stories260K'))
  await page.waitForSelector('#weights-hash[data-state="done"]', { timeout: 60_000 })
  assert.equal(await page.textContent('#weights-hash'), g.weightsHash)
  assert.equal(await page.$eval('#hash-progress', (p) => (p as HTMLProgressElement).value), 1)
  const config = await page.$$eval('#config tr', (rows) => rows.map((r) => [...r.children].map((c) => c.textContent)))
  assert.deepEqual(config.slice(1, 8), [
    ['dimension', '64'], ['hidden dimension', '172'], ['layers', '5'], ['heads', '8'],
    ['key and value heads', '4'], ['vocabulary', '512'], ['context', '512'],
  ])
  const sections = await page.$$eval('#sections tr', (rows) => rows.slice(1).map((r) => r.children[2]!.textContent))
  assert.deepEqual(sections, ['68,512', '288,704'])
  const matrices = await page.$$eval('#matrices tr', (rows) => rows.slice(1).map((r) => [...r.children].map((c) => c.textContent)))
  assert.equal(matrices.length, 37)
  assert.deepEqual(matrices[0], ['0', 'token embedding', '', '1', '512', '64', '72', '0'])
  assert.deepEqual(matrices[36], ['36', 'feed-forward up', '4', '1', '172', '64', '72', '276,320'])
  await page.screenshot({ path: join(output, 'verifier-artifact.png'), fullPage: true })
})

test('the first run is about as fast as the second (the module compiled at load, the engine warmed with the model)', async () => {
  // The page's first two runs: 256 greedy tokens from token 1 on stories260K. A figure, printed
  // (the machine's load moves it), not asserted.
  await page.waitForSelector('#run-card[data-state="ready"]', { timeout: 60_000 })
  const warm = await page.getAttribute('#run-card', 'data-warm-up')
  assert.match(warm ?? '', /^[0-9]+ tokens in [0-9]+ ms$/)
  const rates: number[] = []
  for (let i = 0; i < 2; i++) {
    await runInPage('', 256, '0')
    const m = /^256 tokens in [0-9.]+ s, ([0-9.]+) tokens\/s;/.exec((await page.textContent('#run-stats'))!)
    assert.ok(m, 'the page reports tokens per second')
    rates.push(Number(m[1]))
  }
  console.log(
    `in Chromium, stories260K, 256 greedy tokens from token 1: first run ${rates[0]!.toFixed(1)} tokens/s, second ${rates[1]!.toFixed(1)} tokens/s ` +
      `(first / second ${(rates[0]! / rates[1]!).toFixed(2)}; the page compiled the module at load and warmed the engine with the model: ${warm})`,
  )
})

test('long generated text without spaces wraps: the page stays within the viewport', async () => {
  // stories260K's greedy text from token 1 is runs of capitals and letters (tok512 is not its
  // tokenizer), well over a line without a space.
  await runInPage('', 256, '0')
  const text = (await page.textContent('#run-output'))!
  const longest = Math.max(...text.split(/\s/).map((w) => w.length))
  assert.ok(longest >= 150, `the longest unbroken word is ${longest} characters`)
  await assertFitsViewport('after a long unbroken text')
  const box = await page.$eval('#run-output', (e) => e.getBoundingClientRect().right)
  assert.ok(box <= 1200, `the text box ends at ${box} px`)
  await shot('long-text.png')
})

test('run: a typed prompt, 32 greedy tokens of stories260K streamed by the worker, equal to the Rust core’s', async () => {
  const v = greedyVector()
  assert.match((await page.textContent('#run-source'))!, /^stories260K\.curta \(weights hash /)
  await runInPage(v.prompt, 32, '0')
  assert.equal(await page.getAttribute('#run-output', 'data-state'), 'done', (await page.textContent('#run-error')) ?? '')
  assert.deepEqual((await page.getAttribute('#run-output', 'data-prompt-tokens'))!.split(',').map(Number), v.promptTokens)
  assert.deepEqual(await pageTokens(), v.tokens)
  assert.equal(await page.textContent('#run-output'), v.prompt + v.text)
  assert.match((await page.textContent('#run-stats'))!, /^32 tokens in [0-9.]+ s, [0-9.]+ tokens\/s; seed 0; steps done$/)
  await page.screenshot({ path: join(output, 'runner.png'), fullPage: true })
})

test('run: sampling settings are the Rust core’s (a sampled vector), and bad settings show the Rust error', async () => {
  const v = golden('run').runs.find((r: { model: string; temperature: string; prompt?: string }) => r.model === 'stories260K' && r.temperature !== '0' && r.prompt)
  await runInPage(v.prompt, v.steps, v.temperature, v.topP, v.seed)
  assert.deepEqual(await pageTokens(), v.tokens)
  await runInPage('x', 600, '0')
  assert.equal(await page.getAttribute('#run-output', 'data-state'), 'error')
  assert.equal(
    await page.textContent('#run-error'),
    "CurtaRunError: 600 steps after a prompt of 3 tokens run past the model's context of 512 (at most 510 steps)",
  )
  // The stats line says the run did not happen (not "running…"), and Run is ready again.
  assert.equal(await page.textContent('#run-stats'), 'no tokens: the run did not start (the error is above)')
  assert.equal(await page.isEnabled('#run'), true)
  assert.equal(await page.isDisabled('#stop'), true)
  await shot('settings-error.png')
  await runInPage('x', 8, '0.8', '0.9', '0')
  assert.match((await page.textContent('#run-error'))!, /seed 0 cannot sample/)
})

test('the sealed model: state, sections, and its weight accounts verified against the chain', async () => {
  await page.click('#read-model')
  await page.waitForSelector('#model-info:not([hidden])')
  assert.equal(await page.textContent('#model-state'), 'Sealed')
  assert.equal(await page.textContent('#model-declared-weights-hash'), fx.weightsHash)
  assert.equal(await page.textContent('#model-loaded-artifact'), 'has the declared hash')
  assert.equal(await page.textContent('#model-seal-progress'), '7 of 7 chunks (100.0%)')
  await page.click('#verify')
  await page.waitForSelector('#verify-result[data-state="verified"]', { timeout: 60_000 })
  assert.equal(await page.textContent('#verify-result'), `verified: the 2 weight accounts chain to the declared hash ${fx.weightsHash}`)
  assert.equal(await page.$eval('#verify-progress', (p) => (p as HTMLProgressElement).value), 1)
  assert.equal(await page.textContent('#verify-bytes'), '357,216 of 357,216 bytes')
  assert.ok(rpc.requests.filter((r) => r.method === 'getAccountInfo').length >= 5)
  await page.screenshot({ path: join(output, 'verifier.png'), fullPage: true })
})

test('run: the sealed model, verified against the chain, gives the Rust core’s tokens', async () => {
  const v = greedyVector()
  await page.waitForFunction(() => document.getElementById('run-source')?.textContent?.startsWith('the sealed model'))
  assert.equal(await page.textContent('#run-source'), `the sealed model ${fx.model} (its 2 weight accounts, verified against the chain)`)
  await runInPage(v.prompt, 32, '0')
  assert.deepEqual(await pageTokens(), v.tokens)
})

test('an unsealed model shows its state and offers no verification', async () => {
  await page.fill('#model-address', fx.mismatchModel)
  await page.click('#read-model')
  await page.waitForFunction(() => document.getElementById('model-state')?.textContent === 'Mismatch')
  assert.equal(await page.isHidden('#verify-box'), true)
  // The run card no longer offers the sealed model verified before: it is back to the file
  // checked in the page.
  await page.waitForSelector('#run-card[data-state="ready"]', { timeout: 60_000 })
  const source = (await page.textContent('#run-source'))!
  assert.ok(!source.includes(fx.model), `the run card still offers ${source}`)
  assert.match(source, /^stories260K\.curta \(weights hash [0-9a-f]{16}…, checked in this page\)$/)
  // and shows nothing of the sealed model's run.
  assert.equal(await page.textContent('#run-output'), '')
  assert.equal(await page.textContent('#run-stats'), '')
  assert.equal(await page.textContent('#run-ids'), '')
  await shot('mismatch.png')
})

test('Read model: an empty or malformed address and an unreachable RPC node say what is wrong, in the page’s words', async () => {
  const readError = async () => {
    await page.click('#read-model')
    await page.waitForSelector('#chain-error:not([hidden])', { timeout: 30_000 })
    return page.textContent('#chain-error')
  }
  await page.fill('#model-address', '')
  assert.equal(await readError(), "Model address is empty: expected the model account's address, 32 to 44 base58 characters")
  assert.equal(await page.getAttribute('#model-address', 'aria-invalid'), 'true')
  assert.equal(await page.isHidden('#model-info'), true)
  await shot('chain-empty-address.png')

  await page.fill('#model-address', '0x1234')
  assert.equal(
    await readError(),
    'Model address "0x1234" has a character that base58 does not use ("0"): expected the model account\'s address, 32 to 44 base58 characters',
  )
  await page.fill('#model-address', fx.model.slice(0, 20))
  assert.equal(
    await readError(),
    `Model address "${fx.model.slice(0, 20)}" is 20 characters long: expected the model account's address, 32 to 44 base58 characters`,
  )
  await shot('chain-malformed-address.png')

  // A port nothing listens on.
  const closed = createServer()
  await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve))
  const port = (closed.address() as AddressInfo).port
  await new Promise((resolve) => closed.close(resolve))
  await page.fill('#model-address', fx.model)
  await page.fill('#rpc-url', `http://127.0.0.1:${port}`)
  assert.equal(
    await readError(),
    `No answer from the RPC URL http://127.0.0.1:${port}: expected a Solana JSON-RPC node there (is it running, and does it accept requests from other origins, as solana-test-validator and public RPC nodes do?)`,
  )
  assert.equal(await page.getAttribute('#model-address', 'aria-invalid'), null)
  await shot('chain-unreachable.png')

  // A web server that is not an RPC node: an HTTP error, and an answer that is not JSON.
  const web = createServer((req, res) => {
    res.setHeader('Access-Control-Allow-Origin', '*')
    res.setHeader('Access-Control-Allow-Headers', '*')
    if (req.method === 'OPTIONS') return res.writeHead(204).end()
    if (req.url === '/missing') return res.writeHead(404, { 'content-type': 'text/plain' }).end('not found')
    res.writeHead(200, { 'content-type': 'text/html' }).end('<!doctype html><p>a web page</p>')
  })
  await new Promise<void>((resolve) => web.listen(0, '127.0.0.1', resolve))
  const webUrl = `http://127.0.0.1:${(web.address() as AddressInfo).port}`
  try {
    await page.fill('#rpc-url', `${webUrl}/missing`)
    assert.equal(await readError(), `The RPC URL ${webUrl}/missing answered HTTP 404 (Not Found): expected a Solana JSON-RPC node there`)
    await page.fill('#rpc-url', `${webUrl}/page`)
    assert.equal(await readError(), `The RPC URL ${webUrl}/page answered with something other than JSON: expected a Solana JSON-RPC node there`)
  } finally {
    web.closeAllConnections()
    await new Promise((resolve) => web.close(resolve))
  }

  await page.fill('#rpc-url', '')
  assert.equal(await readError(), 'RPC URL is empty: expected the http:// or https:// address of a Solana JSON-RPC node, such as http://127.0.0.1:8899')
  await page.fill('#rpc-url', 'localhost:8899')
  assert.equal(
    await readError(),
    'RPC URL "localhost:8899" is not http:// or https://: expected the http:// or https:// address of a Solana JSON-RPC node, such as http://127.0.0.1:8899',
  )
  await assertFitsViewport('after the chain form’s errors')

  // Back to the recorded node: the sealed model reads again.
  await page.fill('#rpc-url', rpc.url)
  await page.click('#read-model')
  await page.waitForFunction(() => document.getElementById('model-state')?.textContent === 'Sealed')
  assert.equal(await page.isHidden('#chain-error'), true)
})

test('a damaged artifact shows the typed error, naming the field', async () => {
  const bytes = readArtifact('stories260K').slice()
  new DataView(bytes.buffer).setUint32(20, 3, true)
  const path = join(mkdtempSync(join(tmpdir(), 'curta-bad-')), 'bad.curta')
  writeFileSync(path, bytes)
  await load(path)
  await page.waitForSelector('#artifact-error:not([hidden])')
  assert.equal(
    await page.textContent('#artifact-error'),
    'CurtaFormatError: header field heads is 3, which does not divide dimension (64)',
  )
})

test('stories15M shape (16.5 MB): the browser hashes it to the Rust core’s hash', async () => {
  const g = golden('stories15M')
  await load(artifactPath('stories15M'))
  await page.waitForSelector('#weights-hash[data-state="done"]', { timeout: 120_000 })
  assert.equal(await page.textContent('#weights-hash'), g.weightsHash)
  console.log(`in Chromium: weightsCommitment (WebCrypto) of the stories15M-shaped artifact took ${await page.textContent('#hash-time')}`)
})

test('run: Stop ends a long run between tokens while the page stays responsive; tokens per second in Chromium', async () => {
  // stories15M shape: 256 greedy tokens from token 1 (an empty prompt), as npm run bench:run.
  const n = native({ build: false })
  const big = await speed('stories15M', n)
  // A long sampled run, stopped once tokens flow; the page answers meanwhile.
  await page.waitForSelector('#run-card[data-state="ready"]')
  await page.fill('#prompt', '')
  await page.fill('#steps', '256')
  await page.fill('#temperature', '1')
  await page.fill('#seed', '5')
  await page.click('#run')
  await page.waitForFunction(() => /^[0-9,]+ tokens, /.test(document.getElementById('run-stats')?.textContent ?? ''))
  const lag = await page.evaluate(() => new Promise<number>((r) => { const t = performance.now(); setTimeout(() => r(performance.now() - t), 0) }))
  assert.ok(lag < 250, `the page's main thread answered a timer after ${lag.toFixed(1)} ms during the run`)
  await page.click('#stop')
  await page.waitForSelector('#run-output[data-state="stopped"]', { timeout: 60_000 })
  const stopped = (await pageTokens()).length
  assert.ok(stopped >= 1 && stopped < 256, `${stopped} tokens before Stop`)
  // stories260K, the same 256 greedy tokens.
  await load(artifactPath('stories260K'))
  const small = await speed('stories260K', n)
  const row = (label: string, f: { wasm: number; native: number }) =>
    `${label.padEnd(18)}${(n ? f.native.toFixed(1) : 'skipped').padStart(13)}${f.wasm.toFixed(1).padStart(24)}${(n ? (f.wasm / f.native).toFixed(3) : '-').padStart(16)}`
  console.log(`in Chromium ${context.browser()?.version() ?? ''} (the page's worker), 256 greedy steps from token 1, median of 7 runs after ${big.warmups} and ${small.warmups} warm-up runs (a second in all);`)
  console.log(`native: ${n ? `${n.what}, one run after each of the page's` : 'SKIPPED (neither the client nor curta-core\'s run example is built)'}`)
  console.log('model               native tok/s   wasm tok/s (Chromium)   wasm / native')
  console.log(row('stories15M-shape', big))
  console.log(row('stories260K', small))
  console.log(`in Chromium: a timer on the page's main thread fired ${lag.toFixed(1)} ms late during a run`)
})

test('a file dropped on the page is read like a picked one', async () => {
  const bytes = Array.from(readArtifact('stories260K'))
  const transfer = await page.evaluateHandle((b) => {
    const t = new DataTransfer()
    t.items.add(new File([new Uint8Array(b)], 'dropped.curta'))
    return t
  }, bytes)
  await page.dispatchEvent('#drop', 'drop', { dataTransfer: transfer })
  await page.waitForFunction(
    () => document.getElementById('file-name')?.textContent === 'dropped.curta' && document.getElementById('weights-hash')?.dataset.state === 'done',
  )
  assert.equal(await page.textContent('#weights-hash'), golden('stories260K').weightsHash)
})

test('the bundled English model: one click loads kjv (the Rust core’s hash) and its greedy text is client run’s English', { skip: clientBin ? false : 'CURTA_CLIENT is not set (scripts/sdk-test sets it)' }, async () => {
  const path = artifactPath('kjv')
  const exec = promisify(execFile)
  const hashed = JSON.parse((await exec(clientBin!, ['hash', path, '--output', 'json'])).stdout) as { weights_hash: string }
  await page.fill('#prompt', '')
  await page.click('#bundled')
  await page.waitForSelector('#weights-hash[data-state="done"]', { timeout: 60_000 })
  assert.equal(await page.textContent('#file-name'), 'kjv.curta')
  assert.equal(await page.textContent('#weights-hash'), hashed.weights_hash)
  // The prompt left empty takes the page's example, the bundled model's.
  assert.equal(await page.inputValue('#prompt'), 'In the beginning God')
  const cli = await clientRun(path, ['--prompt', 'In the beginning God', '--steps', '32', '--temperature', '0'])
  await runInPage('In the beginning God', 32, '0')
  assert.equal(await page.getAttribute('#run-output', 'data-state'), 'done', (await page.textContent('#run-error')) ?? '')
  assert.deepEqual(await pageTokens(), cli.tokens)
  assert.equal(await page.textContent('#run-output'), 'In the beginning God' + cli.text)
  // English: most words of the text are words of the King James Bible's word list.
  const words = cli.text.toLowerCase().match(/[a-z]+/g) ?? []
  const known = new Set(readFileSync(join(sdkDir, '..', 'models', 'kjv-words.txt'), 'utf8').toLowerCase().split(/\s+/))
  assert.ok(words.length >= 10 && words.filter((w) => known.has(w)).length >= 0.9 * words.length, cli.text)
  await shot('bundled-model.png')
})

test('served over http: no console errors, no failed requests, no 404 (the icon is inline)', async () => {
  // web/dist/ from a static server that answers 404 for anything else (as /favicon.ico would be).
  const dist = join(sdkDir, 'web', 'dist')
  const server: Server = createServer((req, res) => {
    const path = new URL(req.url ?? '/', 'http://x').pathname
    if (path === '/' || path === '/index.html') {
      res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' })
      return res.end(readFileSync(join(dist, 'index.html')))
    }
    res.writeHead(404, { 'content-type': 'text/plain' }).end('not found')
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const served = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
  const p = await context.newPage()
  const problems: string[] = []
  p.on('console', (m) => {
    if (m.type() === 'error' || m.type() === 'warning') problems.push(`console ${m.type()}: ${m.text()}`)
  })
  p.on('pageerror', (e) => problems.push(`page error: ${e.message}`))
  p.on('requestfailed', (r) => problems.push(`request failed: ${r.url()} (${r.failure()?.errorText})`))
  p.on('response', (r) => {
    if (r.status() >= 400) problems.push(`HTTP ${r.status()}: ${r.url()}`)
  })
  try {
    await p.goto(`${served}/?${new URLSearchParams({ rpc: rpc.url, program: fx.programId, model: fx.model })}`)
    await p.waitForSelector('body[data-ready="true"]')
    await p.waitForSelector('#engine[data-state="compiled"]', { timeout: 30_000 })
    await p.setInputFiles('#file', artifactPath('stories260K'))
    await p.waitForSelector('#weights-hash[data-state="done"]', { timeout: 60_000 })
    await p.waitForSelector('#run-card[data-state="ready"]', { timeout: 60_000 })
    await p.fill('#steps', '16')
    await p.fill('#temperature', '0')
    await p.click('#run')
    await p.waitForSelector('#run-output[data-state="done"]', { timeout: 60_000 })
    await p.click('#read-model')
    await p.waitForSelector('#verify-box:not([hidden])')
    await p.click('#verify')
    await p.waitForSelector('#verify-result[data-state="verified"]', { timeout: 60_000 })
    // Give a late request (an icon fetched after load) time to show up.
    await p.waitForTimeout(500)
    await p.screenshot({ path: join(output, 'served-over-http.png'), fullPage: true })
    assert.deepEqual(problems, [])
  } finally {
    await p.close()
    server.closeAllConnections()
    await new Promise((resolve) => server.close(resolve))
  }
})
