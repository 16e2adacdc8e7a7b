import { errorText } from '../../src/chat/error-text.ts';
import { isUntrustedTalosctl } from '../../src/talos/talosctl-binary.ts';
import type { ClusterSession } from '../../src/cluster/cluster-session.ts';
import { talosctlClientRefusal } from '../../src/rules/versions.ts';
import { parseTalosVersion } from '../../src/talos/parse-version.ts';
import type { Talosctl } from '../../src/talos/talosctl.ts';

/**
 * talosctl for an operation on nodes that run `running`. With `TALOSCTL_BIN` a directory, the
 * binary of that version; when it is missing, that is the refusal, and the closest binary still
 * serves the preflight's reads. A client that could not be trusted (see `isUntrustedTalosctl`) is thrown.
 */
export async function talosctlFor(session: ClusterSession, running: string | undefined): Promise<{ talosctl: Talosctl; refusal?: string }> {
  try {
    return { talosctl: await session.talosctl(running) };
  } catch (error) {
    // A client that could not be trusted is the preflight's end, not a reason to download it again for the reads.
    if (isUntrustedTalosctl(error)) throw error;
    return { talosctl: await session.talosctl(running, { closest: true }), refusal: errorText(error) };
  }
}

/**
 * The client check of every preflight that runs talosctl (Talos and Kubernetes upgrades,
 * rollback, removal): `talosctl version --client` against the Talos the nodes run. Returns the
 * refusal, or undefined when the client matches or the running version is unknown (the
 * preflight refuses that on its own).
 *
 * @param where who runs `running`, for the message, e.g. `10.0.30.12`; default the cluster
 */
export async function talosctlClientCheck(
  talosctl: Talosctl,
  running: string | undefined,
  signal: AbortSignal,
  where?: string,
): Promise<string | undefined> {
  if (running === undefined) return undefined;
  let tag: string | undefined;
  try {
    const client = await talosctl.run(['version', '--client'], [], { signal });
    tag = parseTalosVersion(client.stdout).client?.tag;
  } catch (error) {
    return `talosctl version --client failed (${errorText(error)}), so the client cannot be checked against ${running}: check TALOSCTL_BIN`;
  }
  if (tag === undefined)
    return `talosctl version --client named no client version, so the client cannot be checked against ${running}: check TALOSCTL_BIN`;
  return talosctlClientRefusal(tag, running, where);
}

/**
 * Asks for the client of an upgrade's target once at plan time, so that with downloads on (the
 * default) it is in the cache, checked, before the window opens: the operations after the upgrade
 * run it. A download refused as tampered (a checksum that is not the release's, a cached binary
 * changed on disk) is the plan's refusal, said out loud; one that merely failed (unreachable, no
 * such asset) is a note, since this upgrade itself runs the client of the version it leaves.
 */
export async function prefetchTalosctl(session: ClusterSession, version: string): Promise<{ refusal?: string; note?: string }> {
  try {
    await session.talosctl(version);
    return {};
  } catch (error) {
    if (isUntrustedTalosctl(error)) return { refusal: `the talosctl of the target could not be trusted: ${errorText(error)}` };
    return {
      note: `talosctl ${version} is not at hand for the operations after this upgrade (${errorText(error)}); the bot asks for it again when one needs it.`,
    };
  }
}
