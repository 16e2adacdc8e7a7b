import semver from 'semver';
import { BotError } from '../errors.ts';
import { FACTORY_REGISTRY } from '../talos/image-factory.ts';

/** The platform-specific installer (`<platform>-installer`) exists from Talos 1.10 on. */
const PLATFORM_INSTALLER_SINCE = '1.10.0';

const PLATFORM = /^[a-z0-9]+(?:-[a-z0-9]+)*$/;
const SCHEMATIC = /^[0-9a-f]{64}$/;
const VERSION = /^v(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)$/;

/** An installer image that cannot be built as asked. */
export class InstallerImageError extends BotError {
  override readonly name = 'InstallerImageError';

  constructor(message: string) {
    super('invalid-installer-image', message);
  }
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
    throw new InstallerImageError(
      `${JSON.stringify(platform)} is not a Talos platform: use lower-case letters, digits and dashes, e.g. nocloud`,
    );
  }
  if (!SCHEMATIC.test(schematic)) {
    throw new InstallerImageError(`${JSON.stringify(schematic)} is not an Image Factory schematic ID: expected 64 lower-case hex digits`);
  }
  if (!VERSION.test(version))
    throw new InstallerImageError(`${JSON.stringify(version)} is not a Talos version: expected the form v1.12.11`);
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
  if (!VERSION.test(version))
    throw new InstallerImageError(`${JSON.stringify(version)} is not a Talos version: expected the form v1.12.11`);
  if (image.includes('@')) {
    throw new InstallerImageError(
      `${JSON.stringify(image)} is pinned by digest: retagging it would leave the digest pointing at the old version`,
    );
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
const FACTORY_INSTALLER =
  /^[a-z0-9.-]+(?::[0-9]+)?\/(?:([a-z0-9]+(?:-[a-z0-9]+)*)-)?installer(-secureboot)?\/([0-9a-f]{64})(?::([^:/@\s]+))?$/;

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
    const what = generic
      ? 'the generic installer, which can rename eth0 and cut the node off the network'
      : 'not an Image Factory installer';
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

/** The two installer classes: Terraform's default schematic, or its Longhorn installer output. */
export type NodeClassName = 'default' | 'longhorn';

/** Terraform's two installer outputs, as a node class's evidence compares them. */
export interface ClassSchematics {
  /** `talos_image_factory_schematic_id` (or the inventory's rename of it). */
  default: { schematic: string; output: string };
  /** The schematic inside `talos_longhorn_installer_image`; undefined when Terraform outputs none. */
  longhorn: { schematic: string; output: string } | undefined;
}

/** Everything that may decide a node's installer class. Extensions are not part of it: every node's image carries Longhorn's. */
export interface NodeClassInput {
  role: 'controlplane' | 'worker';
  /** The schematic the node runs (its `schematic` pseudo-extension); undefined when it lists none. */
  running: string | undefined;
  outputs: ClassSchematics;
  /** The class the bot recorded for the node when its last operation completed, and that operation. */
  recorded: { class: NodeClassName; op: string } | undefined;
  /** The inventory's declaration: `longhornNodes` or `defaultClassNodes`. */
  declared: NodeClassName | undefined;
  /** Some other node of the cluster runs the Longhorn schematic, or is declared or recorded in the Longhorn class (or cannot be read). */
  clusterHasLonghorn: boolean;
  /** The request keeps the running version: a same-version extension change, which may move a node to its class's schematic. */
  sameVersion: boolean;
  /** The version the cluster runs, for the refusal's next step. */
  runningVersion: string | undefined;
}

export interface NodeClass {
  class: NodeClassName;
  /** Why, for the plan: what was observed, recorded or declared. */
  because: string;
}

export type NodeClassVerdict = ({ ok: true } & NodeClass) | { ok: false; reason: string };

const short = (schematic: string | undefined): string =>
  schematic === undefined ? 'no schematic (an image not built by the Image Factory)' : `schematic ${schematic}`;

/**
 * A node's installer class, from the schematic it runs: the runbook gives
 * `talos_longhorn_installer_image` to Longhorn workers only, so a control plane is of the
 * default class, and a worker is of the class whose schematic it runs. Extensions decide
 * nothing: the runbook's production design puts iscsi-tools and util-linux-tools into every
 * node's image. A worker that runs neither output's schematic (Terraform changed one and the
 * node still runs the old) is placed by evidence, in order: the class recorded at its last
 * completed operation, the inventory's declaration, and the default class when the cluster has
 * no Longhorn node at all. Anything else is refused rather than guessed: the wrong installer
 * changes a node's schematic in the middle of an upgrade.
 */
export function nodeInstallerClass(input: NodeClassInput): NodeClassVerdict {
  const { running, outputs, recorded, declared } = input;
  const longhorn = outputs.longhorn;
  const runsDefault = running !== undefined && running === outputs.default.schematic;
  const runsLonghorn = running !== undefined && longhorn !== undefined && running === longhorn.schematic && !runsDefault;
  if (input.role === 'controlplane') {
    const listed = declared === 'longhorn' ? '; longhornNodes lists it, which a control plane does not follow' : '';
    if (!runsLonghorn) {
      const why = runsDefault
        ? 'a control plane, on the default schematic'
        : 'a control plane: the runbook gives the Longhorn installer to Longhorn workers only';
      return { ok: true, class: 'default', because: `${why}${listed}` };
    }
    if (input.sameVersion) {
      return {
        ok: true,
        class: 'default',
        because: `a control plane that runs the Longhorn schematic: this same-version change moves it to the default schematic${listed}`,
      };
    }
    const again =
      input.runningVersion === undefined ? 'a re-install on the running version' : `\`/talos upgrade talos ${input.runningVersion}\``;
    return {
      ok: false,
      reason:
        `is a control plane and runs the Longhorn schematic ${longhorn!.schematic} (${longhorn!.output}), but the runbook gives the Longhorn installer to Longhorn workers only, ` +
        `so a control plane takes the default schematic ${outputs.default.schematic} (${outputs.default.output}). Moving it is a same-version extension change, not part of a version upgrade: ` +
        `ask for it as such (${again}), then upgrade`,
    };
  }
  const otherwise = (cls: NodeClassName): string =>
    declared !== undefined && declared !== cls
      ? `; the inventory declares it ${declared === 'longhorn' ? 'in longhornNodes' : 'in defaultClassNodes'}, but the schematic it runs decides`
      : '';
  if (runsDefault)
    return { ok: true, class: 'default', because: `runs the default schematic (${outputs.default.output})${otherwise('default')}` };
  if (runsLonghorn)
    return { ok: true, class: 'longhorn', because: `runs the Longhorn schematic (${longhorn!.output})${otherwise('longhorn')}` };
  const neither = `runs ${short(running)}, neither output's`;
  if (recorded !== undefined)
    return {
      ok: true,
      class: recorded.class,
      because: `${neither}; the bot recorded it in the ${recorded.class} class when ${recorded.op} completed`,
    };
  if (declared !== undefined)
    return {
      ok: true,
      class: declared,
      because: `${neither}; the inventory declares it (${declared === 'longhorn' ? 'longhornNodes' : 'defaultClassNodes'})`,
    };
  if (!input.clusterHasLonghorn)
    return { ok: true, class: 'default', because: `${neither}; no node of the cluster runs or is declared in the Longhorn class` };
  const longhornText =
    longhorn === undefined
      ? 'and Terraform outputs no Longhorn installer'
      : `nor the Longhorn schematic ${longhorn.schematic} (${longhorn.output})`;
  return {
    ok: false,
    reason:
      `is a worker that runs ${short(running)}, neither the default schematic ${outputs.default.schematic} (${outputs.default.output}) ${longhornText}; ` +
      'the bot has recorded no class for it and the inventory declares none, while the cluster has Longhorn nodes, so its installer cannot be chosen safely. ' +
      'Declare its class in the inventory: add it to longhornNodes if it is a Longhorn worker, or to defaultClassNodes if it is not, then plan again',
  };
}
