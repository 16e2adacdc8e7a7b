import { describe, expect, it } from 'vitest';
import { parseNodeErrors } from '../../../src/talos/parse-node-errors.ts';

describe('parseNodeErrors', () => {
  it('reads the ≤1.13 multierror warning', () => {
    const stderr =
      'WARNING: 1 error occurred:\n\t* 192.168.1.54: rpc error: code = Unimplemented desc = member list is only available on control plane nodes\n\n';

    expect(parseNodeErrors(stderr)).toEqual([
      {
        node: '192.168.1.54',
        message: 'rpc error: code = Unimplemented desc = member list is only available on control plane nodes',
        code: 'Unimplemented',
      },
    ]);
  });

  it('reads several items, including an IPv6 node', () => {
    const stderr = [
      'WARNING: 2 errors occurred:',
      '\t* 10.0.30.13: rpc error: code = Unavailable desc = connection error: desc = "transport: Error while dialing: dial tcp 10.0.30.13:50000: connect: no route to host"',
      '\t* fd00::13: rpc error: code = DeadlineExceeded desc = context deadline exceeded',
      '',
      '',
    ].join('\n');

    expect(parseNodeErrors(stderr).map((e) => [e.node, e.code])).toEqual([
      ['10.0.30.13', 'Unavailable'],
      ['fd00::13', 'DeadlineExceeded'],
    ]);
  });

  it('reads the ≤1.13 multierror of a command where every node failed', () => {
    const stderr = [
      'error getting version: 2 errors occurred:',
      '\t* 10.0.30.11: rpc error: code = Unavailable desc = connection refused',
      '\t* 10.0.30.12: rpc error: code = Unavailable desc = connection refused',
      '',
      '',
    ].join('\n');

    expect(parseNodeErrors(stderr).map((e) => e.node)).toEqual(['10.0.30.11', '10.0.30.12']);
  });

  it('reads the 1.14 "error from node" lines', () => {
    const stderr = [
      'error from node 10.0.30.12: rpc error: code = Unavailable desc = connection refused',
      'error getting version from node 10.0.30.13: rpc error: code = DeadlineExceeded desc = context deadline exceeded',
    ].join('\n');

    expect(parseNodeErrors(stderr)).toEqual([
      { node: '10.0.30.12', message: 'rpc error: code = Unavailable desc = connection refused', code: 'Unavailable' },
      { node: '10.0.30.13', message: 'rpc error: code = DeadlineExceeded desc = context deadline exceeded', code: 'DeadlineExceeded' },
    ]);
  });

  it('reads quoted-node rejections and ignores quoted progress lines', () => {
    const stderr = [
      '"10.0.0.5": waiting for actor ID',
      '"10.0.0.5": rpc error: code = FailedPrecondition desc = error validating etcd for upgrade: etcd member count(2) is insufficient to maintain quorum if upgrade commences',
    ].join('\n');

    expect(parseNodeErrors(stderr)).toEqual([
      {
        node: '10.0.0.5',
        message:
          'rpc error: code = FailedPrecondition desc = error validating etcd for upgrade: etcd member count(2) is insufficient to maintain quorum if upgrade commences',
        code: 'FailedPrecondition',
      },
    ]);
  });

  it('reads the 1.13+ upgrade exit-code failure', () => {
    expect(parseNodeErrors('node 10.0.0.5: upgrade failed with exit code 1\n')).toEqual([
      { node: '10.0.0.5', message: 'upgrade failed with exit code 1' },
    ]);
  });

  it('attaches continuation lines of a multi-line item to it', () => {
    const stderr = 'WARNING: 1 error occurred:\n\t* 10.0.0.7: failed to run:\nexit status 1\n\n';

    expect(parseNodeErrors(stderr)).toEqual([{ node: '10.0.0.7', message: 'failed to run:\nexit status 1' }]);
  });

  it('ignores version-skew warnings, unattributed errors and noise', () => {
    const stderr = [
      'WARNING: 10.0.64.1: server version 1.8.4 is older than client version 1.9.5',
      'error getting version: rpc error: code = Unavailable desc = connection refused',
      'nodes are not set for the command: please use `--nodes` flag or configuration file to set the nodes to run the command against',
    ].join('\n');

    expect(parseNodeErrors(stderr)).toEqual([]);
  });

  it('returns nothing for empty stderr', () => {
    expect(parseNodeErrors('')).toEqual([]);
  });
});
