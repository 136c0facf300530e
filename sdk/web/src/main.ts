// The verifier page: an artifact read and hashed in the browser, and a model read and verified
// against the chain, all with @curta/sdk. Query parameters rpc, program and model fill the form.
// Once a file is checked or a sealed model verified, it can be run: a worker (web/src/worker.ts,
// inlined as a blob) holds the model in curta-core's WebAssembly engine and streams the tokens.
// The first worker starts when the page loads and compiles the engine's module then; later
// workers are handed that module. A run account (query parameter run) can be watched: its tokens
// and text stream in as steps land, with its seed's source and whether it is trusted. A claim
// account (query parameter claim) is shown and verified in the page (claim.ts).

import { createSolanaRpc, type Address } from '@solana/kit'
import {
  CURTA_PROGRAM_ID,
  chunkCount,
  decodeArtifact,
  fetchModel,
  headSize,
  runTrust,
  toHex as hexOf,
  watchRun,
  type RunAccount,
  kvDim,
  toHex,
  verifyModel,
  weightsCommitment,
  type Artifact,
  type ModelAccount,
} from '../../src/index.js'
import type { WorkerReply, WorkerRequest } from './worker.js'
import { $, FieldError, addressField, chainMessage, fixed16, fmt, rpcField } from './fields.js'
import { initClaimView } from './claim.js'

/** The worker's bundled source (scripts/build-browser.mjs defines it). */
declare const __CURTA_WORKER__: string
/** The demo's English model (kjv.curta), base64: inlined by scripts/build-browser.mjs. */
declare const __CURTA_BUNDLED_MODEL__: string

function table(el: HTMLElement, head: string[], rows: (string | number)[][], nameColumns: number[] = []): void {
  const cell = (tag: string, v: string | number, i: number) => {
    const c = document.createElement(tag)
    c.textContent = typeof v === 'number' ? fmt(v) : v
    if (nameColumns.includes(i)) c.className = 'name'
    return c
  }
  const thead = document.createElement('tr')
  head.forEach((h, i) => thead.append(cell('th', h, i)))
  el.replaceChildren(thead, ...rows.map((r) => {
    const tr = document.createElement('tr')
    r.forEach((v, i) => tr.append(cell('td', v, i)))
    return tr
  }))
}

function showError(id: string, e: unknown): void {
  const el = $(id)
  el.textContent = e instanceof Error ? `${e.name}: ${e.message}` : String(e)
  el.hidden = false
}

let loaded: { artifact: Artifact; hash: string; source: string } | undefined

async function showArtifact(file: File): Promise<void> {
  $('artifact-error').hidden = true
  $('artifact-info').hidden = true
  loaded = undefined
  unloadRunner()
  let artifact: Artifact
  try {
    artifact = decodeArtifact(new Uint8Array(await file.arrayBuffer()))
  } catch (e) {
    showError('artifact-error', e)
    return
  }
  const c = artifact.config
  $('file-name').textContent = file.name
  $('file-bytes').textContent = fmt(artifact.bytes.length)
  table($('config'), ['field', 'value'], [
    ['dimension', c.dim],
    ['hidden dimension', c.hiddenDim],
    ['layers', c.layers],
    ['heads', c.heads],
    ['key and value heads', c.kvHeads],
    ['vocabulary', c.vocabSize],
    ['context', c.contextLength],
    ['head size', headSize(c)],
    ['key and value dimension', kvDim(c)],
  ])
  table(
    $('sections'),
    ['section', 'offset', 'length', 'hash chunks'],
    artifact.sectionTable.map((s, i) => [i, s.offset, s.length, chunkCount(s.length)]),
  )
  table(
    $('matrices'),
    ['index', 'matrix', 'layer', 'section', 'rows', 'columns', 'row bytes', 'offset'],
    artifact.matrices.map((m) => [m.index, m.name, m.layer ?? '', m.section, m.rows, m.columns, m.rowBytes, m.offset]),
    [1],
  )
  $('artifact-info').hidden = false
  const hashEl = $('weights-hash')
  const progress = $<HTMLProgressElement>('hash-progress')
  hashEl.textContent = 'hashing…'
  hashEl.dataset.state = 'hashing'
  const start = performance.now()
  const hash = toHex(
    await weightsCommitment(artifact.sections, { onProgress: (p) => (progress.value = p.bytesDone / p.bytesTotal) }),
  )
  $('hash-time').textContent = `${(performance.now() - start).toFixed(0)} ms`
  hashEl.textContent = hash
  hashEl.dataset.state = 'done'
  loaded = { artifact, hash, source: `${file.name} (weights hash ${hash.slice(0, 16)}…, checked in this page)` }
  loadRunner(artifact.bytes, loaded.source, 'file')
}

function showModel(m: ModelAccount, model: string): void {
  const dl = $('model')
  const rows: [string, string][] = [
    ['address', model],
    ['state', m.state],
    ['authority', m.authority],
    ['declared weights hash', toHex(m.weightsHash)],
    ['running hash', toHex(m.runningHash)],
    ['seal pass', String(m.sealPass)],
    ['seal progress', `${fmt(m.sealProgress.chunksHashed)} of ${fmt(m.totalChunks)} chunks (${(100 * m.sealProgress.fraction).toFixed(1)}%)`],
    ['configuration', m.state === 'Sealed' || m.state === 'Mismatch' || m.sealCursor > 0
      ? `dim ${m.config.dim}, hidden ${m.config.hiddenDim}, layers ${m.config.layers}, heads ${m.config.heads}, kv heads ${m.config.kvHeads}, vocabulary ${m.config.vocabSize}, context ${m.config.contextLength}`
      : 'not yet checked (written at the first seal chunk)'],
  ]
  if (loaded) rows.push(['loaded artifact', loaded.hash === toHex(m.weightsHash) ? 'has the declared hash' : 'has another hash'])
  dl.replaceChildren(...rows.flatMap(([k, v]) => {
    const dt = document.createElement('dt')
    dt.textContent = k
    const dd = document.createElement('dd')
    dd.textContent = v
    dd.id = `model-${k.replace(/ /g, '-')}`
    return [dt, dd]
  }))
  table(
    $('model-sections'),
    ['section', 'length', 'weight account'],
    m.sectionLengths.map((l, i) => [i, l, m.weightAccounts[i] ?? '(not initialized)']),
    [2],
  )
  $('model-info').hidden = false
  $('verify-box').hidden = m.state !== 'Sealed'
}

let current: { rpc: ReturnType<typeof createSolanaRpc>; url: string; model: Address; programId: Address } | undefined

async function readModel(): Promise<void> {
  const error = $('chain-error')
  error.hidden = true
  $('model-info').hidden = true
  $('verify-result').textContent = ''
  current = undefined
  // The run card offers a sealed model only while this section shows it verified.
  if (runnerKind === 'chain') {
    if (loaded) loadRunner(loaded.artifact.bytes, loaded.source, 'file')
    else unloadRunner()
  }
  for (const id of ['rpc-url', 'program-id', 'model-address']) $(id).removeAttribute('aria-invalid')
  const fields = [
    () => rpcField(),
    () => addressField('program-id', 'Program id', "the Curta program's id"),
    () => addressField('model-address', 'Model address', "the model account's address"),
  ]
  const problems: string[] = []
  const values = fields.map((read) => {
    try {
      return read()
    } catch (e) {
      if (!(e instanceof FieldError)) throw e
      e.input.setAttribute('aria-invalid', 'true')
      problems.push(e.message)
      return undefined
    }
  })
  if (problems.length) {
    error.textContent = problems.join('\n')
    error.hidden = false
    return
  }
  const [url, programId, model] = values as [string, Address, Address]
  try {
    const rpc = createSolanaRpc(url)
    current = { rpc, url, model, programId }
    showModel(await fetchModel(rpc, model, programId), model)
  } catch (e) {
    error.textContent = chainMessage(e, url)
    error.hidden = false
  }
}

async function verify(): Promise<void> {
  const c = current
  if (!c) return
  const bar = $<HTMLProgressElement>('verify-progress')
  const result = $('verify-result')
  result.textContent = 'verifying…'
  result.className = ''
  result.dataset.state = 'running'
  try {
    const r = await verifyModel(c.rpc, c.model, {
      programId: c.programId,
      keepSections: true,
      onProgress: (p) => {
        bar.value = p.bytesTotal === 0 ? 0 : p.bytesDone / p.bytesTotal
        $('verify-bytes').textContent = `${fmt(p.bytesDone)} of ${fmt(p.bytesTotal)} bytes`
      },
    })
    result.textContent = r.ok
      ? `verified: the ${r.weights.length} weight accounts chain to the declared hash ${toHex(r.computedHash)}`
      : `MISMATCH: the weight accounts chain to ${toHex(r.computedHash)}, the model declares ${toHex(r.declaredHash)}`
    result.className = r.ok ? 'ok' : 'bad'
    result.dataset.state = r.ok ? 'verified' : 'mismatch'
    // A model read since (another address, or the same again) is not the one verified here.
    if (r.ok && r.sections && c === current) {
      const bytes = new Uint8Array(r.sections.reduce((n, s) => n + s.length, 0))
      let at = 0
      for (const s of r.sections) {
        bytes.set(s, at)
        at += s.length
      }
      loadRunner(bytes, `the sealed model ${c.model} (its ${r.sections.length} weight accounts, verified against the chain)`, 'chain')
    }
  } catch (e) {
    result.textContent = chainMessage(e, c.url)
    result.className = 'bad'
    result.dataset.state = 'error'
  }
}


// ---------------------------------------------------------------- running the model
let workerUrl: string | undefined
/** The worker holding the model to run, and what the model came from. */
let worker: Worker | undefined
let runnerKind: 'file' | 'chain' | undefined
let running = false
/** The engine's module, compiled by the first worker when the page loaded, and that worker while no model has taken it. */
const engine: { module?: WebAssembly.Module; idle?: Worker } = {}

function newWorker(): Worker {
  workerUrl ??= URL.createObjectURL(new Blob([__CURTA_WORKER__], { type: 'text/javascript' }))
  return new Worker(workerUrl)
}

function engineStatus(m: WorkerReply): void {
  const el = $('engine')
  if (m.type === 'compiled') {
    engine.module = m.module
    el.dataset.state = 'compiled'
    el.textContent = `Engine: curta-core's WebAssembly module, compiled when the page loaded (${fmt(Math.round(m.ms))} ms).`
  } else if (m.type === 'error' && el.dataset.state === 'compiling') {
    el.dataset.state = 'error'
    el.textContent = `Engine: the WebAssembly module did not compile: ${m.name}: ${m.message}`
  }
}

/** The first worker, started when the page loads: it compiles the engine's module at once. */
function compileEngine(): void {
  $('engine').dataset.state = 'compiling'
  let w: Worker
  try {
    w = newWorker()
  } catch (e) {
    // A page whose workers are refused (a content security policy) still reads and verifies.
    const err = e instanceof Error ? e : new Error(String(e))
    engineStatus({ type: 'error', name: err.name, code: '', message: err.message })
    return
  }
  engine.idle = w
  w.onmessage = (e: MessageEvent<WorkerReply>) => engineStatus(e.data)
  w.onerror = (e) => engineStatus({ type: 'error', name: 'Error', code: '', message: e.message })
  w.postMessage({ type: 'compile' } satisfies WorkerRequest)
}

function unloadRunner(): void {
  worker?.terminate()
  // The first worker taken by a model and dropped before its module came back: compile again.
  if (worker && !engine.module && !engine.idle && $('engine').dataset.state === 'compiling') compileEngine()
  worker = undefined
  runnerKind = undefined
  running = false
  $('run-card').hidden = true
}

function setRunning(on: boolean): void {
  running = on
  $<HTMLButtonElement>('run').disabled = on
  $<HTMLButtonElement>('stop').disabled = !on
}

/** The run card, loading the model of `source`: nothing of the previous model's runs stays under this one's name. */
function resetRunCard(source: string): { card: HTMLElement; out: HTMLElement } {
  const card = $('run-card')
  const out = $('run-output')
  card.hidden = false
  card.dataset.state = 'loading'
  $('run-source').textContent = source
  $('run-model').textContent = 'loading into the engine and warming it up…'
  $('run-error').hidden = true
  out.replaceChildren()
  delete out.dataset.tokens
  delete out.dataset.promptTokens
  $('run-stats').textContent = ''
  $('run-ids').textContent = ''
  out.dataset.state = 'idle'
  setRunning(false)
  $<HTMLButtonElement>('run').disabled = true
  return { card, out }
}

/** A worker holding `bytes` (the whole artifact) in the engine: the first worker, or a fresh one given its module. */
function loadRunner(bytes: Uint8Array, source: string, kind: 'file' | 'chain'): void {
  unloadRunner()
  const w = engine.idle ?? newWorker()
  engine.idle = undefined
  worker = w
  runnerKind = kind
  const { card, out } = resetRunCard(source)
  let generated: Text | undefined
  let streamed = 0
  w.onmessage = (e: MessageEvent<WorkerReply>) => {
    const m = e.data
    if (m.type === 'compiled' || (m.type === 'error' && $('engine').dataset.state === 'compiling')) engineStatus(m)
    if (w !== worker) return
    switch (m.type) {
      case 'loaded':
        card.dataset.state = 'ready'
        card.dataset.warmUp = `${m.warmUp.tokens} tokens in ${m.warmUp.ms.toFixed(0)} ms`
        $<HTMLButtonElement>('run').disabled = false
        $('run-model').textContent = `context ${fmt(m.contextLength)} tokens, vocabulary ${fmt(m.vocabSize)}`
        break
      case 'tokens':
        if (!generated) {
          generated = document.createTextNode('')
          out.append(generated)
        }
        generated.appendData(m.text)
        streamed = m.count
        $('run-stats').textContent = `${fmt(m.count)} tokens, ${m.tokensPerSecond.toFixed(1)} tokens/s`
        break
      case 'done': {
        setRunning(false)
        const end = m.end === 'end-token' ? 'ended by the model (token 1 or 2)' : m.end === 'stopped' ? 'stopped' : 'steps done'
        $('run-stats').textContent = `${fmt(m.tokens.length)} tokens in ${m.seconds.toFixed(3)} s, ${m.tokensPerSecond.toFixed(1)} tokens/s; seed ${m.seed}; ${end}`
        out.dataset.tokens = m.tokens.join(',')
        out.dataset.promptTokens = m.promptTokens.join(',')
        $('run-ids').textContent = `prompt [${m.promptTokens.join(', ')}] → [${m.tokens.join(', ')}]`
        out.dataset.state = m.end === 'stopped' ? 'stopped' : 'done'
        break
      }
      case 'error':
        runFailed(`${m.name}: ${m.message}`)
        break
    }
  }
  const runFailed = (message: string) => {
    const wasRunning = running
    setRunning(false)
    $('run-error').textContent = message
    $('run-error').hidden = false
    if (card.dataset.state === 'loading') {
      card.dataset.state = 'error'
      $<HTMLButtonElement>('run').disabled = true
      $('run-model').textContent = 'not loaded (the error is below)'
      return
    }
    out.dataset.state = 'error'
    if (wasRunning)
      $('run-stats').textContent = streamed === 0 ? 'no tokens: the run did not start (the error is above)' : `${fmt(streamed)} tokens, then the run failed (the error is above)`
  }
  w.onerror = (e) => runFailed(`the worker failed: ${e.message}`)
  w.postMessage({ type: 'load', bytes, module: engine.module } satisfies WorkerRequest)
  $('run').onclick = () => {
    if (running || w !== worker) return
    const prompt = $<HTMLTextAreaElement>('prompt').value
    out.replaceChildren()
    const p = document.createElement('span')
    p.className = 'prompt'
    p.textContent = prompt
    out.append(p)
    generated = undefined
    streamed = 0
    delete out.dataset.tokens
    out.dataset.state = 'running'
    $('run-error').hidden = true
    $('run-ids').textContent = ''
    $('run-stats').textContent = 'running…'
    setRunning(true)
    w.postMessage({
      type: 'run',
      prompt,
      steps: Number($<HTMLInputElement>('steps').value),
      temperature: $<HTMLInputElement>('temperature').value,
      topP: $<HTMLInputElement>('top-p').value,
      seed: $<HTMLInputElement>('seed').value,
    } satisfies WorkerRequest)
  }
  $('stop').onclick = () => w.postMessage({ type: 'stop' } satisfies WorkerRequest)
}


// A run on chain: read the run account, stream its tokens and text as steps land (watchRun),
// say where its seed came from and whether it is trusted for its model (runTrust).

let watching: AbortController | undefined


function seedText(r: RunAccount): string {
  switch (r.seedSource) {
    case 'none':
      return 'None: a greedy run (temperature 0) takes the highest logit every time, so no seed is involved.'
    case 'chosen':
      return `Chosen by the runner: seed ${r.runnerSeed}, in force as given. The run is reproducible, and the runner could have tried seeds off chain until the text suited them.`
    case 'drawn':
      return r.seedSlot === 0n
        ? `Drawn from the chain, not yet: the first step after slot ${r.startSlot} (where StartRun landed) draws it from that slot's hash (runner's seed ${r.runnerSeed}).`
        : `Drawn from the chain: ${r.seedInForce}, SHA-256 of the runner's seed ${r.runnerSeed}, the run address, slot ${r.seedSlot} (where StartRun landed) and that slot's hash ${hexOf(r.slotHash)}, which nobody knew when the run was started.`
  }
}

function showRun(r: RunAccount, at: Address, text: string): void {
  const dl = $('watch-run-header')
  const rows: [string, string][] = [
    ['run', at],
    ['model', r.model],
    ['runner', r.runner],
    ['nonce', fmt(r.nonce)],
    ['status', `${r.state.status} (${r.state.statusCode})`],
    ['position', fmt(r.state.position)],
    ['steps landed', fmt(r.stepsLanded)],
    ['tokens', `${fmt(r.generatedTokens.length)} of at most ${fmt(r.state.steps)}`],
    ['temperature', r.temperature === 0 ? '0 (greedy)' : fixed16(r.temperature)],
    ['top-p', fixed16(r.topP)],
    ['seed source', r.seedSource],
    ['dispute', r.dispute ? "yes: a claim's dispute run, which only Resolve closes" : 'no'],
  ]
  dl.replaceChildren(
    ...rows.flatMap(([k, v]) => {
      const dt = document.createElement('dt')
      dt.textContent = k
      const dd = document.createElement('dd')
      dd.textContent = v
      dd.id = `watch-${k.replace(/ /g, '-')}`
      return [dt, dd]
    }),
  )
  const seed = $('watch-seed')
  seed.textContent = seedText(r)
  seed.dataset.source = r.seedSource
  const out = $('watch-output')
  out.textContent = text
  out.dataset.state = r.finished ? 'finished' : 'streaming'
  out.dataset.tokens = String(r.generatedTokens.length)
  const n = (count: number, what: string) => `${fmt(count)} ${what}${count === 1 ? '' : 's'}`
  $('watch-stats').textContent = `${n(r.generatedTokens.length, 'token')}, ${n(r.textLength, 'byte')} of text, after ${n(r.stepsLanded, 'step')}`
  $('watch-ids').textContent = `prompt ids: ${r.promptTokens.join(' ')}; generated ids: ${r.generatedTokens.join(' ')}`
}

async function showTrust(rpc: ReturnType<typeof createSolanaRpc>, at: Address, programId: Address): Promise<void> {
  const t = await runTrust(rpc, at, { programId })
  const verdict = $('watch-trust')
  verdict.dataset.trusted = String(t.trusted)
  verdict.className = t.trusted ? 'ok' : 'bad'
  verdict.textContent = t.trusted
    ? `Trusted for its model ${t.run?.model}: finished, owned by the program, at its run address, and the model is sealed at the address of its authority and weights hash.`
    : `Not trusted: ${t.checks
        .filter((c) => !c.ok)
        .map((c) => `${c.name} (${c.detail})`)
        .join('; ')}.`
  $('watch-checks').replaceChildren(
    ...t.checks.map((c) => {
      const li = document.createElement('li')
      li.textContent = `${c.ok ? '✓' : '✗'} ${c.name}: ${c.detail}`
      li.dataset.ok = String(c.ok)
      return li
    }),
  )
}

async function watch(): Promise<void> {
  watching?.abort()
  const controller = new AbortController()
  watching = controller
  const error = $('watch-error')
  error.hidden = true
  $('watch-info').hidden = true
  for (const id of ['rpc-url', 'program-id', 'run-address']) $(id).removeAttribute('aria-invalid')
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
  const at = read(() => addressField('run-address', 'Run account address', "the run account's address"))
  if (problems.length) {
    error.textContent = problems.join('\n')
    error.hidden = false
    return
  }
  const rpc = createSolanaRpc(url!)
  const verdict = $('watch-trust')
  verdict.dataset.trusted = 'unknown'
  verdict.className = ''
  verdict.textContent = 'Not yet: a run is trusted only once it has finished.'
  $('watch-checks').replaceChildren()
  try {
    for await (const update of watchRun(rpc, at!, { programId: programId!, intervalMs: 100, signal: controller.signal })) {
      if (controller.signal.aborted) return
      showRun(update.run, at!, update.text)
      $('watch-info').hidden = false
    }
    if (!controller.signal.aborted) await showTrust(rpc, at!, programId!)
  } catch (e) {
    if (controller.signal.aborted) return
    error.textContent = chainMessage(e, url!)
    error.hidden = false
  }
}

const drop = $('drop')
drop.addEventListener('dragover', (e) => {
  e.preventDefault()
  drop.classList.add('over')
})
drop.addEventListener('dragleave', () => drop.classList.remove('over'))
drop.addEventListener('drop', (e) => {
  e.preventDefault()
  drop.classList.remove('over')
  const file = e.dataTransfer?.files[0]
  if (file) void showArtifact(file)
})
$<HTMLInputElement>('file').addEventListener('change', (e) => {
  const file = (e.target as HTMLInputElement).files?.[0]
  if (file) void showArtifact(file)
})
$('bundled').addEventListener('click', () => {
  const bytes = Uint8Array.from(atob(__CURTA_BUNDLED_MODEL__), (c) => c.charCodeAt(0))
  const prompt = $<HTMLTextAreaElement>('prompt')
  if (!prompt.value) prompt.value = prompt.placeholder
  void showArtifact(new File([bytes], 'kjv.curta'))
})
$('chain-form').addEventListener('submit', (e) => {
  e.preventDefault()
  void readModel()
})
$('verify').addEventListener('click', () => void verify())
$('watch-form').addEventListener('submit', (e) => {
  e.preventDefault()
  void watch()
})

const params = new URLSearchParams(location.search)
$<HTMLInputElement>('rpc-url').value = params.get('rpc') ?? ''
$<HTMLInputElement>('program-id').value = params.get('program') ?? CURTA_PROGRAM_ID
$<HTMLInputElement>('model-address').value = params.get('model') ?? ''
$<HTMLInputElement>('run-address').value = params.get('run') ?? ''
compileEngine()
// Given a node and a run (?rpc=...&run=...), the page watches the run at once.
if (params.get('run') && params.get('rpc')) void watch()
// A claim (?rpc=...&claim=...): shown and verified in the page at once.
initClaimView({ newWorker, module: () => engine.module }, params)
document.body.dataset.ready = 'true'
