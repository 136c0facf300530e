// Builds the WebAssembly engine (src/wasm-module.ts, from curta-core's inference) when it is
// missing: ../scripts/build-wasm (Debian's rustc-web and lld-19, installed there when missing).
// scripts/sdk-test runs build-wasm every time, so the module follows the Rust sources.
import { existsSync } from 'node:fs'
import { spawnSync } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import { dirname, join } from 'node:path'

const sdk = dirname(dirname(fileURLToPath(import.meta.url)))
if (!existsSync(join(sdk, 'src', 'wasm-module.ts'))) {
  const script = join(dirname(sdk), 'scripts', 'build-wasm')
  console.error(`building the WebAssembly engine: ${script}`)
  const run = spawnSync(script, [], { stdio: 'inherit' })
  if (run.status !== 0) {
    console.error(run.error ? `build-wasm: ${run.error.message}` : `build-wasm exited with ${run.status}`)
    process.exit(1)
  }
}
