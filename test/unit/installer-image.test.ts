import { describe, expect, it } from 'vitest';
import {
  checkTerraformInstaller,
  InstallerImageError,
  installerImage,
  nodeInstallerClass,
  readFactoryInstaller,
  retagImage,
} from '../../src/rules/installer-image.ts';

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
    expect(readFactoryInstaller(`factory.talos.dev/nocloud-installer/${LONGHORN}:v1.11.6`)).toEqual({ platform: 'nocloud', secureboot: false, schematic: LONGHORN, version: 'v1.11.6' });
    expect(readFactoryInstaller(`factory.talos.dev/metal-installer-secureboot/${LONGHORN}`)).toEqual({ platform: 'metal', secureboot: true, schematic: LONGHORN, version: undefined });
    expect(readFactoryInstaller(`factory.talos.dev/installer/${LONGHORN}:v1.11.6`)).toEqual({ platform: undefined, secureboot: false, schematic: LONGHORN, version: 'v1.11.6' });
  });

  it('reads nothing from other references', () => {
    expect(readFactoryInstaller('ghcr.io/siderolabs/installer:v1.11.6')).toBeUndefined();
    expect(readFactoryInstaller(`factory.talos.dev/nocloud-installer/${LONGHORN.slice(1)}:v1.11.6`)).toBeUndefined();
  });
});

describe('checkTerraformInstaller', () => {
  it("accepts the Image Factory installer of the cluster's platform and gives its schematic", () => {
    expect(checkTerraformInstaller(`factory.talos.dev/nocloud-installer/${LONGHORN}:v1.11.6\n`, 'nocloud', OUTPUT)).toEqual({ schematic: LONGHORN });
  });

  it('refuses the generic Image Factory installer', () => {
    expect(() => checkTerraformInstaller(`factory.talos.dev/installer/${LONGHORN}:v1.11.6`, 'nocloud', OUTPUT)).toThrow(
      `${OUTPUT} is "factory.talos.dev/installer/${LONGHORN}:v1.11.6", the generic Image Factory installer (factory.talos.dev/installer/…), which can rename eth0 and cut the node off the network: Terraform must output factory.talos.dev/nocloud-installer/<schematic>:<version>`,
    );
  });

  it('refuses the stock generic installer and references that are no installer', () => {
    expect(() => checkTerraformInstaller('ghcr.io/siderolabs/installer:v1.11.6', 'nocloud', OUTPUT)).toThrow(/the generic installer, which can rename eth0/);
    expect(() => checkTerraformInstaller('registry.lan/talos/custom:v1.11.6', 'nocloud', OUTPUT)).toThrow(/not an Image Factory installer/);
  });

  it("refuses another platform's installer", () => {
    expect(() => checkTerraformInstaller(`factory.talos.dev/metal-installer/${LONGHORN}:v1.11.6`, 'nocloud', OUTPUT)).toThrow(
      `${OUTPUT} is a metal-installer image, but the nodes of this cluster install nocloud-installer`,
    );
  });
});

describe('nodeInstallerClass', () => {
  const input = { listed: false, running: { schematic: SCHEMATIC, extensions: [] as string[] }, longhornSchematic: LONGHORN };

  it('puts a node that runs the Longhorn schematic in the Longhorn class, listed or not', () => {
    expect(nodeInstallerClass({ ...input, running: { schematic: LONGHORN, extensions: ['iscsi-tools'] } })).toEqual({ class: 'longhorn', because: 'runs the Longhorn schematic' });
  });

  it("keeps a node that runs one of Longhorn's extensions in the Longhorn class, whatever its schematic", () => {
    expect(nodeInstallerClass({ ...input, running: { schematic: 'b'.repeat(64), extensions: ['util-linux-tools', 'qemu-guest-agent'] } })).toEqual({
      class: 'longhorn',
      because: 'runs util-linux-tools',
    });
  });

  it('takes a node the inventory lists into the Longhorn class', () => {
    expect(nodeInstallerClass({ ...input, listed: true })).toEqual({ class: 'longhorn', because: 'listed in longhornNodes' });
  });

  it('gives the default installer to a node that runs no Longhorn extension and is not listed', () => {
    expect(nodeInstallerClass(input)).toEqual({ class: 'default', because: 'runs no Longhorn extension' });
    expect(nodeInstallerClass({ ...input, longhornSchematic: undefined })).toEqual({ class: 'default', because: 'runs no Longhorn extension' });
  });
});
