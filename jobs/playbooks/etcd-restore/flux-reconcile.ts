import { errorText } from '../../../src/chat/error-text.ts';
import { FluxObject } from '../../../src/health/rules/flux.ts';
import { RECONCILE_REQUESTED_AT, type FluxKind } from '../../../src/kube/kube-api.ts';
import type { WalkContext } from '../../engine/playbook.ts';
import { probeSignal } from '../../engine/walk.ts';

/**
 * Flux judged as its controllers report it after the restore. The time of Ready's last transition
 * cannot tell: helm-controller leaves an in-sync release's Ready as it was (no release action, so no
 * Unknown; fluxcd/helm-controller internal/reconcile/atomic_release.go v1.6.3), and after a restore
 * from a fresh snapshot every release is in sync. So the bot asks each object for a reconcile, as
 * `flux reconcile` does (the `reconcile.fluxcd.io/requestedAt` annotation), and waits until the
 * controller reports it handled that request (`status.lastHandledReconcileAt`, copied by both
 * controllers at the end of a reconcile) with Ready=True. Suspended objects are not reconciled and
 * are left out, as the health gate leaves them out.
 *
 * Returns what is still missing, one line per object; an object not yet asked is asked now.
 */
export async function fluxReconciledFor(ctx: WalkContext, token: string): Promise<string[]> {
  const { kube } = ctx.session;
  const objects = [
    ...(await kube.listKustomizations(probeSignal(ctx))).map((o) => ({ kind: 'Kustomization' as FluxKind, raw: o })),
    ...(await kube.listHelmReleases(probeSignal(ctx))).map((o) => ({ kind: 'HelmRelease' as FluxKind, raw: o })),
  ];
  const missing: string[] = [];
  for (const { kind, raw } of objects) {
    const parsed = FluxObject.safeParse(raw);
    if (!parsed.success) {
      missing.push(`an unreadable ${kind}`);
      continue;
    }
    const { metadata, spec, status } = parsed.data;
    if (spec?.suspend === true) continue;
    const namespace = metadata.namespace ?? 'default';
    const name = `${kind} ${namespace}/${metadata.name}`;
    if (metadata.annotations?.[RECONCILE_REQUESTED_AT] !== token) {
      try {
        await kube.requestFluxReconcile(kind, namespace, metadata.name, token, probeSignal(ctx));
      } catch (error) {
        if (ctx.signal?.aborted) throw error;
        missing.push(`${name}: the reconcile request was not accepted (${errorText(error)})`);
        continue;
      }
      missing.push(`${name}: reconcile requested`);
      continue;
    }
    const ready = status?.conditions?.find((c) => c.type === 'Ready');
    if (status?.lastHandledReconcileAt !== token) missing.push(`${name}: reconcile requested, not handled yet`);
    else if (ready?.status !== 'True')
      missing.push(`${name}: reconciled, Ready ${ready?.status ?? 'missing'}${ready?.reason ? ` (${ready.reason})` : ''}`);
  }
  return missing;
}
