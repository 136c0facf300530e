// Paths and loaders shared by the tests.
import { readFileSync, existsSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import { dirname, join } from 'node:path'

export const sdkDir = dirname(dirname(dirname(fileURLToPath(import.meta.url))))
export const repoDir = dirname(sdkDir)
export const goldenDir = join(sdkDir, 'test', 'golden')
export const artifactsDir = join(sdkDir, 'test', 'artifacts')

/** A test artifact made by the Rust core (scripts/artifacts.mjs runs before the tests). */
export function artifactPath(name: string): string {
  const path = join(artifactsDir, `${name}.curta`)
  if (!existsSync(path))
    throw new Error(`${path} is missing: run \`node scripts/artifacts.mjs\` in sdk/ (npm test does it first)`)
  return path
}

export function readArtifact(name: string): Uint8Array {
  return new Uint8Array(readFileSync(artifactPath(name)))
}

export function golden<T = any>(name: string): T {
  return JSON.parse(readFileSync(join(goldenDir, `${name}.json`), 'utf8')) as T
}

export function readModel(name: string): Uint8Array {
  return new Uint8Array(readFileSync(join(repoDir, 'models', name)))
}

export const hex = (b: Uint8Array) => Buffer.from(b.buffer, b.byteOffset, b.byteLength).toString('hex')
export const unhex = (s: string) => new Uint8Array(Buffer.from(s, 'hex'))
