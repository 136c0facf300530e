// The page's run view in headless Chromium (Debian's chromium, driven by playwright-core): a run
// of stories260K on the project's JSON-RPC test node (the sdk_node example, behind a proxy that
// adds CORS headers), started and stepped by this test through the SDK while the page, given the
// run's address, watches it: the tokens and text stream in as steps land, and at the end the
// page's text and ids are `client run`'s, its seed's source is shown, and the run is trusted for
// its model. Then a run whose seed was chosen by the runner, one whose seed was drawn from the chain
// (the node's bank moved past the start slot by the test), and one whose seed is still to be drawn:
// unfinished, which the page does not trust. Screenshots: test/output/run-watch.png,
// run-watch-chosen.png, run-watch-drawn.png, run-watch-unfinished.png.
import { test, before, after } from 'node:test'
import assert from 'node:assert/strict'
import { existsSync, mkdirSync, mkdtempSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { pathToFileURL } from 'node:url'
import { type KeyPairSigner, address, createKeyPairSignerFromBytes, createSolanaRpc } from '@solana/kit'
import { chromium, type BrowserContext, type Page } from 'playwright-core'
import { closeRun, drawnSeed, startRun, stepRun, toHex } from '../../src/index.js'
import { sdkDir } from '../support/files.js'
import { type ChainNode, clientRun, corsProxy, skipChain, startChainNode } from '../support/chain-node.js'

const CHROMIUM = process.env.CHROMIUM ?? '/usr/bin/chromium'
const output = join(sdkDir, 'test', 'output')
let context: BrowserContext
let page: Page
let node: ChainNode | undefined
let proxy: { url: string; close(): Promise<void> } | undefined
let rpc: ReturnType<typeof createSolanaRpc>
let runner: KeyPairSigner
let stranger: KeyPairSigner

before(async () => {
  if (skipChain) return
  assert.ok(existsSync(CHROMIUM), `${CHROMIUM} is missing: apt-get install -y chromium (scripts/sdk-test does)`)
  mkdirSync(output, { recursive: true })
  node = await startChainNode({ movable: true })
  proxy = await corsProxy(node.info.url)
  rpc = createSolanaRpc(node.info.url)
  runner = await createKeyPairSignerFromBytes(new Uint8Array(node.info.runnerKeypair))
  stranger = await createKeyPairSignerFromBytes(new Uint8Array(node.info.strangerKeypair))
  context = await chromium.launchPersistentContext(mkdtempSync(join(tmpdir(), 'curta-chromium-')), {
    executablePath: CHROMIUM,
    headless: true,
    args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'],
    viewport: { width: 1200, height: 900 },
  })
  page = context.pages()[0] ?? (await context.newPage())
  page.on('pageerror', (e) => console.error('page error:', e))
})

after(async () => {
  await context?.close()
  await proxy?.close()
  await node?.stop()
})

/**
 * Opens the page with the node, the program and the run in its query (the page then watches the
 * run at once), or with the node alone and the address typed and Watch run pressed.
 */
async function watchInPage(run: string, how: 'query' | 'typed' = 'query'): Promise<void> {
  const url = new URL(pathToFileURL(join(sdkDir, 'web', 'dist', 'index.html')).href)
  url.search = new URLSearchParams({ rpc: proxy!.url, program: node!.info.programId, ...(how === 'query' ? { run } : {}) }).toString()
  await page.goto(url.href)
  await page.waitForSelector('body[data-ready="true"]')
  if (how === 'typed') {
    await page.fill('#run-address', run)
    await page.click('#watch-run')
  }
  await page.waitForSelector('#watch-info:not([hidden])', { timeout: 30_000 })
}

const attr = (selector: string, name: string) => page.getAttribute(selector, name)

test('the page streams a greedy run as its steps land, then shows client run\'s text and ids, no seed, and trusts it', { skip: skipChain }, async () => {
  const steps = 24
  const started = await startRun(rpc, { runner, model: address(node!.info.model), steps, prompt: { text: 'Once upon a time' }, temperature: 0 })
  await watchInPage(started.run)
  assert.equal(await attr('#watch-output', 'data-state'), 'streaming')
  assert.equal(await attr('#watch-trust', 'data-trusted'), 'unknown')
  // Step the run from here while the page watches; record what the page shows after each step.
  const seen: number[] = []
  await stepRun(rpc, {
    run: started.run,
    payer: stranger,
    onStep: () => void attr('#watch-output', 'data-tokens').then((n) => seen.push(Number(n))),
  })
  await page.waitForSelector('#watch-output[data-state="finished"]', { timeout: 30_000 })
  await page.waitForSelector('#watch-trust:not([data-trusted="unknown"])', { timeout: 30_000 })
  const cli = await clientRun(node!.info.artifact, ['--prompt', 'Once upon a time', '--steps', `${steps}`, '--temperature', '0'])
  assert.equal(await page.textContent('#watch-output'), cli.text)
  assert.equal(await page.textContent('#watch-ids'), `prompt ids: ${cli.prompt_tokens.join(' ')}; generated ids: ${cli.tokens.join(' ')}`)
  assert.equal(await attr('#watch-output', 'data-tokens'), String(cli.tokens.length))
  // Streamed: the page showed some tokens, but not all, while the run was still stepping.
  assert.ok(
    seen.some((n) => n > 0 && n < cli.tokens.length),
    `the page showed ${JSON.stringify(seen)} tokens as the steps landed`,
  )
  assert.equal(await attr('#watch-seed', 'data-source'), 'none')
  assert.match((await page.textContent('#watch-seed'))!, /^None: a greedy run/)
  assert.equal(await page.textContent('#watch-status'), 'done (2)')
  assert.equal(await page.textContent('#watch-temperature'), '0 (greedy)')
  assert.equal(await attr('#watch-trust', 'data-trusted'), 'true')
  assert.match((await page.textContent('#watch-trust'))!, new RegExp(`^Trusted for its model ${node!.info.model}`))
  assert.equal(await page.locator('#watch-checks li[data-ok="false"]').count(), 0)
  await page.locator('#watch').screenshot({ path: join(output, 'run-watch.png') })
  await closeRun(rpc, { run: started.run, runner })
})

test('the page shows a sampled run\'s runner-chosen seed and client run\'s text for that seed', { skip: skipChain }, async () => {
  const seed = 987_654_321_987_654_321n
  const steps = 16
  const started = await startRun(rpc, {
    runner,
    model: address(node!.info.model),
    steps,
    prompt: { tokenIds: [1] },
    temperature: 52_429,
    topP: 58_982,
    seedSource: 'chosen',
    seed,
  })
  await stepRun(rpc, { run: started.run, payer: stranger })
  await watchInPage(started.run, 'typed')
  await page.waitForSelector('#watch-trust:not([data-trusted="unknown"])', { timeout: 30_000 })
  const cli = await clientRun(node!.info.artifact, ['--prompt-tokens', '1', '--steps', `${steps}`, '--temperature', '0.8', '--top-p', '0.9', '--seed', `${seed}`])
  assert.equal(await page.textContent('#watch-output'), cli.text)
  assert.equal(await attr('#watch-seed', 'data-source'), 'chosen')
  assert.match((await page.textContent('#watch-seed'))!, new RegExp(`^Chosen by the runner: seed ${seed}, in force as given`))
  assert.equal(await page.textContent('#watch-temperature'), '0.8 (52,429 / 65,536)')
  assert.equal(await page.textContent('#watch-top-p'), '0.9 (58,982 / 65,536)')
  // Trusted for its model: the rule says nothing of the seed; a consumer that needs a drawn seed checks the source.
  assert.equal(await attr('#watch-trust', 'data-trusted'), 'true')
  await page.locator('#watch').screenshot({ path: join(output, 'run-watch-chosen.png') })
  await closeRun(rpc, { run: started.run, runner })
})

test('the page shows a seed drawn from the chain: the seed, the slot and its hash, and client run\'s text for that seed', { skip: skipChain }, async () => {
  const seed = 0x0fed_cba9_8765_4321n
  const steps = 16
  const started = await startRun(rpc, { runner, model: address(node!.info.model), steps, prompt: { tokenIds: [1] }, temperature: 52_429, topP: 58_982, seed })
  const moved = node!.passSlot()
  const ended = await stepRun(rpc, { run: started.run, payer: stranger, pollMs: 20 })
  await moved
  const startSlot = started.account.startSlot
  const drawn = drawnSeed(seed, started.run, startSlot, ended.slotHash)
  assert.equal(ended.seedInForce, drawn)
  await watchInPage(started.run)
  await page.waitForSelector('#watch-trust:not([data-trusted="unknown"])', { timeout: 30_000 })
  assert.equal(await attr('#watch-seed', 'data-source'), 'drawn')
  assert.equal(
    await page.textContent('#watch-seed'),
    `Drawn from the chain: ${drawn}, SHA-256 of the runner's seed ${seed}, the run address, slot ${startSlot} (where StartRun landed) and that slot's hash ${toHex(ended.slotHash)}, which nobody knew when the run was started.`,
  )
  const cli = await clientRun(node!.info.artifact, ['--prompt-tokens', '1', '--steps', `${steps}`, '--temperature', '0.8', '--top-p', '0.9', '--seed', `${drawn}`])
  assert.equal(await page.textContent('#watch-output'), cli.text)
  assert.equal(await attr('#watch-trust', 'data-trusted'), 'true')
  await page.locator('#watch').screenshot({ path: join(output, 'run-watch-drawn.png') })
  await closeRun(rpc, { run: started.run, runner })
})

test('the page shows a run whose seed is still to be drawn from the chain, does not trust it unfinished, says when it is closed, and refuses a malformed address', { skip: skipChain }, async () => {
  const seed = 0x1234_5678_9abc_def0n
  const started = await startRun(rpc, { runner, model: address(node!.info.model), steps: 8, prompt: { tokenIds: [1] }, temperature: 65_536, seed })
  assert.equal(started.account.seedSource, 'drawn')
  await watchInPage(started.run)
  // The node stays in the start slot (it moves only when asked), so no step can draw the seed: the page keeps watching.
  assert.equal(await attr('#watch-seed', 'data-source'), 'drawn')
  assert.equal(
    await page.textContent('#watch-seed'),
    `Drawn from the chain, not yet: the first step after slot ${started.account.startSlot} (where StartRun landed) draws it from that slot's hash (runner's seed ${seed}).`,
  )
  assert.equal(await attr('#watch-output', 'data-state'), 'streaming')
  assert.equal(await page.textContent('#watch-status'), 'running (0)')
  assert.equal(await page.textContent('#watch-stats'), '0 tokens, 0 bytes of text, after 0 steps')
  assert.equal(await attr('#watch-trust', 'data-trusted'), 'unknown')
  assert.match((await page.textContent('#watch-trust'))!, /^Not yet: a run is trusted only once it has finished/)
  await page.locator('#watch').screenshot({ path: join(output, 'run-watch-unfinished.png') })
  // Closed under the page's eyes: the page says the account is gone.
  await closeRun(rpc, { run: started.run, runner })
  await page.waitForSelector('#watch-error:not([hidden])', { timeout: 30_000 })
  assert.match((await page.textContent('#watch-error'))!, /no run account at this address/)
  // A malformed address is refused before anything is asked of the node, in the page's words.
  await page.fill('#run-address', '0x12')
  await page.click('#watch-run')
  assert.equal(
    await page.textContent('#watch-error'),
    'Run account address "0x12" has a character that base58 does not use ("0"): expected the run account\'s address, 32 to 44 base58 characters',
  )
  assert.equal(await attr('#run-address', 'aria-invalid'), 'true')
})
