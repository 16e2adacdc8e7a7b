import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { PASSED_VARIABLES, renderConfigReference } from '../../../src/config/config-reference.ts';
import { EnvSchema, loadConfig } from '../../../src/config/env.ts';

const ROOT = join(import.meta.dirname, '..', '..', '..');
const PAGE = join(ROOT, 'docs', 'configuration.md');

/** The smallest valid Socket Mode environment. */
const SOCKET_MODE = {
  SLACK_BOT_TOKEN: 'xoxb-1111-2222-botsecretvalue',
  SLACK_APP_TOKEN: 'xapp-1-A111-2222-appsecretvalue',
  REDIS_URL: 'redis://127.0.0.1:6379',
  CLUSTERS_FILE: '/etc/talos-chatops/clusters.yaml',
};

/** The variable names in the first column of the page's table under `heading`. */
function namesUnder(page: string, heading: string): string[] {
  const start = page.indexOf(`## ${heading}`);
  const end = page.indexOf('\n## ', start + 1);
  const section = page.slice(start, end === -1 ? undefined : end);
  return [...section.matchAll(/^\| (`[^|]+`) \|/gm)].flatMap((m) => [...m[1]!.matchAll(/`([^`]+)`/g)].map((n) => n[1]!));
}

/** Every variable name `loadConfig` looks up, recorded through a proxy over `env`. */
function namesReadBy(env: Record<string, string>): Set<string> {
  const read = new Set<string>();
  const record = (key: string | symbol) => {
    if (typeof key === 'string' && /^[A-Z][A-Z0-9_]*$/.test(key)) read.add(key);
  };
  const proxy = new Proxy(env, {
    get: (target, key, receiver) => (record(key), Reflect.get(target, key, receiver)),
    has: (target, key) => (record(key), Reflect.has(target, key)),
    getOwnPropertyDescriptor: (target, key) => (record(key), Reflect.getOwnPropertyDescriptor(target, key)),
  });
  loadConfig(proxy);
  return read;
}

describe('docs/configuration.md', () => {
  it('is the text generated from the schema', () => {
    // Arrange
    const generated = renderConfigReference(EnvSchema, PASSED_VARIABLES);

    // Act
    const page = readFileSync(PAGE, 'utf8');

    // Assert
    expect(page, 'docs/configuration.md is out of date: run `npm run docs:config` and commit the result').toBe(generated);
  });

  it('lists exactly the variables loadConfig reads', () => {
    // Arrange
    const page = readFileSync(PAGE, 'utf8');

    // Act
    const read = namesReadBy(SOCKET_MODE);

    // Assert
    expect(read.size).toBeGreaterThan(30);
    expect(namesUnder(page, 'Variables the bot reads').sort()).toEqual([...read].sort());
  });

  it('lists exactly the plain variables loadConfig hands on to child processes', () => {
    // Arrange
    const listed = PASSED_VARIABLES.filter((v) => v.passedTo === 'every child process').flatMap((v) => v.names);
    const others = ['USER', 'SHELL', 'LC_ALL', 'KUBECONFIG', 'TALOSCONFIG', 'HTTPS_PROXY', 'NODE_OPTIONS', 'XDG_CONFIG_HOME'];
    const env = { ...SOCKET_MODE, ...Object.fromEntries([...listed, ...others].map((name) => [name, `value-of-${name}`])) };

    // Act
    const config = loadConfig(env);

    // Assert
    expect(Object.keys(config.childEnv).sort()).toEqual([...listed].sort());
  });

  it("lists the prefixes loadConfig hands on to tofu only, and nothing of the bot's own", () => {
    // Arrange
    const prefixes = PASSED_VARIABLES.filter((v) => v.passedTo === 'tofu only').flatMap((v) =>
      v.names.map((name) => name.replace(/\*$/, '')),
    );
    const samples = prefixes.map((prefix) => `${prefix}SAMPLE`);
    const env = {
      ...SOCKET_MODE,
      TOFU_BIN: '/usr/local/bin/tofu',
      TFX_LOOKALIKE: 'x',
      PMX_LOOKALIKE: 'x',
      ...Object.fromEntries(samples.map((name) => [name, 'x'])),
    };

    // Act
    const config = loadConfig(env);

    // Assert
    expect(prefixes.length).toBeGreaterThan(5);
    expect(Object.keys(config.tofuEnv).sort()).toEqual([...samples].sort());
    expect(Object.keys(config.childEnv).filter((name) => samples.includes(name))).toEqual([]);
  });
});

describe('renderConfigReference', () => {
  it('shows each default as the schema declares it: required, a value, or none', () => {
    // Arrange
    const blankIsUnset = z
      .string()
      .optional()
      .transform((v) => (v?.trim() ? v : undefined));
    const schema = z.object({
      A_REQUIRED: z.string().describe('must be set'),
      B_DEFAULTED: blankIsUnset.default('15').pipe(z.coerce.number<string>()).describe('seconds'),
      C_OPTIONAL: blankIsUnset.describe('a | b\nc'),
    });

    // Act
    const page = renderConfigReference(schema, []);

    // Assert
    expect(page.split('\n').filter((line) => line.startsWith('| `'))).toEqual([
      '| `A_REQUIRED` | required | must be set |',
      '| `B_DEFAULTED` | `15` | seconds |',
      '| `C_OPTIONAL` | — | a \\| b c |',
    ]);
  });

  it('refuses a variable without a description, naming it', () => {
    // Arrange
    const schema = z.object({ DESCRIBED: z.string().describe('yes'), UNDESCRIBED: z.string() });

    // Act
    const render = () => renderConfigReference(schema, []);

    // Assert
    expect(render).toThrow(/^UNDESCRIBED has no description/);
  });
});
