import { describe, expect, it } from 'vitest';
import { botOnCluster } from '../../../src/rules/bot-on-cluster.ts';

const NODES = [
  { name: 'talos-prd-cp-1', addresses: ['10.0.30.11', 'fd00:30::11'] },
  { name: 'talos-prd-w-1', addresses: ['10.0.30.21'] },
];
/** What the talosconfig, etcd and the inventory say, including a node no Node names yet. */
const ADDRESSES = ['10.0.30.11', '10.0.30.21', '10.0.30.22'];
const at = (placement: { nodeName?: string; hostIp?: string; podIp?: string }) => ({
  nodeName: placement.nodeName,
  hostIp: placement.hostIp,
  podIp: placement.podIp,
});

describe('botOnCluster', () => {
  it('cannot tell when the deployment says nothing', () => {
    expect(botOnCluster(at({}), NODES, ADDRESSES)).toEqual({ verdict: 'unknown' });
  });

  it('is on the cluster when its node name is one of the Nodes, whatever its host IP says', () => {
    expect(botOnCluster(at({ nodeName: 'talos-prd-w-1', hostIp: '10.0.50.21' }), NODES, ADDRESSES)).toEqual({
      verdict: 'on',
      node: 'talos-prd-w-1',
      evidence: 'node name',
      value: 'talos-prd-w-1',
    });
  });

  it('is on the cluster when its host IP is a Node address, naming that Node', () => {
    expect(botOnCluster(at({ nodeName: 'other', hostIp: '10.0.30.11' }), NODES, ADDRESSES)).toMatchObject({
      verdict: 'on',
      node: 'talos-prd-cp-1',
      evidence: 'host IP',
    });
  });

  it('compares IPv6 addresses as addresses, not as text', () => {
    expect(botOnCluster(at({ hostIp: 'fd00:30:0:0::11' }), NODES, ADDRESSES)).toMatchObject({ verdict: 'on', node: 'talos-prd-cp-1' });
  });

  it('is on the cluster when its host IP is a node address no Node names (a node the Kubernetes API does not list)', () => {
    expect(botOnCluster(at({ hostIp: '10.0.30.22' }), [], ADDRESSES)).toEqual({
      verdict: 'on',
      node: '10.0.30.22',
      evidence: 'host IP',
      value: '10.0.30.22',
    });
  });

  it('is on the cluster when its pod IP is a node address (a pod on the host network)', () => {
    expect(botOnCluster(at({ podIp: '10.0.30.21' }), NODES, ADDRESSES)).toMatchObject({
      verdict: 'on',
      node: 'talos-prd-w-1',
      evidence: 'pod IP',
    });
  });

  it('is off the cluster when none of its facts is one of the nodes', () => {
    expect(botOnCluster(at({ nodeName: 'talos-mgmt-w-1', hostIp: '10.0.50.21', podIp: '10.244.1.7' }), NODES, ADDRESSES)).toEqual({
      verdict: 'off',
    });
  });
});
