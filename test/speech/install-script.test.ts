import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { describe, it } from 'node:test';
import { missing } from './helpers.ts';

const script = 'scripts/install-debian-packages.sh';

describe('scripts/install-debian-packages.sh', () => {
  it('refuses an unknown argument without installing anything', () => {
    const run = spawnSync('bash', [script, '--bogus'], { encoding: 'utf8' });
    assert.equal(run.status, 2);
    assert.match(run.stderr, /unknown argument: --bogus/);
  });

  it('does not call apt when every package is already installed', { skip: missing('ffmpeg', 'pocketsphinx', 'librivox', 'codec2') }, () => {
    // PATH without apt-get or sudo: were the script to call them, it would fail.
    const run = spawnSync('/bin/bash', [script, '--test'], { encoding: 'utf8', env: { PATH: '/nonexistent' } });
    assert.equal(run.status, 0, run.stderr);
    assert.match(run.stdout, /already installed/);
  });
});
