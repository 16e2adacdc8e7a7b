import { errorText } from '../../../src/chat/error-text.ts';
import { checkTerraformInstaller } from '../../../src/rules/installer-image.ts';
import { withV } from '../../../src/rules/versions.ts';
import { observeNodeImages, observeTalosVersions } from '../../../src/talos/observe.ts';
import { StepFailure } from '../../engine/job-context.ts';
import type { WalkContext } from '../../engine/playbook.ts';
import { probeSignal } from '../../engine/walk.ts';

/** The ISO every node's VM boots, as the runbook uploads it (its static Proxmox file ID). */
export const ISO_FILE = 'isos:iso/talos-nocloud-amd64.iso';

/** The schematic a node of this role and class must run: a control plane the default, a Longhorn worker the Longhorn installer's. */
async function expectedSchematic(ctx: WalkContext, node: string, isControlPlane: boolean): Promise<{ schematic: string; output: string }> {
  const { outputs } = ctx.session;
  const fallback = { schematic: (await outputs.required('schematicId', probeSignal(ctx))).trim(), output: outputs.name('schematicId') };
  if (isControlPlane) return fallback;
  const longhornImage = await outputs.optional('longhornInstaller', probeSignal(ctx));
  if (longhornImage === undefined || longhornImage.trim() === '') return fallback;
  // The class the bot recorded for this address, then the inventory's declaration: the new VM replaces the same node.
  const recorded = (await ctx.deps.nodeClasses.read(ctx.cluster.name)).byNode.get(node)?.class;
  const longhorn = recorded === 'longhorn' || (recorded === undefined && ctx.cluster.longhornNodes.includes(node));
  if (!longhorn) return fallback;
  const name = outputs.name('longhornInstaller');
  return { schematic: checkTerraformInstaller(longhornImage, ctx.cluster.installerPlatform, name).schematic, output: name };
}

/**
 * After the join: the new node must run the declared Talos version (`talos_version`) and the
 * schematic of its class. A VM boots the ISO at the static file ID; an ISO left from an older release
 * gives a node that joins and runs that release, which the runbook never allows to stay.
 */
export async function checkNewNodeImage(ctx: WalkContext, node: string, name: string): Promise<string> {
  const isControlPlane = ctx.cluster.controlPlanes.includes(node);
  let declared: string;
  let expected: { schematic: string; output: string };
  try {
    declared = withV((await ctx.session.outputs.required('talosVersion', probeSignal(ctx))).trim());
    expected = await expectedSchematic(ctx, node, isControlPlane);
  } catch (error) {
    throw new StepFailure(
      `${name} joined, but what it must run cannot be read from Terraform (${errorText(error)}); nothing was changed. Fix the outputs, then Retry`,
    );
  }
  const version = (await observeTalosVersions(ctx.talosctl, [node], probeSignal(ctx))).get(node);
  const image = (await observeNodeImages(ctx.talosctl, [node], probeSignal(ctx))).get(node);
  if (version?.reachable !== true || image?.reachable !== true) {
    const why = version?.reachable === false ? version.error : image?.reachable === false ? image.error : 'no answer';
    throw new StepFailure(`${name} joined, but its Talos version and schematic could not be read (${why}); Retry reads them again`);
  }
  const running = withV(version.version);
  const problems: string[] = [];
  if (running !== declared) problems.push(`it runs Talos ${running}, not the declared ${declared} (talos_version)`);
  if (image.schematic !== expected.schematic)
    problems.push(
      `it runs the schematic ${image.schematic ?? '(none listed)'}, not ${expected.schematic} (${expected.output}) of its class`,
    );
  if (problems.length > 0) {
    throw new StepFailure(
      `the new ${name} (${node}) joined the cluster, but ${problems.join(', and ')}: its VM booted an ISO of another build. ` +
        `It is a member now and nothing was reverted. Replace the ISO at ${ISO_FILE} with https://factory.talos.dev/image/${expected.schematic}/${declared}/nocloud-amd64.iso ` +
        `(check its checksum), then \`/talos upgrade talos ${declared}\` brings this node to the declared image; Retry checks again`,
      [
        `${node}: Talos ${running}, schematic ${image.schematic ?? '(none)'}`,
        `declared: Talos ${declared}, schematic ${expected.schematic}`,
      ],
    );
  }
  return `runs the declared Talos ${declared} and the schematic ${expected.schematic.slice(0, 12)}… of its class`;
}
