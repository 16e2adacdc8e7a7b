import { describe, expect, it } from 'vitest';
import { InstallerImageError, installerImage, retagImage } from '../../src/rules/installer-image.ts';

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
