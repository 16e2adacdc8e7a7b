import { describe, expect, it } from 'vitest';
import { parseEtcdStatus } from '../../../src/talos/parse-etcd-status.ts';
import { ParseError } from '../../../src/talos/parse-error.ts';

/** talosctl ≥1.11, three control planes through one endpoint: NODE, PROTOCOL and STORAGE columns. */
const THREE_NODES_1_11 = `NODE         MEMBER             DB SIZE   IN USE            LEADER             RAFT INDEX   RAFT TERM   RAFT APPLIED INDEX   LEARNER   PROTOCOL   STORAGE   ERRORS
10.0.30.11   ecebb05b59a776f1   21 MB     6.0 MB (29.08%)   ecebb05b59a776f1   53391        4           53391                false     3.6.0      3.6.0     
10.0.30.12   2ba6e48b8cf1a0c1   21 MB     6.1 MB (29.21%)   ecebb05b59a776f1   53391        4           53391                false     3.6.0      3.6.0     
10.0.30.13   91d7fd8bcae7a0e2   20 MB     5.9 MB (29.50%)   ecebb05b59a776f1   53391        4           53391                false     3.6.0      3.6.0     
`;

/** talosctl ≤1.10 columns, with an etcd NOSPACE alarm on one member. */
const NOSPACE_1_10 = `NODE         MEMBER             DB SIZE   IN USE            LEADER             RAFT INDEX   RAFT TERM   RAFT APPLIED INDEX   LEARNER   ERRORS
10.0.30.11   ecebb05b59a776f1   2.1 GB    2.1 GB (99.87%)   ecebb05b59a776f1   918273       7           918273               false     memberID:17055213424935383793 alarm:NOSPACE 
10.0.30.12   2ba6e48b8cf1a0c1   2.1 GB    2.1 GB (99.80%)   ecebb05b59a776f1   918273       7           918273               false     
`;

/** One node queried directly (node == endpoint, ≤1.13): no NODE column. */
const SINGLE_NO_NODE = `MEMBER             DB SIZE   IN USE            LEADER             RAFT INDEX   RAFT TERM   RAFT APPLIED INDEX   LEARNER   PROTOCOL   STORAGE   ERRORS
c4b8a2b5b2a1e9f0   8.2 MB    3.1 MB (37.80%)   c4b8a2b5b2a1e9f0   120044       2           120044               false     3.6.4      3.6.0     
`;

describe('parseEtcdStatus', () => {
  it('parses the ≥1.11 table with NODE, PROTOCOL and STORAGE', () => {
    const rows = parseEtcdStatus(THREE_NODES_1_11);

    expect(rows).toEqual([
      {
        node: '10.0.30.11',
        member: 'ecebb05b59a776f1',
        dbSize: '21 MB',
        inUse: '6.0 MB (29.08%)',
        leader: 'ecebb05b59a776f1',
        raftIndex: 53391,
        raftTerm: 4,
        raftAppliedIndex: 53391,
        learner: false,
        protocol: '3.6.0',
        storage: '3.6.0',
        errors: [],
      },
      expect.objectContaining({ node: '10.0.30.12', member: '2ba6e48b8cf1a0c1', inUse: '6.1 MB (29.21%)' }),
      expect.objectContaining({ node: '10.0.30.13', member: '91d7fd8bcae7a0e2', dbSize: '20 MB' }),
    ]);
  });

  it('parses the ≤1.10 columns and splits the ERRORS cell', () => {
    const rows = parseEtcdStatus(NOSPACE_1_10);

    expect(rows.map((r) => ({ node: r.node, errors: r.errors, protocol: r.protocol }))).toEqual([
      { node: '10.0.30.11', errors: ['memberID:17055213424935383793 alarm:NOSPACE'], protocol: undefined },
      { node: '10.0.30.12', errors: [], protocol: undefined },
    ]);
    expect(rows[0]).not.toHaveProperty('storage');
  });

  it('leaves node undefined when the NODE column is absent', () => {
    const [row] = parseEtcdStatus(SINGLE_NO_NODE);

    expect(row).not.toHaveProperty('node');
    expect(row).toEqual(expect.objectContaining({ member: 'c4b8a2b5b2a1e9f0', raftIndex: 120044, protocol: '3.6.4', storage: '3.6.0' }));
  });

  it('parses the documentation row, whose cells are not aligned with the header', () => {
    const stdout = `NODE   MEMBER   DB SIZE   IN USE   LEADER   RAFT INDEX   RAFT TERM   RAFT APPLIED INDEX   LEARNER   ERRORS
172.20.0.3   ecebb05b59a776f1   21 MB     6.0 MB (29.08%)   ecebb05b59a776f1   53391   4   53391   false
`;

    expect(parseEtcdStatus(stdout)).toEqual([
      {
        node: '172.20.0.3',
        member: 'ecebb05b59a776f1',
        dbSize: '21 MB',
        inUse: '6.0 MB (29.08%)',
        leader: 'ecebb05b59a776f1',
        raftIndex: 53391,
        raftTerm: 4,
        raftAppliedIndex: 53391,
        learner: false,
        errors: [],
      },
    ]);
  });

  it('reads the all-zero leader of a member that sees no leader', () => {
    const stdout = `NODE          MEMBER             DB SIZE   IN USE            LEADER             RAFT INDEX   RAFT TERM   RAFT APPLIED INDEX   LEARNER   PROTOCOL   STORAGE   ERRORS
10.0.20.205   ecebb05b59a776f1   21 MB     6.0 MB (29.08%)   0000000000000000   53391        5           53391                false     3.6.0      3.6.0     
`;

    expect(parseEtcdStatus(stdout)[0]?.leader).toBe('0000000000000000');
  });

  it('parses a header with no rows (every node failed) as no rows', () => {
    const stdout =
      'NODE   MEMBER   DB SIZE   IN USE   LEADER   RAFT INDEX   RAFT TERM   RAFT APPLIED INDEX   LEARNER   PROTOCOL   STORAGE   ERRORS\n';

    expect(parseEtcdStatus(stdout)).toEqual([]);
  });

  it('refuses a row cut off in the middle', () => {
    const truncated = THREE_NODES_1_11.split('\n').slice(0, 2).join('\n').slice(0, -60);

    expect(() => parseEtcdStatus(truncated)).toThrow(ParseError);
  });

  it('refuses a table that is not etcd status', () => {
    expect(() => parseEtcdStatus('NODE       SERVICE   STATE\n10.0.0.2   etcd      Running\n')).toThrow(
      'cannot parse talosctl etcd status output: the header lacks the column(s) MEMBER, DB SIZE, IN USE, LEADER, RAFT INDEX, RAFT TERM, RAFT APPLIED INDEX, LEARNER, ERRORS',
    );
  });

  it('refuses a member ID that is not hex', () => {
    const bad = THREE_NODES_1_11.replace('2ba6e48b8cf1a0c1   21 MB', 'not-a-member-id!   21 MB');

    expect(() => parseEtcdStatus(bad)).toThrow(/MEMBER should be a hex member ID/);
  });

  it.each(['', '\n', 'rpc error: code = Unavailable desc = connection refused'])('throws a ParseError for %j', (stdout) => {
    expect(() => parseEtcdStatus(stdout)).toThrow(ParseError);
  });
});
