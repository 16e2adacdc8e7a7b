/** Image Factory schematics: content-addressed ids over the canonical YAML, as the factory computes them. */
import { createHash } from 'node:crypto';

/** The id of the empty schematic (documented by the Image Factory). */
export const EMPTY_SCHEMATIC = '376567988ad370138ad8b2698212367b8edcb69b5fd68c80be1f2ec7d603b4ba';

export function schematicYaml(extensions: readonly string[]): string {
  if (extensions.length === 0) return 'customization: {}\n';
  const sorted = [...extensions].sort();
  return `customization:\n    systemExtensions:\n        officialExtensions:\n${sorted.map((e) => `            - ${e}\n`).join('')}`;
}

export function schematicId(extensions: readonly string[]): string {
  if (extensions.length === 0) return EMPTY_SCHEMATIC;
  return createHash('sha256').update(schematicYaml(extensions)).digest('hex');
}

export interface ExtensionInfo {
  name: string;
  image: string;
  version: string;
  author: string;
  description: string;
}

const KNOWN: Record<string, Omit<ExtensionInfo, 'name' | 'image'>> = {
  'siderolabs/iscsi-tools': {
    version: 'v0.2.0',
    author: 'Sidero Labs',
    description: 'This system extension provides iscsi-tools.',
  },
  'siderolabs/util-linux-tools': {
    version: '2.41.1',
    author: 'Sidero Labs',
    description: 'This system extension provides util-linux tools.',
  },
  'siderolabs/intel-ucode': {
    version: '20250812',
    author: 'Sidero Labs',
    description: 'This system extension provides Intel microcode binaries.',
  },
  'siderolabs/qemu-guest-agent': {
    version: '10.0.2',
    author: 'Markus Reiter',
    description: 'This system extension provides the QEMU Guest Agent service.',
  },
};

/** What `get extensions` reports for an official extension. */
export function extensionInfo(official: string): ExtensionInfo {
  const known = KNOWN[official] ?? { version: 'v1.0.0', author: 'Sidero Labs', description: `This system extension provides ${official}.` };
  const name = official.split('/').pop() ?? official;
  return { name, image: `ghcr.io/${official}:${known.version}`, ...known };
}
