import { readFile } from 'node:fs/promises'
import { decodeArtifact } from '@curta/sdk'
const bytes = new Uint8Array(await readFile('stories260K.curta'))
const { config, sections } = decodeArtifact(bytes)
console.log(config) // dim, hiddenDim, layers, heads, kvHeads, vocabSize, contextLength
console.log(sections.map((s) => s.length)) // one length per weight account
// Matrix descriptor i is 24 bytes at 512 + 24 × i of section zero.
const view = new DataView(sections[0].buffer, sections[0].byteOffset)
const matrix = (i: number) => ({
section: view.getUint32(512 + 24 * i, true),
columns: view.getUint32(516 + 24 * i, true),
rows: view.getUint32(520 + 24 * i, true),
rowBytes: view.getUint32(524 + 24 * i, true),
offset: Number(view.getBigUint64(528 + 24 * i, true)),
})
console.log(matrix(0)) // the embedding
