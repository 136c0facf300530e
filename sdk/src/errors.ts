/**
 * What can be wrong with an artifact or an account. Every error names the field or byte offset
 * and what was expected against what was found. A format error's `code` and message are those of
 * the Rust reader's `FormatError` variant (curta-core), so both readers say the same thing.
 */

/** Base class of every error the SDK throws about its input. */
export class CurtaError extends Error {
  /** A stable name for the kind of error, e.g. `FieldOutOfRange` or `NotAModel`. */
  readonly code: string
  /** The values the message is made of (fields, offsets, expected and found). */
  readonly details: Readonly<Record<string, string | number | bigint | boolean>>

  constructor(code: string, message: string, details: Record<string, string | number | bigint | boolean>) {
    super(message)
    this.name = 'CurtaError'
    this.code = code
    this.details = details
  }
}

/** An artifact (or its section zero) that does not follow the CURTAW01 format. */
export class CurtaFormatError extends CurtaError {
  // Spelled out: a minifier renames classes.
  override name = 'CurtaFormatError'
}

/** An account that is not what it should be: not the program's, not a model, another model's. */
export class CurtaAccountError extends CurtaError {
  override name = 'CurtaAccountError'
  /** The account's address, when known. */
  readonly address: string | undefined

  constructor(
    code: string,
    message: string,
    details: Record<string, string | number | bigint | boolean>,
    address?: string,
  ) {
    super(code, address === undefined ? message : `account ${address}: ${message}`, details)
    this.address = address
  }
}

type Num = number | bigint

/** Bytes as ASCII with escapes, as Rust's `core::ascii::escape_default` shows them. */
function escaped(bytes: Uint8Array): string {
  let out = ''
  for (const b of bytes) {
    if (b === 0x09) out += '\\t'
    else if (b === 0x0a) out += '\\n'
    else if (b === 0x0d) out += '\\r'
    else if (b === 0x22) out += '\\"'
    else if (b === 0x27) out += "\\'"
    else if (b === 0x5c) out += '\\\\'
    else if (b >= 0x20 && b < 0x7f) out += String.fromCharCode(b)
    else out += '\\x' + b.toString(16).padStart(2, '0')
  }
  return out
}

const hexByte = (b: number) => '0x' + b.toString(16).padStart(2, '0')

/** One constructor per variant of curta-core's `FormatError`, with its Display text. */
export const formatError = {
  truncated: (what: string, offset: Num, needed: Num, available: Num) =>
    new CurtaFormatError(
      'Truncated',
      `${what} is truncated: it needs ${needed} bytes at offset ${offset}, but only ${available} are there`,
      { what, offset, needed, available },
    ),
  badTag: (found: Uint8Array) =>
    new CurtaFormatError('BadTag', `wrong tag at byte 0: expected "CURTAW01", found "${escaped(found)}"`, {
      field: 'tag',
      expected: 'CURTAW01',
      found: escaped(found),
    }),
  fieldOutOfRange: (field: string, value: Num, min: Num, max: Num) =>
    new CurtaFormatError('FieldOutOfRange', `header field ${field} is ${value}, expected ${min} to ${max}`, {
      field,
      value,
      min,
      max,
    }),
  notADivisor: (field: string, value: number, of: string, ofValue: number) =>
    new CurtaFormatError(
      'NotADivisor',
      `header field ${field} is ${value}, which does not divide ${of} (${ofValue})`,
      { field, value, of, ofValue },
    ),
  headSize: (headSize: number) =>
    new CurtaFormatError(
      'HeadSize',
      `head size (dimension / heads) is ${headSize}, expected an even number up to 64`,
      { field: 'head size', headSize },
    ),
  sectionCount: (found: Num, expected: Num) =>
    new CurtaFormatError(
      'SectionCount',
      `header field section count (byte 36) is ${found}, but the configuration's layout has ${expected} sections`,
      { field: 'section count', found, expected },
    ),
  sectionOffset: (section: number, entry: number, found: Num, expected: Num) =>
    new CurtaFormatError(
      'SectionOffset',
      `section ${section} (section table byte ${entry}): offset is ${found}, expected ${expected} (where the previous section ends)`,
      { section, entry, found, expected },
    ),
  sectionLength: (section: number, entry: number, length: Num, min: Num, max: Num) =>
    new CurtaFormatError(
      'SectionLength',
      `section ${section} (section table byte ${entry}): length is ${length}, expected ${min} to ${max}`,
      { section, entry, length, min, max },
    ),
  fileLength: (sectionsEnd: Num, fileLength: Num) =>
    new CurtaFormatError(
      'FileLength',
      `the sections do not tile the file: the section table ends at byte ${sectionsEnd}, the file is ${fileLength} bytes`,
      { sectionsEnd, fileLength },
    ),
  sectionZeroLength: (found: Num, expected: Num) =>
    new CurtaFormatError(
      'SectionZeroLength',
      `section zero is ${found} bytes, but the section table (byte 136) says ${expected}`,
      { found, expected },
    ),
  blockOffset: (block: string, field: number, offset: Num, min: Num) =>
    new CurtaFormatError(
      'BlockOffset',
      `${block} (offset at header byte ${field}) starts at ${offset}, expected ${min} or later`,
      { block, field, offset, min },
    ),
  blockOverlap: (block: string, offset: Num, length: Num, limit: Num, next: string) =>
    new CurtaFormatError(
      'BlockOverlap',
      `${block} (${length} bytes at offset ${offset}) runs past ${limit}, where ${next} begins`,
      { block, offset, length, limit, next },
    ),
  descriptor: (index: number, name: string, at: number, field: string, found: Num, expected: Num) =>
    new CurtaFormatError(
      'Descriptor',
      `matrix descriptor ${index} (${name}, at byte ${at}): ${field} is ${found}, expected ${expected}`,
      { index, name, at, field, found, expected },
    ),
  invSqrtHeadSize: (found: number, expected: number) =>
    new CurtaFormatError(
      'InvSqrtHeadSize',
      `header byte 68 (one over the square root of the head size) is ${found}, expected ${expected}`,
      { field: 'one over the square root of the head size', found, expected },
    ),
  misaligned: (index: number, name: string, offset: Num) =>
    new CurtaFormatError('Misaligned', `matrix descriptor ${index} (${name}): offset ${offset} is not a multiple of eight`, {
      index,
      name,
      offset,
    }),
  descriptorOutOfBounds: (index: number, name: string, section: number, offset: Num, end: Num, sectionLength: Num) =>
    new CurtaFormatError(
      'DescriptorOutOfBounds',
      `matrix descriptor ${index} (${name}): bytes ${offset}..${end} are out of bounds of section ${section} (${sectionLength} bytes)`,
      { index, name, section, offset, end, sectionLength },
    ),
  tokenOutOfBounds: (id: number, offset: Num, length: Num, strings: Num, sectionLength: Num) =>
    new CurtaFormatError(
      'TokenOutOfBounds',
      `token ${id}: ${length} bytes at offset ${offset} are not inside the token strings (bytes ${strings}..${sectionLength} of section zero) or are over 128`,
      { id, offset, length, strings, sectionLength },
    ),
  sortedIdOutOfRange: (index: number, id: number, vocabSize: number) =>
    new CurtaFormatError(
      'SortedIdOutOfRange',
      `sorted token id ${index} is ${id}, expected a token id below the vocabulary (${vocabSize})`,
      { index, id, vocabSize },
    ),
  reservedNotZero: (offset: number, found: number) =>
    new CurtaFormatError(
      'ReservedNotZero',
      `header byte ${offset} is ${hexByte(found)}, expected zero (bytes the header's tables leave out are zero)`,
      { offset, found },
    ),
}

/** An index past a count: a caller's mistake, not bad input. */
export function indexError(what: string, index: number, count: number): RangeError {
  return new RangeError(`${what} ${index} of ${count}`)
}
