// The native engine for the speed comparisons (npm run bench:run, the page's browser test):
// `client run ARTIFACT --prompt-tokens 1 --steps 256 --temperature 0 --threads 1 --output
// json` (one thread, as the WebAssembly engine) when the client is built ($CURTA_CLIENT, or
// target/release/client), otherwise curta-core's `run`
// example (the same loop as the client's `generate`), built on request with `cargo build
// --release -p curta-core --example run` (the core alone).
import { execFileSync, spawnSync } from 'node:child_process'
import { existsSync } from 'node:fs'
import { join } from 'node:path'
import { repoDir } from '../test/support/files.js'

export const STEPS = 256
const steps = STEPS
const target = process.env.CARGO_TARGET_DIR ?? join(repoDir, 'target')

export interface Native {
  what: string
  run(path: string): { tokens: number[]; tokensPerSecond: number }
}

export function native(options: { build: boolean }): Native | undefined {
  const client = process.env.CURTA_CLIENT ?? join(target, 'release', 'client')
  if (existsSync(client)) {
    return {
      what: `client run (${client})`,
      run(path) {
        const out = execFileSync(client, ['run', path, '--prompt-tokens', '1', '--steps', String(steps), '--temperature', '0', '--threads', '1', '--output', 'json'], {
          encoding: 'utf8',
          stdio: ['ignore', 'pipe', 'ignore'],
        })
        // The JSON object is the whole of stdout (the streamed text goes to stderr with --output json).
        const j = JSON.parse(out)
        return { tokens: j.tokens, tokensPerSecond: j.tokens_per_second }
      },
    }
  }
  const example = join(target, 'release', 'examples', 'run')
  if (!existsSync(example)) {
    if (!options.build) return undefined
    console.error(`no client at ${client}: building curta-core's run example (cargo build --release -p curta-core --example run)`)
    const b = spawnSync('cargo', ['build', '--release', '--quiet', '-p', 'curta-core', '--example', 'run'], { cwd: repoDir, stdio: 'inherit' })
    if (b.status !== 0) return undefined
  }
  return {
    what: `curta-core's run example (${example}; the client is not built: ${client})`,
    run(path) {
      const j = JSON.parse(execFileSync(example, [path, String(steps)], { encoding: 'utf8' }))
      return { tokens: j.tokens, tokensPerSecond: j.tokens_per_second }
    },
  }
}

