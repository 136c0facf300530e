// Makes the test artifacts (test/artifacts/*.curta) when they are missing, with the Rust core:
// cargo run --release -p curta-core --example golden -- sdk/test/artifacts
// (stories260K from models/, a grouped-query model and the 16.5 MB stories15M-shaped model).
import { existsSync } from 'node:fs'
import { spawnSync } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import { dirname, join } from 'node:path'

const sdk = dirname(dirname(fileURLToPath(import.meta.url)))
const dir = join(sdk, 'test', 'artifacts')
const names = ['stories260K', 'gqa', 'stories15M']
if (!names.every((n) => existsSync(join(dir, `${n}.curta`)))) {
  const args = ['run', '--release', '--quiet', '-p', 'curta-core', '--example', 'golden', '--', dir]
  console.error(`making the test artifacts: cargo ${args.join(' ')}`)
  const run = spawnSync('cargo', args, { cwd: dirname(sdk), stdio: 'inherit' })
  if (run.status !== 0) {
    console.error(run.error ? `cargo: ${run.error.message}` : `cargo exited with ${run.status}`)
    process.exit(1)
  }
}
