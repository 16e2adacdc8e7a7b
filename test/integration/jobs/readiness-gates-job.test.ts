import type { Job } from 'bullmq';
import { afterEach, describe, expect, it } from 'vitest';
import { createReadinessGatesJob } from '../../../jobs/readiness-gates-job.ts';
import { parseInventory } from '../../../src/config/inventory.ts';
import { createLogger } from '../../../src/log/logger.ts';
import { SecretScrubber } from '../../../src/log/secret-scrubber.ts';
import { systemClock } from '../../../src/time/clock.ts';
import { productionShape, stagingShape } from '../../sim/shapes.ts';
import type { ClusterShape } from '../../sim/types.ts';
import { RecordingChat } from '../../support/engine-fixture.ts';
import { fakeCluster, type FakeCluster } from '../../support/fake-cluster.ts';

const TERRAFORM_DIR = '/srv/infra/terraform/cluster';

let cluster: FakeCluster | undefined;

afterEach(() => {
  cluster?.close();
});

/** `/talos gates` on the fake cluster of `shape`, with `kubernetesEndpoint` in the inventory or none. */
async function gates(shape: ClusterShape, kubernetesEndpoint?: string): Promise<{ chat: RecordingChat; endpointGate: string }> {
  cluster = fakeCluster({ shape, terraformDir: TERRAFORM_DIR });
  const nodes = (role: string): string =>
    shape.nodes
      .filter((n) => n.role === role)
      .map((n) => n.address)
      .join(', ');
  const inventory = parseInventory(
    `clusters:
  ${shape.name}:
    environment: ${shape.environment}
    channel: C0MAINTPRD
    terraformDir: ${TERRAFORM_DIR}
    controlPlanes: [${nodes('controlplane')}]
    workers: [${nodes('worker')}]
    installerPlatform: nocloud
    hostLabel: example.org/proxmox-host
    snapshotDir: /var/backups/talos-etcd
    operators: [U0ALICE]
    approvers: [U0CAROL]
${kubernetesEndpoint === undefined ? '' : `    kubernetesEndpoint: ${kubernetesEndpoint}\n`}`,
    'gates-test.yaml',
  );
  const chat = new RecordingChat();
  const job = createReadinessGatesJob({
    inventory,
    access: cluster.access,
    store: { listForCluster: () => Promise.resolve([]) },
    chat,
    logger: createLogger({ level: 'silent', pretty: false, scrubber: new SecretScrubber() }),
    probeTimeoutMs: 5000,
    clock: { now: () => new Date('2026-12-01T10:00:00Z'), sleep: (ms, signal) => systemClock.sleep(ms, signal) },
    signOffs: { list: () => Promise.resolve({ given: [], unreadable: [] }), saveReport: () => Promise.resolve() },
    signOffMaxAgeMs: 90 * 86_400_000,
  });
  const data = { cluster: shape.name, channel: 'C0MAINTPRD', requestedBy: 'U0ALICE', requestedAt: '2026-12-01T10:00:00Z' };
  await job({ id: 'gates-1', data, attemptsStarted: 1, updateData: () => Promise.resolve() } as unknown as Job);
  const reply = chat.posts.find((p) => p.threadTs !== undefined && p.message.text.includes('Kubernetes endpoint is a virtual IP'));
  return { chat, endpointGate: JSON.stringify(reply?.message) };
}

describe('the Kubernetes endpoint gate of /talos gates', () => {
  it('fails a cluster whose kubeconfig from Terraform points at a node, although the inventory declares no endpoint', async () => {
    // Act: staging's kubeconfig server is its control plane's address.
    const { endpointGate } = await gates(stagingShape());

    // Assert
    expect(endpointGate).toContain(
      'https://10.0.20.204:6443 (the server of the kubeconfig Terraform outputs) is the address of node talos-stg-cp-1 (10.0.20.204)',
    );
    expect(endpointGate).toContain('kubeconfig server (tofu output -raw talos_kubeconfig): https://10.0.20.204:6443');
  });

  it('passes a cluster whose kubeconfig from Terraform uses the virtual IP, and shows nothing else of the kubeconfig', async () => {
    // Act
    const { chat, endpointGate } = await gates(productionShape(), 'https://10.0.30.10:6443');

    // Assert
    expect(endpointGate).toContain(
      "https://10.0.30.10:6443 (the server of the kubeconfig Terraform outputs): 10.0.30.10 is the virtual IP every control plane's machine configuration declares",
    );
    expect(JSON.stringify(chat.posts)).not.toContain('CANARY-fake-cluster-0042');
  });

  it('fails an inventory that declares another endpoint than the kubeconfig from Terraform uses', async () => {
    // Act
    const { endpointGate } = await gates(productionShape(), 'https://10.0.30.9:6443');

    // Assert
    expect(endpointGate).toContain(
      "the inventory's kubernetesEndpoint https://10.0.30.9:6443 is not the server of the kubeconfig Terraform outputs (https://10.0.30.10:6443): correct kubernetesEndpoint in the inventory",
    );
  });
});
