import { describe, expect, it } from 'vitest';
import { ParseError } from '../../../src/talos/parse-error.ts';
import { extensionsFromGet, machineStatusesFromGet, parseGetJson, schematicsFromGet } from '../../../src/talos/parse-get.ts';

const SCHEMATIC = '613e1592b2da41ae5e265e8789429f22e121aab91cb4deb6bc3c0b6262961245';

/** `talosctl get extensions -o json`: concatenated 4-space-indented objects, not an array. */
const EXTENSIONS = `{
    "node": "172.20.0.2",
    "metadata": {
        "namespace": "runtime",
        "type": "ExtensionStatuses.runtime.talos.dev",
        "id": "0",
        "version": 1,
        "owner": "runtime.ExtensionStatusController",
        "phase": "running",
        "created": "2025-09-01T10:00:00Z",
        "updated": "2025-09-01T10:00:00Z"
    },
    "spec": {
        "image": "000.ghcr.io-siderolabs-iscsi-tools-v0.2.0.sqsh",
        "metadata": {
            "name": "iscsi-tools",
            "version": "v0.2.0",
            "author": "Sidero Labs",
            "description": "This system extension provides iSCSI tools",
            "compatibility": {
                "talos": {
                    "version": ">= v1.11.0"
                }
            }
        }
    }
}
{
    "node": "172.20.0.2",
    "metadata": {
        "namespace": "runtime",
        "type": "ExtensionStatuses.runtime.talos.dev",
        "id": "1",
        "version": 1
    },
    "spec": {
        "image": "",
        "metadata": {
            "name": "schematic",
            "version": "${SCHEMATIC}",
            "description": "Describes the schematic {} used to build this image"
        }
    }
}
`;

describe('parseGetJson', () => {
  it('parses a stream of concatenated objects', () => {
    const items = parseGetJson(EXTENSIONS);

    expect(items.map((i) => [i.node, i.metadata.id, i.metadata.type, i.metadata.version])).toEqual([
      ['172.20.0.2', '0', 'ExtensionStatuses.runtime.talos.dev', 1],
      ['172.20.0.2', '1', 'ExtensionStatuses.runtime.talos.dev', 1],
    ]);
    expect(items[0]?.metadata).toEqual(expect.objectContaining({ owner: 'runtime.ExtensionStatusController', phase: 'running' }));
  });

  it('leaves node undefined when it is empty (--insecure)', () => {
    const [item] = parseGetJson('{"node":"","metadata":{"id":"machine"},"spec":{"stage":"maintenance"}}');

    expect(item).toEqual({ metadata: { id: 'machine' }, spec: { stage: 'maintenance' } });
  });

  it('keeps a string spec and the watch event', () => {
    const [item] = parseGetJson('{"node":"10.0.0.2","metadata":{"id":"machine-type"},"spec":"controlplane","event":"created"}');

    expect(item).toEqual({ node: '10.0.0.2', metadata: { id: 'machine-type' }, spec: 'controlplane', event: 'created' });
  });

  it('refuses truncated output', () => {
    expect(() => parseGetJson(EXTENSIONS.slice(0, -40))).toThrow('a JSON value is not terminated: the output is truncated');
  });

  it.each(['', 'NODE   NAMESPACE   TYPE\n', '{"spec":{}}', '[1, 2]'])('throws a ParseError for %j', (stdout) => {
    expect(() => parseGetJson(stdout)).toThrow(ParseError);
  });
});

describe('extensionsFromGet and schematicsFromGet', () => {
  it('separates the extensions from the schematic pseudo-extension', () => {
    const items = parseGetJson(EXTENSIONS);

    expect(extensionsFromGet(items)).toEqual([{ node: '172.20.0.2', name: 'iscsi-tools', version: 'v0.2.0' }]);
    expect(schematicsFromGet(items)).toEqual([{ node: '172.20.0.2', schematic: SCHEMATIC }]);
  });

  it('refuses items that are not extension statuses', () => {
    const items = parseGetJson('{"node":"10.0.0.2","metadata":{"id":"machine"},"spec":{"stage":"running"}}');

    expect(() => extensionsFromGet(items)).toThrow(ParseError);
  });
});

describe('machineStatusesFromGet', () => {
  it('reads stage, readiness and unmet conditions', () => {
    const items = parseGetJson(`{
    "node": "10.0.0.5",
    "metadata": {"namespace": "runtime", "type": "MachineStatuses.runtime.talos.dev", "id": "machine", "version": 21},
    "spec": {"stage": "booting", "status": {"ready": false, "unmetConditions": [{"name": "nodeReady", "reason": "node \\"talos-w-1\\" is not ready"}]}}
}
{
    "node": "10.0.0.6",
    "metadata": {"id": "machine"},
    "spec": {"stage": "running", "status": {"ready": true}}
}`);

    expect(machineStatusesFromGet(items)).toEqual([
      {
        node: '10.0.0.5',
        stage: 'booting',
        ready: false,
        unmetConditions: [{ name: 'nodeReady', reason: 'node "talos-w-1" is not ready' }],
      },
      { node: '10.0.0.6', stage: 'running', ready: true, unmetConditions: [] },
    ]);
  });
});
