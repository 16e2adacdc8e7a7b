import { describe, expect, it } from 'vitest';
import { ParseError } from '../../../src/talos/parse-error.ts';
import { parseTable, parseTableRows } from '../../../src/talos/parse-table.ts';

describe('parseTable', () => {
  it('keys cells by header names that contain single spaces', () => {
    const stdout = [
      'NODE         ID                 HOSTNAME     PEER URLS                 CLIENT URLS               LEARNER',
      '10.0.30.11   ecebb05b59a776f1   talos-cp-1   https://10.0.30.11:2380   https://10.0.30.11:2379   false',
    ].join('\n');

    const rows = parseTable(stdout);

    expect(rows).toEqual([
      {
        NODE: '10.0.30.11',
        ID: 'ecebb05b59a776f1',
        HOSTNAME: 'talos-cp-1',
        'PEER URLS': 'https://10.0.30.11:2380',
        'CLIENT URLS': 'https://10.0.30.11:2379',
        LEARNER: 'false',
      },
    ]);
  });

  it('parses a header without rows as an empty table', () => {
    expect(parseTable('NODE   MEMBER   ALARM\n')).toEqual([]);
  });

  it('fills an empty trailing cell with an empty string', () => {
    const stdout = 'NODE         LEARNER   ERRORS\n10.0.30.12   false     \n';

    expect(parseTable(stdout)).toEqual([{ NODE: '10.0.30.12', LEARNER: 'false', ERRORS: '' }]);
  });

  it('places an empty middle cell by column position when the row is aligned', () => {
    const stdout = [
      'NODE         ID                 HOSTNAME     PEER URLS                 CLIENT URLS               LEARNER',
      '10.0.30.11   91d7fd8bcae7a0e2                https://10.0.30.13:2380                             true',
    ].join('\n');

    const [row] = parseTable(stdout);

    expect(row).toEqual({
      NODE: '10.0.30.11',
      ID: '91d7fd8bcae7a0e2',
      HOSTNAME: '',
      'PEER URLS': 'https://10.0.30.13:2380',
      'CLIENT URLS': '',
      LEARNER: 'true',
    });
  });

  it('splits rows that are not aligned with the header on runs of spaces', () => {
    const stdout = 'NODE   MEMBER   DB SIZE   IN USE\n172.20.0.3   ecebb05b59a776f1   21 MB     6.0 MB (29.08%)\n';

    expect(parseTable(stdout)).toEqual([
      { NODE: '172.20.0.3', MEMBER: 'ecebb05b59a776f1', 'DB SIZE': '21 MB', 'IN USE': '6.0 MB (29.08%)' },
    ]);
  });

  it('keeps columns it does not know and suffixes repeated header names', () => {
    const stdout = [
      'NODE         NAMESPACE   TYPE              ID   VERSION   NAME          VERSION',
      '172.20.0.2   runtime     ExtensionStatus   0    1         iscsi-tools   v0.2.0',
    ].join('\n');

    expect(parseTable(stdout)).toEqual([
      {
        NODE: '172.20.0.2',
        NAMESPACE: 'runtime',
        TYPE: 'ExtensionStatus',
        ID: '0',
        VERSION: '1',
        NAME: 'iscsi-tools',
        'VERSION#2': 'v0.2.0',
      },
    ]);
  });

  it('gives the free-text last column the surplus words of an unaligned row', () => {
    const stdout = 'SERVICE   LAST EVENT\nkubelet  Health check failed:  connection refused\n';

    expect(parseTable(stdout)).toEqual([{ SERVICE: 'kubelet', 'LAST EVENT': 'Health check failed:  connection refused' }]);
  });

  it('accepts Windows line endings', () => {
    expect(parseTableRows('NODE   STAGE\r\nk8s-2  running\r\n').rows).toEqual([['k8s-2', 'running']]);
  });

  it.each([
    ['empty output', ''],
    ['whitespace', '  \n\n '],
    ['a lower-case header', 'hello world\nfoo   bar\n'],
    ['an error message instead of a table', 'error getting members: rpc error: code = Unavailable\n'],
  ])('throws a ParseError for %s', (_, stdout) => {
    expect(() => parseTable(stdout, 'talosctl etcd members')).toThrow(ParseError);
  });

  it('names the command and the offending header in the error', () => {
    expect(() => parseTable('oops   nope\n', 'talosctl etcd members')).toThrow(
      'cannot parse talosctl etcd members output: expected a header of upper-case column names, found "oops" at "oops   nope"',
    );
  });
});
