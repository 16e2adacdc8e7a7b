import { describe, expect, it } from 'vitest';
import { parseEtcdMembers } from '../../../src/talos/parse-etcd-members.ts';
import { ParseError } from '../../../src/talos/parse-error.ts';

describe('parseEtcdMembers', () => {
  it('parses members, including one added but not started (no hostname, no client URLs)', () => {
    const stdout = `NODE         ID                 HOSTNAME     PEER URLS                 CLIENT URLS               LEARNER
10.0.30.11   ecebb05b59a776f1   talos-cp-1   https://10.0.30.11:2380   https://10.0.30.11:2379   false
10.0.30.11   2ba6e48b8cf1a0c1   talos-cp-2   https://10.0.30.12:2380   https://10.0.30.12:2379   false
10.0.30.11   91d7fd8bcae7a0e2                https://10.0.30.13:2380                             true
`;

    expect(parseEtcdMembers(stdout)).toEqual([
      {
        node: '10.0.30.11',
        id: 'ecebb05b59a776f1',
        hostname: 'talos-cp-1',
        peerUrls: ['https://10.0.30.11:2380'],
        clientUrls: ['https://10.0.30.11:2379'],
        learner: false,
      },
      {
        node: '10.0.30.11',
        id: '2ba6e48b8cf1a0c1',
        hostname: 'talos-cp-2',
        peerUrls: ['https://10.0.30.12:2380'],
        clientUrls: ['https://10.0.30.12:2379'],
        learner: false,
      },
      { node: '10.0.30.11', id: '91d7fd8bcae7a0e2', hostname: '', peerUrls: ['https://10.0.30.13:2380'], clientUrls: [], learner: true },
    ]);
  });

  it('parses the old form without NODE and LEARNER, and comma-joined URLs', () => {
    const stdout = `ID                 HOSTNAME   PEER URLS                                      CLIENT URLS
2ba6e48b8cf1a0c1   node1      https://10.0.0.1:2380,https://[fd00::1]:2380   https://10.0.0.1:2379
`;

    expect(parseEtcdMembers(stdout)).toEqual([
      {
        id: '2ba6e48b8cf1a0c1',
        hostname: 'node1',
        peerUrls: ['https://10.0.0.1:2380', 'https://[fd00::1]:2380'],
        clientUrls: ['https://10.0.0.1:2379'],
      },
    ]);
  });

  it('refuses a LEARNER cell that is not a boolean', () => {
    const stdout =
      'ID                 HOSTNAME   PEER URLS   CLIENT URLS   LEARNER\n2ba6e48b8cf1a0c1   node1      https://a   https://b     maybe\n';

    expect(() => parseEtcdMembers(stdout)).toThrow('LEARNER should be true or false, found "maybe"');
  });

  it('throws a ParseError for empty output', () => {
    expect(() => parseEtcdMembers('')).toThrow(ParseError);
  });
});
