import { describe, expect, it } from 'vitest';
import { kubernetesClient } from '../../../src/kube/client-module.ts';

describe('kubernetesClient', () => {
  it('loads the client once and gives every caller the same module', async () => {
    const first = kubernetesClient();
    expect(kubernetesClient()).toBe(first);
    const client = await first;
    expect(typeof client.KubeConfig).toBe('function');
    expect(typeof client.CoreV1Api).toBe('function');
  });
});
