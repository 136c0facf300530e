// The verifier page (web/dist/index.html, opened from disk) in headless Chromium (Debian's
// chromium package, driven by playwright-core; no browser is downloaded): it reads stories260K,
// shows its configuration, sections and matrix directory and computes the weights hash in the
// browser, equal to the Rust core's; it reads the sealed model from a JSON-RPC node serving the
// program's recorded accounts and verifies it with a progress bar. Screenshots go to test/output/.
import { test, before, after } from 'node:test'
import assert from 'node:assert/strict'
import { mkdirSync, mkdtempSync, writeFileSync, existsSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { pathToFileURL } from 'node:url'
import { chromium, type BrowserContext, type Page } from 'playwright-core'
import { artifactPath, golden, readArtifact, sdkDir } from '../support/files.js'
import { chainFixture, startMockRpc, type MockRpc } from '../support/mock-rpc.js'

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

after(async () => {
  await context?.close()
  await rpc?.close()
})

async function load(path: string): Promise<void> {
  await page.setInputFiles('#file', path)
}

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

test('an unsealed model shows its state and offers no verification', async () => {
  await page.fill('#model-address', fx.mismatchModel)
  await page.click('#read-model')
  await page.waitForFunction(() => document.getElementById('model-state')?.textContent === 'Mismatch')
  assert.equal(await page.isHidden('#verify-box'), true)
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
