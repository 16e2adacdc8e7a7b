import { describe, expect, it } from 'vitest';
import {
  checkTerraformInstaller,
  InstallerImageError,
  installerImage,
  nodeInstallerClass,
  type NodeClassInput,
  readFactoryInstaller,
  retagImage,
} from '../../../src/rules/installer-image.ts';

const SCHEMATIC = '376567988ad370138ad8b2698212367b8edcb69b5fd68c80be1f2ec7d603b4ba';

describe('installerImage', () => {
  it('builds the platform installer reference', () => {
    expect(installerImage({ platform: 'nocloud', schematic: SCHEMATIC, version: 'v1.12.11' })).toBe(
      `factory.talos.dev/nocloud-installer/${SCHEMATIC}:v1.12.11`,
    );
  });

  it.each([
    ['', /installer platform is required/],
    ['installer', /installer platform is required/],
    ['nocloud-installer', /pass the platform alone/],
    ['NoCloud', /not a Talos platform/],
    ['no cloud', /not a Talos platform/],
    ['-nocloud', /not a Talos platform/],
  ])('refuses the platform %j', (platform, message) => {
    expect(() => installerImage({ platform, schematic: SCHEMATIC, version: 'v1.12.11' })).toThrow(message);
  });

  it.each([SCHEMATIC.slice(1), SCHEMATIC.toUpperCase(), `${SCHEMATIC.slice(0, 63)}g`])('refuses the schematic %j', (schematic) => {
    expect(() => installerImage({ platform: 'nocloud', schematic, version: 'v1.12.11' })).toThrow(InstallerImageError);
  });

  it.each(['1.12.11', 'v1.12', 'v1.12.11-rc.1', 'latest'])('refuses the version %j', (version) => {
    expect(() => installerImage({ platform: 'nocloud', schematic: SCHEMATIC, version })).toThrow(/expected the form v1.12.11/);
  });

  it('refuses versions older than the platform installers', () => {
    expect(() => installerImage({ platform: 'metal', schematic: SCHEMATIC, version: 'v1.9.5' })).toThrow(
      'metal-installer images exist from Talos v1.10.0; v1.9.5 is older',
    );
  });
});

describe('retagImage', () => {
  it('changes only the tag', () => {
    expect(retagImage(`factory.talos.dev/nocloud-installer/${SCHEMATIC}:v1.11.6`, 'v1.12.11')).toBe(
      `factory.talos.dev/nocloud-installer/${SCHEMATIC}:v1.12.11`,
    );
  });

  it('does not mistake a registry port for a tag', () => {
    expect(retagImage('registry.lan:5000/talos/installer', 'v1.12.11')).toBe('registry.lan:5000/talos/installer:v1.12.11');
    expect(retagImage('registry.lan:5000/talos/installer:v1.11.6', 'v1.12.11')).toBe('registry.lan:5000/talos/installer:v1.12.11');
    expect(retagImage('localhost:5000/installer', 'v1.12.11')).toBe('localhost:5000/installer:v1.12.11');
  });

  it('refuses digests, bad versions and non-references', () => {
    expect(() => retagImage(`ghcr.io/siderolabs/installer:v1.11.6@sha256:${'a'.repeat(64)}`, 'v1.12.11')).toThrow(/pinned by digest/);
    expect(() => retagImage('ghcr.io/siderolabs/installer:v1.11.6', '1.12.11')).toThrow(InstallerImageError);
    expect(() => retagImage('', 'v1.12.11')).toThrow(/not an image reference/);
    expect(() => retagImage('ghcr.io/siderolabs/', 'v1.12.11')).toThrow(/not an image reference/);
  });
});

const LONGHORN = 'a'.repeat(64);
const OUTPUT = 'talos_longhorn_installer_image';

describe('readFactoryInstaller', () => {
  it('reads the platform, schematic and tag of an Image Factory installer', () => {
    expect(readFactoryInstaller(`factory.talos.dev/nocloud-installer/${LONGHORN}:v1.11.6`)).toEqual({
      platform: 'nocloud',
      secureboot: false,
      schematic: LONGHORN,
      version: 'v1.11.6',
    });
    expect(readFactoryInstaller(`factory.talos.dev/metal-installer-secureboot/${LONGHORN}`)).toEqual({
      platform: 'metal',
      secureboot: true,
      schematic: LONGHORN,
      version: undefined,
    });
    expect(readFactoryInstaller(`factory.talos.dev/installer/${LONGHORN}:v1.11.6`)).toEqual({
      platform: undefined,
      secureboot: false,
      schematic: LONGHORN,
      version: 'v1.11.6',
    });
  });

  it('reads nothing from other references', () => {
    expect(readFactoryInstaller('ghcr.io/siderolabs/installer:v1.11.6')).toBeUndefined();
    expect(readFactoryInstaller(`factory.talos.dev/nocloud-installer/${LONGHORN.slice(1)}:v1.11.6`)).toBeUndefined();
  });
});

describe('checkTerraformInstaller', () => {
  it("accepts the Image Factory installer of the cluster's platform and gives its schematic", () => {
    expect(checkTerraformInstaller(`factory.talos.dev/nocloud-installer/${LONGHORN}:v1.11.6\n`, 'nocloud', OUTPUT)).toEqual({
      schematic: LONGHORN,
    });
  });

  it('refuses the generic Image Factory installer', () => {
    expect(() => checkTerraformInstaller(`factory.talos.dev/installer/${LONGHORN}:v1.11.6`, 'nocloud', OUTPUT)).toThrow(
      `${OUTPUT} is "factory.talos.dev/installer/${LONGHORN}:v1.11.6", the generic Image Factory installer (factory.talos.dev/installer/…), which can rename eth0 and cut the node off the network: Terraform must output factory.talos.dev/nocloud-installer/<schematic>:<version>`,
    );
  });

  it('refuses the stock generic installer and references that are no installer', () => {
    expect(() => checkTerraformInstaller('ghcr.io/siderolabs/installer:v1.11.6', 'nocloud', OUTPUT)).toThrow(
      /the generic installer, which can rename eth0/,
    );
    expect(() => checkTerraformInstaller('registry.lan/talos/custom:v1.11.6', 'nocloud', OUTPUT)).toThrow(/not an Image Factory installer/);
  });

  it("refuses another platform's installer", () => {
    expect(() => checkTerraformInstaller(`factory.talos.dev/metal-installer/${LONGHORN}:v1.11.6`, 'nocloud', OUTPUT)).toThrow(
      `${OUTPUT} is a metal-installer image, but the nodes of this cluster install nocloud-installer`,
    );
  });
});

describe('nodeInstallerClass', () => {
  const OLD = 'c'.repeat(64);
  const outputs = {
    default: { schematic: SCHEMATIC, output: 'talos_image_factory_schematic_id' },
    longhorn: { schematic: LONGHORN, output: 'talos_longhorn_installer_image' },
  };
  const worker: NodeClassInput = {
    role: 'worker',
    running: SCHEMATIC,
    outputs,
    recorded: undefined,
    declared: undefined,
    clusterHasLonghorn: true,
    sameVersion: false,
    runningVersion: 'v1.11.6',
  };
  const controlPlane: NodeClassInput = { ...worker, role: 'controlplane' };

  it('keeps a control plane on the default class, whatever the inventory lists', () => {
    expect(nodeInstallerClass(controlPlane)).toEqual({ ok: true, class: 'default', because: 'a control plane, on the default schematic' });
    expect(nodeInstallerClass({ ...controlPlane, declared: 'longhorn' })).toEqual({
      ok: true,
      class: 'default',
      because: 'a control plane, on the default schematic; longhornNodes lists it, which a control plane does not follow',
    });
    expect(nodeInstallerClass({ ...controlPlane, running: OLD, recorded: { class: 'longhorn', op: 'op-1' } })).toMatchObject({
      ok: true,
      class: 'default',
    });
  });

  it('refuses to upgrade a control plane that runs the Longhorn schematic, and asks for the same-version change', () => {
    expect(nodeInstallerClass({ ...controlPlane, running: LONGHORN })).toEqual({
      ok: false,
      reason:
        `is a control plane and runs the Longhorn schematic ${LONGHORN} (talos_longhorn_installer_image), but the runbook gives the Longhorn installer to Longhorn workers only, ` +
        `so a control plane takes the default schematic ${SCHEMATIC} (talos_image_factory_schematic_id). Moving it is a same-version extension change, not part of a version upgrade: ` +
        'ask for it as such (`/talos upgrade talos v1.11.6`), then upgrade',
    });
  });

  it('moves a control plane off the Longhorn schematic when the request is that same-version change', () => {
    expect(nodeInstallerClass({ ...controlPlane, running: LONGHORN, sameVersion: true })).toEqual({
      ok: true,
      class: 'default',
      because: 'a control plane that runs the Longhorn schematic: this same-version change moves it to the default schematic',
    });
  });

  it('lets the schematic a worker runs decide, over the record and the inventory', () => {
    expect(nodeInstallerClass({ ...worker, running: LONGHORN, recorded: { class: 'default', op: 'op-1' } })).toEqual({
      ok: true,
      class: 'longhorn',
      because: 'runs the Longhorn schematic (talos_longhorn_installer_image)',
    });
    expect(nodeInstallerClass({ ...worker, declared: 'longhorn' })).toEqual({
      ok: true,
      class: 'default',
      because:
        'runs the default schematic (talos_image_factory_schematic_id); the inventory declares it in longhornNodes, but the schematic it runs decides',
    });
  });

  it('puts a worker that runs both schematics (Terraform outputs the same one twice) in the default class', () => {
    const same = { ...outputs, longhorn: { schematic: SCHEMATIC, output: 'talos_longhorn_installer_image' } };
    expect(nodeInstallerClass({ ...worker, outputs: same })).toMatchObject({ ok: true, class: 'default' });
    expect(nodeInstallerClass({ ...controlPlane, outputs: same })).toMatchObject({ ok: true, class: 'default' });
  });

  it('places a worker on neither schematic by the record first, then the inventory, then a cluster without Longhorn', () => {
    const stale = { ...worker, running: OLD };
    expect(nodeInstallerClass({ ...stale, recorded: { class: 'longhorn', op: 'op-7' }, declared: 'default' })).toEqual({
      ok: true,
      class: 'longhorn',
      because: `runs schematic ${OLD}, neither output's; the bot recorded it in the longhorn class when op-7 completed`,
    });
    expect(nodeInstallerClass({ ...stale, declared: 'longhorn' })).toEqual({
      ok: true,
      class: 'longhorn',
      because: `runs schematic ${OLD}, neither output's; the inventory declares it (longhornNodes)`,
    });
    expect(nodeInstallerClass({ ...stale, declared: 'default' })).toEqual({
      ok: true,
      class: 'default',
      because: `runs schematic ${OLD}, neither output's; the inventory declares it (defaultClassNodes)`,
    });
    expect(nodeInstallerClass({ ...stale, clusterHasLonghorn: false })).toEqual({
      ok: true,
      class: 'default',
      because: `runs schematic ${OLD}, neither output's; no node of the cluster runs or is declared in the Longhorn class`,
    });
  });

  it('refuses a worker on neither schematic with no evidence in a cluster with Longhorn nodes, naming all three schematics', () => {
    expect(nodeInstallerClass({ ...worker, running: OLD })).toEqual({
      ok: false,
      reason:
        `is a worker that runs schematic ${OLD}, neither the default schematic ${SCHEMATIC} (talos_image_factory_schematic_id) nor the Longhorn schematic ${LONGHORN} (talos_longhorn_installer_image); ` +
        'the bot has recorded no class for it and the inventory declares none, while the cluster has Longhorn nodes, so its installer cannot be chosen safely. ' +
        'Declare its class in the inventory: add it to longhornNodes if it is a Longhorn worker, or to defaultClassNodes if it is not, then plan again',
    });
    expect(nodeInstallerClass({ ...worker, running: undefined })).toMatchObject({
      ok: false,
      reason: expect.stringContaining('runs no schematic (an image not built by the Image Factory)'),
    });
  });
});
