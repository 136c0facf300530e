import { readFile } from 'node:fs/promises'
import { decodeArtifact, weightsCommitment } from '@curta/sdk'
const artifact = decodeArtifact(new Uint8Array(await readFile('stories260K.curta')))
const hash = await weightsCommitment(artifact.sections)
console.log(Buffer.from(hash).toString('hex'))
