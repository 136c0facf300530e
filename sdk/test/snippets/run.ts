import { readFile } from 'node:fs/promises'
import { Runner, decodeArtifact } from '@curta/sdk'
const artifact = decodeArtifact(new Uint8Array(await readFile('stories260K.curta')))
const runner = await Runner.create(artifact)   // curta-core's engine (WebAssembly), the model in it
for await (const token of runner.generate({ prompt: 'Once upon a time', steps: 32, temperature: 0 })) {
  process.stdout.write(token.text)             // each token as soon as it exists
}
console.log()
const { argmax, perplexity } = runner.score('Once upon a time')   // teacher forcing
console.log(argmax.join(' '), perplexity.toFixed(4))
