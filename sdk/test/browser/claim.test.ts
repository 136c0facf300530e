// The verifier page's claim card in headless Chromium (Debian's chromium, driven by
// playwright-core), against a JSON-RPC node serving the sealed stories260K model the real program
// wrote (golden/chain.json) and claim accounts written by hand from the layout
// (support/claims.ts): the page shows each claim (model, prompt, settings, seed, state, slots,
// window end), verifies the model's weight accounts, computes the answer with the WebAssembly
// engine in a worker, and says "agrees" for the honest answers (the Rust core's runs,
// golden/run.json: greedy, and sampled with a chosen seed), "disagrees" for one id changed, with
// the slots left to challenge it; a drawn claim's seed recomputed; an open claim; a settled one;
// an account that is no claim; a malformed address. Screenshots: test/output/claim-*.png.
import { test, before, after } from 'node:test'
import assert from 'node:assert/strict'
import { existsSync, mkdirSync, mkdtempSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { pathToFileURL } from 'node:url'
import { type Address, address } from '@solana/kit'
import { chromium, type BrowserContext, type Page } from 'playwright-core'
import { Runner, claimAddress, claimDrawnSeed, toHex } from '../../src/index.js'
import { golden, readArtifact, sdkDir } from '../support/files.js'
import { chainFixture, startMockRpc, type MockRpc, type RecordedAccount } from '../support/mock-rpc.js'
import { type ClaimFields, idsWire, nodeAnswerHash, textWire, writeClaim } from '../support/claims.js'

const CHROMIUM = process.env.CHROMIUM ?? '/usr/bin/chromium'
const output = join(sdkDir, 'test', 'output')
const fx = chainFixture()
const program = address(fx.programId)
const model = address(fx.model)
const claimer = address(fx.authority)
let context: BrowserContext
let page: Page
let rpc: MockRpc
const slot = { now: 1000 }
const accounts = new Map<string, RecordedAccount>(fx.accounts)

interface GoldenRun {
  model: string
  prompt?: string
  promptTokens: number[]
  steps: number
  temperature: string
  seed: string
  tokens: number[]
  text: string
}
const runs: GoldenRun[] = golden('run').runs
const greedy = runs[0]!
const sampled = runs.find((r) => r.model === 'stories260K' && r.seed === '7')!
const bytes = (t: string) => new TextEncoder().encode(t)

/** An answered claim (slot 995, window 150: challengeable to slot 1145) of the golden greedy run. */
function answered(overrides: Partial<ClaimFields> = {}): ClaimFields {
  return {
    state: 2,
    seedSource: 0,
    nonce: 1,
    model,
    claimer,
    steps: greedy.steps,
    temperature: 0,
    topP: 58_982,
    window: 150,
    claimerSeed: 0n,
    openSlot: 990n,
    answerSlot: 995n,
    seedInForce: 0n,
    bond: 985_000n,
    priorityPrice: 0n,
    tokenCount: greedy.tokens.length,
    answerHash: nodeAnswerHash(greedy.tokens, bytes(greedy.text)),
    prompt: textWire(greedy.prompt!),
    ...overrides,
  }
}

const claims: Record<string, Address> = {}

async function addClaim(name: string, nonce: number, fields: ClaimFields): Promise<Address> {
  const at = await claimAddress(program, claimer, model, nonce)
  const data = writeClaim({ ...fields, nonce })
  accounts.set(at, { owner: fx.programId, lamports: 1_000_000, data })
  claims[name] = at
  return at
}

before(async () => {
  assert.ok(existsSync(CHROMIUM), `${CHROMIUM} is missing: apt-get install -y chromium (scripts/sdk-test does)`)
  mkdirSync(output, { recursive: true })
  await addClaim('honest', 1, answered())
  const oneId = [...greedy.tokens]
  oneId[5] = (oneId[5]! + 1) % 512
  await addClaim('wrong', 2, answered({ answerHash: nodeAnswerHash(oneId, bytes(greedy.text)) }))
  await addClaim(
    'chosen',
    3,
    answered({ seedSource: 2, steps: sampled.steps, temperature: 52_429, claimerSeed: 7n, seedInForce: 7n, tokenCount: 48, answerHash: nodeAnswerHash(sampled.tokens, bytes(sampled.text)) }),
  )
  await addClaim('open', 4, answered({ state: 1, seedSource: 1, temperature: 65_536, claimerSeed: 99n, answerSlot: 0n, tokenCount: 0, answerHash: undefined, prompt: idsWire([1]) }))
  // A drawn claim, answered honestly with the seed drawn from its open slot's hash (the answer by
  // the SDK's Runner in Node, the generation path, not the page's).
  const drawnAt = await claimAddress(program, claimer, model, 5)
  const slotHash = Uint8Array.from({ length: 32 }, (_, i) => 40 + i)
  const seed = claimDrawnSeed(1234n, drawnAt, 990n, slotHash)
  const runner = await Runner.create(readArtifact('stories260K'))
  const g = await runner.run({ prompt: [1], steps: 24, temperature: '1', topP: '0.9', seed })
  const pieces = g.tokens.flatMap((id, i) => [...runner.decode(i === 0 ? 1 : g.tokens[i - 1]!, id)])
  await addClaim(
    'drawn',
    5,
    answered({ seedSource: 1, steps: 24, temperature: 65_536, claimerSeed: 1234n, seedInForce: seed, slotHash, tokenCount: g.tokens.length, answerHash: nodeAnswerHash(g.tokens, Uint8Array.from(pieces)), prompt: idsWire([1]) }),
  )
  rpc = await startMockRpc(accounts, { slot: () => slot.now })
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
  await rpc?.close()
})

/** Opens the page with the node, the program and the claim in its query (shown at once), or typed and Show pressed. */
async function showInPage(claim: string, how: 'query' | 'typed' = 'query'): Promise<string> {
  const url = new URL(pathToFileURL(join(sdkDir, 'web', 'dist', 'index.html')).href)
  url.search = new URLSearchParams({ rpc: rpc.url, program: fx.programId, ...(how === 'query' ? { claim } : {}) }).toString()
  await page.goto(url.href)
  await page.waitForSelector('body[data-ready="true"]')
  if (how === 'typed') {
    await page.fill('#claim-address', claim)
    await page.click('#show-claim')
  }
  await page.waitForSelector('#claim-info:not([hidden])', { timeout: 30_000 })
  await page.waitForSelector('#claim-verdict:not([data-verdict="pending"])', { timeout: 60_000 })
  return (await page.getAttribute('#claim-verdict', 'data-verdict'))!
}

const text = (selector: string) => page.textContent(selector)

test('an honest greedy claim: the page shows it, verifies the model and says "agrees", with the slots left in its window; its text and ids are the Rust core\'s', async () => {
  slot.now = 1000
  assert.equal(await showInPage(claims.honest!), 'agrees')
  assert.equal(await text('#claim-model'), fx.model)
  assert.equal(await text('#claim-claimer'), fx.authority)
  assert.equal(await text('#claim-state'), 'answered (2)')
  assert.equal(await text('#claim-prompt'), 'text: "Once upon a time"')
  assert.equal(await text('#claim-steps'), '32')
  assert.equal(await text('#claim-temperature'), '0 (greedy)')
  assert.equal(await text('#claim-top-p'), '0.9 (58,982 / 65,536)')
  assert.equal(await text('#claim-window'), '150 slots')
  assert.equal(await text('#claim-bond'), '985,000 lamports (0.000985 SOL)')
  assert.deepEqual([await text('#claim-open-slot'), await text('#claim-answer-slot'), await text('#claim-window-end'), await text('#claim-current-slot')], ['990', '995', '1145', '1000'])
  assert.equal(await text('#claim-token-count'), '32')
  assert.equal(await page.getAttribute('#claim-status', 'data-status'), 'in-window')
  assert.equal(await text('#claim-status'), 'Answered in slot 995: anyone may challenge it until slot 1145, 145 slots from now (slot 1000).')
  assert.match((await text('#claim-seed'))!, /^None: a greedy claim/)
  const hash = toHex(nodeAnswerHash(greedy.tokens, bytes(greedy.text)))
  assert.match((await text('#claim-verdict'))!, new RegExp(`^agrees: the engine's 32 tokens \\(\\d+ ms\\) hash to ${hash}, the claim's answer hash, over 32 tokens; a dispute run would uphold it\\. Verified at slot 1000, 145 slots before its window ends \\(slot 1145\\)\\.$`))
  assert.equal(await page.getAttribute('#claim-verdict', 'class'), 'ok')
  assert.equal(await text('#claim-output'), greedy.text)
  assert.equal(await text('#claim-ids'), `prompt ids: ${greedy.promptTokens.join(' ')}; generated ids: ${greedy.tokens.join(' ')}`)
  // The model's weight accounts were fetched and hashed in full before the engine ran.
  assert.equal(await text('#claim-progress-text'), "the model's weight accounts: 357,216 of 357,216 bytes")
  await page.locator('#claim').screenshot({ path: join(output, 'claim-agrees.png') })
})

test('a claim with one id changed: the page says "disagrees" and how many slots are left to challenge it', async () => {
  slot.now = 1100
  assert.equal(await showInPage(claims.wrong!, 'typed'), 'disagrees')
  const verdict = (await text('#claim-verdict'))!
  assert.match(verdict, /^disagrees: the engine's 32 tokens \(\d+ ms\) hash to [0-9a-f]{64}, but the claim says 32 tokens hashing to [0-9a-f]{64}; a dispute run would overturn it\. Verified at slot 1100, 45 slots before its window ends \(slot 1145\): challenge it before then\.$/)
  assert.equal(await page.getAttribute('#claim-verdict', 'class'), 'bad')
  // The engine's answer is the honest one.
  assert.equal(await text('#claim-output'), greedy.text)
  await page.locator('#claim').screenshot({ path: join(output, 'claim-disagrees.png') })
})

test('a sampled claim with a chosen seed agrees (the Rust core\'s run for seed 7); once its window has passed it shows as settled', async () => {
  slot.now = 1200
  assert.equal(await showInPage(claims.chosen!), 'agrees')
  assert.equal(await text('#claim-temperature'), '0.8 (52,429 / 65,536)')
  assert.equal(await page.getAttribute('#claim-seed', 'data-source'), 'chosen')
  assert.match((await text('#claim-seed'))!, /^Chosen by the claimer: seed 7, in force as given/)
  assert.equal(await text('#claim-output'), sampled.text)
  assert.equal(await page.getAttribute('#claim-status', 'data-status'), 'settled')
  assert.equal(await text('#claim-status'), 'Settled: answered in slot 995, and its window ended at slot 1145 with no challenge.')
  assert.match((await text('#claim-verdict'))!, / Its window ended at slot 1145\.$/)
})

test('a drawn claim: the page recomputes its seed from the open slot\'s hash and verifies the answer with it', async () => {
  slot.now = 1000
  assert.equal(await showInPage(claims.drawn!), 'agrees')
  assert.equal(await page.getAttribute('#claim-seed', 'data-source'), 'drawn')
  assert.match((await text('#claim-seed'))!, /^Drawn from the chain: \d+, SHA-256 of the claimer's seed 1234, the claim address, slot 990 \(where OpenClaim landed\) and that slot's hash 28292a2b.*; recomputed in this page: the same\.$/)
  await page.locator('#claim').screenshot({ path: join(output, 'claim-drawn.png') })
})

test('an open drawn claim: shown, nothing to verify until its answer draws the seed', async () => {
  assert.equal(await showInPage(claims.open!), 'unanswered')
  assert.equal(await text('#claim-state'), 'open (1)')
  assert.equal(await text('#claim-answer-slot'), 'not answered')
  assert.equal(await text('#claim-prompt'), 'token ids: 1')
  assert.equal(await page.getAttribute('#claim-status', 'data-status'), 'open')
  assert.equal(await text('#claim-verdict'), "Not answered yet: nothing to verify. Its seed is drawn from slot 990's hash when the answer lands.")
  assert.match((await text('#claim-seed'))!, /^Drawn from the chain when the answer lands, not yet: from the hash of slot 990/)
})

test('an account that is no claim, and a malformed address, are refused in the page\'s words', async () => {
  const url = new URL(pathToFileURL(join(sdkDir, 'web', 'dist', 'index.html')).href)
  url.search = new URLSearchParams({ rpc: rpc.url, program: fx.programId }).toString()
  await page.goto(url.href)
  await page.waitForSelector('body[data-ready="true"]')
  await page.fill('#claim-address', fx.model)
  await page.click('#show-claim')
  await page.waitForSelector('#claim-error:not([hidden])', { timeout: 30_000 })
  assert.equal(
    await text('#claim-error'),
    `CurtaAccountError: account ${fx.model}: not a Curta claim account: magic (byte 0) is "CURTAMDL", expected "CURTACLM"`,
  )
  assert.equal(await page.isHidden('#claim-info'), true)
  await page.fill('#claim-address', 'claim-0')
  await page.click('#show-claim')
  await page.waitForFunction(() => document.getElementById('claim-error')?.textContent?.startsWith('Claim account address'))
  assert.equal(
    await text('#claim-error'),
    'Claim account address "claim-0" has characters that base58 does not use ("l", "-", "0"): expected the claim account\'s address, 32 to 44 base58 characters',
  )
  assert.equal(await page.getAttribute('#claim-address', 'aria-invalid'), 'true')
})
