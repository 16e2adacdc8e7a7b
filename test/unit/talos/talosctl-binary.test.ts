import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { OpsError } from '../../../src/errors.ts';
import { createTalosctlBinaries } from '../../../src/talos/talosctl-binary.ts';

describe('createTalosctlBinaries', () => {
  let dir: string;
  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), 'talosctl-bin-'));
  });
  afterEach(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  /** Empty files are enough: the selection looks at names only. */
  async function binaries(...names: string[]): Promise<void> {
    for (const name of names) await writeFile(join(dir, name), '');
  }

  async function rejection(promise: Promise<unknown>): Promise<OpsError> {
    const error = await promise.then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(OpsError);
    return error as OpsError;
  }

  it('uses a single binary as it is, whatever the cluster runs', async () => {
    // Arrange
    await binaries('talosctl');
    const single = createTalosctlBinaries(join(dir, 'talosctl'));

    // Act
    const known = await single.forVersion('v1.11.6');
    const unknown = await single.forVersion(undefined);

    // Assert
    expect(known).toEqual({ path: join(dir, 'talosctl'), version: undefined });
    expect(unknown).toEqual({ path: join(dir, 'talosctl'), version: undefined });
  });

  it('uses a name to look up on PATH as it is', async () => {
    // Act
    const found = await createTalosctlBinaries('talosctl').forVersion('v1.11.6');

    // Assert
    expect(found).toEqual({ path: 'talosctl', version: undefined });
  });

  it('picks the exact version from a directory of versioned binaries', async () => {
    // Arrange
    await binaries('talosctl-v1.10.9', 'talosctl-v1.11.5', 'talosctl-v1.11.6', 'talosctl-v1.12.1');

    // Act
    const found = await createTalosctlBinaries(dir).forVersion('v1.11.5');

    // Assert
    expect(found).toEqual({ path: join(dir, 'talosctl-v1.11.5'), version: 'v1.11.5' });
  });

  it('picks the newest by version, not by name, when the running version is unknown', async () => {
    // Arrange: v1.9.5 sorts after v1.12.1 as text.
    await binaries('talosctl-v1.9.5', 'talosctl-v1.12.1', 'talosctl-v1.11.6');

    // Act
    const found = await createTalosctlBinaries(dir).forVersion(undefined);

    // Assert
    expect(found).toEqual({ path: join(dir, 'talosctl-v1.12.1'), version: 'v1.12.1' });
  });

  it('ignores files that are not talosctl-vX.Y.Z', async () => {
    // Arrange
    await binaries('talosctl-v1.11.6', 'talosctl-v1.13.0-beta.0', 'talosctl', 'talosctl-v1.14.0.sha256', 'README');

    // Act
    const found = await createTalosctlBinaries(dir).forVersion(undefined);

    // Assert
    expect(found).toEqual({ path: join(dir, 'talosctl-v1.11.6'), version: 'v1.11.6' });
  });

  it('with closest, takes the newest of the same minor when the exact one is missing', async () => {
    // Arrange
    await binaries('talosctl-v1.11.3', 'talosctl-v1.11.5', 'talosctl-v1.12.1', 'talosctl-v1.10.9');

    // Act
    const found = await createTalosctlBinaries(dir).forVersion('v1.11.6', { closest: true });

    // Assert
    expect(found).toEqual({ path: join(dir, 'talosctl-v1.11.5'), version: 'v1.11.5' });
  });

  it('with closest, still prefers the exact version', async () => {
    // Arrange
    await binaries('talosctl-v1.11.3', 'talosctl-v1.11.5');

    // Act
    const found = await createTalosctlBinaries(dir).forVersion('v1.11.3', { closest: true });

    // Assert
    expect(found.version).toBe('v1.11.3');
  });

  it('with closest and no binary of that minor, takes the newest so a read-only check still runs', async () => {
    // Arrange
    await binaries('talosctl-v1.10.9', 'talosctl-v1.12.1');

    // Act
    const found = await createTalosctlBinaries(dir).forVersion('v1.11.6', { closest: true });

    // Assert
    expect(found).toEqual({ path: join(dir, 'talosctl-v1.12.1'), version: 'v1.12.1' });
  });

  it('refuses a missing exact version, naming the file to add', async () => {
    // Arrange
    await binaries('talosctl-v1.11.5', 'talosctl-v1.12.1');

    // Act
    const error = await rejection(createTalosctlBinaries(dir).forVersion('v1.11.6'));

    // Assert
    expect(error.code).toBe('talosctl-version-mismatch');
    expect(error.message).toBe(`no talosctl v1.11.6 in ${dir}, and the client must match the running Talos`);
    expect(error.hint).toBe(`add talosctl-v1.11.6 to ${dir}`);
  });

  it('refuses an empty directory, saying what to put there', async () => {
    // Act
    const error = await rejection(createTalosctlBinaries(dir).forVersion(undefined));

    // Assert
    expect(error.code).toBe('talosctl-missing');
    expect(error.message).toBe(`${dir} holds no talosctl-vX.Y.Z binaries`);
    expect(error.hint).toBe('put versioned talosctl binaries there, or point TALOSCTL_BIN at one binary');
  });
});
