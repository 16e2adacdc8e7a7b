import { existsSync } from 'node:fs';
import { mkdtemp, realpath, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createProcessRunner, ExecError, type CallRecord } from '../../../src/exec/process-runner.ts';
import { secretEnvValues } from '../../../src/log/process-secrets.ts';
import { SecretScrubber } from '../../../src/log/secret-scrubber.ts';

/**
 * Real child processes. `/bin/sh` is only ever the *file* here: the runner takes argv
 * arrays, so a script is one argument and the values under test are further arguments.
 */
const SH = '/bin/sh';
/** Prints each argument after the script on its own line, in brackets, so argument boundaries show. */
const PRINT_ARGS = 'for a in "$@"; do printf "[%s]\\n" "$a"; done';
const CANARY = 'canary-5d41402abc4b2a76b9719d911017c592';

function runnerWithCalls(): { runner: ReturnType<typeof createProcessRunner>; calls: CallRecord[] } {
  const scrubber = new SecretScrubber();
  scrubber.add(CANARY);
  const calls: CallRecord[] = [];
  return { runner: createProcessRunner({ scrubber, onCall: (call) => calls.push(call) }), calls };
}

/** The ExecError `promise` rejects with; fails the test when it resolves or rejects with anything else. */
async function execErrorOf(promise: Promise<unknown>): Promise<ExecError> {
  const error = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(ExecError);
  return error as ExecError;
}

/** Whether a process with this id still exists. */
function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code !== 'ESRCH';
  }
}

describe('createProcessRunner: command line and environment', () => {
  it('passes every argument exactly, with no shell interpretation', async () => {
    // Arrange
    const { runner } = runnerWithCalls();
    const args = ['$(id)', '`id`', 'a b', '*', '; reboot', '"quoted"', "it's", '$HOME', '--nodes=10.0.0.1'];

    // Act
    const result = await runner.run(SH, ['-c', PRINT_ARGS, 'sh', ...args], { timeoutMs: 10_000 });

    // Assert
    expect(result.stdout.split('\n')).toEqual(args.map((a) => `[${a}]`));
    expect(result.command).toEqual([SH, '-c', PRINT_ARGS, 'sh', ...args]);
    expect(result.exitCode).toBe(0);
  });

  it('echoes a command substitution literally', async () => {
    // Arrange
    const { runner } = runnerWithCalls();

    // Act
    const result = await runner.run('/bin/echo', ['$(id)', '`whoami`'], { timeoutMs: 10_000 });

    // Assert
    expect(result.stdout).toBe('$(id) `whoami`');
  });

  it('gives the child exactly the environment it is given, inheriting nothing', async () => {
    // Arrange
    const { runner } = runnerWithCalls();
    process.env['TALOS_CHATOPS_TEST_INHERITED'] = CANARY;
    try {
      // Act
      const explicit = await runner.run('/usr/bin/env', [], { timeoutMs: 10_000, env: { TALOSCONFIG: '/run/creds/talosconfig' } });
      const none = await runner.run('/usr/bin/env', [], { timeoutMs: 10_000 });

      // Assert
      expect(explicit.stdout.split('\n')).toEqual(['TALOSCONFIG=/run/creds/talosconfig']);
      expect(none.stdout).toBe('');
    } finally {
      delete process.env['TALOS_CHATOPS_TEST_INHERITED'];
    }
  });

  it('runs in the given working directory', async () => {
    // Arrange
    const { runner } = runnerWithCalls();
    const dir = await mkdtemp(join(tmpdir(), 'runner-cwd-'));
    try {
      // Act
      const result = await runner.run('/bin/pwd', [], { timeoutMs: 10_000, cwd: dir });

      // Assert
      expect(result.stdout).toBe(await realpath(dir));
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});

describe('createProcessRunner: arguments it refuses', () => {
  let dir: string;
  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), 'runner-refuse-'));
  });
  afterEach(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it.each([
    ['a newline', '10.0.30.12\n--force'],
    ['a NUL', '10.0.30.12\u0000'],
    ['a carriage return', 'v1.12.11\r'],
    ['an escape sequence', '\u001b[2J'],
    ['a DEL', 'prod\u007f'],
  ])('refuses an argument with %s before starting anything', async (_, bad) => {
    // Arrange
    const { runner, calls } = runnerWithCalls();
    const marker = join(dir, 'started');

    // Act
    const error = await execErrorOf(runner.run(SH, ['-c', `: > ${marker}`, 'sh', bad], { timeoutMs: 10_000 }));

    // Assert
    expect(error.code).toBe('exec-invalid-argument');
    expect(existsSync(marker)).toBe(false);
    expect(calls).toEqual([]);
  });
});

describe('createProcessRunner: failures', () => {
  it('turns a non-zero exit into exec-failed with the last stderr lines, scrubbed', async () => {
    // Arrange
    const { runner } = runnerWithCalls();
    const script = `echo first >&2; echo second >&2; echo "third: x509 key ${CANARY}" >&2; echo fourth >&2; exit 3`;

    // Act
    const error = await execErrorOf(runner.run(SH, ['-c', script], { timeoutMs: 10_000 }));

    // Assert
    expect(error.code).toBe('exec-failed');
    expect(error.message).toMatch(/^sh .*exited with 3: second\nthird: x509 key \[REDACTED\]\nfourth$/);
    expect(error.message).not.toContain('first');
    expect(error.result?.exitCode).toBe(3);
    expect(error.result?.stderr).toBe('first\nsecond\nthird: x509 key [REDACTED]\nfourth');
  });

  it('falls back to stdout, scrubbed, when a failing tool writes nothing to stderr', async () => {
    // Arrange
    const { runner } = runnerWithCalls();

    // Act
    const error = await execErrorOf(runner.run(SH, ['-c', `echo "Error: state locked by ${CANARY}"; exit 1`], { timeoutMs: 10_000 }));

    // Assert
    expect(error.code).toBe('exec-failed');
    expect(error.message).toMatch(/exited with 1: Error: state locked by \[REDACTED\]$/);
  });

  it('names the subcommand words, never flag values, in the message', async () => {
    // Arrange
    const { runner } = runnerWithCalls();

    // Act
    const error = await execErrorOf(runner.run('/bin/false', ['etcd', 'status', '--nodes', '10.0.30.11'], { timeoutMs: 10_000 }));

    // Assert
    expect(error.message).toBe('false etcd status exited with 1');
  });

  it('accepts the exit codes it is told are success', async () => {
    // Arrange: `tofu plan -detailed-exitcode` exits 2 when there are changes.
    const { runner } = runnerWithCalls();

    // Act
    const result = await runner.run(SH, ['-c', 'echo changes; exit 2'], { timeoutMs: 10_000, okExitCodes: [0, 2] });
    const refused = await execErrorOf(runner.run(SH, ['-c', 'exit 0'], { timeoutMs: 10_000, okExitCodes: [2] }));

    // Assert
    expect(result.exitCode).toBe(2);
    expect(result.stdout).toBe('changes');
    expect(refused.code).toBe('exec-failed');
  });

  it('reports a missing binary as exec-not-found, naming the setting to fix', async () => {
    // Arrange
    const { runner } = runnerWithCalls();

    // Act
    const error = await execErrorOf(runner.run('/nonexistent/bin/talosctl', ['version'], { timeoutMs: 10_000 }));

    // Assert
    expect(error.code).toBe('exec-not-found');
    expect(error.message).toBe('talosctl was not found; set its path in the environment (TALOSCTL_BIN or TOFU_BIN)');
  });

  it('kills a child that outlives its timeout and reports exec-timeout', async () => {
    // Arrange
    const { runner } = runnerWithCalls();
    const pids: number[] = [];

    // Act
    const error = await execErrorOf(
      runner.run(SH, ['-c', 'echo $$; exec /bin/sleep 30'], { timeoutMs: 300, onStdoutLine: (line) => pids.push(Number(line)) }),
    );

    // Assert
    expect(error.code).toBe('exec-timeout');
    expect(error.message).toMatch(/timed out after \d+s$/);
    expect(pids).toHaveLength(1);
    expect(isAlive(pids[0]!)).toBe(false);
  });

  it('kills the child when the signal aborts and reports exec-cancelled', async () => {
    // Arrange
    const { runner } = runnerWithCalls();
    const controller = new AbortController();
    const pids: number[] = [];

    // Act
    const error = await execErrorOf(
      runner.run(SH, ['-c', 'echo $$; exec /bin/sleep 30'], {
        timeoutMs: 60_000,
        signal: controller.signal,
        onStdoutLine: (line) => {
          pids.push(Number(line));
          controller.abort();
        },
      }),
    );

    // Assert
    expect(error.code).toBe('exec-cancelled');
    expect(pids).toHaveLength(1);
    expect(isAlive(pids[0]!)).toBe(false);
  });

  it('does not start a child for an already aborted signal', async () => {
    // Arrange
    const { runner } = runnerWithCalls();
    const dir = await mkdtemp(join(tmpdir(), 'runner-aborted-'));
    const marker = join(dir, 'started');
    try {
      // Act
      const error = await execErrorOf(runner.run(SH, ['-c', `: > ${marker}`], { timeoutMs: 10_000, signal: AbortSignal.abort() }));

      // Assert
      expect(error.code).toBe('exec-cancelled');
      expect(existsSync(marker)).toBe(false);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});

describe('createProcessRunner: streaming and metrics', () => {
  it('streams stderr and stdout line by line while keeping the whole output', async () => {
    // Arrange
    const { runner } = runnerWithCalls();
    const stderrLines: string[] = [];
    const stdoutLines: string[] = [];

    // Act
    const result = await runner.run(SH, ['-c', 'echo "waiting for node" >&2; echo out; echo "node is up" >&2'], {
      timeoutMs: 10_000,
      onStderrLine: (line) => stderrLines.push(line),
      onStdoutLine: (line) => stdoutLines.push(line),
    });

    // Assert
    expect(stderrLines).toEqual(['waiting for node', 'node is up']);
    expect(stdoutLines).toEqual(['out']);
    expect(result.stderr).toBe('waiting for node\nnode is up');
  });

  it('records each call with its binary name, arguments and outcome', async () => {
    // Arrange
    const { runner, calls } = runnerWithCalls();

    // Act
    await runner.run('/bin/echo', ['version'], { timeoutMs: 10_000 });
    await execErrorOf(runner.run('/bin/false', ['health'], { timeoutMs: 10_000 }));
    await execErrorOf(runner.run('/nonexistent/tofu', ['plan'], { timeoutMs: 10_000 }));

    // Assert
    expect(calls.map(({ file, args, outcome }) => ({ file, args, outcome }))).toEqual([
      { file: 'echo', args: ['version'], outcome: 'ok' },
      { file: 'false', args: ['health'], outcome: 'exec-failed' },
      { file: 'tofu', args: ['plan'], outcome: 'exec-not-found' },
    ]);
    for (const call of calls) expect(call.durationMs).toBeGreaterThanOrEqual(0);
  });

  it('records a timed-out call as exec-timeout', async () => {
    // Arrange
    const { runner, calls } = runnerWithCalls();

    // Act
    await execErrorOf(runner.run('/bin/sleep', ['30'], { timeoutMs: 200 }));

    // Assert
    expect(calls.map((c) => c.outcome)).toEqual(['exec-timeout']);
  });
});

describe('process runner: secrets and bounds', () => {
  it('scrubs stdout before anyone parses or truncates it, and the streamed lines too', async () => {
    // Arrange
    const { runner } = runnerWithCalls();
    const lines: string[] = [];

    // Act
    const result = await runner.run(SH, ['-c', `echo "token ${CANARY} end"`], {
      timeoutMs: 10_000,
      onStdoutLine: (line) => lines.push(line),
    });
    const cut = result.stdout.slice(0, 'token '.length + 20);

    // Assert: the cut falls where the secret was, and no part of it is there to cut
    expect(result.stdout).toBe('token [REDACTED] end\n'.trimEnd());
    expect(cut).not.toContain(CANARY.slice(0, 16));
    expect(lines).toEqual(['token [REDACTED] end']);
  });

  it("gives a tool's stdout as printed when it is the secret itself (tofu output)", async () => {
    // Arrange
    const { runner } = runnerWithCalls();

    // Act
    const result = await runner.run(SH, ['-c', `printf %s "${CANARY}"`], { timeoutMs: 10_000, secretOutput: true });

    // Assert
    expect(result.stdout).toBe(CANARY);
  });

  it("blanks the secrets of tofu's environment wherever the child prints them", async () => {
    // Arrange: the bot registers the secret variables of tofu's environment at start
    const scrubber = new SecretScrubber();
    const tofuEnv = {
      TF_VAR_proxmox_api_token: 'root@pam!bot=8c1f2d3e-canary-4a5b-9c8d-7e6f5a4b3c2d',
      AWS_SECRET_ACCESS_KEY: 'wJalrXUtnFEMI/K7MDENG/bPxRfiCYcanaryKEY',
      AWS_REGION: 'eu-central-1',
    };
    for (const value of secretEnvValues(tofuEnv)) scrubber.add(value);
    const runner = createProcessRunner({ scrubber });
    const script = 'echo "provider: $TF_VAR_proxmox_api_token"; echo "backend: $AWS_SECRET_ACCESS_KEY in $AWS_REGION" >&2; exit 1';

    // Act
    const error = await execErrorOf(runner.run(SH, ['-c', script], { timeoutMs: 10_000, env: tofuEnv }));

    // Assert
    expect(error.result?.stdout).toBe('provider: [REDACTED]');
    expect(error.message).toBe('sh exited with 1: backend: [REDACTED] in eu-central-1');
  });

  it('stops a child that prints more than the bound, naming the command, the bound and what to do', async () => {
    // Arrange
    const runner = createProcessRunner({ scrubber: new SecretScrubber(), maxOutputChars: 64 * 1024 });

    // Act
    const error = await execErrorOf(runner.run(SH, ['-c', 'while :; do echo flooding-the-bot; done'], { timeoutMs: 30_000 }));

    // Assert
    expect(error.code).toBe('exec-output-too-large');
    expect(error.message).toBe(
      'sh printed more than 65536 characters on one stream and was stopped: narrow what it is asked for, or look for a tool writing in a loop',
    );
  });
});
