import { describe, expect, it } from 'vitest';
import { lookUpMember } from '../../../../../jobs/playbooks/node-replace/etcd-member.ts';
import type { Talosctl } from '../../../../../src/talos/talosctl.ts';

const HEADER = 'NODE         ID                 HOSTNAME        PEER URLS                 CLIENT URLS               LEARNER';
/** One row of the table, each column at its header's position (the parser reads columns by position). */
const row = (via: string, id: string, hostname: string, peer: string, learner = false): string =>
  via.padEnd(13) +
  id.padEnd(19) +
  hostname.padEnd(16) +
  `https://${peer}:2380`.padEnd(26) +
  (hostname ? `https://${peer}:2379` : '').padEnd(26) +
  String(learner);

type Answer = { exitCode: number; stdout?: string; stderr?: string };

/** A talosctl whose `etcd members` answers through each control plane as `answers` says; it records who was asked. */
function talosctl(answers: Record<string, Answer>): Talosctl & { asked: string[] } {
  const asked: string[] = [];
  return {
    binary: 'talosctl',
    asked,
    run(args, nodes) {
      expect(args).toEqual(['etcd', 'members']);
      const via = nodes[0]!;
      asked.push(via);
      const a = answers[via] ?? { exitCode: 1, stderr: 'connection refused' };
      return Promise.resolve({ exitCode: a.exitCode, stdout: a.stdout ?? '', stderr: a.stderr ?? '' });
    },
  } as Talosctl & { asked: string[] };
}

const signal = () => new AbortController().signal;
const members = (via: string, ...rows: string[]): Answer => ({
  exitCode: 0,
  stdout: [HEADER, ...rows.map((r) => r.replace('VIA'.padEnd(13), via.padEnd(13)))].join('\n'),
});

describe('lookUpMember', () => {
  const cp2 = row('VIA', '2ba6e48b8cf1a0c1', 'talos-prd-cp-2', '10.0.30.12');
  const cp3 = row('VIA', '91d7fd8bcae7a0e2', 'talos-prd-cp-3', '10.0.30.13');

  it('finds the member by its peer address through the first control plane that answers', async () => {
    const t = talosctl({ '10.0.30.11': members('10.0.30.11', cp2, cp3) });
    const found = await lookUpMember(t, ['10.0.30.11', '10.0.30.12'], { address: '10.0.30.13', hostname: 'talos-prd-cp-3' }, signal);
    expect(found.member?.id).toBe('91d7fd8bcae7a0e2');
    expect(found.named).toBeUndefined();
    expect(found.via).toBe('10.0.30.11');
    expect(t.asked).toEqual(['10.0.30.11']);
  });

  it.each([
    [
      // A stale or tampered name must never pick the member: removing the wrong one can lose quorum.
      'a member of that name at another address is reported as named, never as its member',
      [row('VIA', 'aaaaaaaaaaaaaaaa', 'talos-prd-cp-3', '10.0.30.99'), cp2],
      undefined,
      'aaaaaaaaaaaaaaaa',
    ],
    ['a node that is no member: neither', [cp2], undefined, undefined],
    [
      'a member added but not started (no hostname) is found by its address',
      [row('VIA', 'bbbbbbbbbbbbbbbb', '', '10.0.30.13', true), cp2],
      'bbbbbbbbbbbbbbbb',
      undefined,
    ],
    [
      'its own member and another of the same name: both',
      [cp3, row('VIA', 'cccccccccccccccc', 'talos-prd-cp-3', '10.0.30.98')],
      '91d7fd8bcae7a0e2',
      'cccccccccccccccc',
    ],
  ])('%s', async (_case, rows, memberId, namedId) => {
    const t = talosctl({ '10.0.30.11': members('10.0.30.11', ...rows) });
    const found = await lookUpMember(t, ['10.0.30.11'], { address: '10.0.30.13', hostname: 'talos-prd-cp-3' }, signal);
    expect(found.member?.id).toBe(memberId);
    expect(found.named?.id).toBe(namedId);
    expect(found.via).toBe('10.0.30.11');
  });

  it('without a hostname reports no named member', async () => {
    const t = talosctl({ '10.0.30.11': members('10.0.30.11', row('VIA', 'aaaaaaaaaaaaaaaa', 'talos-prd-cp-3', '10.0.30.99')) });
    const found = await lookUpMember(t, ['10.0.30.11'], { address: '10.0.30.13' }, signal);
    expect(found).toMatchObject({ via: '10.0.30.11' });
    expect(found.member).toBeUndefined();
    expect(found.named).toBeUndefined();
  });

  it('goes on past a control plane that fails, answers nothing or answers unreadably, keeping why as evidence', async () => {
    const t = talosctl({
      '10.0.30.11': { exitCode: 1, stderr: 'rpc error\nconnection refused' },
      '10.0.30.12': { exitCode: 0, stdout: '  \n' },
      '10.0.30.13': { exitCode: 0, stdout: 'not a table at all' },
      '10.0.30.14': members('10.0.30.14', cp2),
    });
    const found = await lookUpMember(t, ['10.0.30.11', '10.0.30.12', '10.0.30.13', '10.0.30.14'], { address: '10.0.30.12' }, signal);
    expect(t.asked).toEqual(['10.0.30.11', '10.0.30.12', '10.0.30.13', '10.0.30.14']);
    expect(found.via).toBe('10.0.30.14');
    expect(found.member?.id).toBe('2ba6e48b8cf1a0c1');
    expect(found.evidence[0]).toBe('etcd members via 10.0.30.11: connection refused');
    expect(found.evidence[1]).toBe('etcd members via 10.0.30.12: no answer');
    expect(found.evidence[2]).toMatch(/^etcd members via 10\.0\.30\.13: unreadable \(/);
    expect(found.evidence[3]).toBe('etcd members via 10.0.30.14: talos-prd-cp-2 2ba6e48b8cf1a0c1');
  });

  it('when no control plane answers, says nothing of membership (via unset: unknown, not "no member")', async () => {
    const t = talosctl({});
    const found = await lookUpMember(t, ['10.0.30.11', '10.0.30.12'], { address: '10.0.30.13' }, signal);
    expect(found).toEqual({
      evidence: ['etcd members via 10.0.30.11: connection refused', 'etcd members via 10.0.30.12: connection refused'],
    });
  });

  it('lists learners and members not started in the evidence', async () => {
    const t = talosctl({ '10.0.30.11': members('10.0.30.11', cp2, row('VIA', 'bbbbbbbbbbbbbbbb', '', '10.0.30.13', true)) });
    const found = await lookUpMember(t, ['10.0.30.11'], { address: '10.0.30.13' }, signal);
    expect(found.evidence).toEqual([
      'etcd members via 10.0.30.11: talos-prd-cp-2 2ba6e48b8cf1a0c1, (not started) bbbbbbbbbbbbbbbb learner',
    ]);
  });
});
