/**
 * @curta/sdk: read, hash and verify Curta models (the CURTAW01 weight format) from JavaScript,
 * in Node 20+ and in browsers.
 */

export { decodeArtifact, SectionZero } from './artifact.js'
export type { Artifact, BlockOffsets, Matrix, MatrixDescriptor, SectionEntry, TokenEntry } from './artifact.js'
export { Tokenizer, BOS, EOS, BYTE_TOKEN_BASE } from './tokenizer.js'
export type { EncodeOptions } from './tokenizer.js'
export { weightsCommitment, WeightsHasher, chunkCount, totalChunks, toHex, fromHex } from './hash.js'
export type { HashOptions, HashProgress } from './hash.js'
export { CurtaError, CurtaFormatError, CurtaAccountError } from './errors.js'
export * from './layout.js'
export {
  decodeModelAccount,
  decodeWeightHeader,
  MODEL_LEN,
  WEIGHT_HEADER_LEN,
  MODEL_MAGIC,
  WEIGHT_MAGIC,
  MODEL_SEED,
  MODEL_FIELD,
  WEIGHT_FIELD,
} from './accounts.js'
export type { ModelAccount, ModelState, WeightHeader } from './accounts.js'
export { CURTA_PROGRAM_ID, modelAddress, weightSeed, weightAddress, fetchModel, verifyModel } from './chain.js'
export type { VerifyOptions, VerifyProgress, VerifyResult } from './chain.js'
export { Runner, CurtaRunError, negLogLikelihood, engineModule, engineBytes } from './run.js'
export type { GenerateOptions, GeneratedToken, Generation, Progress, Scores } from './run.js'
export {
  TAG,
  SEED_SOURCES,
  SLOT_HASHES_SYSVAR,
  SYSTEM_PROGRAM_ID,
  MAX_WRITE_BYTES,
  MAX_STEP_BUDGET,
  PROGRAM_ERRORS,
  programError,
  createModelInstruction,
  initWeightAccountInstruction,
  writeInstruction,
  sealInstruction,
  reopenInstruction,
  closeInstruction,
  startRunInstruction,
  stepInstruction,
  closeRunInstruction,
} from './program.js'
export type { AccountInput, ProgramOption, RunPrompt, SeedSource, StartRunArgs } from './program.js'
export {
  RUN_HEADER_LEN,
  RUN_MAGIC,
  RUN_VERSION,
  RUN_FIELD,
  STATE_FIELD,
  STATE_HEADER_LEN,
  TEXT_PER_STEP,
  stateLength,
  runAccountLength,
  runSeed,
  runAddress,
  decodeRunAccount,
  completeUtf8,
  drawnSeed,
  fetchRun,
  runTrust,
  computeUnitLimitInstruction,
  createAccountWithSeedInstruction,
  CurtaTransactionError,
  sendInstructions,
  startRun,
  stepRun,
  closeRun,
  watchRun,
} from './runs.js'
export type { RunAccount, RunRule, RunStatus, RunTrust, RunRpc, RunUpdate, SendOptions, StartRunOptions, StepRunOptions } from './runs.js'
