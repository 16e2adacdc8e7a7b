import { describe, expect, it } from 'vitest';
import {
  checkKubernetesUpgradePath,
  checkTalosUpgradePath,
  parseKubernetesVersionInput,
  parseTalosVersionInput,
  storedVersionProblems,
  talosctlClientRefusal,
} from '../../../src/rules/versions.ts';
import { mergeSupportTable } from '../../../src/talos/compatibility.ts';

/** Talos 1.15 as an operator adds it from its support matrix. */
const ROW_115 = { talos: '1.15', kubernetesMin: '1.33', kubernetesMax: '1.38', upgradeFromMin: '1.13.0' };

/** An Image Factory `/versions` excerpt: latest patches 1.10.9, 1.11.6, 1.12.11, 1.13.9, with pre-releases. */
const FACTORY = [
  'v1.9.5',
  'v1.10.0',
  'v1.10.8',
  'v1.10.9',
  'v1.11.0',
  'v1.11.5',
  'v1.11.6',
  'v1.12.0-beta.0',
  'v1.12.0',
  'v1.12.10',
  'v1.12.11',
  'v1.13.0',
  'v1.13.9',
  'v1.14.0-rc.1',
];

describe('parseTalosVersionInput', () => {
  it.each([
    ['1.12.11', 'v1.12.11'],
    ['v1.12.11', 'v1.12.11'],
    ['v1.10.0', 'v1.10.0'],
  ])('accepts %j as %j', (input, version) => {
    expect(parseTalosVersionInput(input)).toEqual({ ok: true, version });
  });

  it.each([
    '1.x',
    'v1.12',
    'v1.12.11;id',
    ' v1.12.11',
    'v1.12.11\n',
    'V1.12.11',
    'vv1.12.11',
    '01.12.11',
    'v1.12.11 ',
    '\u0661.12.11',
    'v1.12.\uFF11\uFF11',
    'ｖ1.12.11',
    '1.12.11.1',
    `1.12.${'1'.repeat(40)}`,
    '',
  ])('refuses %j, saying which form is expected', (input) => {
    const result = parseTalosVersionInput(input);

    expect(result).toEqual({ ok: false, reason: expect.stringContaining('like 1.12.11 or v1.12.11') });
  });

  it('refuses a pre-release unless allowed', () => {
    expect(parseTalosVersionInput('v1.14.0-rc.1')).toEqual({
      ok: false,
      reason: '"v1.14.0-rc.1" is a pre-release: expected a Talos version like 1.12.11 or v1.12.11, a released version',
    });
    expect(parseTalosVersionInput('1.14.0-rc.1', { allowPrerelease: true })).toEqual({ ok: true, version: 'v1.14.0-rc.1' });
  });

  it('refuses input that is not text', () => {
    expect(parseTalosVersionInput(1.12)).toEqual({
      ok: false,
      reason: 'a number is not a Talos version: expected a Talos version like 1.12.11 or v1.12.11',
    });
  });
});

describe('parseKubernetesVersionInput', () => {
  it('gives the CLI form without v and the Terraform form with v, noting what was typed', () => {
    expect(parseKubernetesVersionInput('v1.34.1')).toEqual({ ok: true, version: '1.34.1', terraform: 'v1.34.1', hadLeadingV: true });
    expect(parseKubernetesVersionInput('1.34.1')).toEqual({ ok: true, version: '1.34.1', terraform: 'v1.34.1', hadLeadingV: false });
  });

  it('refuses other forms with the expected one', () => {
    expect(parseKubernetesVersionInput('1.34')).toEqual({
      ok: false,
      reason: '"1.34" is not a Kubernetes version: expected a Kubernetes version like 1.34.1 or v1.34.1',
    });
  });
});

describe('checkTalosUpgradePath', () => {
  it('allows the latest patch of the running minor', () => {
    expect(checkTalosUpgradePath('v1.12.10', 'v1.12.11', FACTORY)).toEqual({ ok: true, kind: 'patch' });
  });

  it('allows the latest patch of the next minor from the latest patch of the running one', () => {
    expect(checkTalosUpgradePath('v1.11.6', 'v1.12.11', FACTORY)).toEqual({ ok: true, kind: 'minor' });
    expect(checkTalosUpgradePath('1.11.6', '1.12.11', FACTORY)).toEqual({ ok: true, kind: 'minor' });
  });

  it('refuses a minor jump from a patch that is not the latest of the running minor, with the patch as an operation of its own', () => {
    expect(checkTalosUpgradePath('v1.11.5', 'v1.12.11', FACTORY)).toEqual({
      ok: false,
      code: 'running-not-latest-patch',
      reason:
        'the cluster runs v1.11.5, not v1.11.6, the latest patch of 1.11: patch first, as an operation of its own (`/talos upgrade talos v1.11.6`), then upgrade to v1.12.11; the runbook takes the latest patch of each minor before the next minor',
    });
  });

  it('allows the patch that a minor jump from an older patch asks for first', () => {
    expect(checkTalosUpgradePath('v1.11.5', 'v1.11.6', FACTORY)).toEqual({ ok: true, kind: 'patch' });
  });

  it('does not hold a minor jump to a running patch the factory does not list', () => {
    expect(checkTalosUpgradePath('v1.11.7', 'v1.12.11', FACTORY)).toEqual({ ok: true, kind: 'minor' });
  });

  it('refuses an older patch of the target minor and names the latest', () => {
    expect(checkTalosUpgradePath('v1.11.6', 'v1.12.10', FACTORY)).toEqual({
      ok: false,
      code: 'not-latest-patch',
      reason: 'v1.12.10 is not the latest patch of 1.12: upgrade to v1.12.11, the latest patch of 1.12, instead',
    });
  });

  it('refuses skipping a minor and names the next step', () => {
    expect(checkTalosUpgradePath('v1.11.6', 'v1.13.9', FACTORY)).toEqual({
      ok: false,
      code: 'skips-minor',
      reason: 'v1.13.9 skips a minor release: upgrade to v1.12.11 first, one adjacent minor at a time',
    });
  });

  it('refuses a downgrade and the same version', () => {
    expect(checkTalosUpgradePath('v1.12.11', 'v1.11.6', FACTORY)).toEqual(expect.objectContaining({ ok: false, code: 'downgrade' }));
    expect(checkTalosUpgradePath('v1.12.11', 'v1.12.11', FACTORY)).toEqual({
      ok: false,
      code: 'same-version',
      reason: 'the cluster already runs v1.12.11 with that schematic on every node: nothing to upgrade or re-install',
    });
  });

  it('takes the running version as a re-install when some node needs another installer image, and refuses it when none does', () => {
    expect(checkTalosUpgradePath('v1.11.6', 'v1.11.6', FACTORY, { imageChanges: ['10.0.30.21'] })).toEqual({ ok: true, kind: 'reinstall' });
    // An older patch may be re-installed too: an extension change does not move the version.
    expect(checkTalosUpgradePath('v1.11.5', '1.11.5', FACTORY, { imageChanges: ['10.0.30.21'] })).toEqual({ ok: true, kind: 'reinstall' });
    expect(checkTalosUpgradePath('v1.11.6', 'v1.11.6', FACTORY, { imageChanges: [] })).toEqual(
      expect.objectContaining({ ok: false, code: 'same-version' }),
    );
  });

  it('refuses a re-install on a version the factory does not publish', () => {
    expect(checkTalosUpgradePath('v1.11.7', 'v1.11.7', FACTORY, { imageChanges: ['10.0.30.21'] })).toEqual({
      ok: false,
      code: 'not-published',
      reason: 'v1.11.7 is not published by the Image Factory, so its installer images cannot be pulled for a re-install',
    });
  });

  it('refuses a version the factory does not publish', () => {
    expect(checkTalosUpgradePath('v1.12.10', 'v1.12.12', FACTORY)).toEqual({
      ok: false,
      code: 'not-published',
      reason: 'v1.12.12 is not published by the Image Factory: upgrade to v1.12.11, the latest patch of 1.12, instead',
    });
  });

  it('refuses a pre-release and ignores pre-releases when finding the latest patch', () => {
    expect(checkTalosUpgradePath('v1.13.9', 'v1.14.0-rc.1', FACTORY)).toEqual(expect.objectContaining({ ok: false, code: 'prerelease' }));
    expect(checkTalosUpgradePath('v1.11.6', 'v1.12.0-beta.0', FACTORY)).toEqual(expect.objectContaining({ ok: false, code: 'prerelease' }));
  });

  it('refuses a minor missing from the support table, linking its support matrix and giving the exact inventory lines to add', () => {
    const path = checkTalosUpgradePath('v1.14.2', 'v1.15.0', [...FACTORY, 'v1.14.2', 'v1.15.0']);

    expect(path).toEqual(expect.objectContaining({ ok: false, code: 'unsupported-version' }));
    const reason = path.ok ? '' : path.reason;
    expect(reason).toContain('https://docs.siderolabs.com/talos/v1.15/getting-started/support-matrix');
    expect(reason).toContain(
      '```\ntalosSupport:\n  - talos: "1.15"\n    kubernetesMin: "1.33"\n    kubernetesMax: "1.38"\n    upgradeFromMin: "1.13.0"\n```',
    );
    expect(reason).toContain('no new image is needed');
  });

  it('accepts a minor the built-in table lacks once the inventory adds its row, and applies the row', () => {
    const factory = [...FACTORY, 'v1.14.2', 'v1.15.0'];
    const table = mergeSupportTable([ROW_115]);

    expect(checkTalosUpgradePath('v1.14.2', 'v1.15.0', factory, { support: table })).toEqual({ ok: true, kind: 'minor' });
    // Its upgradeFromMin is the row's, not a guess: 1.12 hosts cannot go to 1.15 directly anyway, and a 1.13.0 floor is kept.
    expect(
      checkTalosUpgradePath('v1.14.2', 'v1.15.0', factory, { support: mergeSupportTable([{ ...ROW_115, upgradeFromMin: '1.14.5' }]) }),
    ).toEqual(expect.objectContaining({ ok: false, code: 'host-too-old' }));
    expect(checkKubernetesUpgradePath('1.37.2', '1.38.0', 'v1.15.0', table)).toEqual({ ok: true, kind: 'minor' });
    expect(checkKubernetesUpgradePath('1.37.2', '1.38.0', 'v1.15.0')).toEqual(
      expect.objectContaining({ ok: false, code: 'unsupported-version' }),
    );
  });

  it('lets an inventory row correct a minor the built-in table knows', () => {
    const table = mergeSupportTable([{ talos: '1.13', kubernetesMin: '1.31', kubernetesMax: '1.37', upgradeFromMin: '1.11.0' }]);

    expect(checkKubernetesUpgradePath('1.36.2', '1.37.0', 'v1.13.9')).toEqual(
      expect.objectContaining({ ok: false, code: 'talos-does-not-support-kubernetes' }),
    );
    expect(checkKubernetesUpgradePath('1.36.2', '1.37.0', 'v1.13.9', table)).toEqual({ ok: true, kind: 'minor' });
    expect(table.map((r) => r.talos)).toEqual(['1.8', '1.9', '1.10', '1.11', '1.12', '1.13', '1.14']);
  });

  it('checks the oldest row of the matrix too', () => {
    expect(checkTalosUpgradePath('v1.7.7', 'v1.8.4', ['v1.7.7', 'v1.8.4'])).toEqual({ ok: true, kind: 'minor' });
    expect(checkTalosUpgradePath('v1.4.8', 'v1.5.5', ['v1.5.5'])).toEqual(
      expect.objectContaining({ ok: false, code: 'unsupported-version' }),
    );
  });

  it('refuses malformed versions', () => {
    expect(checkTalosUpgradePath('banana', 'v1.12.11', FACTORY)).toEqual(expect.objectContaining({ ok: false, code: 'invalid-version' }));
    expect(checkTalosUpgradePath('v1.12.10', '1.x', FACTORY)).toEqual(expect.objectContaining({ ok: false, code: 'invalid-version' }));
  });
});

describe('checkKubernetesUpgradePath', () => {
  it('allows a newer patch and the next minor supported by the running Talos', () => {
    expect(checkKubernetesUpgradePath('1.33.4', '1.33.6', 'v1.11.6')).toEqual({ ok: true, kind: 'patch' });
    expect(checkKubernetesUpgradePath('v1.33.4', 'v1.34.1', 'v1.11.6')).toEqual({ ok: true, kind: 'minor' });
  });

  it('refuses skipping a minor', () => {
    expect(checkKubernetesUpgradePath('1.32.3', '1.34.0', 'v1.11.6')).toEqual({
      ok: false,
      code: 'skips-minor',
      reason: '1.34.0 skips a minor release: upgrade to the latest 1.33 first; Kubernetes moves one minor at a time',
    });
  });

  it('refuses a downgrade with the runbook advice', () => {
    expect(checkKubernetesUpgradePath('1.34.1', '1.33.4', 'v1.11.6')).toEqual({
      ok: false,
      code: 'downgrade',
      reason:
        '1.33.4 is older than the running 1.34.1: a Kubernetes downgrade is not a normal rollback; prefer fixing forward, and if the control plane is unusable follow the tested etcd recovery path',
    });
  });

  it('refuses a target the running Talos does not support', () => {
    expect(checkKubernetesUpgradePath('1.34.1', '1.35.0', 'v1.11.6')).toEqual({
      ok: false,
      code: 'talos-does-not-support-kubernetes',
      reason: 'Talos v1.11.6 supports Kubernetes 1.29 to 1.34, not 1.35: upgrade Talos first',
    });
  });

  it('refuses the same version', () => {
    expect(checkKubernetesUpgradePath('1.34.1', 'v1.34.1', 'v1.11.6')).toEqual(
      expect.objectContaining({ ok: false, code: 'same-version' }),
    );
  });
});

describe('talosctlClientRefusal', () => {
  it('accepts a client of the running version, with or without v', () => {
    expect(talosctlClientRefusal('v1.11.6', 'v1.11.6')).toBeUndefined();
    expect(talosctlClientRefusal('v1.11.6', '1.11.6')).toBeUndefined();
  });

  it('refuses a client of another version and names the one to install', () => {
    expect(talosctlClientRefusal('v1.11.6', 'v1.12.11', '10.0.30.12')).toBe(
      'talosctl is v1.11.6 but 10.0.30.12 runs v1.12.11; the runbook needs a matching client: install talosctl v1.12.11 (or put talosctl-v1.12.11 in the TALOSCTL_BIN directory)',
    );
    expect(talosctlClientRefusal('v1.12.11', 'v1.11.6')).toContain('but the cluster runs v1.11.6');
  });
});

describe('storedVersionProblems', () => {
  it('accepts the stored path of a Talos upgrade, a patch, a re-install and the path to a patch the factory has since superseded', () => {
    expect(storedVersionProblems('talos', { version: 'v1.12.11', fromVersion: 'v1.11.6', talosVersion: 'v1.11.6' })).toEqual([]);
    expect(storedVersionProblems('talos', { version: 'v1.11.6', fromVersion: 'v1.11.5', talosVersion: 'v1.11.5' })).toEqual([]);
    expect(storedVersionProblems('talos', { version: 'v1.11.6', fromVersion: 'v1.11.6', talosVersion: 'v1.11.6' })).toEqual([]);
    // Planned as the latest patch; the factory publishing v1.12.12 since must not stop the upgrade half-way.
    expect(storedVersionProblems('talos', { version: 'v1.12.10', fromVersion: 'v1.11.6' })).toEqual([]);
  });

  it('refuses a Talos target edited into a downgrade, a skipped minor or a version the host cannot upgrade to', () => {
    expect(storedVersionProblems('talos', { version: 'v1.10.9', fromVersion: 'v1.11.6', talosVersion: 'v1.11.6' })).toEqual([
      'the stored path v1.11.6 → v1.10.9 is not one the rules allow: v1.10.9 is older than the running v1.11.6: Talos upgrades only move forward; to undo a failed node upgrade use talosctl rollback on that node',
    ]);
    expect(storedVersionProblems('talos', { version: 'v1.13.9', fromVersion: 'v1.11.6' })[0]).toContain('skips a minor release');
    expect(storedVersionProblems('talos', { version: 'v1.15.0', fromVersion: 'v1.14.1' })[0]).toContain("not in the bot's support table");
    // With the inventory's row for 1.15, the same stored path is one the rules allow.
    expect(storedVersionProblems('talos', { version: 'v1.15.0', fromVersion: 'v1.14.1' }, mergeSupportTable([ROW_115]))).toEqual([]);
  });

  it('refuses a Talos upgrade whose talosctl version or versions are missing or edited', () => {
    expect(storedVersionProblems('talos', { version: 'v1.12.11', fromVersion: 'v1.11.6', talosVersion: 'v1.12.11' })).toEqual([
      'the stored talosctl version v1.12.11 is not v1.11.6, the version the cluster ran when it was planned',
    ]);
    expect(storedVersionProblems('talos', { fromVersion: 'v1.11.6' })).toEqual([
      'the stored target version is missing, so the approved path cannot be checked',
    ]);
    expect(storedVersionProblems('talos', { version: 'v1.12.11' })).toEqual([
      'the stored running version is missing, so the approved path cannot be checked',
    ]);
  });

  it('checks a Kubernetes path against the running Talos', () => {
    expect(storedVersionProblems('kubernetes', { version: '1.35.0', fromVersion: 'v1.34.1', talosVersion: 'v1.12.11' })).toEqual([]);
    expect(storedVersionProblems('kubernetes', { version: '1.35.0', fromVersion: 'v1.34.1', talosVersion: 'v1.11.6' })[0]).toContain(
      'Talos v1.11.6 supports Kubernetes 1.29 to 1.34, not 1.35',
    );
    expect(storedVersionProblems('kubernetes', { version: '1.33.0', fromVersion: 'v1.34.1', talosVersion: 'v1.12.11' })[0]).toContain(
      'is older than the running',
    );
    expect(storedVersionProblems('kubernetes', { version: '1.35.0', fromVersion: 'v1.34.1' })).toEqual([
      'the stored Talos version is missing, so the approved path cannot be checked',
    ]);
  });

  it("holds a node operation's talosctl to the version the node ran", () => {
    expect(storedVersionProblems('node', { fromVersion: 'v1.12.11', talosVersion: 'v1.12.11', version: 'v1.11.6' })).toEqual([]);
    expect(storedVersionProblems('node', { fromVersion: 'v1.12.11', talosVersion: 'v1.11.6' })).toEqual([
      'the stored talosctl version v1.11.6 is not v1.12.11, the version the node ran when it was planned',
    ]);
  });
});
