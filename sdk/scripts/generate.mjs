#!/usr/bin/env node
// Renders the Curta program's Codama IDL (../idl/curta.json) into src/generated/ with Codama's
// JavaScript renderer (@codama/renderers-js): the instruction builders, the account decoders, the
// defined types, the model PDA and the error table, all over @solana/kit (docs/idl.md).
//
//   node scripts/generate.mjs                  # rewrites src/generated/ (npm run generate)
//   node scripts/generate.mjs --check          # renders into a temporary folder; exits 1 naming
//                                              # every file that differs from src/generated/
//   node scripts/generate.mjs --check --idl F  # the same, rendering the IDL in file F
//
// The render is deterministic: the renderer writes unformatted code, and this script then
// (1) gives every relative import its file (`./close` -> `./close.js`, `../programs` ->
// `../programs/index.js`), which the SDK's ES modules need under Node's module resolution, and
// (2) formats each file with the pinned prettier (package.json: an exact version) and the
// options below, no configuration file consulted.
//
// Two things of the render's need more than the renderer's options: its program plugin is typed
// for @solana/kit 6 (`extendClient` is taken from src/codama-kit.ts, see there), and it imports
// one type (`ModelSeeds`) without `import type`, so tsconfig.json has `isolatedModules` rather
// than `verbatimModuleSyntax` (type-only imports are dropped by tsc, tsx and esbuild alike).
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync, mkdirSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { dirname, join, posix, relative } from 'node:path'
import { fileURLToPath } from 'node:url'
import { createFromRoot, pascalCase } from 'codama'
import { renderVisitor } from '@codama/renderers-js'
import { format } from 'prettier'

const sdk = join(dirname(fileURLToPath(import.meta.url)), '..')
const target = join(sdk, 'src', 'generated')
const PRETTIER = { parser: 'typescript', printWidth: 120, semi: false, singleQuote: true, trailingComma: 'all', endOfLine: 'lf' }

// Names the SDK already uses for its own, richer functions and classes (fetchModel and fetchRun
// check the owner and decode into the SDK's shapes; CurtaError is the SDK's base error class):
// the generated ones are renamed rather than shadowed.
const nameTransformers = {
  programErrorUnion: (name) => `${pascalCase(name)}ProgramError`,
  accountFetchFunction: (name) => `fetch${pascalCase(name)}Account`,
  accountFetchMaybeFunction: (name) => `fetchMaybe${pascalCase(name)}Account`,
  accountFetchAllFunction: (name) => `fetchAll${pascalCase(name)}Accounts`,
  accountFetchAllMaybeFunction: (name) => `fetchAllMaybe${pascalCase(name)}Accounts`,
  accountFetchFromSeedsFunction: (name) => `fetch${pascalCase(name)}AccountFromSeeds`,
  accountFetchMaybeFromSeedsFunction: (name) => `fetchMaybe${pascalCase(name)}AccountFromSeeds`,
}

function listFiles(dir, base = dir) {
  if (!existsSync(dir)) return []
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
    e.isDirectory() ? listFiles(join(dir, e.name), base) : [relative(base, join(dir, e.name)).split('\\').join('/')],
  )
}

/** Every relative specifier of `file` made a path to a file of the render: `.js` or `/index.js`. */
function withExtensions(file, text, files) {
  return text.replace(/(from\s+['"])(\.{1,2}(?:\/[^'"]*)?)(['"])/g, (_, open, spec, close) => {
    if (spec.endsWith('.js')) return `${open}${spec}${close}`
    const at = posix.normalize(posix.join(posix.dirname(file), spec))
    if (files.has(`${at}.ts`)) return `${open}${spec}.js${close}`
    if (files.has(`${at}/index.ts`)) return `${open}${spec}/index.js${close}`
    throw new Error(`generate: ${file} imports ${spec}, which is no file of the render`)
  })
}

/** Renders the IDL at `idlPath`: a map from paths inside src/generated/ to their text. */
async function render(idlPath) {
  const work = mkdtempSync(join(tmpdir(), 'curta-generate-'))
  try {
    const root = JSON.parse(readFileSync(idlPath, 'utf8'))
    await createFromRoot(root).accept(
      renderVisitor(work, {
        formatCode: false,
        syncPackageJson: false,
        kitImportStrategy: 'rootOnly',
        nameTransformers,
        dependencyMap: { solanaPluginCore: '../../codama-kit.js' },
      }),
    )
    const dir = join(work, 'src', 'generated')
    const names = listFiles(dir).sort()
    const files = new Set(names)
    const out = new Map()
    for (const name of names) {
      const text = withExtensions(name, readFileSync(join(dir, name), 'utf8'), files)
      out.set(name, await format(text, PRETTIER))
    }
    return out
  } finally {
    rmSync(work, { recursive: true, force: true })
  }
}

const args = process.argv.slice(2)
const idlAt = args.indexOf('--idl')
const idlPath = idlAt >= 0 ? args[idlAt + 1] : join(sdk, '..', 'idl', 'curta.json')
if (idlAt >= 0 && !idlPath) throw new Error('generate: --idl needs a file')
const rendered = await render(idlPath)

if (args.includes('--check')) {
  const committed = new Set(listFiles(target))
  const problems = []
  for (const [name, text] of rendered) {
    if (!committed.has(name)) problems.push(`missing: src/generated/${name}`)
    else if (readFileSync(join(target, name), 'utf8') !== text) problems.push(`changed: src/generated/${name}`)
  }
  for (const name of committed) if (!rendered.has(name)) problems.push(`extra: src/generated/${name}`)
  if (problems.length > 0) {
    console.error(`sdk/src/generated/ is not the render of ${relative(process.cwd(), idlPath) || idlPath}:`)
    for (const p of problems) console.error(`  ${p}`)
    console.error('rewrite it with: cd sdk && npm run generate')
    process.exit(1)
  }
  console.log(`sdk/src/generated/ is the render of ${relative(process.cwd(), idlPath) || idlPath} (${rendered.size} files)`)
} else {
  rmSync(target, { recursive: true, force: true })
  for (const [name, text] of rendered) {
    mkdirSync(dirname(join(target, name)), { recursive: true })
    writeFileSync(join(target, name), text)
  }
  console.log(`wrote ${relative(process.cwd(), target) || target}: ${rendered.size} files`)
}
