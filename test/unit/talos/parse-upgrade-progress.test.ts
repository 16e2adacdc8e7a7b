import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  parseDrainFailure,
  upgradeMilestone,
  isFailureLine,
  isLegacyFallback,
  isPostCheckPassed,
  isUnavailableLine,
  isUpgradeCompleted,
  isWaitingForActorId,
  parseMachineStage,
  parseProgressLine,
  parseTaskEvent,
} from '../../../src/talos/parse-upgrade-progress.ts';

/** A legacy `talosctl upgrade --wait` run on a pipe (stderr). */
const LEGACY_RUN = [
  '"10.0.0.5": waiting for actor ID',
  '"10.0.0.5": actor ID: 5a1f2a2e-2f43-4ad9-9d0c-3a3f44b1a8e0',
  '"10.0.0.5": phase: drain action: START',
  '"10.0.0.5": task: cordonAndDrainNode action: START',
  '"10.0.0.5": task: stopAllServices action: START',
  '"10.0.0.5": unavailable, retrying...',
  '"10.0.0.5": stage: BOOTING ready: false unmetCond: [name:"nodeReady" reason:"node \\"talos-w-1\\" is not ready"]',
  '"10.0.0.5": service: kubelet message: Health check successful healthy: true',
  '"10.0.0.5": stage: RUNNING ready: true unmetCond: []',
  '"10.0.0.5": events check condition met',
  '"10.0.0.5": post check passed',
];

describe('parseProgressLine', () => {
  it('splits quoted-node lines into node and message', () => {
    expect(LEGACY_RUN.map(parseProgressLine).map((p) => p?.node)).toEqual(Array(LEGACY_RUN.length).fill('10.0.0.5'));
    expect(parseProgressLine(LEGACY_RUN[2] ?? '')).toEqual({ node: '10.0.0.5', message: 'phase: drain action: START' });
  });

  it('reads the 1.13+ unquoted form and the terminal redraw form', () => {
    expect(parseProgressLine('10.0.0.5: upgrade completed')).toEqual({ node: '10.0.0.5', message: 'upgrade completed' });
    expect(parseProgressLine('fd00::5: pulled image factory.talos.dev/nocloud-installer/abc:v1.13.9')).toEqual({
      node: 'fd00::5',
      message: 'pulled image factory.talos.dev/nocloud-installer/abc:v1.13.9',
    });
    expect(parseProgressLine('    * 192.168.1.32: post check passed')).toEqual({ node: '192.168.1.32', message: 'post check passed' });
  });

  it.each([
    'sequence error: sequence failed',
    'error: unmounting /var: device busy',
    'WARNING: 10.0.64.1: server version 1.8.4 is older than client version 1.9.5',
    'New upgrade API is not available, falling back to legacy',
    '',
    '"unterminated: quote',
  ])('returns undefined for %j', (line) => {
    expect(parseProgressLine(line)).toBeUndefined();
  });
});

describe('recognisers', () => {
  it('recognise the milestones of a legacy run', () => {
    expect(LEGACY_RUN.filter(isWaitingForActorId)).toEqual(['"10.0.0.5": waiting for actor ID']);
    expect(LEGACY_RUN.filter(isUnavailableLine)).toEqual(['"10.0.0.5": unavailable, retrying...']);
    expect(LEGACY_RUN.filter(isPostCheckPassed)).toEqual(['"10.0.0.5": post check passed']);
    expect(LEGACY_RUN.filter(isFailureLine)).toEqual([]);
  });

  it('recognise the 1.13+ milestones', () => {
    expect(isUpgradeCompleted('10.0.0.5: upgrade completed')).toBe(true);
    expect(isLegacyFallback('New upgrade API is not available, falling back to legacy')).toBe(true);
    expect(isPostCheckPassed('"10.0.0.5": post check passed soon')).toBe(false);
  });

  it.each([
    '"10.0.0.5": sequence: upgrade action: STOP error: [code: 13 message: failed to unmount /var]',
    '"10.0.0.5": sequence error: sequence failed',
    'error: timeout waiting for node to become ready',
    'error from node 10.0.0.5: rpc error: code = Unavailable desc = connection refused',
    '"10.0.0.5": rpc error: code = FailedPrecondition desc = failed to acquire upgrade mutex: context deadline exceeded',
    '10.0.0.5: upgrade failed with exit code 1',
  ])('flag %j as a failure', (line) => {
    expect(isFailureLine(line)).toBe(true);
  });

  it.each(['"10.0.0.5": task: stopAllServices action: START', 'talos-w-1: failed to evict pod default/web-0: Too Many Requests'])(
    'do not flag %j as a failure',
    (line) => {
      expect(isFailureLine(line)).toBe(false);
    },
  );
});

describe('parseTaskEvent and parseMachineStage', () => {
  it('read a step and its error', () => {
    expect(parseTaskEvent('phase: drain action: START')).toEqual({ kind: 'phase', name: 'drain', action: 'START' });
    expect(parseTaskEvent('sequence: upgrade action: STOP error: [code: 13 message: boom]')).toEqual({
      kind: 'sequence',
      name: 'upgrade',
      action: 'STOP',
      error: '[code: 13 message: boom]',
    });
    expect(parseTaskEvent('events check condition met')).toBeUndefined();
  });

  it('read the machine stage', () => {
    expect(parseMachineStage('stage: RUNNING ready: true unmetCond: []')).toEqual({ stage: 'RUNNING', ready: true });
    expect(parseMachineStage('stage: BOOTING ready: false unmetCond: [name:"nodeReady"]')).toEqual({ stage: 'BOOTING', ready: false });
    expect(parseMachineStage('post check passed')).toBeUndefined();
  });
});

describe('the ≥ 1.13 LifecycleService flow (cmd/talosctl/cmd/talos/upgrade.go v1.13.9)', () => {
  const run = (name: string): string[] =>
    readFileSync(join(import.meta.dirname, '../../corpus/talosctl/samples', name), 'utf8')
      .trimEnd()
      .split('\n');

  it('names each phase a person cares about: pull, install, drain, reboot, uncordon', () => {
    const milestones = run('upgrade-lifecycle.txt')
      .map(upgradeMilestone)
      .filter((m) => m !== undefined);

    expect(milestones).toEqual([
      '10.0.30.12: installer image pulled',
      '10.0.30.12: installer running',
      '10.0.30.12: new image installed (not booted yet)',
      'talos-prd-cp-2: cordoning node',
      'talos-prd-cp-2: node cordoned',
      'talos-prd-cp-2: draining node',
      'talos-prd-cp-2: evicting pod apps/podinfo-5d8f9c7b6a-x2k9q',
      'talos-prd-cp-2: evicted pod apps/podinfo-5d8f9c7b6a-x2k9q',
      'talos-prd-cp-2: node drained',
      '10.0.30.12: request accepted',
      '10.0.30.12: phase cleanup',
      '10.0.30.12: rebooting',
      '10.0.30.12: rebooted',
      'talos-prd-cp-2: waiting for node to become Ready',
      'talos-prd-cp-2: node uncordoned',
    ]);
  });

  it('does not take the routine "task completed" lines of the tracker for failures', () => {
    expect(run('upgrade-lifecycle.txt').filter(isFailureLine)).toEqual([]);
    expect(isFailureLine('"10.0.30.12": error: stopAllServices task completed')).toBe(false);
    expect(isFailureLine('"10.0.30.12": error: reboot sequence completed')).toBe(false);
  });

  it('reads a drain that timed out: the node, the pod that blocked it and the timeout', () => {
    const last = run('upgrade-lifecycle-drain-timeout.txt').at(-1) ?? '';

    expect(parseDrainFailure(last)).toEqual({
      node: 'talos-stg-w-1',
      pods: [{ namespace: 'apps', name: 'podinfo-5d8f9c7b6a-7mwq4' }],
      timeout: '5m0s',
      text: last,
    });
    expect(isFailureLine(last)).toBe(true);
  });

  it('reads several blocked pods (kubectl aggregates them as [a, b]) and ignores other lines', () => {
    const line =
      'error draining node "talos-prd-cp-1": [error when evicting pods/"db-1" -n "apps": global timeout reached: 5m0s, error when evicting pods/"web-7d9c-abcde" -n "web": global timeout reached: 5m0s]';

    expect(parseDrainFailure(line)).toMatchObject({
      node: 'talos-prd-cp-1',
      pods: [
        { namespace: 'apps', name: 'db-1' },
        { namespace: 'web', name: 'web-7d9c-abcde' },
      ],
      timeout: '5m0s',
    });
    expect(parseDrainFailure('talos-stg-w-1: draining node')).toBeUndefined();
  });

  it('flags the per-node lock of the LifecycleService as a failure line', () => {
    expect(
      isFailureLine(
        'error during upgrade: error from node 10.0.30.12: rpc error: code = FailedPrecondition desc = another installation/upgrade is already in progress',
      ),
    ).toBe(true);
  });
});
