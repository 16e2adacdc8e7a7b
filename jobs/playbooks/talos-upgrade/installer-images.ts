import type { TerraformOutputs } from '../../../src/cluster/terraform-outputs.ts';
import { allNodes, type ClusterConfig } from '../../../src/config/inventory.ts';
import type { RecordedNodeClass } from '../../../src/ops/node-class-record.ts';
import {
  checkTerraformInstaller,
  installerImage,
  nodeInstallerClass,
  readFactoryInstaller,
  retagImage,
  type ClassSchematics,
  type NodeClass,
  type NodeClassName,
} from '../../../src/rules/installer-image.ts';
import { observeNodeImages, type NodeImage } from '../../../src/talos/observe.ts';
import type { Talosctl } from '../../../src/talos/talosctl.ts';

/** One node's installer image for a target, as the rules derive it now, and what decided it. */
export interface NodeInstaller {
  image: string;
  /** The schematic `image` carries. */
  schematic: string;
  nodeClass: NodeClass;
  /** What the node runs now, as `talosctl get extensions` reports it. */
  running: NodeImage;
}

export interface InstallerImages {
  /** The default schematic, Terraform's `talos_image_factory_schematic_id` (or the inventory's rename). */
  schematic: string;
  byNode: Map<string, NodeInstaller>;
  /** Nodes whose image cannot be chosen safely, and why. */
  refusals: string[];
}

/** What the bot knows of the nodes besides what they run: its record of their classes, and the request. */
export interface ClassEvidence {
  /** The class recorded for each node when its last operation completed (see `NodeClassRecord`). */
  recorded: Map<string, RecordedNodeClass>;
  /** The version the cluster runs now, when it runs one. */
  runningVersion: string | undefined;
}

const withV = (version: string | undefined): string | undefined =>
  version === undefined || version === '' ? undefined : version.startsWith('v') ? version : `v${version}`;

/**
 * The installer image of each of `nodes` for `target`: the schematic from Terraform with the
 * cluster's platform, or, for the Longhorn node class, Terraform's Longhorn installer output
 * (checked to be the platform installer, never the generic one) with only its tag changed. A
 * node's class comes from the schematic it runs (`talosctl get extensions`: the `schematic`
 * pseudo-extension), then from the bot's record and the inventory (`nodeInstallerClass`);
 * every node of the cluster is read, since whether the cluster has a Longhorn node is evidence
 * too.
 *
 * @throws {InstallerImageError} when Terraform's outputs cannot make an installer image
 */
export async function deriveInstallerImages(
  outputs: TerraformOutputs,
  cluster: ClusterConfig,
  talosctl: Talosctl,
  nodes: string[],
  target: string,
  evidence: ClassEvidence,
  signal?: AbortSignal,
  registry?: string,
): Promise<InstallerImages> {
  const everyNode = allNodes(cluster);
  const [schematicOutput, longhornOutput, running] = await Promise.all([
    outputs.required('schematicId', signal),
    outputs.optional('longhornInstaller', signal),
    observeNodeImages(talosctl, everyNode, signal),
  ]);
  const schematic = schematicOutput.trim();
  const longhornName = outputs.name('longhornInstaller');
  const image = installerImage({ platform: cluster.installerPlatform, schematic, version: target, registry });
  const longhorn =
    longhornOutput === undefined || longhornOutput.trim() === ''
      ? undefined
      : {
          schematic: checkTerraformInstaller(longhornOutput, cluster.installerPlatform, longhornName).schematic,
          image: retagImage(longhornOutput.trim(), target),
        };
  const classOutputs: ClassSchematics = {
    default: { schematic, output: outputs.name('schematicId') },
    longhorn: longhorn === undefined ? undefined : { schematic: longhorn.schematic, output: longhornName },
  };
  const declaredOf = (node: string): NodeClassName | undefined =>
    cluster.longhornNodes.includes(node) ? 'longhorn' : cluster.defaultClassNodes.includes(node) ? 'default' : undefined;
  // A node that cannot be read might be of the Longhorn class: it counts as one, so the default is never guessed past it.
  const longhornLike = (node: string): boolean => {
    const seen = running.get(node);
    if (seen === undefined || !seen.reachable) return true;
    const runsLonghorn = longhorn !== undefined && seen.schematic === longhorn.schematic && seen.schematic !== schematic;
    return runsLonghorn || declaredOf(node) === 'longhorn' || evidence.recorded.get(node)?.class === 'longhorn';
  };
  const runningVersion = withV(evidence.runningVersion);
  const byNode = new Map<string, NodeInstaller>();
  const refusals: string[] = [];
  for (const node of nodes) {
    const observed = running.get(node) ?? { reachable: false as const, error: 'no answer' };
    if (!observed.reachable) {
      refusals.push(
        `${node} does not answer talosctl get extensions (${observed.error}), so its node class and the installer it needs cannot be read`,
      );
      continue;
    }
    const recorded = evidence.recorded.get(node);
    const verdict = nodeInstallerClass({
      role: cluster.controlPlanes.includes(node) ? 'controlplane' : 'worker',
      running: observed.schematic,
      outputs: classOutputs,
      recorded: recorded === undefined ? undefined : { class: recorded.class, op: recorded.op },
      declared: declaredOf(node),
      clusterHasLonghorn: everyNode.some((other) => other !== node && longhornLike(other)),
      sameVersion: runningVersion !== undefined && runningVersion === withV(target),
      runningVersion,
    });
    if (!verdict.ok) {
      refusals.push(`${node} ${verdict.reason}`);
      continue;
    }
    const nodeClass: NodeClass = { class: verdict.class, because: verdict.because };
    if (nodeClass.class === 'longhorn' && longhorn === undefined) {
      refusals.push(
        `${node} is of the Longhorn node class (it ${nodeClass.because}), but Terraform outputs no ${longhornName}: its installer cannot be chosen`,
      );
      continue;
    }
    const chosen = nodeClass.class === 'longhorn' && longhorn !== undefined ? longhorn : { image, schematic };
    byNode.set(node, { image: chosen.image, schematic: chosen.schematic, nodeClass, running: observed });
  }
  return { schematic, byNode, refusals };
}

/** The schematic an installer reference carries, when it is an Image Factory installer. */
export function schematicOfImage(image: string | undefined): string | undefined {
  return image === undefined ? undefined : readFactoryInstaller(image)?.schematic;
}

/**
 * Nodes whose derived image carries another schematic than the one they run: what a
 * same-version re-install would change. A node that lists no schematic (not built by the
 * Image Factory) differs from any factory image.
 */
export function imageChanges(images: InstallerImages): string[] {
  return [...images.byNode].filter(([, n]) => n.running.reachable && n.running.schematic !== n.schematic).map(([node]) => node);
}
