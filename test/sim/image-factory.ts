/** A fake Image Factory (siderolabs/image-factory docs/api.md): versions, schematics, assets. */
import { createHash } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { parse } from 'yaml';
import { extensionInfo, schematicId, schematicYaml } from './schematics.ts';
import type { SimState } from './types.ts';

/** Releases up to late 2026: the latest patches are 1.10.9, 1.11.6, 1.12.11 and 1.13.9. */
export function defaultFactoryVersions(): string[] {
  const range = (minor: number, last: number): string[] => Array.from({ length: last + 1 }, (_, p) => `v1.${minor}.${p}`);
  return [
    ...range(9, 6),
    ...range(10, 9),
    ...range(11, 6),
    'v1.12.0-alpha.2',
    'v1.12.0-beta.1',
    ...range(12, 11),
    ...range(13, 9),
    'v1.14.0-rc.1',
  ];
}

const ASSET_PATHS =
  /^(metal|nocloud|aws|gcp)-(amd64|arm64)(-secureboot)?\.(iso|raw\.xz|raw\.tar\.gz)$|^(kernel-(amd64|arm64)|initramfs-(amd64|arm64)\.xz|cmdline-metal-(amd64|arm64)|installer-(amd64|arm64)\.tar)$/;

/** An ISO is served as this many chunks of {@link CHUNK} bytes: large enough that a client must stream it. */
const ISO_CHUNKS = 64;
const CHUNK = 64 * 1024;

/**
 * Deterministic bytes of an asset, chunk by chunk, so a checksum computed once stays valid: each
 * chunk repeats the sha256 of the asset's path and the chunk's index; the first begins with a header.
 */
export function* assetChunks(schematic: string, version: string, asset: string): Generator<Buffer> {
  const count = asset.endsWith('.iso') ? ISO_CHUNKS : 1;
  for (let index = 0; index < count; index++) {
    const seed = createHash('sha256').update(`${schematic}/${version}/${asset}#${index}`).digest();
    const chunk = Buffer.alloc(CHUNK);
    for (let i = 0; i < chunk.length; i += seed.length) seed.copy(chunk, i);
    if (index === 0) chunk.write(`TALOS ${version} ${schematic}\n`, 0);
    yield chunk;
  }
}

function text(res: ServerResponse, code: number, body: string, type = 'text/plain; charset=utf-8'): void {
  res.writeHead(code, { 'content-type': type, 'content-length': Buffer.byteLength(body) });
  res.end(body);
}

async function readBody(req: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}

export async function startImageFactory(state: SimState): Promise<{ server: Server; url: string }> {
  const server = createServer((req, res) => {
    handle(state, req, res).catch((error: unknown) => text(res, 500, String(error)));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { server, url: `http://127.0.0.1:${(server.address() as AddressInfo).port}` };
}

async function handle(state: SimState, req: IncomingMessage, res: ServerResponse): Promise<void> {
  const url = new URL(req.url ?? '/', 'http://localhost');
  const parts = url.pathname.split('/').filter(Boolean);
  if (req.method === 'GET' && url.pathname === '/versions') {
    text(res, 200, JSON.stringify(state.factoryVersions), 'application/json');
    return;
  }
  if (req.method === 'POST' && url.pathname === '/schematics') {
    let extensions: string[];
    try {
      const doc = (parse(await readBody(req)) ?? {}) as { customization?: { systemExtensions?: { officialExtensions?: string[] } } };
      extensions = doc.customization?.systemExtensions?.officialExtensions ?? [];
    } catch (error) {
      text(res, 400, `error parsing schematic: ${(error as Error).message}`);
      return;
    }
    const id = schematicId(extensions);
    state.schematics[id] = [...extensions].sort();
    text(res, 201, JSON.stringify({ id, schematic: schematicYaml(extensions) }), 'application/json');
    return;
  }
  if (req.method === 'GET' && parts[0] === 'schematics' && parts.length === 2) {
    const extensions = state.schematics[parts[1] ?? ''];
    if (!extensions) text(res, 404, 'schematic not found');
    else text(res, 200, schematicYaml(extensions), 'application/yaml');
    return;
  }
  if (req.method === 'GET' && parts[0] === 'version' && parts[2] === 'extensions' && parts[3] === 'official') {
    if (!state.factoryVersions.includes(parts[1] ?? '')) {
      text(res, 404, 'version not found');
      return;
    }
    const official = ['siderolabs/iscsi-tools', 'siderolabs/util-linux-tools', 'siderolabs/qemu-guest-agent', 'siderolabs/intel-ucode'].map(
      (o) => {
        const info = extensionInfo(o);
        return {
          name: o,
          ref: info.image,
          digest: `sha256:${createHash('sha256').update(info.image).digest('hex')}`,
          author: info.author,
          description: info.description,
        };
      },
    );
    text(res, 200, JSON.stringify(official), 'application/json');
    return;
  }
  if ((req.method === 'GET' || req.method === 'HEAD') && parts[0] === 'image' && parts.length === 4) {
    const [, schematic = '', version = '', asset = ''] = parts;
    if (/\.(sha256|sha512|sigstore\.json)$/.test(asset)) {
      text(res, 402, 'checksums are available in Enterprise builds only');
      return;
    }
    if (!state.schematics[schematic] || !state.factoryVersions.includes(version) || !ASSET_PATHS.test(asset)) {
      text(res, 404, 'not found');
      return;
    }
    const chunks = [...assetChunks(schematic, version, asset)];
    res.writeHead(200, {
      'content-type': 'application/octet-stream',
      'content-length': chunks.length * CHUNK,
      'content-disposition': `attachment; filename=${asset}`,
    });
    if (req.method === 'HEAD') {
      res.end();
      return;
    }
    // Chunk by chunk, waiting for the client to drain each, as a large download arrives.
    for (const chunk of chunks) {
      if (!res.write(chunk)) await new Promise((resolve) => res.once('drain', resolve));
    }
    res.end();
    return;
  }
  text(res, 404, 'not found');
}
