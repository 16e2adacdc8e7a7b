import { createHash } from 'node:crypto';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { describe, expect, it } from 'vitest';
import { isoReasons, isoRefusal, planIso } from '../../../../../jobs/playbooks/shared/boot-iso.ts';
import type { ClusterConfig } from '../../../../../src/config/inventory.ts';
import type { TerraformOutputs } from '../../../../../src/cluster/terraform-outputs.ts';
import { createImageFactory, type ImageFactory } from '../../../../../src/talos/image-factory.ts';
import { parsePlanJson, reviewPlan } from '../../../../../src/tofu/parse-plan.ts';

const PROXMOX = 'registry.opentofu.org/bpg/proxmox';
const SCHEMATIC = 'c'.repeat(64);

/** `tofu show -json` with one VM change per entry, keyed by hostname. */
function review(vms: Record<string, string[]>) {
  const changes = Object.entries(vms).map(([key, actions]) => ({
    address: `proxmox_virtual_environment_vm.talos["${key}"]`,
    mode: 'managed',
    type: 'proxmox_virtual_environment_vm',
    name: 'talos',
    index: key,
    provider_name: PROXMOX,
    change: { actions, before: null, after: {}, after_unknown: {}, before_sensitive: {}, after_sensitive: {} },
  }));
  return reviewPlan(parsePlanJson(JSON.stringify({ format_version: '1.0', resource_changes: changes })));
}

const outputs = { required: () => Promise.resolve(`${SCHEMATIC}\n`) } as unknown as TerraformOutputs;
const cluster = { installerPlatform: 'nocloud' } as ClusterConfig;

/** A factory whose download answers `checksum`; the URL is the real adapter's. */
function factory(checksum: Awaited<ReturnType<ImageFactory['isoSha256']>>): ImageFactory & { asked: string[] } {
  const real = createImageFactory('https://factory.example.org/', 1000);
  const asked: string[] = [];
  return {
    ...real,
    asked,
    isoSha256: (url) => {
      asked.push(url);
      return Promise.resolve(checksum);
    },
  };
}

describe('the boot ISO a plan relies on', () => {
  it('is needed when the plan moves talos_version, creates or replaces a VM, and only then', () => {
    expect(isoReasons(review({ 'w-1': ['update'] }), false)).toEqual([]);
    expect(isoReasons(review({ 'w-2': ['create'], 'cp-1': ['delete', 'create'] }), true)).toEqual([
      'it moves talos_version',
      'it creates the VM of w-2',
      'it replaces the VM of cp-1',
    ]);
  });

  it('is the Image Factory ISO of the declared schematic and version, with the full sha256 of the download', async () => {
    const sha256 = 'd'.repeat(64);
    const f = factory({ ok: true, sha256, bytes: 4096 });

    const iso = await planIso({ factory: f, outputs, cluster, review: review({}), talosVersion: '1.12.11', talosMoves: true });

    const url = `https://factory.example.org/image/${SCHEMATIC}/v1.12.11/nocloud-amd64.iso`;
    expect(iso).toEqual({ because: 'it moves talos_version', file: 'isos:iso/talos-nocloud-amd64.iso', url, sha256, bytes: 4096 });
    expect(f.asked).toEqual([url]);
    expect(isoRefusal(iso)).toBeUndefined();
  });

  it('refuses the plan when the download fails, saying why and what to do', async () => {
    const f = factory({ ok: false, reason: 'Image Factory answered 404 Not Found' });

    const iso = await planIso({
      factory: f,
      outputs,
      cluster,
      review: review({ 'w-2': ['create'] }),
      talosVersion: 'v1.12.11',
      talosMoves: false,
    });

    expect(iso?.sha256).toBeUndefined();
    expect(isoRefusal(iso)).toMatch(
      /^the plan relies on the boot ISO \(it creates the VM of w-2\), but the bot could not compute its sha256 from https:\/\/factory\.example\.org\/image\/c+\/v1\.12\.11\/nocloud-amd64\.iso: Image Factory answered 404 Not Found\. .*check IMAGE_FACTORY_URL/,
    );
  });

  it('downloads nothing for a plan that relies on no ISO', async () => {
    const f = factory({ ok: true, sha256: 'e'.repeat(64), bytes: 1 });

    const iso = await planIso({
      factory: f,
      outputs,
      cluster,
      review: review({ 'w-1': ['update'] }),
      talosVersion: 'v1.12.11',
      talosMoves: false,
    });

    expect(iso).toBeUndefined();
    expect(f.asked).toEqual([]);
  });
});

describe('the ISO download', () => {
  it('hashes what streams in, and stops a download larger than its bound', async () => {
    const body = Buffer.alloc(3000, 7);
    const server = createServer((_req, res) => {
      res.writeHead(200, { 'content-type': 'application/octet-stream' });
      res.end(body);
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/image/s/v1.12.11/nocloud-amd64.iso`;
    try {
      const whole = await createImageFactory('http://127.0.0.1', 1000, { maxIsoBytes: 4000 }).isoSha256(url);
      const bounded = await createImageFactory('http://127.0.0.1', 1000, { maxIsoBytes: 2000 }).isoSha256(url);

      expect(whole).toEqual({ ok: true, sha256: createHash('sha256').update(body).digest('hex'), bytes: 3000 });
      expect(bounded).toEqual({ ok: false, reason: 'the download passed 2000 bytes, more than any Talos ISO; it was stopped' });
    } finally {
      server.close();
    }
  });
});
