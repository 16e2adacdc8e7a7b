import type { TerraformOutputs } from '../src/cluster/terraform-outputs.ts';
import type { ClusterConfig } from '../src/config/inventory.ts';
import { checkTerraformInstaller, installerImage, nodeInstallerClass, readFactoryInstaller, retagImage, type NodeClass } from '../src/rules/installer-image.ts';
import { observeNodeImages, type NodeImage } from '../src/talos/observe.ts';
import type { Talosctl } from '../src/talos/talosctl.ts';

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

/**
 * The installer image of each of `nodes` for `target`: the schematic from Terraform with the
 * cluster's platform, or, for the Longhorn node class, Terraform's Longhorn installer output
 * (checked to be the platform installer, never the generic one) with only its tag changed. A
 * node's class comes from what it runs (`talosctl get extensions`: the Longhorn schematic or
 * Longhorn's extensions) as well as from the inventory's `longhornNodes`.
 *
 * @throws {InstallerImageError} when Terraform's outputs cannot make an installer image
 */
export async function deriveInstallerImages(
  outputs: TerraformOutputs,
  cluster: ClusterConfig,
  talosctl: Talosctl,
  nodes: string[],
  target: string,
  signal?: AbortSignal,
  registry?: string,
): Promise<InstallerImages> {
  const [schematicOutput, longhornOutput, running] = await Promise.all([
    outputs.required('schematicId', signal),
    outputs.optional('longhornInstaller', signal),
    observeNodeImages(talosctl, nodes, signal),
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
  const byNode = new Map<string, NodeInstaller>();
  const refusals: string[] = [];
  for (const node of nodes) {
    const observed = running.get(node) ?? { reachable: false as const, error: 'no answer' };
    if (!observed.reachable) {
      refusals.push(`${node} does not answer talosctl get extensions (${observed.error}), so its node class and the installer it needs cannot be read`);
      continue;
    }
    const nodeClass = nodeInstallerClass({ listed: cluster.longhornNodes.includes(node), running: observed, longhornSchematic: longhorn?.schematic });
    if (nodeClass.class === 'longhorn' && longhorn === undefined) {
      refusals.push(
        `${node} ${nodeClass.because}, so it is of the Longhorn node class, but Terraform outputs no ${longhornName}: the default installer would drop its Longhorn extensions`,
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
