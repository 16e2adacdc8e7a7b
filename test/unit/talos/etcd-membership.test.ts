import { describe, expect, it } from 'vitest';
import type { RunResult } from '../../../src/exec/process-runner.ts';
import { observeEtcdMembership, quorumWhileRebooting } from '../../../src/talos/etcd-membership.ts';
import type { Talosctl, TalosctlCallOptions } from '../../../src/talos/talosctl.ts';

const CONTROL_PLANES = ['10.0.30.11', '10.0.30.12', '10.0.30.13'];

/** `etcd status` with 10.0.30.13 failing, as talosctl ≤1.13 prints a partial failure. */
const STATUS_TWO_OF_THREE = {
  stdout: `NODE         MEMBER             DB SIZE   IN USE            LEADER             RAFT INDEX   RAFT TERM   RAFT APPLIED INDEX   LEARNER   PROTOCOL   STORAGE   ERRORS
10.0.30.11   ecebb05b59a776f1   21 MB     6.0 MB (29.08%)   ecebb05b59a776f1   53391        4           53391                false     3.6.0      3.6.0     
10.0.30.12   2ba6e48b8cf1a0c1   21 MB     6.1 MB (29.21%)   ecebb05b59a776f1   53391        4           53391                false     3.6.0      3.6.0     
`,
  stderr: `WARNING: 1 error occurred:
\t* 10.0.30.13: rpc error: code = Unknown desc = failed to create etcd client: error building etcd client: context deadline exceeded

`,
};

const MEMBERS_THREE = `NODE         ID                 HOSTNAME     PEER URLS                 CLIENT URLS               LEARNER
10.0.30.11   ecebb05b59a776f1   talos-cp-1   https://10.0.30.11:2380   https://10.0.30.11:2379   false
10.0.30.11   2ba6e48b8cf1a0c1   talos-cp-2   https://10.0.30.12:2380   https://10.0.30.12:2379   false
10.0.30.11   91d7fd8bcae7a0e2   talos-cp-3   https://10.0.30.13:2380   https://10.0.30.13:2379   false
`;

interface Call {
  args: string[];
  nodes: string[];
  endpoints: string[] | undefined;
}

/** A talosctl answering from recorded output, by command. */
function recordedTalosctl(answers: Record<string, { stdout: string; stderr?: string }>): Talosctl & { calls: Call[] } {
  const calls: Call[] = [];
  return {
    binary: '/opt/talosctl',
    calls,
    run(args: string[], nodes: string[], options: TalosctlCallOptions = {}) {
      calls.push({ args, nodes, endpoints: options.endpoints });
      const answer = answers[args.join(' ')] ?? { stdout: '' };
      const result: RunResult = {
        command: ['talosctl', ...args],
        stdout: answer.stdout,
        stderr: answer.stderr ?? '',
        exitCode: 0,
        durationMs: 1,
      };
      return Promise.resolve(result);
    },
  };
}

describe('observeEtcdMembership', () => {
  it('counts the voting members and the healthy ones, asking through the other control planes', async () => {
    // Arrange
    const talosctl = recordedTalosctl({ 'etcd status': STATUS_TWO_OF_THREE, 'etcd members': { stdout: MEMBERS_THREE } });

    // Act
    const membership = await observeEtcdMembership(talosctl, CONTROL_PLANES, '10.0.30.12');

    // Assert
    expect(membership.memberCount).toBe(3);
    expect(membership.healthy).toEqual(['10.0.30.11', '10.0.30.12']);
    expect(membership.isMember('10.0.30.13')).toBe(true);
    expect(membership.isMember('10.0.30.14')).toBe(false);
    expect(membership.evidence.at(-1)).toMatch(/^10\.0\.30\.13: .*context deadline exceeded/);
    expect(talosctl.calls.map((c) => [c.args.join(' '), c.nodes, c.endpoints])).toEqual([
      ['etcd status', CONTROL_PLANES, ['10.0.30.11', '10.0.30.13']],
      ['etcd members', ['10.0.30.11'], ['10.0.30.11', '10.0.30.13']],
    ]);
  });

  it('falls back to the inventory count when the membership cannot be read, and says so', async () => {
    const talosctl = recordedTalosctl({
      'etcd status': STATUS_TWO_OF_THREE,
      'etcd members': { stdout: '', stderr: 'rpc error: code = Unknown desc = etcdserver: no leader\n' },
    });

    const membership = await observeEtcdMembership(talosctl, CONTROL_PLANES, '10.0.30.13');

    expect(membership.memberCount).toBe(3);
    expect(membership.isMember('10.0.30.13')).toBeUndefined();
    expect(membership.evidence.at(-1)).toBe(
      "etcd members via 10.0.30.11: rpc error: code = Unknown desc = etcdserver: no leader; counting the inventory's 3 control planes",
    );
  });
});

describe('quorumWhileRebooting', () => {
  const membership = (healthy: string[]) => ({ memberCount: 3, healthy, isMember: () => true, evidence: [] });

  it('allows a reboot when the other healthy members are a majority', () => {
    expect(quorumWhileRebooting(membership(CONTROL_PLANES), '10.0.30.12')).toEqual({
      ok: true,
      explanation: '3 members need 2 for quorum; while 10.0.30.12 reboots 2 other healthy members remain, which keeps quorum',
    });
  });

  it('refuses a reboot that would leave one healthy member of three', () => {
    expect(quorumWhileRebooting(membership(['10.0.30.11', '10.0.30.12']), '10.0.30.12')).toEqual({
      ok: false,
      explanation: '3 members need 2 for quorum; while 10.0.30.12 reboots 1 other healthy member remains, which cannot keep quorum',
    });
  });
});
