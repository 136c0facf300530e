// Generation speed: the SDK's WebAssembly engine in Node against the native engine, on
// stories260K and the stories15M-shaped model (the artifacts of scripts/artifacts.mjs), 256
// greedy tokens from token 1, as scripts/bench-run measures `client run`. Median of RUNS
// (default 3), native and WebAssembly runs alternating so that both see the same machine load;
// one warm-up run of each first. The tokens of both must be equal. The first run of a module
// compiled just before it (each model gets its own) is timed too: V8 starts a module's
// functions in its baseline compiler (Liftoff) and tiers the hot ones up (TurboFan) as they
// run, so the first run is slower than the next; "first / warm" is their ratio.
//
// The native figure is `client run ARTIFACT --prompt-tokens 1 --steps 256 --temperature 0
// --threads 1 --output json` (its tokens_per_second) when the client is built ($CURTA_CLIENT, or
// target/release/client: `cargo build --release -p curta-client --bin client`); otherwise
// curta-core's `run` example, the same loop as the client's `generate` (built here with
// `cargo build --release -p curta-core --example run`, the core alone); with neither, the
// native column is skipped and the script says so.
//
// npm run bench:run [-- RUNS]     (npm run bench runs this, then the hash benchmark)
import { readFileSync } from 'node:fs'
import { cpus } from 'node:os'
import { engineBytes, Runner } from '../src/index.js'
import { artifactPath } from '../test/support/files.js'
import { native, STEPS as steps } from './native.js'

const runs = Number(process.argv[2] ?? 3)

async function wasm(r: Runner): Promise<{ tokens: number[]; tokensPerSecond: number }> {
  const t = performance.now()
  const g = await r.run({ prompt: [1], steps, temperature: 0, yieldMs: Infinity })
  const seconds = (performance.now() - t) / 1000
  return { tokens: g.tokens, tokensPerSecond: g.tokens.length / seconds }
}

const median = (v: number[]) => [...v].sort((a, b) => a - b)[Math.floor(v.length / 2)]!

const n = native({ build: true })
console.log(`machine: ${cpus().length} cores, ${cpus()[0]?.model ?? 'unknown CPU'}; Node ${process.versions.node}; median of ${runs} runs, ${steps} steps, greedy, one thread`)
console.log(n ? `native: ${n.what}` : 'native: SKIPPED (neither the client nor curta-core\'s run example could be built)')
console.log('model               native tok/s   wasm tok/s (Node)   wasm / native   first-run tok/s   first / warm')
for (const name of ['stories260K', 'stories15M']) {
  const path = artifactPath(name)
  const module = await WebAssembly.compile(engineBytes() as Uint8Array<ArrayBuffer>)
  const r = await Runner.create(new Uint8Array(readFileSync(path)), { module })
  const w: number[] = []
  const nat: number[] = []
  const warm = await wasm(r)
  if (n) {
    const first = n.run(path)
    if (JSON.stringify(first.tokens) !== JSON.stringify(warm.tokens))
      throw new Error(`${name}: the WebAssembly engine's tokens differ from the native engine's`)
  }
  for (let i = 0; i < runs; i++) {
    w.push((await wasm(r)).tokensPerSecond)
    if (n) nat.push(n.run(path).tokensPerSecond)
  }
  const label = name === 'stories15M' ? 'stories15M-shape' : name
  const mw = median(w)
  const mn = n ? median(nat) : NaN
  console.log(
    `${label.padEnd(18)}${(n ? mn.toFixed(1) : 'skipped').padStart(13)}${mw.toFixed(1).padStart(21)}${(n ? (mw / mn).toFixed(3) : '-').padStart(16)}` +
      `${warm.tokensPerSecond.toFixed(1).padStart(18)}${(warm.tokensPerSecond / mw).toFixed(3).padStart(15)}`,
  )
}
