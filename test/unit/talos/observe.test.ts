import { describe, expect, it } from 'vitest';
import type { RunResult } from '../../../src/exec/process-runner.ts';
import { observeNodeImages } from '../../../src/talos/observe.ts';
import type { Talosctl } from '../../../src/talos/talosctl.ts';

const SCHEMATIC = 'a'.repeat(64);
const DOWN =
  'rpc error: code = Unavailable desc = connection error: desc = "transport: Error while dialing: dial tcp: connect: no route to host"';

/** One extension entry of `get extensions -o json`, as talosctl prints each resource. */
function entry(node: string, name: string, version: string): string {
  return `${JSON.stringify({ node, metadata: { namespace: 'runtime', type: 'ExtensionStatuses.runtime.talos.dev', id: name }, spec: { metadata: { name, version } } }, null, 4)}\n`;
}

/**
 * talosctl ≤ 1.13 `get extensions -o json` (helpers/resources.go, get.go at v1.13.9): the resource is
 * resolved on the first node, whose failure fails the call with nothing on stdout; other nodes' errors
 * are collected without their names, exit 1.
 */
function talosctl113(down: string[], calls: string[][]): Talosctl {
  return {
    binary: 'talosctl',
    run(_args, nodes) {
      calls.push(nodes);
      const result = (stdout: string, stderr: string, exitCode: number): Promise<RunResult> =>
        Promise.resolve({ command: [], stdout, stderr, exitCode, durationMs: 1 });
      if (down.includes(nodes[0]!)) return result('', `${DOWN}\n`, 1);
      const up = nodes.filter((n) => !down.includes(n));
      const failed = nodes.filter((n) => down.includes(n));
      const stdout = up.map((n) => entry(n, 'iscsi-tools', 'v0.2.0') + entry(n, 'schematic', SCHEMATIC)).join('');
      const stderr =
        failed.length === 0
          ? ''
          : `${failed.length} error${failed.length === 1 ? '' : 's'} occurred:\n${failed.map(() => `\t* ${DOWN}`).join('\n')}\n\n\n`;
      return result(stdout, stderr, failed.length === 0 ? 0 : 1);
    },
  };
}

describe('observeNodeImages', () => {
  it('blames only the node that is down when talosctl names no node, asking the doubtful ones alone', async () => {
    const calls: string[][] = [];

    const images = await observeNodeImages(talosctl113(['10.0.30.11'], calls), ['10.0.30.11', '10.0.30.12', '10.0.30.13']);

    expect(images.get('10.0.30.11')).toEqual({ reachable: false, error: DOWN });
    expect(images.get('10.0.30.12')).toEqual({ reachable: true, schematic: SCHEMATIC, extensions: ['iscsi-tools'] });
    expect(images.get('10.0.30.13')).toEqual({ reachable: true, schematic: SCHEMATIC, extensions: ['iscsi-tools'] });
    expect(calls).toEqual([['10.0.30.11', '10.0.30.12', '10.0.30.13'], ['10.0.30.11'], ['10.0.30.12'], ['10.0.30.13']]);
  });

  it('keeps what the nodes that answered said and asks only the silent one', async () => {
    const calls: string[][] = [];

    const images = await observeNodeImages(talosctl113(['10.0.30.12'], calls), ['10.0.30.11', '10.0.30.12', '10.0.30.13']);

    expect([...images].map(([node, image]) => [node, image.reachable])).toEqual([
      ['10.0.30.11', true],
      ['10.0.30.12', false],
      ['10.0.30.13', true],
    ]);
    expect(calls).toEqual([['10.0.30.11', '10.0.30.12', '10.0.30.13'], ['10.0.30.12']]);
  });

  it('asks nothing more when every node answered', async () => {
    const calls: string[][] = [];

    const images = await observeNodeImages(talosctl113([], calls), ['10.0.30.11', '10.0.30.12']);

    expect([...images.values()].every((i) => i.reachable)).toBe(true);
    expect(calls).toHaveLength(1);
  });
});
