import semver from 'semver';

/** The Image Factory host that serves installer images. */
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
}

/**
 * Builds `factory.talos.dev/<platform>-installer/<schematic>:<version>`. The platform is
 * required: the generic `installer` image can rename eth0 to ens18 on these VMs, invalidating
 * their LinkConfig and cutting IPv4 connectivity.
 *
 * @throws {InstallerImageError} for a missing or generic platform, a malformed schematic or
 *   version, or a version older than the platform installers
 */
export function installerImage({ platform, schematic, version }: InstallerImageInput): string {
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
  return `${FACTORY_REGISTRY}/${platform}-installer/${schematic}:${version}`;
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
