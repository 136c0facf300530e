/**
 * Reading an artifact in place: section zero's header, section table, matrix descriptors and
 * blocks, and the sections as views of the file. The checks are those of curta-core's
 * `Metadata::parse` and `decode`, in the same order, with the same errors.
 */

import { formatError, indexError } from './errors.js'
import {
  type Config,
  CONFIG_FIELDS,
  DESCRIPTOR_LEN,
  EXP_TABLE_LEN,
  FIELD,
  HEADER_LEN,
  MATRIX_TABLE_OFFSET,
  MAX_SECTION_LEN,
  MAX_SECTIONS,
  MIN_SECTIONS,
  SECTION_ENTRY_LEN,
  SECTION_TABLE_OFFSET,
  SILU_TABLE_LEN,
  TAG,
  TOKEN_ENTRY_LEN,
  MAX_TOKEN_LEN,
  headSize,
  invSqrtHeadSize,
  matrixCount,
  matrixName,
  matrixSection,
  matrixShape,
  normLen,
  rotaryLen,
  rowLength,
  sectionCount,
  validateConfig,
} from './layout.js'
import { Tokenizer } from './tokenizer.js'

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

const TAG_BYTES = new TextEncoder().encode(TAG)

function view(bytes: Uint8Array): DataView {
  return new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength)
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
   * Reads and checks section zero: the tag, the configuration's ranges, the section count and
   * table, that every block lies past the header and inside section zero in the spec's order,
   * and that every matrix descriptor has its configuration's shape, its layout's section, a row
   * length, an aligned offset and lies inside its section. Throws CurtaFormatError.
   */
  constructor(bytes: Uint8Array) {
    if (bytes.length < HEADER_LEN) throw formatError.truncated("section zero's header", 0, HEADER_LEN, bytes.length)
    const tag = bytes.subarray(0, 8)
    if (!tag.every((b, i) => b === TAG_BYTES[i])) throw formatError.badTag(tag)
    this.bytes = bytes
    this.view = view(bytes)
    const u32 = (at: number) => this.view.getUint32(at, true)
    const config = {} as Config
    CONFIG_FIELDS.forEach((key, i) => (config[key] = u32(FIELD.dim + 4 * i)))
    validateConfig(config)
    this.config = config

    const count = u32(FIELD.sectionCount)
    if (count < MIN_SECTIONS || count > MAX_SECTIONS)
      throw formatError.fieldOutOfRange('section count', count, MIN_SECTIONS, MAX_SECTIONS)
    if (count !== sectionCount(config)) throw formatError.sectionCount(count, sectionCount(config))
    this.sectionCount = count
    this.blocks = {
      norm: u32(FIELD.norm),
      rotary: u32(FIELD.rotary),
      exp: u32(FIELD.exp),
      silu: u32(FIELD.silu),
      tokenEntries: u32(FIELD.tokenEntries),
      sortedIds: u32(FIELD.sortedIds),
      tokenStrings: u32(FIELD.tokenStrings),
    }
    this.checkReservedZero()
    this.sectionTable = this.checkSections()
    this.checkBlocks()
    this.matrices = this.checkDescriptors()
    this.invSqrtHeadSize = u32(FIELD.invSqrtHeadSize)
    const expected = invSqrtHeadSize(headSize(config))
    if (this.invSqrtHeadSize !== expected) throw formatError.invSqrtHeadSize(this.invSqrtHeadSize, expected)
  }

  /** D9: header bytes the tables leave out are zero: 72..128, past the section and matrix tables. */
  private checkReservedZero(): void {
    const sectionsEnd = SECTION_TABLE_OFFSET + SECTION_ENTRY_LEN * this.sectionCount
    const matricesEnd = MATRIX_TABLE_OFFSET + DESCRIPTOR_LEN * matrixCount(this.config)
    const reserved: [number, number][] = [
      [FIELD.invSqrtHeadSize + 4, SECTION_TABLE_OFFSET],
      [sectionsEnd, MATRIX_TABLE_OFFSET],
      [matricesEnd, HEADER_LEN],
    ]
    for (const [start, end] of reserved) {
      for (let at = start; at < end; at++) {
        if (this.bytes[at] !== 0) throw formatError.reservedNotZero(at, this.bytes[at]!)
      }
    }
  }

  /** Section zero starts at zero, each section where the one before ends, 1 to 10,483,712 bytes. */
  private checkSections(): SectionEntry[] {
    const table: SectionEntry[] = []
    let expectedOffset = 0n
    for (let i = 0; i < this.sectionCount; i++) {
      const entry = SECTION_TABLE_OFFSET + SECTION_ENTRY_LEN * i
      const offset = this.view.getBigUint64(entry, true)
      const length = this.view.getBigUint64(entry + 8, true)
      if (offset !== expectedOffset) throw formatError.sectionOffset(i, entry, offset, expectedOffset)
      const min = i === 0 ? HEADER_LEN : 1
      if (length < BigInt(min) || length > BigInt(MAX_SECTION_LEN))
        throw formatError.sectionLength(i, entry + 8, length, min, MAX_SECTION_LEN)
      table.push({ offset: Number(offset), length: Number(length) })
      expectedOffset += length
    }
    const zero = table[0]!.length
    if (zero !== this.bytes.length) throw formatError.sectionZeroLength(this.bytes.length, zero)
    return table
  }

  /** Each block past the header, in the spec's order, none running into the next. */
  private checkBlocks(): void {
    const c = this.config
    const b = this.blocks
    const v = c.vocabSize
    const blocks: [string, number, number, number][] = [
      ['normalization coefficients', FIELD.norm, b.norm, 4 * normLen(c)],
      ['rotary coefficients', FIELD.rotary, b.rotary, 4 * rotaryLen(c)],
      ['exponential table', FIELD.exp, b.exp, 4 * EXP_TABLE_LEN],
      ['SiLU table', FIELD.silu, b.silu, 4 * SILU_TABLE_LEN],
      ['tokenizer entries', FIELD.tokenEntries, b.tokenEntries, TOKEN_ENTRY_LEN * v],
      ['sorted token ids', FIELD.sortedIds, b.sortedIds, 4 * v],
      ['token strings', FIELD.tokenStrings, b.tokenStrings, 0],
    ]
    let min = HEADER_LEN
    blocks.forEach(([block, field, offset, length], i) => {
      if (offset < min) throw formatError.blockOffset(block, field, offset, min)
      const next = blocks[i + 1]
      const limit = Math.min(next ? next[2] : this.bytes.length, this.bytes.length)
      if (offset + length > limit)
        throw formatError.blockOverlap(block, offset, length, limit, next ? next[0] : 'the end of section zero')
      min = offset + length
    })
  }

  /** Every descriptor: its index's shape, its layout's section, its row length, aligned, in bounds. */
  private checkDescriptors(): MatrixDescriptor[] {
    const c = this.config
    const out: MatrixDescriptor[] = []
    for (let index = 0; index < matrixCount(c); index++) {
      const at = MATRIX_TABLE_OFFSET + DESCRIPTOR_LEN * index
      const name = matrixName(index)
      const u32 = (o: number) => this.view.getUint32(at + o, true)
      const [rows, columns] = matrixShape(c, index)
      const found = { section: u32(0), columns: u32(4), rows: u32(8), rowBytes: u32(12) }
      const checks: [string, number, number, number][] = [
        ['section', at, found.section, matrixSection(c, index)],
        ['columns', at + 4, found.columns, columns],
        ['rows', at + 8, found.rows, rows],
        ['row length', at + 12, found.rowBytes, rowLength(columns)],
      ]
      for (const [field, fieldAt, value, expected] of checks) {
        if (value !== expected) throw formatError.descriptor(index, name, fieldAt, field, value, expected)
      }
      const offset = this.view.getBigUint64(at + 16, true)
      if (offset % 8n !== 0n) throw formatError.misaligned(index, name, offset)
      const sectionLength = this.sectionTable[found.section]!.length
      const len = BigInt(found.rows) * BigInt(found.rowBytes)
      const end = offset + len > 0xffff_ffff_ffff_ffffn ? 0xffff_ffff_ffff_ffffn : offset + len
      if (end > BigInt(sectionLength))
        throw formatError.descriptorOutOfBounds(index, name, found.section, offset, end, sectionLength)
      out.push({
        index,
        name,
        layer: index < 2 ? undefined : Math.floor((index - 2) / 7),
        ...found,
        offset: Number(offset),
      })
    }
    return out
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
 * the section limits, every block's place and every descriptor's shape, alignment and bounds
 * (curta-core's `decode`). Throws CurtaFormatError naming the field and what was expected.
 */
export function decodeArtifact(file: Uint8Array): Artifact {
  if (!(file instanceof Uint8Array)) throw new TypeError('decodeArtifact takes the file as a Uint8Array')
  if (file.length < HEADER_LEN) throw formatError.truncated("the artifact's header", 0, HEADER_LEN, file.length)
  const v = view(file)
  // Section zero's length is the second word of section table entry 0; the metadata checks the
  // whole table against it.
  const zeroLength = v.getBigUint64(136, true)
  const tagged = TAG_BYTES.every((b, i) => file[i] === b)
  if (tagged && zeroLength > BigInt(file.length))
    throw formatError.truncated('section zero', 0, zeroLength, file.length)
  const zeroEnd = Math.min(Math.max(Number(zeroLength), HEADER_LEN), file.length)
  const zero = new SectionZero(file.subarray(0, zeroEnd))
  const last = zero.sectionTable[zero.sectionCount - 1]!
  const sectionsEnd = last.offset + last.length
  if (sectionsEnd !== file.length) throw formatError.fileLength(sectionsEnd, file.length)
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
