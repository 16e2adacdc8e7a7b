import { errorText } from '../../../src/chat/error-text.ts';
import { terraformFollowUp, type FollowUpIso } from './messages.ts';
import type { ChatMessage } from '../../../src/port/chat-port.ts';
import { allNodes } from '../../../src/config/inventory.ts';
import type { Operation } from '../../../src/ops/operation.ts';
import { findNodeByAddress } from '../../../src/talos/observe.ts';
import type { WalkContext } from '../../engine/playbook.ts';
import { probeSignal } from '../../engine/walk.ts';
import { declaredFollowUp } from '../shared/declared-follow-up.ts';

/**
 * The nodes' architectures as Kubernetes reports them (`status.nodeInfo.architecture`, the
 * kubelet's GOARCH): each listed once, in the order of the inventory.
 */
async function nodeArchitectures(ctx: WalkContext): Promise<string[]> {
  const nodes = await ctx.session.kube.listNodes(probeSignal(ctx));
  const archs = allNodes(ctx.cluster).map((address) => findNodeByAddress(nodes, address)?.status?.nodeInfo?.architecture);
  return [...new Set(archs.filter((a): a is string => a !== undefined && /^[a-z0-9]+$/.test(a)))];
}

/**
 * The follow-up of a completed Talos upgrade: the ISO of the upgrade's schematic from
 * `IMAGE_FACTORY_URL` for each architecture the nodes run, with its sha256 computed as the
 * download streams by. A download or a Kubernetes read that fails never fails the upgrade, which
 * is done: the message says what could not be computed and why.
 */
export async function talosUpgradeFollowUp(ctx: WalkContext, op: Operation): Promise<ChatMessage> {
  const schematic = op.target.schematic ?? '<schematic>';
  const version = op.target.version ?? '?';
  const platform = ctx.cluster.installerPlatform;
  let isos: FollowUpIso[];
  try {
    const archs = await nodeArchitectures(ctx);
    if (archs.length === 0) throw new Error('no node of the inventory reports status.nodeInfo.architecture');
    isos = await Promise.all(
      archs.map(async (arch) => {
        const url = ctx.deps.factory.isoUrl({ schematic, version, platform, arch });
        return { arch, url, checksum: await ctx.deps.factory.isoSha256(url, ctx.signal) };
      }),
    );
  } catch (error) {
    const reason = `the nodes' architecture could not be read: ${errorText(error)}`;
    isos = [
      { arch: '<arch>', url: ctx.deps.factory.isoUrl({ schematic, version, platform, arch: '<arch>' }), checksum: { ok: false, reason } },
    ];
  }
  for (const iso of isos) if (!iso.checksum.ok) ctx.log.warn({ url: iso.url, reason: iso.checksum.reason }, 'ISO checksum not computed');
  return terraformFollowUp(op, { schematic, platform, isos, declaration: await declaredFollowUp(ctx, 'talos', version) });
}
