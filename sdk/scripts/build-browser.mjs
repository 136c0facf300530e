// Bundles the package for browsers (dist/browser/curta-sdk.js, one ES module with its
// dependencies) and the verifier page (web/dist/).
import { build } from 'esbuild'
import { copyFile, mkdir } from 'node:fs/promises'

const common = { bundle: true, format: 'esm', platform: 'browser', target: 'es2022', sourcemap: true, logLevel: 'warning' }
await build({ ...common, entryPoints: ['src/index.ts'], outfile: 'dist/browser/curta-sdk.js' })
await mkdir('web/dist', { recursive: true })
await build({ ...common, entryPoints: ['web/src/main.ts'], outfile: 'web/dist/main.js', minify: true })
await copyFile('web/index.html', 'web/dist/index.html')
