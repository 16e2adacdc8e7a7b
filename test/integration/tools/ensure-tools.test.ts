import { execFile } from 'node:child_process';
import { chmod, mkdtemp, readFile, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';

const run = promisify(execFile);
const script = resolve('scripts/ensure-tools.sh');

/**
 * scripts/ensure-tools.sh on a PATH that holds only the basics and stand-ins for apt-get and sudo:
 * the stand-ins write each call to a log, so a test sees whether anything was installed, and what.
 */
describe('scripts/ensure-tools.sh', () => {
  let bin: string;
  let log: string;

  beforeEach(async () => {
    bin = await mkdtemp(join(tmpdir(), 'ensure-tools-'));
    log = join(bin, 'calls.log');
    for (const tool of ['bash', 'grep', 'sed', 'dirname', 'cat']) await symlink(`/usr/bin/${tool}`, join(bin, tool)).catch(() => undefined);
    // apt-get "installs" redis-server by putting a program of that name on the PATH.
    await writeFile(
      join(bin, 'apt-get'),
      `#!/bin/bash\necho "apt-get $*" >> ${log}\nif [ "$1" = install ]; then printf '#!/bin/bash\\n' > ${bin}/redis-server; /bin/chmod +x ${bin}/redis-server; fi\n`,
    );
    await writeFile(join(bin, 'sudo'), `#!/bin/bash\n[ "$1" = -n ] && shift\necho "sudo $*" >> ${log}\nexec "$@"\n`);
    await chmod(join(bin, 'apt-get'), 0o755);
    await chmod(join(bin, 'sudo'), 0o755);
  });
  afterEach(async () => {
    await rm(bin, { recursive: true, force: true });
  });

  const calls = (): Promise<string[]> =>
    readFile(log, 'utf8').then(
      (t) => t.trim().split('\n'),
      () => [],
    );
  const ensure = (purpose: string, env: Record<string, string>) =>
    run('/bin/bash', [script, purpose], { env: { PATH: bin, ...env } }).then(
      ({ stdout, stderr }) => ({ code: 0, stdout, stderr }),
      (error: { code: number; stdout: string; stderr: string }) => ({ code: error.code, stdout: error.stdout, stderr: error.stderr }),
    );

  it('with installing disabled, stops at once naming the one command that installs what the demo lacks', async () => {
    const result = await ensure('demo', { TOOLS_INSTALL: 'never' });

    expect(result.code).toBe(1);
    const runLines = result.stderr.split('\n').filter((l) => l.startsWith('run: '));
    expect(runLines).toHaveLength(1);
    expect(runLines[0]).toMatch(/^run: (sudo )?apt-get install -y redis-server$/);
    expect(await calls()).toEqual([]);
  });

  it('for the tests, names every missing tool and one command that installs them all, kustomize included', async () => {
    const result = await ensure('test', { TOOLS_INSTALL: 'never' });

    expect(result.code).toBe(1);
    expect(result.stderr).toContain('missing for the test: redis-server promtool kustomize openssl etcd etcdctl chromium');
    const runLines = result.stderr.split('\n').filter((l) => l.startsWith('run: '));
    expect(runLines).toEqual([expect.stringMatching(/^run: (sudo )?bash scripts\/ensure-tools\.sh test$/)]);
    expect(await calls()).toEqual([]);
  });

  it('names the Debian packages that bring etcd and etcdctl, whose names differ from the programs, and chromium', async () => {
    for (const tool of ['redis-server', 'promtool', 'openssl']) {
      await writeFile(join(bin, tool), '#!/bin/bash\n');
      await chmod(join(bin, tool), 0o755);
    }
    // A kustomize v5 as .ci/install-kustomize --check recognises it.
    await writeFile(join(bin, 'kustomize'), '#!/bin/bash\necho v5.4.3\n');
    await chmod(join(bin, 'kustomize'), 0o755);

    const result = await ensure('test', { TOOLS_INSTALL: 'never' });

    expect(result.code).toBe(1);
    expect(result.stderr).toContain('missing for the test: etcd etcdctl chromium');
    const runLines = result.stderr.split('\n').filter((l) => l.startsWith('run: '));
    expect(runLines).toEqual([expect.stringMatching(/^run: (sudo )?apt-get install -y etcd-server etcd-client chromium$/)]);
    expect(await calls()).toEqual([]);
  });

  it('installs what is missing through apt-get, then finds it on the PATH', async () => {
    const result = await ensure('demo', {});

    expect(result.code).toBe(0);
    const installs = (await calls()).filter((c) => c.startsWith('apt-get install'));
    expect(installs).toEqual(['apt-get install -y -qq --no-install-recommends redis-server']);
  });

  it('installs nothing when every tool is there', async () => {
    await writeFile(join(bin, 'redis-server'), '#!/bin/bash\n');
    await chmod(join(bin, 'redis-server'), 0o755);

    const result = await ensure('demo', {});

    expect(result.code).toBe(0);
    expect(await calls()).toEqual([]);
  });

  it('refuses an unknown install mode and changes nothing', async () => {
    const result = await ensure('demo', { TOOLS_INSTALL: 'sometimes' });

    expect(result.code).toBe(2);
    expect(result.stderr).toContain('TOOLS_INSTALL must be auto or never');
    expect(await calls()).toEqual([]);
  });
});
