import semver from 'semver';

/** The public Image Factory's registry host; a self-hosted factory serves its own (see `installerRegistry`). */
export const FACTORY_REGISTRY = 'factory.talos.dev';

/** The platform-specific installer (`<platform>-installer`) exists from Talos 1.10 on. */
const PLATFORM_INSTALLER_SINCE = '1.10.0';

const PLATFORM = /^[a-z0-9]+(?:-[a-z0-9]+)*$/;
const SCHEMATIC = /^[0-9a-f]{64}$/;
const VERSION = /^v(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)$/;

/** An installer image that cannot be built as asked. */
export class InstallerImageError extends Error {
  override readonly name = 'InstallerImageError';
  readonly code = 'invalid-installer-image';
}

/** What identifies an Image Factory installer image. */
export interface InstallerImageInput {
  /** Talos platform of the nodes, e.g. `nocloud` for these Proxmox VMs, `metal`. */
  platform: string;
  /** Image Factory schematic ID, 64 lower-case hex digits. */
  schematic: string;
  /** Target Talos version, `vX.Y.Z`. */
  version: string;
  /** The Image Factory registry host; default {@link FACTORY_REGISTRY}. */
  registry?: string;
}

/**
 * Builds `factory.talos.dev/<platform>-installer/<schematic>:<version>`. The platform is
 * required: the generic `installer` image can rename eth0 to ens18 on these VMs, invalidating
 * their LinkConfig and cutting IPv4 connectivity.
 *
 * @throws {InstallerImageError} for a missing or generic platform, a malformed schematic or
 *   version, or a version older than the platform installers
 */
export function installerImage({ platform, schematic, version, registry = FACTORY_REGISTRY }: InstallerImageInput): string {
  if (platform === '' || platform === 'installer') {
    throw new InstallerImageError(
      'the installer platform is required (e.g. nocloud): the generic installer can rename eth0 and cut the node off the network',
    );
  }
  if (platform.includes('installer')) {
    throw new InstallerImageError(`pass the platform alone (e.g. nocloud), not an image name: ${JSON.stringify(platform)}`);
  }
  if (!PLATFORM.test(platform)) {
    throw new InstallerImageError(`${JSON.stringify(platform)} is not a Talos platform: use lower-case letters, digits and dashes, e.g. nocloud`);
  }
  if (!SCHEMATIC.test(schematic)) {
    throw new InstallerImageError(`${JSON.stringify(schematic)} is not an Image Factory schematic ID: expected 64 lower-case hex digits`);
  }
  if (!VERSION.test(version)) throw new InstallerImageError(`${JSON.stringify(version)} is not a Talos version: expected the form v1.12.11`);
  if (semver.lt(version.slice(1), PLATFORM_INSTALLER_SINCE)) {
    throw new InstallerImageError(`${platform}-installer images exist from Talos v${PLATFORM_INSTALLER_SINCE}; ${version} is older`);
  }
  return `${registry}/${platform}-installer/${schematic}:${version}`;
}

/**
 * Replaces only the tag of an image reference, e.g.
 * `factory.talos.dev/nocloud-installer/<schematic>:v1.11.6` → `…:v1.12.11`. A registry port
 * (`registry:5000/talos/installer`) is not a tag.
 *
 * @throws {InstallerImageError} for an image pinned by digest, an empty repository, or a version
 *   that is not `vX.Y.Z`
 */
export function retagImage(image: string, version: string): string {
  if (!VERSION.test(version)) throw new InstallerImageError(`${JSON.stringify(version)} is not a Talos version: expected the form v1.12.11`);
  if (image.includes('@')) {
    throw new InstallerImageError(`${JSON.stringify(image)} is pinned by digest: retagging it would leave the digest pointing at the old version`);
  }
  const lastSlash = image.lastIndexOf('/');
  const colon = image.indexOf(':', lastSlash + 1);
  const repository = colon === -1 ? image : image.slice(0, colon);
  if (repository === '' || repository.endsWith('/') || /\s/.test(image)) {
    throw new InstallerImageError(`${JSON.stringify(image)} is not an image reference`);
  }
  return `${repository}:${version}`;
}

/** An Image Factory installer reference, read back into its parts. */
export interface FactoryInstaller {
  /** `nocloud`, `metal`…; undefined for the generic `installer` image. */
  platform: string | undefined;
  secureboot: boolean;
  schematic: string;
  /** The tag, when the reference has one. */
  version: string | undefined;
}

/** Any registry host (factory.talos.dev, or a self-hosted Image Factory such as `factory.example.org:5000`). */
const FACTORY_INSTALLER = /^[a-z0-9.-]+(?::[0-9]+)?\/(?:([a-z0-9]+(?:-[a-z0-9]+)*)-)?installer(-secureboot)?\/([0-9a-f]{64})(?::([^:/@\s]+))?$/;

/** Reads `<factory host>/[<platform>-]installer[-secureboot]/<schematic>[:<tag>]`; undefined for any other reference. */
export function readFactoryInstaller(image: string): FactoryInstaller | undefined {
  const match = FACTORY_INSTALLER.exec(image.trim());
  if (match === null) return undefined;
  return { platform: match[1], secureboot: match[2] !== undefined, schematic: match[3]!, version: match[4] };
}

/**
 * Checks an installer image Terraform outputs for a node class (`talos_longhorn_installer_image`)
 * before the bot retags it: it must be the Image Factory's installer for the cluster's platform.
 * The generic `installer` image can rename eth0 to ens18 on these VMs and cut them off the network.
 *
 * @param output the Terraform output's name, for the message
 * @returns the schematic the image carries
 * @throws {InstallerImageError} for a generic installer, another platform's, or a reference that
 *   is not an Image Factory installer
 */
export function checkTerraformInstaller(image: string, platform: string, output: string): { schematic: string } {
  const expected = `${FACTORY_REGISTRY}/${platform}-installer/<schematic>:<version>`;
  const read = readFactoryInstaller(image);
  if (read === undefined) {
    const generic = /(^|\/)installer(-secureboot)?(:|\/|@|$)/.test(image.trim()) && !/-installer/.test(image);
    const what = generic ? 'the generic installer, which can rename eth0 and cut the node off the network' : 'not an Image Factory installer';
    throw new InstallerImageError(`${output} is ${JSON.stringify(image.trim())}, ${what}: Terraform must output ${expected}`);
  }
  if (read.platform === undefined) {
    throw new InstallerImageError(
      `${output} is ${JSON.stringify(image.trim())}, the generic Image Factory installer (factory.talos.dev/installer/…), which can rename eth0 and cut the node off the network: Terraform must output ${expected}`,
    );
  }
  if (read.platform !== platform) {
    throw new InstallerImageError(
      `${output} is a ${read.platform}-installer image, but the nodes of this cluster install ${platform}-installer: Terraform must output ${expected}`,
    );
  }
  return { schematic: read.schematic };
}

/** The system extensions that make a node of the Longhorn node class (ADR 008). */
export const LONGHORN_EXTENSIONS: readonly string[] = ['iscsi-tools', 'util-linux-tools'];

/** What decides which Terraform installer output a node gets. */
export interface NodeClassInput {
  /** Listed in the inventory's `longhornNodes`. */
  listed: boolean;
  /** What the node runs (`talosctl get extensions`): its schematic, when it lists one, and its extensions' names. */
  running: { schematic: string | undefined; extensions: string[] } | undefined;
  /** The schematic of Terraform's Longhorn installer output, when Terraform has one. */
  longhornSchematic: string | undefined;
}

export interface NodeClass {
  class: 'longhorn' | 'default';
  /** Why, for the plan: what was observed or declared. */
  because: string;
}

/**
 * A node's installer class, from what it runs as much as from what the inventory lists: a node
 * that runs the Longhorn schematic or any of Longhorn's extensions keeps the Longhorn installer
 * (the default image would remove them and break its volumes), and so does a node the inventory
 * lists (that is how one joins the class).
 */
export function nodeInstallerClass(input: NodeClassInput): NodeClass {
  const { running, longhornSchematic } = input;
  if (running?.schematic !== undefined && running.schematic === longhornSchematic) return { class: 'longhorn', because: 'runs the Longhorn schematic' };
  const names = (running?.extensions ?? []).map((e) => e.split('/').pop()!);
  const longhorn = LONGHORN_EXTENSIONS.filter((e) => names.includes(e));
  if (longhorn.length > 0) return { class: 'longhorn', because: `runs ${longhorn.join(', ')}` };
  if (input.listed) return { class: 'longhorn', because: 'listed in longhornNodes' };
  return { class: 'default', because: running === undefined ? 'its extensions are unknown' : 'runs no Longhorn extension' };
}
