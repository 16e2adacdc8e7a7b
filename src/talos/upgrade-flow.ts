/**
 * Whether `talosctl upgrade` of a node on `talosVersion` takes the LifecycleService path: a matching
 * client (≥ 1.13) against a server above 1.13.0-alpha.2 pulls, installs, then cordons and drains the
 * node itself with the kubectl drain library (`Force: true`, so pods without a controller are deleted)
 * before the reboot; older nodes take the legacy path, whose drain runs on the node and skips them
 * (cmd/talosctl/cmd/talos/upgrade.go and cmd/talosctl/pkg/talos/nodedrain/nodedrain.go at v1.13.9).
 *
 * @param talosVersion `v1.13.9`, `1.13.9`, or a version with a suffix such as `v1.13.0-rc.1`
 */
export function upgradesThroughLifecycleService(talosVersion: string): boolean {
  const match = /^v?(\d+)\.(\d+)/.exec(talosVersion.trim());
  if (match === null) return false;
  const [major, minor] = [Number(match[1]), Number(match[2])];
  return major > 1 || (major === 1 && minor >= 13);
}
