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

/**
 * The variants of curta-core's `FormatError` that the SDK's own readers raise (the
 * configuration's ranges, a token entry or sorted id read on access), with their Display text;
 * the artifact's reader (artifact.ts) throws the Rust error itself.
 */
export const formatError = {
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
}

/** An index past a count: a caller's mistake, not bad input. */
export function indexError(what: string, index: number, count: number): RangeError {
  return new RangeError(`${what} ${index} of ${count}`)
}
