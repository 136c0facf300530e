// Makes the test artifacts (test/artifacts/*.curta) when they are missing, with the Rust core:
// cargo run --release -p curta-core --example golden -- sdk/test/artifacts
// (stories260K and the demo's English model kjv from models/, a grouped-query model, the 16.5 MB stories15M-shaped model and the
// eight random small configurations of the run vectors, random-0 to random-7).
import { existsSync } from 'node:fs'
import { spawnSync } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import { dirname, join } from 'node:path'

const sdk = dirname(dirname(fileURLToPath(import.meta.url)))
const dir = join(sdk, 'test', 'artifacts')
const names = ['stories260K', 'gqa', 'stories15M', 'kjv', ...Array.from({ length: 8 }, (_, i) => `random-${i}`)]
if (!names.every((n) => existsSync(join(dir, `${n}.curta`)))) {
  const args = ['run', '--release', '--quiet', '-p', 'curta-core', '--example', 'golden', '--', dir]
  console.error(`making the test artifacts: cargo ${args.join(' ')}`)
  const run = spawnSync('cargo', args, { cwd: dirname(sdk), stdio: 'inherit' })
  if (run.status !== 0) {
    console.error(run.error ? `cargo: ${run.error.message}` : `cargo exited with ${run.status}`)
    process.exit(1)
  }
}
