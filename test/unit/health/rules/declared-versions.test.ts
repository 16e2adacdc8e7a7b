import { describe, expect, it } from 'vitest';
import { evaluateDeclaredVersions } from '../../../../src/health/rules/declared-versions.ts';
import type { DeclaredVersions } from '../../../../src/tofu/declared-versions.ts';

const DECLARED: DeclaredVersions = {
  talos: { version: 'v1.12.11', source: { output: 'talos_version', variable: 'talos_version' } },
  kubernetes: { version: 'v1.34.1', source: { output: 'talos_kubernetes_version', variable: 'talos_kubernetes_version' } },
};

const running = (talos: string[], kubernetes = ['v1.34.1']) => ({
  talos: new Map(talos.map((v, i) => [`10.0.30.1${i + 1}`, v])),
  kubernetes: new Map(kubernetes.map((v, i) => [`node-${i + 1}`, v])),
});

describe('evaluateDeclaredVersions', () => {
  it('passes when every node runs what Terraform declares', () => {
    const { check, state } = evaluateDeclaredVersions(DECLARED, running(['v1.12.11', 'v1.12.11']));
    expect(check).toMatchObject({ id: 'declared-versions', status: 'passed' });
    expect(state).toEqual({ state: 'match', lines: [], fixes: [] });
  });

  it('warns of drift with both versions and the exact change that clears it', () => {
    const { check, state } = evaluateDeclaredVersions(DECLARED, running(['v1.13.9', 'v1.13.9']));
    expect(check.status).toBe('warning');
    expect(state).toEqual({
      state: 'drift',
      lines: ['Terraform declares Talos v1.12.11 (output talos_version), but 2 node(s) run another version (highest v1.13.9)'],
      fixes: ['make the Terraform change `talos_version = "v1.13.9"`, commit it and run `/talos plan`'],
    });
    expect(check.evidence).toContain('Talos: 10.0.30.11 runs v1.13.9');
  });

  it('asks to finish a half-done upgrade before the change when the nodes disagree', () => {
    const { state } = evaluateDeclaredVersions(DECLARED, running(['v1.12.11'], ['v1.34.1', 'v1.35.0']));
    expect(state.fixes).toEqual([
      'finish the upgrade (`/talos upgrade k8s v1.35.0`), then make the Terraform change `talos_kubernetes_version = "v1.35.0"`',
    ]);
  });

  it('warns that the comparison is off when Terraform declares no version the bot can read', () => {
    const { check, state } = evaluateDeclaredVersions(
      { ...DECLARED, kubernetes: { off: 'Terraform has no output talos_kubernetes_version' } },
      running(['v1.12.11']),
    );
    expect(check.status).toBe('warning');
    expect(state.state).toBe('off');
    expect(check.summary).toContain('the declared Kubernetes version is not read: Terraform has no output talos_kubernetes_version');
  });
});
