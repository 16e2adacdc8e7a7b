import { describe, expect, it } from 'vitest';
import { ParseError } from '../../../src/talos/parse-error.ts';
import { parseTalosVersion, parseTalosVersionJson } from '../../../src/talos/parse-version.ts';

const CLIENT = `Client:
\tTag:         v1.11.0
\tSHA:         348472f9
\tBuilt:       
\tGo version:  go1.24.6
\tOS/Arch:     linux/amd64
`;

function server(node: string, tag: string): string {
  return `\tNODE:        ${node}
\tTag:         ${tag}
\tSHA:         348472f9
\tBuilt:       
\tGo version:  go1.24.6
\tOS/Arch:     linux/amd64
\tEnabled:     RBAC
`;
}

describe('parseTalosVersion', () => {
  it('reads the client and one server', () => {
    const stdout = `${CLIENT}Server:\n${server('10.4.64.2', 'v1.11.0')}`;

    expect(parseTalosVersion(stdout)).toEqual({ client: { tag: 'v1.11.0' }, servers: [{ node: '10.4.64.2', tag: 'v1.11.0' }] });
  });

  it('reads one block per node, in order', () => {
    const stdout = `${CLIENT}Server:\n${server('10.0.30.11', 'v1.12.11')}${server('10.0.30.12', 'v1.12.11')}${server('10.0.30.13', 'v1.11.6')}`;

    expect(parseTalosVersion(stdout).servers).toEqual([
      { node: '10.0.30.11', tag: 'v1.12.11' },
      { node: '10.0.30.12', tag: 'v1.12.11' },
      { node: '10.0.30.13', tag: 'v1.11.6' },
    ]);
  });

  it('reads the --short client line', () => {
    const stdout = `Client:\nTalos v1.11.0\nServer:\n${server('10.4.64.2', 'v1.10.9')}`;

    expect(parseTalosVersion(stdout)).toEqual({ client: { tag: 'v1.11.0' }, servers: [{ node: '10.4.64.2', tag: 'v1.10.9' }] });
  });

  it('reads --client output as a client without servers', () => {
    expect(parseTalosVersion(CLIENT)).toEqual({ client: { tag: 'v1.11.0' }, servers: [] });
  });

  it('reads a Server header without entries as no server answering', () => {
    expect(parseTalosVersion(`${CLIENT}Server:\n`)).toEqual({ client: { tag: 'v1.11.0' }, servers: [] });
  });

  it('leaves the node undefined when the NODE value is empty', () => {
    const stdout = `${CLIENT}Server:\n\tNODE:        \n\tTag:         v1.11.0\n`;

    expect(parseTalosVersion(stdout).servers).toEqual([{ node: undefined, tag: 'v1.11.0' }]);
  });

  it('refuses output cut off between NODE and Tag', () => {
    const stdout = `${CLIENT}Server:\n${server('10.0.30.11', 'v1.12.11')}\tNODE:        10.0.30.12\n`;

    expect(() => parseTalosVersion(stdout)).toThrow('the last NODE has no Tag line: the output is truncated');
  });

  it('refuses a Tag that is not a version', () => {
    expect(() => parseTalosVersion(`Client:\n\tTag:         banana\n`)).toThrow(/Tag should be a version like v1.11.0/);
  });

  it.each([
    ['empty', ''],
    ['an error', 'error getting version: rpc error: code = Unavailable desc = connection refused\n'],
    ['untabbed server lines', 'Client:\n\tTag:  v1.11.0\nServer:\nNODE: 10.0.0.1\n'],
  ])('throws a ParseError for %s', (_, stdout) => {
    expect(() => parseTalosVersion(stdout)).toThrow(ParseError);
  });
});

describe('parseTalosVersionJson', () => {
  it('reads one protojson object per node, whatever the spacing', () => {
    const stdout = [
      '{"metadata":{"hostname":"10.0.0.2"},"version":{"tag":"v1.11.0","sha":"348472f9","goVersion":"go1.24.6","os":"linux","arch":"amd64"},"platform":{"name":"metal","mode":"metal"},"features":{"rbac":true}}',
      '{"metadata": {"hostname": "10.0.0.3"}, "version": {"tag": "v1.11.0"}}',
      '{"version":{"tag":"v1.10.9"}}',
    ].join('\n');

    expect(parseTalosVersionJson(stdout)).toEqual({
      servers: [
        { node: '10.0.0.2', tag: 'v1.11.0' },
        { node: '10.0.0.3', tag: 'v1.11.0' },
        { node: undefined, tag: 'v1.10.9' },
      ],
    });
  });

  it('refuses an object without version.tag', () => {
    expect(() => parseTalosVersionJson('{"metadata":{"hostname":"10.0.0.2"}}')).toThrow('an object has no version.tag');
  });

  it('refuses truncated JSON', () => {
    expect(() => parseTalosVersionJson('{"metadata":{"hostname":"10.0.0.2"},"version":{"tag":"v1.1')).toThrow(ParseError);
  });
});
