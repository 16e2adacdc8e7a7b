import { describe, expect, it } from 'vitest';
import { ParseError } from '../../../src/talos/parse-error.ts';
import { parseServiceInfo, parseServiceList } from '../../../src/talos/parse-service.ts';

/** `talosctl service etcd` from the docs: one node, events newest first. */
const ETCD_RUNNING = `NODE     172.20.0.2
ID       etcd
STATE    Running
HEALTH   OK
EVENTS   [Running]: Health check successful (3m21s ago)
         [Running]: Started task etcd (PID 2343) for container etcd (3m26s ago)
         [Preparing]: Creating service runner (3m26s ago)
         [Preparing]: Running pre state (3m26s ago)
         [Waiting]: Waiting for service "cri" to be "up", service "networkd" to be "up", service "timed" to be "up" (3m26s ago)
`;

/** With LAST HEALTH MESSAGE the key column is wider for the whole block. */
const ETCD_PREPARING = `NODE                  10.0.30.13
ID                    etcd
STATE                 Preparing
HEALTH                ?
LAST HEALTH MESSAGE   context deadline exceeded
EVENTS                [Preparing]: Running pre state (12s ago)
                      [Waiting]: Waiting for service "cri" to be "up" (15s ago)
`;

describe('parseServiceInfo', () => {
  it('parses a single-service block with its events newest first', () => {
    expect(parseServiceInfo(ETCD_RUNNING)).toEqual([
      {
        node: '172.20.0.2',
        id: 'etcd',
        state: 'Running',
        health: 'OK',
        events: [
          { state: 'Running', message: 'Health check successful', ago: '3m21s' },
          { state: 'Running', message: 'Started task etcd (PID 2343) for container etcd', ago: '3m26s' },
          { state: 'Preparing', message: 'Creating service runner', ago: '3m26s' },
          { state: 'Preparing', message: 'Running pre state', ago: '3m26s' },
          {
            state: 'Waiting',
            message: 'Waiting for service "cri" to be "up", service "networkd" to be "up", service "timed" to be "up"',
            ago: '3m26s',
          },
        ],
      },
    ]);
  });

  it('reads the last health message and the unknown health "?"', () => {
    const [info] = parseServiceInfo(ETCD_PREPARING);

    expect(info).toEqual({
      node: '10.0.30.13',
      id: 'etcd',
      state: 'Preparing',
      health: '?',
      lastHealthMessage: 'context deadline exceeded',
      events: [
        { state: 'Preparing', message: 'Running pre state', ago: '12s' },
        { state: 'Waiting', message: 'Waiting for service "cri" to be "up"', ago: '15s' },
      ],
    });
  });

  it('splits several nodes into several blocks', () => {
    const infos = parseServiceInfo(ETCD_RUNNING + ETCD_PREPARING);

    expect(infos.map((i) => [i.node, i.state, i.health, i.events.length])).toEqual([
      ['172.20.0.2', 'Running', 'OK', 5],
      ['10.0.30.13', 'Preparing', '?', 2],
    ]);
  });

  it('starts a new block at each ID when there are no NODE lines', () => {
    const stdout = `ID       etcd
STATE    Running
HEALTH   OK
EVENTS   [Running]: Health check successful (1m0s ago)
ID       etcd
STATE    Failed
HEALTH   Fail
EVENTS   [Failed]: Failed to run pre stage: failed to create data dir (2s ago)
`;

    expect(parseServiceInfo(stdout)).toEqual([
      { id: 'etcd', state: 'Running', health: 'OK', events: [{ state: 'Running', message: 'Health check successful', ago: '1m0s' }] },
      {
        id: 'etcd',
        state: 'Failed',
        health: 'Fail',
        events: [{ state: 'Failed', message: 'Failed to run pre stage: failed to create data dir', ago: '2s' }],
      },
    ]);
  });

  it('joins an event message that Go printed across lines', () => {
    const stdout = `ID       etcd
STATE    Running
HEALTH   Fail
EVENTS   [Running]: Health check failed: 1 error occurred:
	* context deadline exceeded (4s ago)
`;

    expect(parseServiceInfo(stdout)[0]?.events).toEqual([
      { state: 'Running', message: 'Health check failed: 1 error occurred:\n* context deadline exceeded', ago: '4s' },
    ]);
  });

  it('refuses output cut off inside an event', () => {
    const truncated = ETCD_RUNNING.slice(0, ETCD_RUNNING.indexOf('(3m26s ago)\n         [Waiting]') + 40);

    expect(() => parseServiceInfo(truncated)).toThrow(/no "\(… ago\)" age: the output is truncated/);
  });

  it('refuses a block without HEALTH', () => {
    expect(() => parseServiceInfo('NODE     10.0.0.2\nID       etcd\nSTATE    Running\n')).toThrow(
      'cannot parse talosctl service output: the block for node 10.0.0.2 has no HEALTH line',
    );
  });

  it('refuses a HEALTH value talosctl never prints', () => {
    expect(() => parseServiceInfo('ID       etcd\nSTATE    Running\nHEALTH   Great\n')).toThrow(/HEALTH should be OK, Fail or \?/);
  });

  it.each(['', 'service "etcd" is not registered on any nodes\n', 'hello'])('throws a ParseError for %j', (stdout) => {
    expect(() => parseServiceInfo(stdout)).toThrow(ParseError);
  });
});

describe('parseServiceList', () => {
  it('parses the list form, keeping the free-text last event', () => {
    const stdout = `NODE       SERVICE   STATE      HEALTH   LAST CHANGE   LAST EVENT
10.0.0.2   etcd      Running    OK       3m21s ago     Health check successful
10.0.0.2   kubelet   Running    Fail     12s ago       Health check failed: Get "http://127.0.0.1:10248/healthz": dial tcp 127.0.0.1:10248: connect: connection refused
10.0.0.2   udevd     Finished   ?        3m30s ago     Service finished successfully
`;

    expect(parseServiceList(stdout)).toEqual([
      { node: '10.0.0.2', service: 'etcd', state: 'Running', health: 'OK', lastChange: '3m21s ago', lastEvent: 'Health check successful' },
      {
        node: '10.0.0.2',
        service: 'kubelet',
        state: 'Running',
        health: 'Fail',
        lastChange: '12s ago',
        lastEvent: 'Health check failed: Get "http://127.0.0.1:10248/healthz": dial tcp 127.0.0.1:10248: connect: connection refused',
      },
      {
        node: '10.0.0.2',
        service: 'udevd',
        state: 'Finished',
        health: '?',
        lastChange: '3m30s ago',
        lastEvent: 'Service finished successfully',
      },
    ]);
  });

  it('refuses a table that is not the service list', () => {
    expect(() => parseServiceList('NODE   RESPONSE\n10.0.0.2   Service "etcd" restarted\n')).toThrow(ParseError);
  });
});
