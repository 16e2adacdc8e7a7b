import { Counter } from 'prom-client';
import { escapeMrkdwn, section } from '../chat/blocks.ts';
import { inventoryWarnings } from '../config/inventory-warnings.ts';
import { watchInventory, type InventoryReloader } from '../config/inventory-reload.ts';
import { secretClashes } from '../config/secret-clashes.ts';
import type { Inventory } from '../config/inventory.ts';
import type { Metrics } from '../metrics/metrics.ts';
import type { ChatPort } from '../port/chat-port.ts';
import { processSecrets, type Infrastructure } from './infrastructure.ts';

/** At most this many problems in the Slack message; the log has them all. */
const SHOWN = 15;

/**
 * Reloads the inventory when its file changes. A good edit takes effect for new commands and
 * operations (a running one keeps the cluster it started with); a bad one is logged, counted and
 * posted once to each cluster's channel of the inventory still in force, which stays.
 */
export async function startInventoryReload(
  infra: Pick<Infrastructure, 'config' | 'inventory' | 'logger'>,
  metrics: Pick<Metrics, 'registry'>,
  chat: ChatPort,
  onApplied: () => void,
  resolve?: (inventory: Inventory) => Promise<Inventory>,
): Promise<InventoryReloader> {
  const { config, inventory, logger } = infra;
  const reloads = new Counter({
    name: 'talos_chatops_inventory_reloads_total',
    help: 'Changes of the inventory file the bot read, by result: applied, or refused (the last good inventory stays).',
    labelNames: ['result'] as const,
    registers: [metrics.registry],
  });
  reloads.inc({ result: 'applied' }, 0);
  reloads.inc({ result: 'refused' }, 0);
  return watchInventory({
    path: config.clustersFile,
    holder: inventory,
    intervalMs: config.clustersReloadMs,
    alsoCheck: (next) => secretClashes(processSecrets(config), next),
    ...(resolve === undefined ? {} : { resolve }),
    onApplied: (next) => {
      reloads.inc({ result: 'applied' });
      logger.info({ clusters: next.clusters.map((c) => c.name) }, 'cluster inventory reloaded: new commands and operations use it');
      for (const cluster of next.clusters) {
        for (const message of inventoryWarnings({ clusters: [cluster] })) logger.warn({ cluster: cluster.name }, message);
      }
      onApplied();
    },
    onRefused: async (problems) => {
      reloads.inc({ result: 'refused' });
      logger.error({ problems }, `the edited cluster inventory ${config.clustersFile} is invalid; the bot keeps the last good one`);
      const shown = problems.slice(0, SHOWN).map((p) => `• ${escapeMrkdwn(p)}`);
      if (problems.length > SHOWN) shown.push(`… and ${problems.length - SHOWN} more in the bot's log`);
      const text = `⚠️ The edited cluster inventory was refused; the bot carries on with the last good one, unchanged. Fix these and save again:\n${shown.join('\n')}`;
      for (const channel of new Set(inventory.current().clusters.map((c) => c.channel))) {
        await chat
          .post(channel, { text, blocks: [section(text)] })
          .catch((error: unknown) => logger.warn({ channel, err: (error as Error).message }, 'inventory refusal not posted'));
      }
    },
    onError: (error) =>
      logger.warn({ err: (error as Error).message }, 'cannot read the cluster inventory again; the bot keeps the one it has'),
  });
}
