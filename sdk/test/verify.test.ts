// verifyModel against a JSON-RPC node serving the accounts the real program wrote
// (golden/chain.json + the stories260K sections), through @solana/kit's RPC client.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { address, createSolanaRpc } from '@solana/kit'
import { CurtaAccountError, fetchModel, verifyModel, type VerifyProgress } from '../src/index.js'
import { chainFixture, startMockRpc, type RecordedAccount } from './support/mock-rpc.js'
import { hex } from './support/files.js'

const fx = chainFixture()
const program = address(fx.programId)
const model = address(fx.model)

async function withRpc<T>(accounts: Map<string, RecordedAccount>, fn: (rpc: ReturnType<typeof createSolanaRpc>, requests: { method: string; params: unknown[] }[]) => Promise<T>) {
  const node = await startMockRpc(accounts)
  try {
    return await fn(createSolanaRpc(node.url), node.requests)
  } finally {
    await node.close()
  }
}

/** The accounts with one changed. */
function changed(at: string, change: (a: RecordedAccount) => RecordedAccount): Map<string, RecordedAccount> {
  const out = new Map(fx.accounts)
  out.set(at, change({ ...fx.accounts.get(at)!, data: fx.accounts.get(at)!.data.slice() }))
  return out
}

async function rejects(accounts: Map<string, RecordedAccount>, code: string, message: RegExp, at: string = model) {
  await withRpc(accounts, async (rpc) => {
    await assert.rejects(verifyModel(rpc, address(at), { programId: program }), (e: unknown) => {
      assert.ok(e instanceof CurtaAccountError, String(e))
      assert.equal(e.code, code)
      assert.match(e.message, message)
      return true
    })
  })
}

test('a sealed model verifies: its weight accounts chain to the declared hash, with progress', async () => {
  await withRpc(fx.accounts, async (rpc, requests) => {
    const events: VerifyProgress[] = []
    const r = await verifyModel(rpc, model, { programId: program, onProgress: (p) => events.push(p), keepSections: true })
    assert.equal(r.ok, true)
    assert.equal(hex(r.computedHash), fx.weightsHash)
    assert.equal(hex(r.declaredHash), fx.weightsHash)
    assert.deepEqual(r.weights.map((w) => w.address), fx.weights)
    assert.deepEqual(r.sections!.map((s) => s.length), [68_512, 288_704])
    // Two header checks, then one event per 1 MiB slice: both sections fit one slice each.
    assert.deepEqual(
      events.map((e) => [e.phase, e.section, e.bytesDone]),
      [['header', 0, 0], ['header', 1, 0], ['bytes', 0, 68_512], ['bytes', 1, 357_216]],
    )
    assert.ok(events.every((e) => e.bytesTotal === 357_216 && e.sectionCount === 2))
    // The model, two headers, two sections.
    assert.equal(requests.length, 5)
    assert.deepEqual(requests[3]!.params[1], { encoding: 'base64', commitment: 'confirmed', dataSlice: { offset: 2048, length: 68_512 } })
  })
})

test('slices of 65,536 bytes: one request and one progress event per chunk', async () => {
  await withRpc(fx.accounts, async (rpc, requests) => {
    const done: number[] = []
    const r = await verifyModel(rpc, model, { programId: program, sliceBytes: 65_536, onProgress: (p) => p.phase === 'bytes' && done.push(p.bytesDone) })
    assert.equal(r.ok, true)
    assert.deepEqual(done, [65_536, 68_512, 68_512 + 65_536, 68_512 + 2 * 65_536, 68_512 + 3 * 65_536, 68_512 + 4 * 65_536, 357_216])
    assert.equal(requests.length, 1 + 2 + 7)
  })
  await withRpc(fx.accounts, async (rpc) => {
    await assert.rejects(verifyModel(rpc, model, { sliceBytes: 1000 }), RangeError)
  })
})

test('a byte changed in a weight account (an RPC serving other bytes) is ok: false with both hashes', async () => {
  const accounts = changed(fx.weights[1]!, (a) => {
    a.data[2048 + 100_000] ^= 1
    return a
  })
  await withRpc(accounts, async (rpc) => {
    const r = await verifyModel(rpc, model, { programId: program })
    assert.equal(r.ok, false)
    assert.notEqual(hex(r.computedHash), fx.weightsHash)
    assert.equal(hex(r.declaredHash), fx.weightsHash)
  })
})

test('fetchModel reads each recorded state', async () => {
  for (const [key, state] of [['open', 'Open'], ['sealing', 'Sealing'], ['sealed', 'Sealed']] as const) {
    await withRpc(changed(fx.model, () => fx.states[key]), async (rpc) => {
      assert.equal((await fetchModel(rpc, model, program)).state, state)
    })
  }
})

test('an unsealed model is not verified: NotSealed names the state', async () => {
  await rejects(changed(fx.model, () => fx.states.open), 'NotSealed', /the model is Open, expected Sealed/)
  await rejects(changed(fx.model, () => fx.states.sealing), 'NotSealed', /is Sealing/)
  await rejects(fx.accounts, 'NotSealed', /is Mismatch/, fx.mismatchModel)
})

test('accounts that are missing, or not the program’s, or not where their address binds them', async () => {
  await rejects(new Map(), 'AccountNotFound', /no model account at this address/)
  const stranger = '11111111111111111111111111111111'
  await rejects(changed(fx.model, (a) => ({ ...a, owner: stranger })), 'WrongOwner', new RegExp(`model account owned by ${stranger}, expected the program ${fx.programId}`))
  await rejects(changed(fx.weights[0]!, (a) => ({ ...a, owner: stranger })), 'WrongOwner', new RegExp(`^account ${fx.weights[0]}: weight account owned by`))
  const gone = new Map(fx.accounts)
  gone.delete(fx.weights[1]!)
  await rejects(gone, 'AccountNotFound', /no weight account/)
  // The sealed model's bytes planted at another address: not the PDA of its seeds.
  const planted = new Map(fx.accounts)
  planted.set(fx.mismatchModel, fx.accounts.get(fx.model)!)
  await rejects(planted, 'ModelAddressMismatch', new RegExp(`not the model PDA .*: that is ${fx.model}`), fx.mismatchModel)
})

test('weight headers that do not match the model', async () => {
  const header = (section: number, at: number, value: number) =>
    changed(fx.weights[section]!, (a) => {
      a.data[at] = value
      return a
    })
  await rejects(header(1, 9, 0), 'WrongWeightHeader', /weight header field frozen is false, expected true/)
  await rejects(header(1, 10, 0), 'WrongSection', /weight header field section is 0, expected 1/)
  await rejects(header(0, 16, 0), 'WrongModel', /weight header field model is .*, expected /)
  await rejects(header(0, 48, 0), 'WrongWeightHeader', /field authority/)
  await rejects(header(0, 0, 0), 'NotInitialized', /magic/)
  // The account's data one byte longer than 2,048 + the section length.
  const longer = changed(fx.weights[0]!, (a) => {
    const data = new Uint8Array(a.data.length + 1)
    data.set(a.data)
    return { ...a, data }
  })
  await rejects(longer, 'NotInitialized', /data length is 70561 bytes, expected 2048 \+ the section length 68512 = 70560 bytes/)
  // The model recording another account for section 1.
  const recorded = changed(fx.model, (a) => {
    a.data[232 + 32 + 5] ^= 1
    return a
  })
  await rejects(recorded, 'WeightAddressMismatch', /section 1: the model records weight account \w+, expected /)
})
