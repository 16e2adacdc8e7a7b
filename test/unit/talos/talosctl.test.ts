import { describe, expect, it } from 'vitest';
import type { ProcessRunner, RunOptions, RunResult } from '../../../src/exec/process-runner.ts';
import { createTalosctl } from '../../../src/talos/talosctl.ts';

interface RecordedCall {
  file: string;
  args: string[];
  options: RunOptions;
}

/** A ProcessRunner that records each call and answers with an empty success. */
function recordingRunner(): ProcessRunner & { calls: RecordedCall[] } {
  const calls: RecordedCall[] = [];
  return {
    calls,
    run(file, args, options) {
      calls.push({ file, args, options });
      const result: RunResult = { command: [file, ...args], stdout: '', stderr: '', exitCode: 0, durationMs: 1 };
      return Promise.resolve(result);
    },
  };
}

const BASE = {
  binary: '/opt/talosctl/talosctl-v1.11.6',
  talosconfigPath: '/tmp/talos-chatops-abc/talosconfig',
  endpoints: ['10.0.30.11', '10.0.30.12', '10.0.30.13'],
  env: { PATH: '/usr/bin:/bin', HOME: '/home/bot' },
  timeoutMs: 60_000,
};

describe('createTalosctl', () => {
  it('names the talosconfig, every real endpoint and the nodes explicitly', async () => {
    // Arrange
    const runner = recordingRunner();
    const talosctl = createTalosctl({ ...BASE, runner });

    // Act
    await talosctl.run(['etcd', 'status'], ['10.0.30.11', '10.0.30.12']);

    // Assert
    expect(runner.calls).toHaveLength(1);
    expect(runner.calls[0]!.file).toBe('/opt/talosctl/talosctl-v1.11.6');
    expect(runner.calls[0]!.args).toEqual([
      'etcd',
      'status',
      '--talosconfig',
      '/tmp/talos-chatops-abc/talosconfig',
      '--endpoints',
      '10.0.30.11,10.0.30.12,10.0.30.13',
      '--nodes',
      '10.0.30.11,10.0.30.12',
    ]);
  });

  it('sets TALOSCONFIG on top of the child environment, and the default timeout', async () => {
    // Arrange
    const runner = recordingRunner();
    const talosctl = createTalosctl({ ...BASE, runner });

    // Act
    await talosctl.run(['version'], ['10.0.30.11']);

    // Assert
    expect(runner.calls[0]!.options).toEqual({
      env: { PATH: '/usr/bin:/bin', HOME: '/home/bot', TALOSCONFIG: '/tmp/talos-chatops-abc/talosconfig' },
      timeoutMs: 60_000,
      signal: undefined,
      okExitCodes: undefined,
      onStderrLine: undefined,
      onStdoutLine: undefined,
    });
  });

  it('uses other endpoints for one call when told, e.g. while a control plane reboots', async () => {
    // Arrange
    const runner = recordingRunner();
    const talosctl = createTalosctl({ ...BASE, runner });

    // Act
    await talosctl.run(['upgrade', '--image', 'factory.talos.dev/nocloud-installer/abc:v1.12.1'], ['10.0.30.11'], {
      endpoints: ['10.0.30.12', '10.0.30.13'],
    });
    await talosctl.run(['version'], ['10.0.30.11']);

    // Assert
    expect(runner.calls[0]!.args).toEqual([
      'upgrade',
      '--image',
      'factory.talos.dev/nocloud-installer/abc:v1.12.1',
      '--talosconfig',
      '/tmp/talos-chatops-abc/talosconfig',
      '--endpoints',
      '10.0.30.12,10.0.30.13',
      '--nodes',
      '10.0.30.11',
    ]);
    expect(runner.calls[1]!.args).toContain('10.0.30.11,10.0.30.12,10.0.30.13');
  });

  it('leaves out --nodes when no node is given', async () => {
    // Arrange
    const runner = recordingRunner();
    const talosctl = createTalosctl({ ...BASE, runner });

    // Act
    await talosctl.run(['version', '--client'], []);

    // Assert
    expect(runner.calls[0]!.args).toEqual([
      'version',
      '--client',
      '--talosconfig',
      '/tmp/talos-chatops-abc/talosconfig',
      '--endpoints',
      '10.0.30.11,10.0.30.12,10.0.30.13',
    ]);
  });

  it('passes the call options through to the runner', async () => {
    // Arrange
    const runner = recordingRunner();
    const talosctl = createTalosctl({ ...BASE, runner });
    const signal = new AbortController().signal;
    const onStderrLine = (): void => undefined;
    const onStdoutLine = (): void => undefined;

    // Act
    await talosctl.run(['upgrade-k8s', '--to', '1.35.0', '--dry-run'], ['10.0.30.11'], {
      signal,
      timeoutMs: 1_830_000,
      okExitCodes: [0, 1],
      onStderrLine,
      onStdoutLine,
    });

    // Assert
    expect(runner.calls[0]!.options).toMatchObject({ signal, timeoutMs: 1_830_000, okExitCodes: [0, 1], onStderrLine, onStdoutLine });
  });

  it('exposes the binary it runs, and does not share argv between calls', async () => {
    // Arrange
    const runner = recordingRunner();
    const talosctl = createTalosctl({ ...BASE, runner });
    const args = ['get', 'members'];

    // Act
    await talosctl.run(args, ['10.0.30.11']);

    // Assert
    expect(talosctl.binary).toBe('/opt/talosctl/talosctl-v1.11.6');
    expect(args).toEqual(['get', 'members']);
  });
});
