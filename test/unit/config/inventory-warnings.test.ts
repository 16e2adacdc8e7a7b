import { describe, expect, it } from 'vitest';
import type { ClusterConfig } from '../../../src/config/inventory.ts';
import { inventoryWarnings } from '../../../src/config/inventory-warnings.ts';

/** A parsed cluster without overlapping roles, with `overrides` replacing fields. */
function cluster(overrides: Partial<ClusterConfig> = {}): ClusterConfig {
  return {
    name: 'production',
    environment: 'production',
    channel: 'C0MAINTPRD',
    terraformDir: '/srv/infra/terraform/production',
    controlPlanes: ['10.0.30.11'],
    workers: [],
    installerPlatform: 'nocloud',
    hostLabel: 'example.org/proxmox-host',
    snapshotDir: '/var/backups/talos-etcd',
    operators: ['U0ALICE', 'U0BOB'],
    approvers: ['U0CAROL'],
    defaultForChannel: false,
    longhornNodes: [],
    defaultClassNodes: [],
    longhorn: false,
    fluxStallMinutes: 10,
    requireDistinctApprover: true,
    maintenanceWindows: [],
    allowOutsideWindows: false,
    ...overrides,
  };
}

describe('inventoryWarnings', () => {
  it('has nothing to say about production with four eyes and distinct operators and approvers', () => {
    // Act
    const warnings = inventoryWarnings({
      clusters: [cluster(), cluster({ name: 'staging', environment: 'staging', requireDistinctApprover: false })],
    });

    // Assert
    expect(warnings).toEqual([]);
  });

  it('warns that the requester may approve in a production cluster with four eyes turned off', () => {
    // Act
    const warnings = inventoryWarnings({ clusters: [cluster({ requireDistinctApprover: false })] });

    // Assert
    expect(warnings).toEqual([
      'Cluster production is production with requireDistinctApprover: false: approvals may then be given by the requester ' +
        'or the operator who started the operation. Remove the line to restore four eyes.',
    ]);
  });

  it('warns that control planes listed in longhornNodes still take the default installer', () => {
    // Act
    const warnings = inventoryWarnings({
      clusters: [
        cluster({ controlPlanes: ['10.0.30.11', '10.0.30.12'], workers: ['10.0.30.21'], longhornNodes: ['10.0.30.11', '10.0.30.21'] }),
      ],
    });

    // Assert
    expect(warnings).toEqual([
      'Cluster production lists control plane 10.0.30.11 in longhornNodes: the runbook gives the Longhorn installer to Longhorn workers only, ' +
        'so the bot upgrades control planes with the default schematic. Remove it from longhornNodes.',
    ]);
  });

  it('names a user who is both operator and approver: with four eyes they approve only what others requested', () => {
    // Act
    const warnings = inventoryWarnings({ clusters: [cluster({ operators: ['U0ALICE', 'U0CAROL'], approvers: ['U0CAROL', 'S0SRE'] })] });

    // Assert
    expect(warnings).toEqual([
      'U0CAROL is both operator and approver of cluster production: four eyes is on there, so such a user may approve only what others requested or started.',
    ]);
  });

  it('names every such user of a cluster without four eyes: they can approve their own request', () => {
    // Arrange
    const staging = cluster({
      name: 'staging',
      environment: 'staging',
      requireDistinctApprover: false,
      operators: ['U0ALICE', 'W0DAVE', 'U0BOB'],
      approvers: ['W0DAVE', 'U0ALICE'],
    });

    // Act
    const warnings = inventoryWarnings({ clusters: [staging] });

    // Assert
    expect(warnings).toEqual([
      'U0ALICE, W0DAVE are both operator and approver of cluster staging: four eyes is off there, so such a user can approve their own request.',
    ]);
  });

  it('leaves out a user group listed in both roles, whose members are not known at start-up', () => {
    // Act
    const warnings = inventoryWarnings({ clusters: [cluster({ operators: ['S0SRE', 'U0ALICE'], approvers: ['S0SRE', 'U0CAROL'] })] });

    // Assert
    expect(warnings).toEqual([]);
  });

  it('gives both warnings for a production cluster without four eyes whose operator also approves, cluster by cluster', () => {
    // Arrange
    const lab = cluster({ name: 'lab', requireDistinctApprover: false, operators: ['U0ALICE'], approvers: ['U0ALICE'] });

    // Act
    const warnings = inventoryWarnings({ clusters: [cluster(), lab] });

    // Assert
    expect(warnings).toEqual([
      'Cluster lab is production with requireDistinctApprover: false: approvals may then be given by the requester ' +
        'or the operator who started the operation. Remove the line to restore four eyes.',
      'U0ALICE is both operator and approver of cluster lab: four eyes is off there, so such a user can approve their own request.',
    ]);
  });
});
