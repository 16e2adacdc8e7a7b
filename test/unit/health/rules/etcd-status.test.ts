import { describe, expect, it } from 'vitest';
import { evaluateEtcdStatus } from '../../../../src/health/rules/etcd-status.ts';
import type { EtcdStatusRow } from '../../../../src/talos/parse-etcd-status.ts';

const CPS = ['10.0.30.11', '10.0.30.12', '10.0.30.13'];
const MEMBERS = ['ecebb05b59a776f1', '2ba6e48b8cf1a0c1', '91d7fd8bcae7a0e2'];

function row(node: string | undefined, member: string, leader: string, extra: Partial<EtcdStatusRow> = {}): EtcdStatusRow {
  const base: EtcdStatusRow = {
    member,
    dbSize: '21 MB',
    inUse: '6.0 MB (29.08%)',
    leader,
    raftIndex: 53391,
    raftTerm: 4,
    raftAppliedIndex: 53391,
    learner: false,
    errors: [],
    ...extra,
  };
  return node === undefined ? base : { node, ...base };
}

function healthyRows(): EtcdStatusRow[] {
  return CPS.map((node, i) => row(node, MEMBERS[i] ?? '', MEMBERS[0] ?? ''));
}

describe('evaluateEtcdStatus', () => {
  it('passes and names the leader and its node', () => {
    const result = evaluateEtcdStatus(healthyRows(), CPS, []);

    expect(result).toEqual({
      id: 'etcd-status',
      title: 'etcd status (10.0.30.11, 10.0.30.12, 10.0.30.13)',
      status: 'passed',
      summary: 'leader ecebb05b59a776f1 on 10.0.30.11; 3/3 members agree, no errors',
      evidence: [
        '10.0.30.11  member ecebb05b59a776f1  leader ecebb05b59a776f1  term 4  index 53391/53391  db 21 MB  in use 6.0 MB (29.08%)  voter  no errors',
        '10.0.30.12  member 2ba6e48b8cf1a0c1  leader ecebb05b59a776f1  term 4  index 53391/53391  db 21 MB  in use 6.0 MB (29.08%)  voter  no errors',
        '10.0.30.13  member 91d7fd8bcae7a0e2  leader ecebb05b59a776f1  term 4  index 53391/53391  db 21 MB  in use 6.0 MB (29.08%)  voter  no errors',
      ],
    });
  });

  it('attributes the single row without a NODE column to the single control plane', () => {
    const result = evaluateEtcdStatus([row(undefined, 'c4b8a2b5b2a1e9f0', 'c4b8a2b5b2a1e9f0')], ['10.0.20.204']);

    expect([result.status, result.summary]).toEqual(['passed', 'leader c4b8a2b5b2a1e9f0 on 10.0.20.204; 1/1 members agree, no errors']);
  });

  it('fails when a member sees no leader', () => {
    const rows = [row('10.0.20.205', MEMBERS[0] ?? '', '0000000000000000')];

    const result = evaluateEtcdStatus(rows, ['10.0.20.205']);

    expect([result.status, result.summary]).toEqual(['failed', 'etcd has no leader on 10.0.20.205']);
  });

  it('fails when members disagree on the leader', () => {
    const rows = healthyRows();
    rows[2] = row('10.0.30.13', MEMBERS[2] ?? '', MEMBERS[2] ?? '');

    const result = evaluateEtcdStatus(rows, CPS);

    expect(result.status).toBe('failed');
    expect(result.summary).toBe(
      'etcd members disagree on the leader: 10.0.30.11 sees ecebb05b59a776f1, 10.0.30.12 sees ecebb05b59a776f1, 10.0.30.13 sees 91d7fd8bcae7a0e2',
    );
  });

  it('fails on an alarm and shows it in the row', () => {
    const rows = healthyRows();
    rows[1] = row('10.0.30.12', MEMBERS[1] ?? '', MEMBERS[0] ?? '', { errors: ['memberID:17055213424935383793 alarm:NOSPACE'] });

    const result = evaluateEtcdStatus(rows, CPS);

    expect(result.summary).toBe('etcd on 10.0.30.12 reports memberID:17055213424935383793 alarm:NOSPACE');
    expect(result.evidence[1]).toContain('errors memberID:17055213424935383793 alarm:NOSPACE');
  });

  it('fails when an expected node errored, quoting the error', () => {
    const rows = healthyRows().slice(0, 2);
    const errors = [{ node: '10.0.30.13', message: 'rpc error: code = Unavailable desc = connection refused', code: 'Unavailable' }];

    const result = evaluateEtcdStatus(rows, CPS, errors);

    expect(result.status).toBe('failed');
    expect(result.summary).toBe('etcd status failed on 10.0.30.13: rpc error: code = Unavailable desc = connection refused');
    expect(result.evidence).toContain('10.0.30.13: rpc error: code = Unavailable desc = connection refused');
  });

  it('fails when an expected node is simply missing', () => {
    const result = evaluateEtcdStatus(healthyRows().slice(1), CPS);

    expect(result.summary).toBe('no etcd status from 10.0.30.11');
  });

  it('fails when the leader is none of the members', () => {
    const rows = CPS.map((node, i) => row(node, MEMBERS[i] ?? '', 'aaaaaaaaaaaaaaaa'));

    const result = evaluateEtcdStatus(rows, CPS);

    expect(result.summary).toBe(
      'the leader aaaaaaaaaaaaaaaa is none of the members that answered (ecebb05b59a776f1, 2ba6e48b8cf1a0c1, 91d7fd8bcae7a0e2)',
    );
  });

  it('fails when several rows lack a NODE column', () => {
    const rows = MEMBERS.map((m) => row(undefined, m, MEMBERS[0] ?? ''));

    expect(evaluateEtcdStatus(rows, CPS).status).toBe('failed');
  });

  it('fails with no control planes to check', () => {
    expect(evaluateEtcdStatus([], []).status).toBe('failed');
  });

  it('warns about a learner without failing', () => {
    const rows = healthyRows();
    rows[2] = row('10.0.30.13', MEMBERS[2] ?? '', MEMBERS[0] ?? '', { learner: true });

    const result = evaluateEtcdStatus(rows, CPS);

    expect(result.status).toBe('warning');
    expect(result.summary).toContain('member 91d7fd8bcae7a0e2 on 10.0.30.13 is a learner, not yet voting');
  });
});
