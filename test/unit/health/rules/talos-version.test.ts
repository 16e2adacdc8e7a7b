import { describe, expect, it } from 'vitest';
import { evaluateTalosVersions } from '../../../../src/health/rules/talos-version.ts';

const NODES = ['10.0.30.11', '10.0.30.12', '10.0.30.13'];

describe('evaluateTalosVersions', () => {
  it('passes when every node runs the same version', () => {
    const report = { client: { tag: 'v1.12.11' }, servers: NODES.map((node) => ({ node, tag: 'v1.12.11' })) };

    expect(evaluateTalosVersions(report, NODES, [])).toEqual({
      id: 'talos-version',
      title: 'Talos version (10.0.30.11, 10.0.30.12, 10.0.30.13)',
      status: 'passed',
      summary: 'all 3 nodes run Talos v1.12.11',
      evidence: [
        '10.0.30.11         v1.12.11',
        '10.0.30.12         v1.12.11',
        '10.0.30.13         v1.12.11',
        'client (talosctl)  v1.12.11',
      ],
    });
  });

  it('warns about a mixed cluster without failing', () => {
    const report = {
      client: { tag: 'v1.12.11' },
      servers: [
        { node: '10.0.30.11', tag: 'v1.12.11' },
        { node: '10.0.30.12', tag: 'v1.11.6' },
        { node: '10.0.30.13', tag: 'v1.11.6' },
      ],
    };

    const result = evaluateTalosVersions(report, NODES, []);

    expect([result.status, result.summary]).toEqual([
      'warning',
      'mixed Talos versions: v1.12.11 on 10.0.30.11; v1.11.6 on 10.0.30.12, 10.0.30.13',
    ]);
  });

  it('warns when talosctl is of another minor than the cluster', () => {
    const report = { client: { tag: 'v1.13.0' }, servers: [{ node: '10.0.20.204', tag: 'v1.12.11' }] };

    const result = evaluateTalosVersions(report, ['10.0.20.204'], []);

    expect(result.status).toBe('warning');
    expect(result.summary).toBe('talosctl v1.13.0 does not match the running Talos 1.12: use a talosctl of the running version');
  });

  it('fails when a node does not answer, quoting its error', () => {
    const report = {
      servers: [
        { node: '10.0.30.11', tag: 'v1.12.11' },
        { node: '10.0.30.12', tag: 'v1.12.11' },
      ],
    };
    const errors = [{ node: '10.0.30.13', message: 'rpc error: code = Unavailable desc = connection refused', code: 'Unavailable' }];

    const result = evaluateTalosVersions(report, NODES, errors);

    expect(result.status).toBe('failed');
    expect(result.summary).toBe('10.0.30.13 did not report its Talos version: rpc error: code = Unavailable desc = connection refused');
    expect(result.evidence[2]).toBe('10.0.30.13  unreachable  rpc error: code = Unavailable desc = connection refused');
  });

  it('attributes a server block without NODE to the single node', () => {
    const result = evaluateTalosVersions({ servers: [{ node: undefined, tag: 'v1.12.11' }] }, ['10.0.20.204']);

    expect([result.status, result.summary]).toEqual(['passed', 'the node runs Talos v1.12.11']);
  });

  it('fails when nothing answered', () => {
    expect(evaluateTalosVersions({ servers: [] }, ['10.0.20.204']).status).toBe('failed');
  });
});
