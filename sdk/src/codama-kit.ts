/**
 * Codama's JavaScript renderer (@codama/renderers-js 2.2.0) writes a program plugin for
 * @solana/kit 6, whose `extendClient` returned `Omit<T, keyof A> & A`; kit 8's returns a mapped
 * type that TypeScript does not assign to that. The generated code takes `extendClient` from here
 * (scripts/generate.mjs maps the renderer's `solanaPluginCore` module to this file): kit's own
 * function, typed as kit 6 typed it.
 */
import { extendClient as kitExtendClient } from '@solana/kit'

export const extendClient = kitExtendClient as unknown as <T extends object, A extends object>(
  client: T,
  additions: A,
) => Omit<T, keyof A> & A
