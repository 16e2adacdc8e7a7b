import { describe, expect, it } from 'vitest';
import { ParseError } from '../../../src/talos/parse-error.ts';
import { parseHealthOutput } from '../../../src/talos/parse-health.ts';

const CHECKS = [
  'etcd to be healthy',
  'etcd members to be consistent across nodes',
  'etcd members to be control plane nodes',
  'apid to be ready',
  'all nodes memory sizes',
  'all nodes disk sizes',
  'no diagnostics',
  'kubelet to be healthy',
  'all nodes to finish boot sequence',
  'all k8s nodes to report',
  'all control plane static pods to be running',
  'all control plane components to be ready',
  'all k8s nodes to report ready',
  'kube-proxy to report ready',
  'coredns to report ready',
  'all k8s nodes to report schedulable',
];

function passing(): string {
  const lines = ['discovered nodes: ["172.20.0.2" "172.20.0.3"]'];
  for (const check of CHECKS) {
    lines.push(`waiting for ${check}: ...`, `waiting for ${check}: ${check === 'kube-proxy to report ready' ? 'SKIP' : 'OK'}`);
  }
  return `${lines.join('\n')}\n`;
}

describe('parseHealthOutput', () => {
  it('reads discovered nodes and every check of a passing run', () => {
    const report = parseHealthOutput(passing());

    expect(report.discoveredNodes).toEqual(['172.20.0.2', '172.20.0.3']);
    expect(report.checks.map((c) => c.name)).toEqual(CHECKS);
    expect(report.checks.filter((c) => c.result !== 'OK')).toEqual([{ name: 'kube-proxy to report ready', result: 'SKIP' }]);
    expect(report.finalError).toBeUndefined();
  });

  it('keeps a multi-line interim error with its check, and the final error of a timeout', () => {
    const stderr = [
      'discovered nodes: ["10.5.0.2" "10.5.0.3"]',
      'waiting for etcd to be healthy: ...',
      'waiting for etcd to be healthy: 1 error occurred:',
      '\t* 10.5.0.2: service "etcd" not in expected state "Running": current state [Preparing] Running pre state',
      '',
      'rpc error: code = DeadlineExceeded desc = context deadline exceeded',
      '',
    ].join('\n');

    expect(parseHealthOutput(stderr)).toEqual({
      discoveredNodes: ['10.5.0.2', '10.5.0.3'],
      checks: [
        {
          name: 'etcd to be healthy',
          result: 'pending',
          lastError:
            '1 error occurred:\n* 10.5.0.2: service "etcd" not in expected state "Running": current state [Preparing] Running pre state',
        },
      ],
      finalError: 'rpc error: code = DeadlineExceeded desc = context deadline exceeded',
      finalErrorCode: 'DeadlineExceeded',
      finalErrorCause: 'context deadline exceeded',
    });
  });

  it('reads server-mode output of a 1.13 server with CNI none: the discovered nodes, SKIP lines and the healthcheck prefix', () => {
    // As talosctl 1.13.9 prints it with --nodes: the server's node list always, its error in the message metadata.
    const stderr = [
      'discovered nodes: ["10.0.30.11" "10.0.30.12" "10.0.30.13"]',
      'waiting for etcd to be healthy: ...',
      'waiting for etcd to be healthy: OK',
      'waiting for all k8s nodes to report ready: ...',
      'waiting for all k8s nodes to report ready: SKIP',
      'waiting for kube-proxy to report ready: ...',
      'waiting for kube-proxy to report ready: SKIP',
      'waiting for coredns to report ready: ...',
      'waiting for coredns to report ready: SKIP',
      'waiting for all k8s nodes to report schedulable: ...',
      'waiting for all k8s nodes to report schedulable: some nodes are not schedulable: [talos-prd-cp-2]',
      'healthcheck error: rpc error: code = DeadlineExceeded desc = context deadline exceeded',
      '',
    ].join('\n');

    const report = parseHealthOutput(stderr);

    expect(report.discoveredNodes).toEqual(['10.0.30.11', '10.0.30.12', '10.0.30.13']);
    expect(report.checks.map((c) => [c.name, c.result])).toEqual([
      ['etcd to be healthy', 'OK'],
      ['all k8s nodes to report ready', 'SKIP'],
      ['kube-proxy to report ready', 'SKIP'],
      ['coredns to report ready', 'SKIP'],
      ['all k8s nodes to report schedulable', 'pending'],
    ]);
    expect([report.finalError, report.finalErrorCode, report.finalErrorCause]).toEqual([
      'healthcheck error: rpc error: code = DeadlineExceeded desc = context deadline exceeded',
      'DeadlineExceeded',
      'context deadline exceeded',
    ]);
  });

  it('keeps the latest interim error when a check reports several', () => {
    const stderr = [
      'waiting for etcd to be healthy: OK',
      'waiting for all k8s nodes to report ready: ...',
      'waiting for all k8s nodes to report ready: some nodes are not ready: [talos-cp-2]',
      'waiting for all k8s nodes to report ready: some nodes are not ready: [talos-cp-3]',
      'context deadline exceeded',
    ].join('\n');

    expect(parseHealthOutput(stderr).checks).toEqual([
      { name: 'etcd to be healthy', result: 'OK' },
      { name: 'all k8s nodes to report ready', result: 'pending', lastError: 'some nodes are not ready: [talos-cp-3]' },
    ]);
  });

  it('takes a whole-command error without checks as the final error', () => {
    const stderr =
      'rpc error: code = Unavailable desc = connection error: desc = "transport: Error while dialing: dial tcp 10.0.20.204:50000: connect: connection refused"\n';

    expect(parseHealthOutput(stderr)).toEqual({
      checks: [],
      finalError: stderr.trim(),
      finalErrorCode: 'Unavailable',
      finalErrorCause: 'connection error: desc = "transport: Error while dialing: dial tcp 10.0.20.204:50000: connect: connection refused"',
    });
  });

  it('ignores version-skew warnings and terminal colours', () => {
    const stderr =
      'WARNING: 10.0.64.1: server version 1.8.4 is older than client version 1.9.5\n\u001b[32mwaiting for etcd to be healthy: OK\u001b[0m\n';

    expect(parseHealthOutput(stderr)).toEqual({ checks: [{ name: 'etcd to be healthy', result: 'OK' }] });
  });

  it.each(['', '\n  \n', 'WARNING: 10.0.64.1: server version 1.8.4 is older than client version 1.9.5\n'])(
    'throws a ParseError for %j',
    (stderr) => {
      expect(() => parseHealthOutput(stderr)).toThrow(ParseError);
    },
  );
});
