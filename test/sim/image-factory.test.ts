import { createHash } from 'node:crypto';
import { describe } from 'vitest';
import { assetChunks } from './image-factory.ts';
import { simTest } from './sim-fixture.ts';

const it = simTest();

describe.concurrent('simulated Image Factory ISOs', () => {
  it('serves the ISO of a known schematic and version for each architecture, in many chunks, with deterministic bytes', async ({
    f,
    expect,
  }) => {
    // Arrange
    const schematic = f.sim.cluster('production').terraform.defaultSchematic;

    // Act
    const response = await fetch(`${f.sim.imageFactoryUrl}/image/${schematic}/v1.12.11/nocloud-arm64.iso`);
    const hash = createHash('sha256');
    let chunks = 0;
    for await (const chunk of response.body!) {
      hash.update(chunk);
      chunks++;
    }
    const expected = createHash('sha256');
    for (const chunk of assetChunks(schematic, 'v1.12.11', 'nocloud-arm64.iso')) expected.update(chunk);

    // Assert
    expect(response.status).toBe(200);
    expect(response.headers.get('content-length')).toBe(String(4 * 1024 * 1024));
    expect(chunks).toBeGreaterThan(1);
    expect(hash.digest('hex')).toBe(expected.digest('hex'));
  });

  it('answers 404 for an unknown schematic or version, as the real factory', async ({ f, expect }) => {
    // Arrange
    const schematic = f.sim.cluster('production').terraform.defaultSchematic;

    // Act
    const [version, unknownSchematic] = await Promise.all([
      fetch(`${f.sim.imageFactoryUrl}/image/${schematic}/v1.99.0/nocloud-amd64.iso`),
      fetch(`${f.sim.imageFactoryUrl}/image/${'e'.repeat(64)}/v1.12.11/nocloud-amd64.iso`),
    ]);

    // Assert
    expect([version.status, unknownSchematic.status]).toEqual([404, 404]);
  });
});
