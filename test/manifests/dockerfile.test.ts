import { execFileSync } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { parse as parseYaml } from 'yaml';

// Static checks of the Dockerfile and .dockerignore: no Docker engine needed.

const ROOT = fileURLToPath(new URL('../../', import.meta.url));

interface Instruction {
  keyword: string;
  args: string;
  line: number;
}

interface Stage {
  /** The base image, with build args from before the first FROM substituted. */
  from: string;
  name: string | undefined;
  instructions: Instruction[];
}

interface Dockerfile {
  globalArgs: Map<string, string | undefined>;
  stages: Stage[];
}

/** Instructions with line continuations joined and comments (parser directives included) dropped. */
function instructions(text: string): Instruction[] {
  const result: Instruction[] = [];
  let pending = '';
  let startLine = 0;
  text.split('\n').forEach((raw, index) => {
    const line = raw.trimEnd();
    if (/^\s*#/.test(line) || (pending === '' && line.trim() === '')) return;
    if (pending === '') startLine = index + 1;
    if (line.endsWith('\\')) {
      pending += `${line.slice(0, -1)} `;
      return;
    }
    const full = `${pending}${line}`.trim();
    pending = '';
    if (full === '') return;
    const keyword = full.split(/\s+/)[0] ?? '';
    result.push({ keyword: keyword.toUpperCase(), args: full.slice(keyword.length).trim(), line: startLine });
  });
  return result;
}

function parseArg(args: string): [string, string | undefined] {
  const at = args.indexOf('=');
  if (at < 0) return [args.trim(), undefined];
  return [args.slice(0, at).trim(), args.slice(at + 1).trim().replace(/^"(.*)"$/, '$1')];
}

function parseDockerfile(text: string): Dockerfile {
  const globalArgs = new Map<string, string | undefined>();
  const stages: Stage[] = [];
  for (const instruction of instructions(text)) {
    if (instruction.keyword === 'FROM') {
      const words = instruction.args.split(/\s+/).filter((w) => !w.startsWith('--platform'));
      const image = (words[0] ?? '').replace(/\$\{?([A-Za-z_][A-Za-z0-9_]*)\}?/g, (_all, name: string) => globalArgs.get(name) ?? '');
      const name = words[1]?.toUpperCase() === 'AS' ? words[2] : undefined;
      stages.push({ from: image, name, instructions: [] });
    } else if (stages.length === 0) {
      if (instruction.keyword === 'ARG') globalArgs.set(...parseArg(instruction.args));
    } else {
      stages.at(-1)!.instructions.push(instruction);
    }
  }
  return { globalArgs, stages };
}

function argsOf(stage: Stage): Map<string, string | undefined> {
  return new Map(stage.instructions.filter((i) => i.keyword === 'ARG').map((i) => parseArg(i.args)));
}

function envOf(stage: Stage): Map<string, string> {
  const env = new Map<string, string>();
  for (const i of stage.instructions.filter((x) => x.keyword === 'ENV')) {
    for (const m of i.args.matchAll(/([A-Za-z_][A-Za-z0-9_]*)=("[^"]*"|\S+)/g)) env.set(m[1]!, m[2]!.replace(/^"(.*)"$/, '$1'));
  }
  return env;
}

function runs(stage: Stage): string[] {
  return stage.instructions.filter((i) => i.keyword === 'RUN').map((i) => i.args);
}

const dockerfileText = readFileSync(join(ROOT, 'Dockerfile'), 'utf8');
const dockerfile = parseDockerfile(dockerfileText);
const stage = (name: string): Stage => {
  const found = dockerfile.stages.find((s) => s.name === name);
  if (found === undefined) throw new Error(`no stage named ${name}`);
  return found;
};
const final = dockerfile.stages.at(-1)!;
const tools = stage('tools');
const deps = stage('deps');

interface BotDeployment {
  spec: {
    template: {
      spec: {
        securityContext?: { runAsUser?: number };
        containers: { name: string; env?: { name: string; value?: string }[]; securityContext?: { runAsUser?: number } }[];
      };
    };
  };
}
const deployment = parseYaml(readFileSync(join(ROOT, 'manifests', 'base', 'deployment.yaml'), 'utf8')) as BotDeployment;
const botContainer = deployment.spec.template.spec.containers.find((c) => c.name === 'bot')!;
const botEnv = new Map((botContainer.env ?? []).map((e) => [e.name, e.value]));

describe('the instruction parser', () => {
  it('joins continuations, drops comments and substitutes global build args into FROM', () => {
    const parsed = parseDockerfile(['# syntax=docker/dockerfile:1', 'ARG BASE=node:24', 'FROM ${BASE} AS a', 'RUN set -eu; \\', '    # a comment', '    echo hi', 'USER 1'].join('\n'));
    expect(parsed.stages).toEqual([
      {
        from: 'node:24',
        name: 'a',
        instructions: [
          { keyword: 'RUN', args: 'set -eu;      echo hi', line: 4 },
          { keyword: 'USER', args: '1', line: 7 },
        ],
      },
    ]);
  });
});

describe('Dockerfile', () => {
  it('is multi-stage: production dependencies, verified tools, then the runtime', () => {
    expect(dockerfile.stages.length).toBeGreaterThanOrEqual(3);
    expect(dockerfile.stages.map((s) => s.name)).toEqual(expect.arrayContaining(['deps', 'tools']));
    expect(final.name).not.toBe('deps');
    expect(final.name).not.toBe('tools');
  });

  it('runs on the official Node 24 image, every stage pinned by digest', () => {
    expect(final.from).toMatch(/^node:24(\.\d+)*(-[a-z0-9-]+)?@sha256:[0-9a-f]{64}$/);
    expect(deps.from).toBe(final.from);
    const stageNames = new Set(dockerfile.stages.flatMap((s) => (s.name ? [s.name] : [])));
    const unpinned = dockerfile.stages.filter((s) => !stageNames.has(s.from) && !/@sha256:[0-9a-f]{64}$/.test(s.from)).map((s) => `${s.name ?? '?'}: ${s.from}`);
    expect(unpinned).toEqual([]);
    // A BuildKit frontend named in a syntax directive is an image too.
    const directives = dockerfileText.split('\n').filter((line) => /^#\s*syntax\s*=/i.test(line));
    expect(directives.filter((line) => !/@sha256:[0-9a-f]{64}\s*$/.test(line))).toEqual([]);
  });

  it('says how to refresh the pinned digest: the multi-arch index digest from docker buildx imagetools inspect', () => {
    const guide = readFileSync(join(ROOT, 'docs', 'deploy.md'), 'utf8');
    for (const text of [dockerfileText, guide]) expect(text).toContain('docker buildx imagetools inspect node:24-bookworm-slim');
    expect(dockerfileText).toMatch(/index/);
  });

  it('leaves no package manager in the runtime image, and never calls one after removing it', () => {
    const removal = runs(final).find((r) => /\brm -rf\b/.test(r) && r.includes('/usr/local/bin/npm')) ?? '';
    const removed = ['/usr/local/lib/node_modules', '/usr/local/bin/npm', '/usr/local/bin/npx', '/usr/local/bin/corepack', '/usr/local/bin/yarn'];
    expect(removed.filter((path) => !removal.split(/\s+/).includes(path))).toEqual([]);
    // Nothing in the runtime stage runs npm, npx, corepack or yarn, nor brings them back.
    const manager = /\b(npm|npx|corepack|yarn|yarnpkg)\b/;
    const uses = final.instructions
      .filter((i) => ['RUN', 'CMD', 'ENTRYPOINT', 'HEALTHCHECK'].includes(i.keyword) && manager.test(i.keyword === 'RUN' ? i.args.replace(removal, '') : i.args))
      .map((i) => `${i.keyword} ${i.args}`);
    expect(uses).toEqual([]);
    const copied = final.instructions.filter((i) => i.keyword === 'COPY').map((i) => i.args.split(/\s+/).at(-1)!);
    expect(copied.filter((target) => target.startsWith('/usr/local/lib') || /\/(npm|npx|corepack)$/.test(target))).toEqual([]);
  });

  it('builds for amd64 and arm64: each download is for the target architecture, with its own checksum', () => {
    expect(dockerfile.stages.filter((s) => /--platform/.test(s.from))).toEqual([]);
    const downloads = runs(tools).filter((r) => r.includes('sha256sum -c'));
    expect(downloads).toHaveLength(2);
    for (const run of downloads) {
      expect(run).toContain('arch="${TARGETARCH:-amd64}"');
      // "amd64:<hex>,arm64:<hex>" picks the checksum of the architecture being built.
      expect(run).toContain('sed -n "s/^${arch}://p"');
    }
    const guide = readFileSync(join(ROOT, 'docs', 'deploy.md'), 'utf8');
    expect(guide).toContain('docker buildx build --platform linux/amd64,linux/arm64');
  });

  it('picks the checksum of the target architecture from a per-architecture list, or takes a single one as it is', () => {
    const run = runs(tools).find((r) => r.includes('TOFU_SHA256'))!;
    const pick = /case "\$\{sum\}" in [^;]*;; esac;/.exec(run)![0];
    const hex = (c: string) => c.repeat(64);
    const picked = (arch: string, sum: string) => execFileSync('sh', ['-c', `arch="$1"; sum="$2"; ${pick} printf '%s' "$sum"`, 'sh', arch, sum], { encoding: 'utf8' });
    expect(picked('arm64', `amd64:${hex('a')},arm64:${hex('b')}`)).toBe(hex('b'));
    expect(picked('amd64', `amd64:${hex('a')},arm64:${hex('b')}`)).toBe(hex('a'));
    expect(picked('riscv64', `amd64:${hex('a')},arm64:${hex('b')}`)).toBe('');
    expect(picked('arm64', hex('c'))).toBe(hex('c'));
  });

  it('runs as a numeric non-root user, the one the Deployment runs as', () => {
    const users = final.instructions.filter((i) => i.keyword === 'USER');
    expect(users.length).toBeGreaterThan(0);
    const [uid, gid] = users.at(-1)!.args.split(':');
    expect(uid).toMatch(/^[1-9]\d*$/);
    expect(gid ?? uid).toMatch(/^[1-9]\d*$/);
    const podUser = botContainer.securityContext?.runAsUser ?? deployment.spec.template.spec.securityContext?.runAsUser;
    expect(podUser).toBe(Number(uid));
  });

  it('configures no git trust for every path: the bot trusts each Terraform checkout by its path, per call', () => {
    const runs = dockerfile.stages.flatMap((s) => s.instructions).filter((i) => i.keyword === 'RUN');
    expect(runs.some((i) => /safe\.directory/.test(i.args))).toBe(false);
    expect(runs.some((i) => /git config --(?:system|global)/.test(i.args))).toBe(false);
  });

  it('declares the tool versions and their checksums as build args, the checksums without defaults', () => {
    const args = argsOf(tools);
    expect(args.get('TALOSCTL_VERSION')).toMatch(/^v\d+\.\d+\.\d+$/);
    expect(args.get('TOFU_VERSION')).toMatch(/^\d+\.\d+\.\d+$/);
    // A committed checksum would be trusted without review; the build asks for it instead.
    expect(args.has('TALOSCTL_SHA256')).toBe(true);
    expect(args.get('TALOSCTL_SHA256')).toBeUndefined();
    expect(args.has('TOFU_SHA256')).toBe(true);
    expect(args.get('TOFU_SHA256')).toBeUndefined();
  });

  it('refuses to build without a well-formed checksum, saying where to get it', () => {
    const guard = (arg: string, source: string) => {
      const run = runs(tools).find((r) => r.includes(arg) && r.includes(source)) ?? '';
      return { validates: run.includes('[0-9a-f]{64}'), stops: run.includes('exit 1'), explains: run.includes('docs/deploy.md') };
    };
    const expected = { validates: true, stops: true, explains: true };
    expect(guard('TALOSCTL_SHA256', '/sha256sum.txt')).toEqual(expected);
    expect(guard('TOFU_SHA256', '_SHA256SUMS')).toEqual(expected);
  });

  it('checks every download with sha256sum -c before installing it, in a RUN that stops at the first failure', () => {
    // curl or wget as a command, not as a package name or inside an error message.
    const fetch = /(?:^|[;&|(]|\bthen|\bdo)\s*(?:curl|wget)\b/;
    const downloads = dockerfile.stages.flatMap((s) => runs(s)).filter((r) => fetch.test(r));
    expect(downloads.length).toBeGreaterThanOrEqual(2);
    const verdict = (run: string) => {
      const fetched = run.search(fetch);
      const checked = run.indexOf('sha256sum -c');
      const installed = run.search(/\binstall -D\b|\bunzip\b|\bmv\b|\bcp\b/);
      return {
        stopsOnFailure: /^set -[a-z]*e[a-z]*;/.test(run) && !run.includes('||'),
        checksAfterFetching: checked > fetched,
        installsAfterChecking: installed > checked,
      };
    };
    const safe = { stopsOnFailure: true, checksAfterFetching: true, installsAfterChecking: true };
    expect(downloads.map(verdict)).toEqual(downloads.map(() => safe));
    expect(dockerfile.stages.flatMap((s) => s.instructions).filter((i) => i.keyword === 'ADD')).toEqual([]);
  });

  it('fetches talosctl and tofu from their projects\' releases', () => {
    const all = runs(tools).join('\n');
    expect(all).toContain('https://github.com/siderolabs/talos/releases/download/${version}/talosctl-linux-${arch}');
    expect(all).toContain('https://github.com/opentofu/opentofu/releases/download/v${version}/tofu_${version}_linux_${arch}.zip');
  });

  it('puts versioned talosctl binaries in the directory TALOSCTL_BIN names, and tofu where TOFU_BIN points', () => {
    expect(runs(tools).join('\n')).toContain('"/opt/talosctl/talosctl-${version}"');
    const copies = final.instructions.filter((i) => i.keyword === 'COPY' && i.args.startsWith('--from=tools')).map((i) => i.args);
    expect(copies).toContain('--from=tools /opt/talosctl/ /opt/talosctl/');
    const env = envOf(final);
    expect(env.get('TALOSCTL_BIN')).toBe('/opt/talosctl');
    expect(copies.some((c) => c.endsWith(` ${env.get('TOFU_BIN')}`))).toBe(true);
    expect(botEnv.get('TALOSCTL_BIN')).toBe(env.get('TALOSCTL_BIN'));
    expect(botEnv.get('TOFU_BIN')).toBe(env.get('TOFU_BIN'));
    expect(botEnv.get('CREDENTIALS_DIR')).toBe(env.get('CREDENTIALS_DIR'));
  });

  it('installs production dependencies only, from the lockfile', () => {
    const installs = dockerfile.stages.flatMap((s) => runs(s)).filter((r) => /\bnpm (ci|install|i)\b/.test(r));
    expect(installs).toHaveLength(1);
    expect(runs(deps)).toContain(installs[0]);
    expect(installs[0]).toMatch(/\bnpm ci\b/);
    expect(installs[0]).toMatch(/--omit=dev\b/);
    const copies = final.instructions.filter((i) => i.keyword === 'COPY').map((i) => i.args);
    expect(copies).toContain('--from=deps /app/node_modules ./node_modules');
  });

  it('copies only the runtime sources from the build context', () => {
    const fromContext = final.instructions
      .filter((i) => i.keyword === 'COPY' && !i.args.startsWith('--from'))
      .flatMap((i) => i.args.split(/\s+/).filter((w) => !w.startsWith('--')).slice(0, -1));
    expect(fromContext.sort()).toEqual(['handlers', 'jobs', 'package.json', 'src']);
  });

  it('starts the bot the way `npm start` does, in production mode on port 3000', () => {
    const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { scripts: { start: string } };
    const cmd = final.instructions.filter((i) => i.keyword === 'CMD').at(-1);
    const argv = JSON.parse(cmd!.args) as string[];
    expect(argv).toEqual(['node', 'src/entry.ts']);
    expect(argv.join(' ')).toBe(pkg.scripts.start);
    const env = envOf(final);
    expect(env.get('NODE_ENV')).toBe('production');
    expect(env.get('HTTP_PORT')).toBe('3000');
    expect(final.instructions.filter((i) => i.keyword === 'EXPOSE').map((i) => i.args)).toEqual(['3000']);
  });

  it('runs under an init that forwards SIGTERM, so running steps can finish', () => {
    const entrypoint = final.instructions.filter((i) => i.keyword === 'ENTRYPOINT').at(-1);
    expect(JSON.parse(entrypoint!.args)).toEqual(['/usr/bin/tini', '--']);
    expect(final.instructions.some((i) => i.keyword === 'COPY' && i.args.endsWith(' /usr/bin/tini'))).toBe(true);
  });
});

describe('what the image needs of the sources', () => {
  const SOURCE_DIRS = ['src', 'handlers', 'jobs'];
  const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { dependencies: Record<string, string> };

  function sourceFiles(dir: string): string[] {
    return readdirSync(join(ROOT, dir), { recursive: true, encoding: 'utf8' })
      .filter((f) => f.endsWith('.ts'))
      .map((f) => join(dir, f));
  }

  /** Module specifiers Node loads at run time: `import type` is erased, anything else is loaded. */
  function runtimeImports(text: string): string[] {
    const statics = [...text.matchAll(/^\s*(?:import|export)\s+(?!type\s)(?:[^'";]*?\sfrom\s+)?['"]([^'"]+)['"]/gm)].map((m) => m[1]!);
    const dynamics = [...text.matchAll(/\bimport\(\s*['"]([^'"]+)['"]\s*\)/g)].map((m) => m[1]!);
    return [...statics, ...dynamics];
  }

  it('reads import specifiers the way Node sees them', () => {
    const sample = "import type { A } from 'type-only';\nimport { b, type C } from 'kept';\nimport {\n  d,\n} from './local.ts';\nimport 'side-effect';\nconst e = await import('lazy');\n";
    expect(runtimeImports(sample)).toEqual(['kept', './local.ts', 'side-effect', 'lazy']);
  });

  it('imports nothing outside src/, handlers/ and jobs/, and only production dependencies', () => {
    const problems: string[] = [];
    for (const file of SOURCE_DIRS.flatMap(sourceFiles)) {
      for (const specifier of runtimeImports(readFileSync(join(ROOT, file), 'utf8'))) {
        if (specifier.startsWith('node:')) continue;
        if (specifier.startsWith('.')) {
          const target = relative(ROOT, join(ROOT, file, '..', specifier));
          if (!SOURCE_DIRS.some((d) => target.startsWith(`${d}${sep}`))) problems.push(`${file}: ${specifier} is not in the image`);
          continue;
        }
        const name = specifier.startsWith('@') ? specifier.split('/').slice(0, 2).join('/') : specifier.split('/')[0]!;
        if (!(name in pkg.dependencies)) problems.push(`${file}: ${name} is not a production dependency`);
      }
    }
    expect(problems).toEqual([]);
  });
});

describe('.dockerignore', () => {
  const rules = readFileSync(join(ROOT, '.dockerignore'), 'utf8')
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => l !== '' && !l.startsWith('#'))
    .map((l) => ({ negated: l.startsWith('!'), pattern: new RegExp(`^${globToRegExp(l.replace(/^!/, '').replace(/^\/+|\/+$/g, ''))}$`) }));

  function globToRegExp(glob: string): string {
    let out = '';
    for (let i = 0; i < glob.length; i++) {
      const c = glob[i]!;
      if (c === '*' && glob[i + 1] === '*') {
        out += glob[i + 2] === '/' ? '(?:.*/)?' : '.*';
        i += glob[i + 2] === '/' ? 2 : 1;
      } else if (c === '*') out += '[^/]*';
      else if (c === '?') out += '[^/]';
      else out += c.replace(/[.+^${}()|[\]\\]/g, '\\$&');
    }
    return out;
  }

  /** Docker's rule: the last pattern that matches the path or one of its parents decides. */
  function excluded(path: string): boolean {
    const parts = path.split('/');
    const candidates = parts.map((_, i) => parts.slice(0, i + 1).join('/'));
    let result = false;
    for (const rule of rules) {
      if (candidates.some((c) => rule.pattern.test(c))) result = !rule.negated;
    }
    return result;
  }

  it('keeps dependencies, Git data, tests and local leftovers out of the build context', () => {
    const paths = ['node_modules/yaml/package.json', '.git/HEAD', 'test/unit/a.test.ts', 'coverage/index.html', 'npm-debug.log', '.tmp/x', 'bench-results/r.json', 'src/node_modules/x', 'talosconfig', '.env'];
    expect(paths.filter((path) => !excluded(path))).toEqual([]);
  });

  it('is an allow-list: a file nobody thought of stays out too', () => {
    const paths = ['README.md', 'docs/deploy.md', 'manifests/secret.yaml', 'kubeconfig-production', 'terraform/terraform.tfstate'];
    expect(paths.filter((path) => !excluded(path))).toEqual([]);
  });

  it('lets in everything the Dockerfile copies from the context', () => {
    const paths = ['package.json', 'package-lock.json', 'src/entry.ts', 'src/main.ts', 'handlers/slack-app.ts', 'jobs/health-gate-job.ts', 'src/config/env.ts'];
    expect(paths.filter((path) => excluded(path))).toEqual([]);
  });
});
