// The verifier page's claim card: a claim account read by its address (query parameter claim, or
// typed), shown with its model, prompt, settings, seed, state, slots and window, and verified in
// this page: the model's weight accounts are fetched and checked against its declared hash, the
// claim's answer is computed by curta-core's WebAssembly engine in a worker from the claim's
// prompt, settings and seed, and the page says whether the claim's answer agrees or disagrees,
// and how many slots are left before its window ends (while a wrong answer can be challenged).

import { createSolanaRpc, type Address } from '@solana/kit'
import { claimDrawnSeed, claimSeedInForce, fetchClaim, toHex, verifyModel, type ClaimAccount } from '../../src/index.js'
import { $, FieldError, addressField, chainMessage, fixed16, fmt, rpcField } from './fields.js'
import type { WorkerReply, WorkerRequest } from './worker.js'

export interface ClaimViewDeps {
  /** A new worker of the page's engine. */
  newWorker(): Worker
  /** The engine's module, once the first worker compiled it. */
  module(): WebAssembly.Module | undefined
}

type Rpc = ReturnType<typeof createSolanaRpc>

let showing: AbortController | undefined
/** Models whose weight accounts this page verified, by address: their bytes. */
const verified = new Map<string, Uint8Array>()

const lamports = (v: bigint) => `${fmt(Number(v))} lamports (${(Number(v) / 1e9).toLocaleString('en-US', { maximumFractionDigits: 9 })} SOL)`
const slots = (n: bigint) => `${fmt(Number(n))} slot${n === 1n ? '' : 's'}`

function promptText(c: ClaimAccount): string {
  if ('text' in c.prompt) return `text: ${JSON.stringify(new TextDecoder().decode(c.prompt.text))}`
  return `token ids: ${c.prompt.tokenIds.join(' ')}`
}

function seedText(c: ClaimAccount, at: Address): string {
  switch (c.seedSource) {
    case 'none':
      return 'None: a greedy claim (temperature 0) takes the highest logit every time, so no seed is involved.'
    case 'chosen':
      return `Chosen by the claimer: seed ${c.claimerSeed}, in force as given. The claimer could have tried seeds off chain until the text suited them.`
    case 'drawn': {
      if (c.state === 'open')
        return `Drawn from the chain when the answer lands, not yet: from the hash of slot ${c.openSlot} (where OpenClaim landed), with the claimer's seed ${c.claimerSeed} and the claim address.`
      const again = claimDrawnSeed(c.claimerSeed, at, c.openSlot, c.slotHash)
      return `Drawn from the chain: ${c.seedInForce}, SHA-256 of the claimer's seed ${c.claimerSeed}, the claim address, slot ${c.openSlot} (where OpenClaim landed) and that slot's hash ${toHex(c.slotHash)}; recomputed in this page: ${again === c.seedInForce ? 'the same' : `NOT the same (${again})`}.`
    }
  }
}

/** Where the claim stands at `slot`. */
function statusText(c: ClaimAccount, slot: bigint): [status: string, text: string] {
  switch (c.state) {
    case 'open':
      return ['open', `Open since slot ${c.openSlot}: not answered yet.`]
    case 'answered':
      return slot > c.windowEnd
        ? ['settled', `Settled: answered in slot ${c.answerSlot}, and its window ended at slot ${c.windowEnd} with no challenge.`]
        : ['in-window', `Answered in slot ${c.answerSlot}: anyone may challenge it until slot ${c.windowEnd}, ${slots(c.windowEnd - slot)} from now (slot ${slot}).`]
    case 'challenged':
      return ['challenged', `Challenged by ${c.challenger}: its dispute run ${c.disputeRun} decides it.`]
    case 'upheld':
      return ['upheld', 'Upheld: its dispute run agreed with the answer; settled.']
    case 'overturned':
      return ['overturned', 'Overturned: its dispute run disagreed with the answer.']
  }
}

function showClaim(c: ClaimAccount, at: Address, slot: bigint): void {
  const rows: [string, string][] = [
    ['claim', at],
    ['model', c.model],
    ['claimer', c.claimer],
    ['nonce', fmt(c.nonce)],
    ['state', `${c.state} (${c.stateCode})`],
    ['prompt', promptText(c)],
    ['steps', fmt(c.steps)],
    ['temperature', c.temperature === 0 ? '0 (greedy)' : fixed16(c.temperature)],
    ['top-p', fixed16(c.topP)],
    ['seed source', c.seedSource],
    ['window', slots(BigInt(c.window))],
    ['bond', lamports(c.bond)],
    ['priority price', `${fmt(Number(c.priorityPrice))} micro-lamports per compute unit`],
    ['open slot', String(c.openSlot)],
    ['answer slot', c.state === 'open' ? 'not answered' : String(c.answerSlot)],
    ['window end', c.state === 'open' ? 'when answered: the answer slot + the window' : String(c.windowEnd)],
    ['current slot', String(slot)],
    ['token count', c.state === 'open' ? 'not answered' : fmt(c.tokenCount)],
    ['answer hash', c.state === 'open' ? 'not answered' : toHex(c.answerHash)],
  ]
  if (c.challenger) rows.push(['challenger', c.challenger], ['dispute run', c.disputeRun ?? ''])
  $('claim-header').replaceChildren(
    ...rows.flatMap(([k, v]) => {
      const dt = document.createElement('dt')
      dt.textContent = k
      const dd = document.createElement('dd')
      dd.textContent = v
      dd.id = `claim-${k.replace(/ /g, '-')}`
      return [dt, dd]
    }),
  )
  const [status, text] = statusText(c, slot)
  const el = $('claim-status')
  el.dataset.status = status
  el.textContent = text
  const seed = $('claim-seed')
  seed.dataset.source = c.seedSource
  seed.textContent = seedText(c, at)
}

function verdict(state: string, text: string): void {
  const el = $('claim-verdict')
  el.dataset.verdict = state
  el.className = state === 'agrees' ? 'ok' : state === 'disagrees' || state === 'error' ? 'bad' : ''
  el.textContent = text
}

/** The claim's answer, computed in a fresh worker of the engine over the model's bytes. */
function computeAnswer(deps: ClaimViewDeps, bytes: Uint8Array, c: ClaimAccount, seed: bigint, signal: AbortSignal): Promise<Extract<WorkerReply, { type: 'answer' }>> {
  return new Promise((resolve, reject) => {
    const w = deps.newWorker()
    const done = () => w.terminate()
    signal.addEventListener('abort', () => (done(), reject(signal.reason)), { once: true })
    w.onmessage = (e: MessageEvent<WorkerReply>) => {
      const m = e.data
      if (m.type === 'answer') resolve(m)
      else if (m.type === 'error') reject(new Error(`${m.name}: ${m.message}`))
      else return
      done()
    }
    w.onerror = (e) => (done(), reject(new Error(`the worker failed: ${e.message}`)))
    const module = deps.module()
    const terms = { prompt: c.prompt, steps: c.steps, temperature: c.temperature, topP: c.topP }
    w.postMessage({ type: 'answer', bytes, ...(module ? { module } : {}), terms, seed: String(seed) } satisfies WorkerRequest)
  })
}

/** The model's bytes from its weight accounts, verified against its declared hash (once per page and model). */
async function modelBytes(rpc: Rpc, model: Address, programId: Address): Promise<Uint8Array> {
  const known = verified.get(`${programId}/${model}`)
  if (known) return known
  const bar = $<HTMLProgressElement>('claim-progress')
  const r = await verifyModel(rpc, model, {
    programId,
    keepSections: true,
    onProgress: (p) => {
      bar.value = p.bytesTotal === 0 ? 0 : p.bytesDone / p.bytesTotal
      $('claim-progress-text').textContent = `the model's weight accounts: ${fmt(p.bytesDone)} of ${fmt(p.bytesTotal)} bytes`
    },
  })
  if (!r.ok) throw new Error(`the model's weight accounts chain to ${toHex(r.computedHash)}, not to its declared hash ${toHex(r.declaredHash)}: the claim cannot be verified with them`)
  const bytes = new Uint8Array(r.sections!.reduce((n, s) => n + s.length, 0))
  r.sections!.reduce((at, s) => (bytes.set(s, at), at + s.length), 0)
  verified.set(`${programId}/${model}`, bytes)
  return bytes
}

async function verifyInPage(deps: ClaimViewDeps, rpc: Rpc, c: ClaimAccount, at: Address, programId: Address, signal: AbortSignal): Promise<void> {
  const seed = claimSeedInForce(c)
  if (seed === undefined) {
    verdict('unanswered', `Not answered yet: nothing to verify. Its seed is drawn from slot ${c.openSlot}'s hash when the answer lands.`)
    return
  }
  verdict('pending', 'Verifying: the model\'s weight accounts against its declared hash…')
  const bytes = await modelBytes(rpc, c.model, programId)
  if (signal.aborted) return
  verdict('pending', 'Verifying: computing the answer with the WebAssembly engine…')
  const a = await computeAnswer(deps, bytes, c, seed, signal)
  const slot = await rpc.getSlot({ commitment: 'confirmed' }).send()
  if (signal.aborted) return
  const out = $('claim-output')
  out.textContent = new TextDecoder().decode(a.text)
  out.dataset.tokens = a.ids.join(',')
  $('claim-ids').textContent = `prompt ids: ${a.promptTokens.join(' ')}; generated ids: ${a.ids.join(' ')}`
  $('claim-current-slot').textContent = String(slot)
  const [status, text] = statusText(c, slot)
  $('claim-status').dataset.status = status
  $('claim-status').textContent = text
  const engine = `the engine's ${fmt(a.ids.length)} token${a.ids.length === 1 ? '' : 's'} (${a.ms.toFixed(0)} ms) hash to ${toHex(a.hash)}`
  if (c.state === 'open') {
    verdict('unanswered', `Not answered yet: ${engine}; an honest answer has this count and hash.`)
    return
  }
  const agrees = a.ids.length === c.tokenCount && a.hash.every((b, i) => b === c.answerHash[i])
  const when =
    c.state !== 'answered'
      ? ''
      : slot <= c.windowEnd
        ? ` Verified at slot ${slot}, ${slots(c.windowEnd - slot)} before its window ends (slot ${c.windowEnd})${agrees ? '.' : ': challenge it before then.'}`
        : ` Its window ended at slot ${c.windowEnd}.`
  if (agrees) verdict('agrees', `agrees: ${engine}, the claim's answer hash, over ${fmt(c.tokenCount)} tokens; a dispute run would uphold it.${when}`)
  else
    verdict(
      'disagrees',
      `disagrees: ${engine}, but the claim says ${fmt(c.tokenCount)} token${c.tokenCount === 1 ? '' : 's'} hashing to ${toHex(c.answerHash)}; a dispute run would overturn it.${when}`,
    )
}

async function show(deps: ClaimViewDeps): Promise<void> {
  showing?.abort()
  const controller = new AbortController()
  showing = controller
  const error = $('claim-error')
  error.hidden = true
  $('claim-info').hidden = true
  for (const id of ['rpc-url', 'program-id', 'claim-address']) $(id).removeAttribute('aria-invalid')
  const problems: string[] = []
  const read = <T,>(f: () => T): T | undefined => {
    try {
      return f()
    } catch (e) {
      if (!(e instanceof FieldError)) throw e
      e.input.setAttribute('aria-invalid', 'true')
      problems.push(e.message)
      return undefined
    }
  }
  const url = read(rpcField)
  const programId = read(() => addressField('program-id', 'Program id', "the Curta program's id"))
  const at = read(() => addressField('claim-address', 'Claim account address', "the claim account's address"))
  if (problems.length) {
    error.textContent = problems.join('\n')
    error.hidden = false
    return
  }
  const rpc = createSolanaRpc(url!)
  let claim: ClaimAccount
  try {
    const [c, slot] = await Promise.all([fetchClaim(rpc, at!, programId!), rpc.getSlot({ commitment: 'confirmed' }).send()])
    if (controller.signal.aborted) return
    claim = c
    showClaim(c, at!, slot)
    $('claim-output').textContent = ''
    $('claim-ids').textContent = ''
    $<HTMLProgressElement>('claim-progress').value = 0
    $('claim-progress-text').textContent = ''
    $('claim-info').hidden = false
  } catch (e) {
    if (controller.signal.aborted) return
    error.textContent = chainMessage(e, url!)
    error.hidden = false
    return
  }
  try {
    await verifyInPage(deps, rpc, claim, at!, programId!, controller.signal)
  } catch (e) {
    if (!controller.signal.aborted) verdict('error', `Not verified: ${chainMessage(e, url!)}`)
  }
}

/** Wires the claim card; given a node and a claim in the query (?rpc=...&claim=...), shows it at once. */
export function initClaimView(deps: ClaimViewDeps, params: URLSearchParams): void {
  $('claim-form').addEventListener('submit', (e) => {
    e.preventDefault()
    void show(deps)
  })
  $<HTMLInputElement>('claim-address').value = params.get('claim') ?? ''
  if (params.get('claim') && params.get('rpc')) void show(deps)
}
