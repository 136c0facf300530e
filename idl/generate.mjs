#!/usr/bin/env node
// Writes idl/curta.json, the Codama IDL of the Curta program (docs/idl.md): every instruction,
// the model, weight and run accounts, the model PDA and every error. The layouts are written out
// here by hand from docs/program.md; the errors' codes, names and messages are read from the
// program's error enum (CurtaError, in curta-interface). tests/idl.rs checks the result against the interface crate
// (instruction bytes, account field offsets, error codes and messages), sdk/test/idl.test.ts
// against the SDK's builders and decoders.
//
//   node idl/generate.mjs           # rewrites idl/curta.json
//   node idl/generate.mjs --check   # exits 1 when idl/curta.json is not what this writes
import { existsSync, readFileSync, writeFileSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'

const root = join(dirname(fileURLToPath(import.meta.url)), '..')
const PROGRAM_ID = 'EK9jqHnajPuMkoe66Go1ASMV1KQG9RctaRcrGcgs3Qqn'
const SLOT_HASHES = 'SysvarS1otHashes111111111111111111111111111'
const SYSTEM_PROGRAM = '11111111111111111111111111111111'

// Type nodes.
const num = (format) => ({ kind: 'numberTypeNode', format, endian: 'le' })
const u8 = num('u8')
const u16 = num('u16')
const u32 = num('u32')
const u64 = num('u64')
const pubkey = { kind: 'publicKeyTypeNode' }
const bytes = { kind: 'bytesTypeNode' }
const fixedBytes = (size) => ({ kind: 'fixedSizeTypeNode', size, type: bytes })
const link = (name) => ({ kind: 'definedTypeLinkNode', name })
const field = (name, type, docs = [], extra = {}) => ({ kind: 'structFieldTypeNode', name, docs: [].concat(docs), type, ...extra })
const struct = (...fields) => ({ kind: 'structTypeNode', fields })
const reserved = (at, size) => field(`reserved${at}`, fixedBytes(size), `bytes ${at}..${at + size}, zero`)
const magic = (text) =>
  field('magic', fixedBytes(8), `"${text}"`, {
    defaultValue: { kind: 'bytesValueNode', data: text, encoding: 'utf8' },
    defaultValueStrategy: 'omitted',
  })
const version = (v) =>
  field('version', u8, `layout version, ${v}`, {
    defaultValue: { kind: 'numberValueNode', number: v },
    defaultValueStrategy: 'omitted',
  })
const enumOf = (names, size = u8) => ({
  kind: 'enumTypeNode',
  variants: names.map((name) =>
    typeof name === 'string'
      ? { kind: 'enumEmptyVariantTypeNode', name }
      : { kind: 'enumEmptyVariantTypeNode', name: name[0], discriminator: name[1] },
  ),
  size,
})
const constantDiscriminator = (text) => ({
  kind: 'constantDiscriminatorNode',
  constant: { kind: 'constantValueNode', type: bytes, value: { kind: 'bytesValueNode', data: text, encoding: 'utf8' } },
  offset: 0,
})

// Instructions.
const account = (name, { writable = false, signer = false, optional = false, defaultValue, docs = [] } = {}) => ({
  kind: 'instructionAccountNode',
  name,
  docs: [].concat(docs),
  isWritable: writable,
  isSigner: signer,
  ...(optional ? { isOptional: true } : {}),
  ...(defaultValue ? { defaultValue: { kind: 'publicKeyValueNode', publicKey: defaultValue } } : {}),
})
const argument = (name, type, docs = []) => ({ kind: 'instructionArgumentNode', name, docs: [].concat(docs), type })
const remaining = (name, writable, docs) => ({
  kind: 'instructionRemainingAccountsNode',
  docs: [docs],
  isWritable: writable,
  isSigner: false,
  value: { kind: 'argumentValueNode', name },
})
const instruction = (tag, name, docs, accounts, args, { remainingAccounts = [], optionalAccountStrategy = 'programId' } = {}) => ({
  kind: 'instructionNode',
  name,
  docs: [].concat(docs),
  optionalAccountStrategy,
  accounts,
  arguments: [
    {
      kind: 'instructionArgumentNode',
      name: 'discriminator',
      docs: [],
      type: u8,
      defaultValue: { kind: 'numberValueNode', number: tag },
      defaultValueStrategy: 'omitted',
    },
    ...args,
  ],
  remainingAccounts,
  discriminators: [{ kind: 'fieldDiscriminatorNode', name: 'discriminator', offset: 0 }],
})

const instructions = [
  instruction(
    0,
    'createModel',
    'Creates the model account (the PDA of ["model", authority, weights hash]), declaring the weights hash and the section lengths.',
    [
      account('authority', { writable: true, signer: true, docs: "the model's authority; pays the rent" }),
      account('model', { writable: true, docs: 'the model PDA' }),
      account('systemProgram', { defaultValue: SYSTEM_PROGRAM }),
    ],
    [
      argument('weightsHash', fixedBytes(32), 'the declared weights hash (SHA-256 chain over 65,536-byte chunks)'),
      argument('sectionLengths', { kind: 'arrayTypeNode', item: u32, count: { kind: 'prefixedCountNode', prefix: u32 } }, '2 to 18 section lengths'),
    ],
  ),
  instruction(
    1,
    'initWeightAccount',
    "Binds a weight account the authority created (create_account_with_seed at weight_address(authority, model, section), owner the program) to the model's section and writes its header.",
    [account('model', { writable: true }), account('weight', { writable: true }), account('authority', { signer: true })],
    [argument('section', u8)],
  ),
  instruction(
    2,
    'write',
    "Writes bytes at an offset of the weight account's section (data offset 2,048 + offset).",
    [account('weight', { writable: true }), account('authority', { signer: true })],
    [
      argument('offset', u32, 'offset within the section'),
      argument('bytes', { kind: 'sizePrefixTypeNode', type: bytes, prefix: u32 }, 'at most 1,019 bytes in one packet'),
    ],
  ),
  instruction(
    3,
    'seal',
    "Hashes the chunk at the seal cursor. Chunk 0 starts a seal pass and freezes every section: it takes section zero's weight account, the authority as third account (signing), then the other sections' weight accounts. A later chunk takes the model and the cursor's section's weight account, or the model and every section's weight account in section order (the whole pass in flight at once), and anyone may send it; its weight accounts may be read only.",
    [
      account('model', { writable: true }),
      account('weight', {
        writable: true,
        docs: "section zero's weight account at chunk 0; later, the cursor's section's, or section zero's when carrying every section (read only is enough after chunk 0)",
      }),
      account('authority', { signer: true, optional: true, docs: 'only when chunk is 0' }),
    ],
    [
      argument('pass', u32, "the model's seal pass"),
      argument('chunk', u32, "0 to start the pass; otherwise any chunk of the cursor's section, or of the model when carrying every section"),
      argument('creation', u64, "the model's creation id (the slot of its CreateModel)"),
    ],
    {
      optionalAccountStrategy: 'omitted',
      remainingAccounts: [
        remaining('weights', true, "at chunk 0, and when a later chunk carries every section: the weight accounts of sections 1 on, in section order (read only is enough after chunk 0)"),
      ],
    },
  ),
  instruction(
    4,
    'reopen',
    'Returns a Sealing or Mismatch model to Open: unfreezes every section, starts a new seal pass.',
    [account('model', { writable: true }), account('authority', { signer: true })],
    [],
    { remainingAccounts: [remaining('weights', true, "every section's weight account, in section order")] },
  ),
  instruction(
    5,
    'close',
    'Closes an unsealed model and every weight account of it, every lamport to the destination.',
    [account('model', { writable: true }), account('authority', { signer: true }), account('destination', { writable: true })],
    [],
    { remainingAccounts: [remaining('weights', true, "every section's seed-derived weight address, in section order, initialized or not")] },
  ),
  instruction(
    6,
    'startRun',
    'Starts a run of a Sealed model in the run account the runner created at create_with_seed(runner, "run-" + hex of the model address\'s first 8 bytes + "-" + the nonce as 8 hex digits, program id).',
    [
      account('run', { writable: true }),
      account('runner', { signer: true }),
      account('model', { docs: 'a Sealed model' }),
      account('sectionZero', { docs: "the model's weight account of section zero" }),
    ],
    [
      argument('nonce', u32),
      argument('steps', u32, 'the most tokens to generate'),
      argument('temperature', u32, '16 fractional bits; 0 is greedy'),
      argument('topP', u32, '16 fractional bits'),
      argument('seed', u64, "the runner's seed"),
      argument('seedSource', link('seedSource')),
      argument('prompt', link('prompt')),
    ],
  ),
  instruction(
    7,
    'step',
    'Advances a run by whole items of at most `budget` estimated compute units, stopping at a generated token. No signer: anyone may step a run, in any order.',
    [
      account('run', { writable: true }),
      account('model'),
      account('slotHashes', { defaultValue: SLOT_HASHES, docs: 'the SlotHashes sysvar' }),
    ],
    [argument('ticket', u32, 'not read: it makes the transaction unique'), argument('budget', u32, 'estimated compute units, 1 to 1,175,000')],
    { remainingAccounts: [remaining('weights', false, "section zero's weight account, then any of the other sections' in section order (every section's, or those the step's items read)")] },
  ),
  instruction(
    8,
    'closeRun',
    "Closes a run account, every lamport to its runner. With the run's model and nonce it also closes an account at a run address that StartRun never initialized.",
    [account('run', { writable: true }), account('runner', { writable: true, signer: true })],
    [
      argument(
        'runSeeds',
        { kind: 'remainderOptionTypeNode', item: struct(field('model', pubkey), field('nonce', u32)) },
        "optional: the run's model address and nonce",
      ),
    ],
  ),
]

const modelAccount = {
  kind: 'accountNode',
  name: 'model',
  docs: ['A model: its declared weights hash, section lengths, seal progress and weight accounts. 808 bytes.'],
  size: 808,
  pda: { kind: 'pdaLinkNode', name: 'model' },
  discriminators: [constantDiscriminator('CURTAMDL')],
  data: struct(
    magic('CURTAMDL'),
    version(1),
    field('state', link('modelState')),
    field('bump', u8, 'the PDA bump'),
    field('sectionCount', u8, '2 to 18'),
    field('sealPass', u32, '0 at creation, +1 at each Reopen'),
    field('authority', pubkey),
    field('weightsHash', fixedBytes(32), 'the declared weights hash'),
    field('runningHash', fixedBytes(32), 'the chain so far while Sealing; the declared hash once Sealed'),
    field('sealCursor', u32, 'index over the whole artifact of the next chunk to hash'),
    field('totalChunks', u32),
    field('config', link('modelConfig'), "written when section zero's header is checked; meaningful once Sealed"),
    field('sealSectionFirstChunk', u16, "while Sealing, the first chunk of the section the seal cursor is in; zero while Open"),
    field('sealSection', u8, 'while Sealing, the section the seal cursor is in; zero while Open'),
    reserved(151, 1),
    field('creation', u64, 'the slot of the CreateModel that made the model'),
    field('sectionLengths', { kind: 'arrayTypeNode', item: u32, count: { kind: 'fixedCountNode', value: 18 } }, 'entries past the section count are zero'),
    field('weightAccounts', { kind: 'arrayTypeNode', item: pubkey, count: { kind: 'fixedCountNode', value: 18 } }, 'zero until initialized'),
  ),
}

const weightAccount = {
  kind: 'accountNode',
  name: 'weight',
  docs: [
    "A section of a model: a 2,048-byte header, then the section's bytes. Address: create_with_seed(authority, \"curta-\" + section as 2 decimal digits + \"-\" + hex of the model address's first 10 bytes, program id).",
  ],
  discriminators: [constantDiscriminator('CURTAWSC')],
  data: struct(
    magic('CURTAWSC'),
    version(1),
    field('frozen', { kind: 'booleanTypeNode', size: u8 }),
    field('section', u16),
    field('length', u32, 'the section length; the data is 2,048 + this'),
    field('model', pubkey),
    field('authority', pubkey),
    reserved(80, 1968),
    field('sectionBytes', bytes),
  ),
}

const runAccount = {
  kind: 'accountNode',
  name: 'run',
  docs: [
    'One run of a sealed model: a 192-byte header, the state buffer (docs/inference.md, "The state buffer"; stateLength bytes), then the text region (textCapacity bytes, textLength written).',
    'Address: create_with_seed(runner, "run-" + hex of the model address\'s first 8 bytes + "-" + the nonce as 8 hex digits, program id).',
  ],
  discriminators: [constantDiscriminator('CURTARUN')],
  data: struct(
    magic('CURTARUN'),
    version(2),
    field('seedSource', link('seedSource')),
    reserved(10, 2),
    field('nonce', u32),
    field('model', pubkey),
    field('runner', pubkey),
    field('stepsLanded', u32, "every Step that landed, anyone's"),
    field('textLength', u32),
    field('textCapacity', u32, '128 x steps'),
    field('stateLength', u32),
    field('temperature', u32, '16 fractional bits; 0 is greedy'),
    field('topP', u32, '16 fractional bits'),
    field('runnerSeed', u64, "the runner's seed, as StartRun gave it"),
    field('startSlot', u64, 'the slot StartRun landed in'),
    field('seedSlot', u64, 'drawn: the slot whose hash was drawn (the start slot), 0 before the draw'),
    field('seedInForce', u64, "drawn: 0 until the first step after the start slot draws it; chosen: the runner's seed; none: 0"),
    field('slotHash', fixedBytes(32), 'drawn: the hash the seed was drawn from; zero otherwise'),
    field('encoding', u32, '1 while the text prompt is still tokenized (the state buffer holds the encoding, continued by Steps), else 0'),
    reserved(172, 20),
    field('body', bytes, 'the state buffer (stateLength bytes), then the text region (textCapacity bytes)'),
  ),
}

const definedTypes = [
  {
    kind: 'definedTypeNode',
    name: 'seedSource',
    docs: [
      "Where a run's seed comes from: none (greedy, temperature 0), drawn from the chain (SHA-256 of \"curta-seed\", the runner's seed, the run address, the start slot and that slot's hash from the SlotHashes sysvar), or chosen by the runner.",
    ],
    type: enumOf(['none', 'drawn', 'chosen']),
  },
  {
    kind: 'definedTypeNode',
    name: 'prompt',
    docs: ["A run's prompt: text (tokenized on chain) or token ids."],
    type: {
      kind: 'enumTypeNode',
      size: u8,
      variants: [
        { kind: 'enumTupleVariantTypeNode', name: 'text', tuple: { kind: 'tupleTypeNode', items: [{ kind: 'sizePrefixTypeNode', type: bytes, prefix: u32 }] } },
        {
          kind: 'enumTupleVariantTypeNode',
          name: 'tokenIds',
          tuple: { kind: 'tupleTypeNode', items: [{ kind: 'arrayTypeNode', item: u32, count: { kind: 'prefixedCountNode', prefix: u32 } }] },
        },
      ],
    },
  },
  {
    kind: 'definedTypeNode',
    name: 'modelState',
    docs: [
      '1 Open, 2 Sealing, 3 Mismatch, 4 Sealed; 0 is an account the program never initialized, not a model.',
      "Every variant's discriminator is its index (Codama's JavaScript renderer reads the index only).",
    ],
    type: enumOf([
      ['uninitialized', 0],
      ['open', 1],
      ['sealing', 2],
      ['mismatch', 3],
      ['sealed', 4],
    ]),
  },
  {
    kind: 'definedTypeNode',
    name: 'modelConfig',
    docs: ["The model's configuration: header bytes 8..36 of its artifact."],
    type: struct(...['dim', 'hiddenDim', 'layers', 'heads', 'kvHeads', 'vocabSize', 'contextLength'].map((n) => field(n, u32))),
  },
]

const pdas = [
  {
    kind: 'pdaNode',
    name: 'model',
    docs: ['The model account: one per (authority, declared weights hash).'],
    seeds: [
      { kind: 'constantPdaSeedNode', type: { kind: 'stringTypeNode', encoding: 'utf8' }, value: { kind: 'stringValueNode', string: 'model' } },
      { kind: 'variablePdaSeedNode', name: 'authority', docs: [], type: pubkey },
      { kind: 'variablePdaSeedNode', name: 'weightsHash', docs: [], type: fixedBytes(32) },
    ],
  },
]

/** The errors of the program's CurtaError enum: `#[error("message")] Name = code,`. */
function errors() {
  const candidates = ['programs/curta-interface/src/error.rs']
  const path = candidates.map((p) => join(root, p)).find((p) => existsSync(p) && /enum CurtaError/.test(readFileSync(p, 'utf8')))
  if (!path) throw new Error(`no CurtaError enum in ${candidates.join(', ')}`)
  const source = readFileSync(path, 'utf8')
  const found = [...source.matchAll(/#\[error\("((?:[^"\\]|\\.)*)"\)\]\s*(\w+)\s*=\s*(\d+),/g)]
  const out = found.map(([, message, name, code]) => ({
    kind: 'errorNode',
    name: name[0].toLowerCase() + name.slice(1),
    code: Number(code),
    message: message.replace(/\\(.)/g, '$1'),
    docs: [],
  }))
  out.forEach((e, i) => {
    if (e.code !== i) throw new Error(`${path}: error ${e.name} has code ${e.code}, expected ${i} (codes are dense)`)
  })
  return out
}

const idl = {
  kind: 'rootNode',
  standard: 'codama',
  version: '1.0.0',
  program: {
    kind: 'programNode',
    name: 'curta',
    publicKey: PROGRAM_ID,
    version: readFileSync(join(root, 'Cargo.toml'), 'utf8').match(/\[workspace\.package\][^[]*?version = "([^"]+)"/)[1],
    docs: ['Curta: llama2.c-style int8 language models stored, sealed and run on Solana (docs/program.md).'],
    accounts: [modelAccount, weightAccount, runAccount],
    instructions,
    definedTypes,
    pdas,
    errors: errors(),
  },
  additionalPrograms: [],
}

const text = JSON.stringify(idl, null, 2) + '\n'
const out = join(root, 'idl', 'curta.json')
if (process.argv.includes('--check')) {
  const now = existsSync(out) ? readFileSync(out, 'utf8') : ''
  if (now !== text) {
    console.error('idl/curta.json is not what idl/generate.mjs writes: run node idl/generate.mjs')
    process.exit(1)
  }
} else {
  writeFileSync(out, text)
  console.log(`wrote ${out}: ${instructions.length} instructions, 3 accounts, ${idl.program.errors.length} errors`)
}
