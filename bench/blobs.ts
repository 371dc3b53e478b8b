// The blob port's cost against the floor it stands on: a 25 MB recording stored with `put` (streamed
// in 64 KiB chunks as an upload arrives, hashed, fsynced, renamed, directory fsynced) beside the same
// bytes written with one writeFile + fsync; and read back with `get` beside readFile.
// Run: npm run bench:blobs [-- --mb 25 --rounds 8]

import { randomBytes } from 'node:crypto';
import { mkdtemp, open, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { openFsBlobs } from '../src/blobs/fs.ts';

const { values } = parseArgs({ options: { mb: { type: 'string', default: '25' }, rounds: { type: 'string', default: '8' } } });
const size = Number(values.mb) * 1024 * 1024;
const rounds = Number(values.rounds);
const data = randomBytes(size);
const dir = await mkdtemp(join(tmpdir(), 'bench-blobs-'));
const blobs = await openFsBlobs(dir);

async function* chunks(): AsyncGenerator<Uint8Array> {
  for (let off = 0; off < size; off += 64 * 1024) yield data.subarray(off, off + 64 * 1024);
}

async function floorWrite(i: number): Promise<void> {
  const f = await open(join(dir, `floor-${i}`), 'w');
  await f.writeFile(data);
  await f.sync();
  await f.close();
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
const time = async (fn: () => Promise<unknown>) => {
  const t = performance.now();
  await fn();
  return performance.now() - t;
};

const put: number[] = [];
const floor: number[] = [];
const get: number[] = [];
const read: number[] = [];
for (let i = 0; i < rounds; i++) {
  // Alternate, so a slow moment of the disk falls on both.
  floor.push(await time(() => floorWrite(i)));
  put.push(await time(() => blobs.put(`bench/r${i}`, chunks())));
  read.push(await time(() => readFile(join(dir, `floor-${i}`))));
  get.push(
    await time(async () => {
      const s = await blobs.get(`bench/r${i}`);
      for await (const _ of s!) void _;
    }),
  );
}
const mb = size / 1024 / 1024;
console.log(
  `blob put ${mb} MB: median ${median(put).toFixed(1)} ms (${(mb / (median(put) / 1000)).toFixed(0)} MB/s); floor writeFile+fsync ${median(floor).toFixed(1)} ms; ratio ${(median(put) / median(floor)).toFixed(2)}`,
);
console.log(
  `blob get ${mb} MB: median ${median(get).toFixed(1)} ms; floor readFile ${median(read).toFixed(1)} ms; ratio ${(median(get) / median(read)).toFixed(2)}`,
);
await rm(dir, { recursive: true, force: true });
