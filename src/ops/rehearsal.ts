import type { Inventory } from '../config/inventory.ts';
import type { Operation } from './operation.ts';
import type { OperationStore } from './operation-store.ts';
import { threadLink, type ThreadLinkDeps } from './thread-link.ts';

/**
 * Where the staging operations are read, and how their thread is linked: through `threadLink` (which
 * keeps the link on the operation), or a `link` the caller was given (a playbook, which writes no operation).
 */
type RehearsalDeps = { store: Pick<OperationStore, 'listForCluster'>; inventory: Inventory } & (
  ThreadLinkDeps | { link: (op: Operation) => Promise<string | undefined> }
);

/**
 * The runbook does everything in staging first. The bot's own records show whether a staging
 * operation of `kind` that `matches` completed: that operation, the link to its thread, and who
 * started it and when it ended; nothing when there is none.
 */
export async function findStagingOperation(
  deps: RehearsalDeps,
  kind: string,
  matches: (op: Operation) => boolean,
): Promise<NonNullable<Operation['rehearsal']>> {
  for (const staging of deps.inventory.clusters.filter((c) => c.environment === 'staging')) {
    const ops = await deps.store.listForCluster(staging.name, 500);
    const done = ops.find((o) => o.kind === kind && o.state === 'completed' && matches(o));
    if (done === undefined) continue;
    const link = 'link' in deps ? await deps.link(done) : await threadLink(deps, done);
    return {
      stagingOp: done.id,
      ...(link ? { stagingLink: link } : {}),
      ...(done.startedBy ? { appliedBy: done.startedBy } : {}),
      ...(done.endedAt ? { appliedAt: done.endedAt } : {}),
    };
  }
  return {};
}

/** The runbook tests "the exact target in staging" first: a completed staging upgrade of the same kind to the same version. */
export async function findStagingRehearsal(
  deps: RehearsalDeps,
  kind: string,
  version: string,
): Promise<{ stagingOp?: string; stagingLink?: string }> {
  const { stagingOp, stagingLink } = await findStagingOperation(deps, kind, (o) => o.target.version === version);
  return { ...(stagingOp ? { stagingOp } : {}), ...(stagingLink ? { stagingLink } : {}) };
}
