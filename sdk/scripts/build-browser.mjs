// Bundles the package for browsers (dist/browser/curta-sdk.js: one ES module with its
// dependencies) and the verifier page: web/dist/index.html, one self-contained file (the script
// inlined) that opens from disk (file://) or from any static server. The page's run worker
// (web/src/worker.ts, with the WebAssembly engine) is bundled first and inlined into the page's
// script as a string, which the page starts from a blob: URL.
import { build } from 'esbuild'
import { mkdir, readFile, writeFile } from 'node:fs/promises'
import { existsSync } from 'node:fs'
import { spawnSync } from 'node:child_process'

// The demo's English model (kjv + tok1024, converted by the Rust core: scripts/artifacts.mjs),
// inlined into the page as base64 so that "Load the bundled English model" works from disk.
const bundled = 'test/artifacts/kjv.curta'
if (!existsSync(bundled)) {
  const made = spawnSync(process.execPath, ['scripts/artifacts.mjs'], { stdio: 'inherit' })
  if (made.status !== 0) throw new Error(`scripts/artifacts.mjs failed: no ${bundled}`)
}
const bundledModel = (await readFile(bundled)).toString('base64')

const common = { bundle: true, format: 'esm', platform: 'browser', target: 'es2022', logLevel: 'warning' }
await build({ ...common, entryPoints: ['src/index.ts'], outfile: 'dist/browser/curta-sdk.js', sourcemap: true })
const worker = await build({ ...common, format: 'iife', entryPoints: ['web/src/worker.ts'], write: false, minify: true, outfile: 'worker.js' })
const page = await build({
  ...common,
  entryPoints: ['web/src/main.ts'],
  write: false,
  minify: true,
  outfile: 'main.js',
  define: {
    __CURTA_WORKER__: JSON.stringify(worker.outputFiles[0].text),
    __CURTA_BUNDLED_MODEL__: JSON.stringify(bundledModel),
  },
})
const script = page.outputFiles[0].text.replaceAll('</script', '<\\/script')
const html = await readFile('web/index.html', 'utf8')
const tag = '<script type="module" src="./main.js"></script>'
if (!html.includes(tag)) throw new Error(`web/index.html has no ${tag}`)
await mkdir('web/dist', { recursive: true })
await writeFile('web/dist/index.html', html.replace(tag, () => `<script type="module">${script}</script>`))
