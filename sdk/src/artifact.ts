/**
 * Reading an artifact in place: section zero's header, section table, matrix descriptors and
 * blocks, and the sections as views of the file. The checks are curta-core's own, `decode` and
 * `Metadata::parse` run in the embedded WebAssembly module (sdk/wasm): it returns the facts
 * shown here or the Rust error, whose variant, message and fields a CurtaFormatError carries.
 */

import { CurtaFormatError, formatError, indexError } from './errors.js'
import {
  type Config,
  CONFIG_FIELDS,
  EXP_TABLE_LEN,
  MAX_SECTION_LEN,
  MAX_SECTIONS,
  SILU_TABLE_LEN,
  TOKEN_ENTRY_LEN,
  MAX_TOKEN_LEN,
  matrixCount,
  matrixName,
  normLen,
  rotaryLen,
} from './layout.js'
import { Tokenizer } from './tokenizer.js'
import { instantiateNow, lastError, type Exports } from './wasm.js'

/** Entry i of the section table: 16 bytes at 128 + 16 × i. */
export interface SectionEntry {
  offset: number
  length: number
}

/** Descriptor i of the matrix table: 24 bytes at 512 + 24 × i. */
export interface MatrixDescriptor {
  index: number
  /** The spec's name: token embedding, classifier, query, ... */
  name: string
  /** The layer of a layer matrix, undefined for the embedding and the classifier. */
  layer: number | undefined
  section: number
  columns: number
  rows: number
  rowBytes: number
  /** Offset within its section, a multiple of eight. */
  offset: number
}

/** The offsets at header bytes 40 to 64, counted from the start of section zero. */
export interface BlockOffsets {
  norm: number
  rotary: number
  exp: number
  silu: number
  tokenEntries: number
  sortedIds: number
  tokenStrings: number
}

/** Tokenizer entry `id`: 16 bytes at the token entries' offset + 16 × id. */
export interface TokenEntry {
  scoreKey: number
  length: number
  offset: number
}

function view(bytes: Uint8Array): DataView {
  return new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength)
}

/** What curta-core's reader found in a section zero it accepted. */
export interface SectionZeroFacts {
  config: Config
  sectionTable: SectionEntry[]
  blocks: BlockOffsets
  matrices: MatrixDescriptor[]
  invSqrtHeadSize: number
}

/** An instance of the module that reads artifacts, and the room in its memory for the bytes. */
let reader: { x: Exports; ptr: number; cap: number } | undefined

/**
 * curta-core's checks of `bytes` in the module: `Metadata::parse` of a section zero, or with
 * `fileLength`, `decode_head` of a file's first bytes. Throws CurtaFormatError with the Rust
 * error's variant, message and fields.
 */
function readFacts(bytes: Uint8Array, fileLength?: number): SectionZeroFacts {
  if (!reader || bytes.length > reader.cap) {
    // A new instance for a longer read: the old one's memory goes with it.
    const x = instantiateNow()
    const cap = Math.max(bytes.length, 65_536)
    const ptr = x.curta_alloc(cap)
    if (ptr === 0) throw new RangeError(`the artifact reader cannot hold ${bytes.length} bytes`)
    reader = { x, ptr, cap }
  }
  const { x, ptr } = reader
  new Uint8Array(x.memory.buffer, ptr, bytes.length).set(bytes)
  const failed =
    fileLength === undefined ? x.curta_read_section_zero(ptr, bytes.length) : x.curta_read_artifact(ptr, bytes.length, BigInt(fileLength))
  if (failed < 0) {
    const e = lastError(x)
    throw new CurtaFormatError(e.code, e.message, e.details)
  }
  // The facts' words (sdk/wasm/src/lib.rs, FACTS_LEN): the configuration, the section count,
  // header byte 68, the block offsets, the section table, the descriptors.
  const w = new Uint32Array(x.memory.buffer, x.curta_facts(), 16 + 2 * MAX_SECTIONS + 5 * (2 + 7 * 16))
  const config = {} as Config
  CONFIG_FIELDS.forEach((key, i) => (config[key] = w[i]!))
  const sectionTable = Array.from({ length: w[7]! }, (_, i) => ({ offset: w[16 + 2 * i]!, length: w[17 + 2 * i]! }))
  const [norm, rotary, exp, silu, tokenEntries, sortedIds, tokenStrings] = w.subarray(9, 16)
  const matrices = Array.from({ length: matrixCount(config) }, (_, index): MatrixDescriptor => {
    const [section, columns, rows, rowBytes, offset] = w.subarray(16 + 2 * MAX_SECTIONS + 5 * index)
    const layer = index < 2 ? undefined : Math.floor((index - 2) / 7)
    return { index, name: matrixName(index), layer, section: section!, columns: columns!, rows: rows!, rowBytes: rowBytes!, offset: offset! }
  })
  const blocks = { norm: norm!, rotary: rotary!, exp: exp!, silu: silu!, tokenEntries: tokenEntries!, sortedIds: sortedIds!, tokenStrings: tokenStrings! }
  return { config, sectionTable, blocks, matrices, invSqrtHeadSize: w[8]! }
}

/** A checked view of section zero (curta-core's `Metadata`). */
export class SectionZero {
  readonly bytes: Uint8Array
  readonly config: Config
  readonly blocks: BlockOffsets
  readonly sectionCount: number
  /** The section table's entries, one per section. */
  readonly sectionTable: SectionEntry[]
  /** The matrix descriptors, 2 + 7 × layers of them, in tensor order. */
  readonly matrices: MatrixDescriptor[]
  /** Header byte 68: one over the square root of the head size, 24 fractional bits. */
  readonly invSqrtHeadSize: number
  private readonly view: DataView

  /**
   * Reads and checks section zero with curta-core's `Metadata::parse`: the tag, the
   * configuration's ranges, the section count and table, every block's place and alignment,
   * every matrix descriptor's shape, section, row length, alignment and bounds, header byte 68
   * and the exponential table. Throws CurtaFormatError. (`facts`: what the reader found for
   * these bytes, when it has read them already.)
   */
  constructor(bytes: Uint8Array, facts: SectionZeroFacts = readFacts(bytes)) {
    this.bytes = bytes
    this.view = view(bytes)
    this.config = facts.config
    this.sectionCount = facts.sectionTable.length
    this.sectionTable = facts.sectionTable
    this.blocks = facts.blocks
    this.matrices = facts.matrices
    this.invSqrtHeadSize = facts.invSqrtHeadSize
  }

  private word(block: number, len: number, i: number): number {
    if (!Number.isInteger(i) || i < 0 || i >= len) throw indexError('index', i, len)
    return this.view.getUint32(block + 4 * i, true)
  }

  /** Normalization coefficient `i` (24 fractional bits): per layer attention then feed-forward, then final. */
  norm(i: number): number {
    return this.word(this.blocks.norm, normLen(this.config), i) | 0
  }

  /** Rotary coefficient `i`: position × head size + 2j is the cosine, + 2j + 1 the sine. */
  rotary(i: number): number {
    return this.word(this.blocks.rotary, rotaryLen(this.config), i) | 0
  }

  /** e^(−i / 256) with 30 fractional bits, i in 0..=4096. */
  exp(i: number): number {
    return this.word(this.blocks.exp, EXP_TABLE_LEN, i)
  }

  /** SiLU(i / 128 − 16) with 16 fractional bits, i in 0..=4096. */
  silu(i: number): number {
    return this.word(this.blocks.silu, SILU_TABLE_LEN, i) | 0
  }

  /** Tokenizer entry `id`. Throws RangeError if `id` is not below the vocabulary. */
  tokenEntry(id: number): TokenEntry {
    const v = this.config.vocabSize
    if (!Number.isInteger(id) || id < 0 || id >= v) throw indexError('token', id, v)
    const at = this.blocks.tokenEntries + TOKEN_ENTRY_LEN * id
    return {
      scoreKey: this.view.getUint32(at, true),
      length: this.view.getUint32(at + 4, true),
      offset: this.view.getUint32(at + 8, true),
    }
  }

  /** The bytes of token `id` (a view), checked to lie in the token strings and within 128 bytes. */
  tokenBytes(id: number): Uint8Array {
    const { offset, length } = this.tokenEntry(id)
    const sectionLength = this.bytes.length
    const strings = this.blocks.tokenStrings
    if (length > MAX_TOKEN_LEN || offset < strings || offset + length > sectionLength)
      throw formatError.tokenOutOfBounds(id, offset, length, strings, sectionLength)
    return this.bytes.subarray(offset, offset + length)
  }

  /**
   * The bytes of token `id` as the tokenizer reads them, total (docs/format.md, D13): `tokenBytes`,
   * or no bytes for an entry outside the token strings or over 128 bytes, as curta-core's
   * `Metadata::token_text` (so the SDK's text of a sealed model's run is the chain's).
   */
  tokenText(id: number): Uint8Array {
    const { offset, length } = this.tokenEntry(id)
    if (length > MAX_TOKEN_LEN || offset < this.blocks.tokenStrings || offset + length > this.bytes.length)
      return new Uint8Array(0)
    return this.bytes.subarray(offset, offset + length)
  }

  /** Entry `i` of the sorted token ids, checked to be a token id. */
  sortedId(i: number): number {
    const v = this.config.vocabSize
    const id = this.word(this.blocks.sortedIds, v, i)
    if (id >= v) throw formatError.sortedIdOutOfRange(i, id, v)
    return id
  }
}

/** One matrix: its descriptor and the bytes of its rows inside its section (a view). */
export interface Matrix {
  descriptor: MatrixDescriptor
  bytes: Uint8Array
  /** Row `r`: its scale (24 fractional bits) and the stored weights, each the int8 weight + 128. */
  row(r: number): { scale: number; weights: Uint8Array }
}

/** A checked artifact: views of the file's bytes, nothing copied. */
export interface Artifact {
  /** The whole file. */
  bytes: Uint8Array
  config: Config
  /** The bytes of each section, the data of weight account i after its header (views). */
  sections: Uint8Array[]
  sectionTable: SectionEntry[]
  blocks: BlockOffsets
  matrices: MatrixDescriptor[]
  /** Header byte 68. */
  invSqrtHeadSize: number
  /** Section zero, read in place: the header's fields and the coefficient and table blocks. */
  sectionZero: SectionZero
  tokenizer: Tokenizer
  /** Matrix `i` in the spec's tensor order. */
  matrix(i: number): Matrix
}

/**
 * Checks the tag, the configuration, that the sections tile the file exactly from byte zero,
 * the section limits, every block's place and every descriptor's shape, alignment and bounds:
 * curta-core's `decode`, in the WebAssembly module, on the file's first bytes (section zero is
 * at most 10,483,712 of them). Throws CurtaFormatError naming the field and what was expected.
 */
export function decodeArtifact(file: Uint8Array): Artifact {
  if (!(file instanceof Uint8Array)) throw new TypeError('decodeArtifact takes the file as a Uint8Array')
  const facts = readFacts(file.subarray(0, MAX_SECTION_LEN), file.length)
  const zero = new SectionZero(file.subarray(0, facts.sectionTable[0]!.length), facts)
  const sections = zero.sectionTable.map((s) => file.subarray(s.offset, s.offset + s.length))
  const matrix = (i: number): Matrix => {
    const count = zero.matrices.length
    if (!Number.isInteger(i) || i < 0 || i >= count) throw indexError('matrix', i, count)
    const descriptor = zero.matrices[i]!
    const section = sections[descriptor.section]!
    const bytes = section.subarray(descriptor.offset, descriptor.offset + descriptor.rows * descriptor.rowBytes)
    const rows = view(bytes)
    return {
      descriptor,
      bytes,
      row(r: number) {
        if (!Number.isInteger(r) || r < 0 || r >= descriptor.rows) throw indexError('row', r, descriptor.rows)
        const at = r * descriptor.rowBytes
        return { scale: rows.getUint32(at, true), weights: bytes.subarray(at + 8, at + 8 + descriptor.columns) }
      },
    }
  }
  return {
    bytes: file,
    config: { ...zero.config },
    sections,
    sectionTable: zero.sectionTable,
    blocks: zero.blocks,
    matrices: zero.matrices,
    invSqrtHeadSize: zero.invSqrtHeadSize,
    sectionZero: zero,
    tokenizer: new Tokenizer(zero),
    matrix,
  }
}
