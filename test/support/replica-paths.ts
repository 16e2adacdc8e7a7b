import { readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { parse } from 'yaml';

const DEPLOYMENT = join(import.meta.dirname, '..', '..', 'manifests', 'base', 'deployment.yaml');

interface Mount {
  name: string;
  mountPath: string;
}
interface Volume {
  name: string;
  emptyDir?: unknown;
  persistentVolumeClaim?: { claimName: string };
}
interface PodSpec {
  containers: { name: string; env?: { name: string; value?: string }[]; volumeMounts?: Mount[] }[];
  volumes: Volume[];
}

/**
 * The bot's directory settings as the shipped Deployment gives them, mapped onto this machine: a
 * path on a pod's own volume (an emptyDir) becomes a directory of `replica` alone, a path on a
 * claim one directory every replica shares. So two bots started with these settings share exactly
 * what two pods of the manifests share.
 */
export function replicaPaths(root: string, replica: string, names = ['CREDENTIALS_DIR', 'PLAN_DIR']): Record<string, string> {
  const pod = (parse(readFileSync(DEPLOYMENT, 'utf8')) as { spec: { template: { spec: PodSpec } } }).spec.template.spec;
  const bot = pod.containers.find((c) => c.name === 'bot')!;
  return Object.fromEntries(
    names.map((name) => {
      const path = bot.env?.find((e) => e.name === name)?.value;
      if (path === undefined) throw new Error(`the Deployment sets no ${name}`);
      const mount = (bot.volumeMounts ?? [])
        .filter((m) => path === m.mountPath || path.startsWith(`${m.mountPath}/`))
        .sort((a, b) => b.mountPath.length - a.mountPath.length)[0];
      const volume = pod.volumes.find((v) => v.name === mount?.name);
      if (mount === undefined || volume === undefined) throw new Error(`${name} (${path}) is on no volume of the Deployment`);
      const inside = relative(mount.mountPath, path);
      if (volume.persistentVolumeClaim !== undefined) return [name, join(root, 'claims', volume.persistentVolumeClaim.claimName, inside)];
      if (volume.emptyDir !== undefined) return [name, join(root, replica, volume.name, inside)];
      throw new Error(`${name} is on volume ${volume.name}, neither a claim nor an emptyDir`);
    }),
  );
}
