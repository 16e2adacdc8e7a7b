import { describe, expect, it } from 'vitest';
import { vipsInMachineConfig } from '../../../src/talos/machine-config-vips.ts';

describe('vipsInMachineConfig', () => {
  it('reads the virtual IPs of interfaces and VLANs from the YAML the MachineConfig spec holds', () => {
    const spec = [
      'version: v1alpha1',
      'machine:',
      '  type: controlplane',
      '  network:',
      '    interfaces:',
      '      - interface: eth0',
      '        vip:',
      '          ip: 10.0.30.10',
      '      - interface: eth1',
      '        vlans:',
      '          - vlanId: 30',
      '            vip:',
      '              ip: 10.0.31.10',
      '---',
      'apiVersion: v1alpha1',
      'kind: Layer2VIPConfig',
      'name: 10.0.32.10',
      'link: eth2',
    ].join('\n');
    expect(vipsInMachineConfig(spec)).toEqual(['10.0.30.10', '10.0.31.10', '10.0.32.10']);
  });

  it('finds none in a worker configuration or in something that is no configuration', () => {
    expect(
      vipsInMachineConfig('version: v1alpha1\nmachine:\n  type: worker\n  network:\n    interfaces:\n      - interface: eth0\n'),
    ).toEqual([]);
    expect(vipsInMachineConfig(42)).toEqual([]);
    expect(vipsInMachineConfig('- a list\n')).toEqual([]);
  });
});
