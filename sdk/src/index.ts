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
// The program's instruction builders, account codecs, defined types, model PDA and error codes,
// rendered from idl/curta.json by Codama (src/generated/; docs/idl.md).
export * from './generated/index.js'
export { decodeModelAccount, decodeWeightHeader, WEIGHT_HEADER_LEN, LAYOUT_VERSION } from './accounts.js'
export type { ModelAccount, ModelStateName, WeightHeader } from './accounts.js'
export { CURTA_PROGRAM_ID, modelAddress, weightSeed, weightAddress, fetchModel, verifyModel } from './chain.js'
export type { VerifyOptions, VerifyProgress, VerifyResult } from './chain.js'
export { Runner, CurtaRunError, negLogLikelihood, engineModule, engineBytes } from './run.js'
export type { GenerateOptions, GeneratedToken, Generation, Progress, Scores } from './run.js'
export { MAX_WRITE_BYTES, MAX_STEP_BUDGET, SEED_SOURCES, programError, promptArgs, seedSourceCode, sealInstruction } from './program.js'
export type { RunPrompt, SeedSourceName } from './program.js'
export {
  RUN_HEADER_LEN,
  RUN_VERSION,
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
} from './run-account.js'
export type { RunAccount, RunStatus } from './run-account.js'
export { fetchRun, runTrust } from './trust.js'
export type { RunRule, RunTrust } from './trust.js'
export { SYSTEM_PROGRAM_ID, computeUnitLimitInstruction, createAccountWithSeedInstruction, CurtaTransactionError, sendInstructions } from './send.js'
export type { RunRpc, SendOptions } from './send.js'
export { startRun, stepRun, closeRun, watchRun } from './runs.js'
export type { RunUpdate, StartRunOptions, StepRunOptions } from './runs.js'
export {
  CLAIM_FIELD,
  CLAIM_HEADER_LEN,
  CLAIM_STATES,
  CLAIM_VERSION,
  MAX_WINDOW,
  MIN_WINDOW,
  claimAccountLength,
  claimAddress,
  claimDrawnSeed,
  claimSeed,
  claimSeedInForce,
  claimSettled,
  decodeClaim,
  promptWireBytes,
  readPromptWire,
} from './claim-account.js'
export type { ClaimAccount, ClaimStateName } from './claim-account.js'
export {
  BASE_FEE,
  DISPUTE_EXTRA_TRANSACTIONS,
  MAX_PRIORITY_PRICE,
  STEP_UNITS,
  claimBond,
  disputeTransactions,
  encodeTransactionsBound,
  promptTokensBound,
  runTransactionsBound,
  runUnits,
} from './claim-cost.js'
export type { RunUnits } from './claim-cost.js'
export {
  SLOT_HASHES_ID,
  answerClaim,
  claimComputeUnits,
  challengeClaim,
  closeClaim,
  fetchClaim,
  listClaims,
  openClaim,
  resolveClaim,
  slotHash,
  verifyClaim,
  watchClaims,
} from './claims.js'
export type { ClaimEngine, ClaimEvent, ClaimVerification, ClaimsRpc, OpenClaimOptions } from './claims.js'
export { answerHash, claimAnswer } from './claim-answer.js'
export type { ClaimAnswer, ClaimTerms } from './claim-answer.js'
export { claimTrust } from './claim-trust.js'
export type { ClaimRule, ClaimTrust } from './claim-trust.js'
