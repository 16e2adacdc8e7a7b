import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ConfigError } from '../../../src/config/config-error.ts';
import { loadConfig } from '../../../src/config/env.ts';

/** The smallest valid Socket Mode environment. */
const SOCKET_MODE = {
  SLACK_BOT_TOKEN: 'xoxb-1111-2222-botsecretvalue',
  SLACK_APP_TOKEN: 'xapp-1-A111-2222-appsecretvalue',
  REDIS_URL: 'redis://127.0.0.1:6379',
  CLUSTERS_FILE: '/etc/talos-chatops/clusters.yaml',
};

/** The problems `loadConfig` reports for `env`; fails the test when it does not throw a ConfigError. */
function problemsOf(env: Record<string, string | undefined>): string[] {
  let thrown: unknown;
  try {
    loadConfig(env);
  } catch (error) {
    thrown = error;
  }
  expect(thrown).toBeInstanceOf(ConfigError);
  return (thrown as ConfigError).problems;
}

describe('loadConfig: required variables', () => {
  it('names every missing variable in one error, each with its fix', () => {
    // Arrange
    const env = {};

    // Act
    const problems = problemsOf(env);

    // Assert
    const byVariable = new Map(problems.map((p): [string, string] => [p.slice(0, p.indexOf(':')), p]));
    expect([...byVariable.keys()].sort((a, b) => a.localeCompare(b))).toEqual([
      'CLUSTERS_FILE',
      'REDIS_URL',
      'SLACK_APP_TOKEN',
      'SLACK_BOT_TOKEN',
    ]);
    expect(problems).toHaveLength(4);
    expect(byVariable.get('SLACK_BOT_TOKEN')).toMatch(/\(copy "Bot User OAuth Token" from the Slack app's OAuth & Permissions page\)$/);
    expect(byVariable.get('SLACK_APP_TOKEN')).toMatch(
      /set SLACK_APP_TOKEN \(Socket Mode\) or SLACK_SIGNING_SECRET \(HTTP mode\) \(create an app-level token/,
    );
    expect(byVariable.get('REDIS_URL')).toMatch(/\(for example redis:\/\/127\.0\.0\.1:6379\)$/);
    expect(byVariable.get('CLUSTERS_FILE')).toMatch(/\(the inventory described in the README/);
  });

  it('has a stable code and a message that lists every problem on its own line', () => {
    // Act
    let thrown: unknown;
    try {
      loadConfig({ SLACK_BOT_TOKEN: SOCKET_MODE.SLACK_BOT_TOKEN, SLACK_APP_TOKEN: SOCKET_MODE.SLACK_APP_TOKEN });
    } catch (error) {
      thrown = error;
    }

    // Assert
    expect(thrown).toBeInstanceOf(ConfigError);
    const error = thrown as ConfigError;
    expect(error.code).toBe('config-invalid');
    expect(error.message.split('\n')).toEqual(['The environment is invalid:', `  - ${error.problems[0]}`, `  - ${error.problems[1]}`]);
    expect(error.problems.map((p) => p.split(':')[0])).toEqual(['REDIS_URL', 'CLUSTERS_FILE']);
  });

  it('treats a blank optional variable as unset', () => {
    // Arrange: a Helm chart often renders unset values as empty strings.
    const env = { ...SOCKET_MODE, SLACK_SIGNING_SECRET: '  ', TALOSCTL_BIN: '', HTTP_PORT: ' ', LOG_LEVEL: '' };

    // Act
    const config = loadConfig(env);

    // Assert
    expect(config.slack.signingSecret).toBeUndefined();
    expect(config.talosctlBin).toBe('talosctl');
    expect(config.httpPort).toBe(3000);
    expect(config.logLevel).toBe('info');
  });
});

describe('loadConfig: Slack mode', () => {
  it('is Socket Mode with an app token', () => {
    // Act
    const config = loadConfig(SOCKET_MODE);

    // Assert
    expect(config.slack).toEqual({
      botToken: SOCKET_MODE.SLACK_BOT_TOKEN,
      appToken: SOCKET_MODE.SLACK_APP_TOKEN,
      signingSecret: undefined,
      apiUrl: undefined,
      timeoutMs: 15_000,
      reconnectMaxMs: 30_000,
    });
  });

  it('takes the longest wait between Socket Mode reconnects in seconds, and refuses one that is not positive', () => {
    expect(loadConfig({ ...SOCKET_MODE, SLACK_RECONNECT_MAX_SECONDS: '5' }).slack.reconnectMaxMs).toBe(5000);
    expect(() => loadConfig({ ...SOCKET_MODE, SLACK_RECONNECT_MAX_SECONDS: '0' })).toThrow(/SLACK_RECONNECT_MAX_SECONDS/);
  });

  it('is HTTP mode with a signing secret and no app token', () => {
    // Arrange
    const env = { ...SOCKET_MODE, SLACK_APP_TOKEN: undefined, SLACK_SIGNING_SECRET: ' 8f14e45fceea167a5a36dedd4bea2543 ' };

    // Act
    const config = loadConfig(env);

    // Assert
    expect(config.slack.appToken).toBeUndefined();
    expect(config.slack.signingSecret).toBe('8f14e45fceea167a5a36dedd4bea2543');
  });

  it('refuses neither an app token nor a signing secret, saying which to set', () => {
    // Act
    const problems = problemsOf({ ...SOCKET_MODE, SLACK_APP_TOKEN: '' });

    // Assert
    expect(problems).toHaveLength(1);
    expect(problems[0]).toContain('set SLACK_APP_TOKEN (Socket Mode) or SLACK_SIGNING_SECRET (HTTP mode)');
  });

  it('refuses tokens of the wrong kind, each with its fix', () => {
    // Arrange: a user token where the bot token belongs, a bot token where the app token belongs.
    const env = { ...SOCKET_MODE, SLACK_BOT_TOKEN: 'xoxp-1111-user', SLACK_APP_TOKEN: 'xoxb-1111-bot' };

    // Act
    const problems = problemsOf(env);

    // Assert
    expect(problems).toEqual([
      'SLACK_BOT_TOKEN: must be a bot token starting with xoxb- (copy "Bot User OAuth Token" from the Slack app\'s OAuth & Permissions page)',
      'SLACK_APP_TOKEN: must be an app-level token starting with xapp- (create an app-level token with the connections:write scope under Basic Information)',
    ]);
  });

  it('never quotes a token it refuses', () => {
    // Act
    const problems = problemsOf({ ...SOCKET_MODE, SLACK_BOT_TOKEN: 'xoxp-9999-leakedusertoken' });

    // Assert
    expect(problems.join('\n')).not.toContain('leakedusertoken');
  });

  it('takes an optional Web API base URL and refuses one that is not a URL', () => {
    // Act
    const config = loadConfig({ ...SOCKET_MODE, SLACK_API_URL: 'http://127.0.0.1:4000/api/' });
    const problems = problemsOf({ ...SOCKET_MODE, SLACK_API_URL: 'slack emulator' });

    // Assert
    expect(config.slack.apiUrl).toBe('http://127.0.0.1:4000/api/');
    expect(problems).toHaveLength(1);
    expect(problems[0]).toMatch(/^SLACK_API_URL: /);
  });
});

describe('loadConfig: values', () => {
  it('fills in the documented defaults and converts seconds and minutes to ms', () => {
    // Act
    const config = loadConfig(SOCKET_MODE);

    // Assert
    expect(config).toEqual({
      slack: expect.any(Object),
      redisUrl: 'redis://127.0.0.1:6379',
      allowInsecureRedis: false,
      clustersFile: '/etc/talos-chatops/clusters.yaml',
      clustersReloadMs: 30_000,
      talosctlBin: 'talosctl',
      // On by default: a new Talos release needs no new image.
      talosctlDownload: {
        releaseUrl: 'https://github.com/siderolabs/talos/releases/download',
        cacheDir: undefined,
        maxBytes: 512 * 1024 * 1024,
      },
      tofuBin: 'tofu',
      gitBin: 'git',
      planDir: undefined,
      planSpaceBytes: 256 * 1024 * 1024,
      httpPort: 3000,
      logLevel: 'info',
      logPretty: false,
      shutdownGraceMs: 60_000,
      readConcurrency: 32,
      readCommandsPerMinute: 6,
      imageFactoryUrl: 'https://factory.talos.dev',
      credentialsDir: undefined,
      childEnv: {},
      tofuEnv: {},
      retention: { operationMs: 400 * 86_400_000, dedupeSeconds: 3600, jobSeconds: 7 * 86_400, signOffMs: 90 * 86_400_000 },
      recordExportDir: undefined,
      redisDurabilityCheck: 'enforce',
      redisEpochReseed: false,
      redisEpochCheckMs: 15_000,
      // Unset: the bot does not know where it runs, and the doctor says so.
      placement: { nodeName: undefined, hostIp: undefined, podIp: undefined },
      timeouts: {
        approvalTtlMs: 3_600_000,
        approvalReminderMs: 600_000,
        // Unset, an approval may be as old as a request may wait.
        approvalMaxAgeMs: 3_600_000,
        stepMs: 1_800_000,
        probeMs: 60_000,
        nodeReadyMs: 900_000,
        longhornRebuildMs: 3_600_000,
        settleMs: 300_000,
        pollMs: 5000,
        jobLockMs: 30_000,
        planTtlMs: 1_800_000,
      },
    });
  });

  it('bounds the age of an approval at its step start by APPROVAL_MAX_AGE_MINUTES, and refuses a bound that is not positive', () => {
    expect(loadConfig({ ...SOCKET_MODE, APPROVAL_TTL_MINUTES: '15', APPROVAL_MAX_AGE_MINUTES: '45' }).timeouts.approvalMaxAgeMs).toBe(
      2_700_000,
    );
    expect(() => loadConfig({ ...SOCKET_MODE, APPROVAL_MAX_AGE_MINUTES: '0' })).toThrow(/APPROVAL_MAX_AGE_MINUTES/);
    expect(() => loadConfig({ ...SOCKET_MODE, APPROVAL_MAX_AGE_MINUTES: 'an hour' })).toThrow(/APPROVAL_MAX_AGE_MINUTES/);
  });

  it('converts configured timeouts to ms', () => {
    // Arrange
    const env = {
      ...SOCKET_MODE,
      APPROVAL_TTL_MINUTES: '15',
      APPROVAL_REMINDER_MINUTES: '0.5',
      STEP_TIMEOUT_SECONDS: '600',
      PROBE_TIMEOUT_SECONDS: '2.5',
      NODE_READY_TIMEOUT_SECONDS: '120',
      LONGHORN_REBUILD_TIMEOUT_SECONDS: '5400',
      JOB_LOCK_SECONDS: '10',
      PLAN_TTL_MINUTES: '5',
      POLL_INTERVAL_MS: '250',
      SHUTDOWN_GRACE_SECONDS: '0',
      READ_CONCURRENCY: '4',
    };

    // Act
    const config = loadConfig(env);

    // Assert
    expect(config.timeouts).toEqual({
      approvalTtlMs: 900_000,
      approvalReminderMs: 30_000,
      approvalMaxAgeMs: 900_000,
      stepMs: 600_000,
      probeMs: 2500,
      nodeReadyMs: 120_000,
      longhornRebuildMs: 5_400_000,
      settleMs: 300_000,
      pollMs: 250,
      jobLockMs: 10_000,
      planTtlMs: 300_000,
    });
    expect(config.shutdownGraceMs).toBe(0);
    expect(config.readConcurrency).toBe(4);
  });

  it('takes APPROVAL_REMINDER_MINUTES=0 as no reminder', () => {
    // Act
    const config = loadConfig({ ...SOCKET_MODE, APPROVAL_REMINDER_MINUTES: '0' });

    // Assert
    expect(config.timeouts.approvalReminderMs).toBe(0);
  });

  it('downloads talosctl unless TALOSCTL_DOWNLOAD=false, from an https mirror into a bounded cache', () => {
    // Act
    const off = loadConfig({ ...SOCKET_MODE, TALOSCTL_DOWNLOAD: 'false' });
    const mirror = loadConfig({
      ...SOCKET_MODE,
      TALOSCTL_RELEASE_URL: 'https://mirror.internal/talos',
      TALOSCTL_CACHE_DIR: '/var/cache/talos-chatops/talosctl',
      TALOSCTL_CACHE_MAX_MB: '256',
    });

    // Assert
    expect(off.talosctlDownload).toBeUndefined();
    expect(mirror.talosctlDownload).toEqual({
      releaseUrl: 'https://mirror.internal/talos',
      cacheDir: '/var/cache/talos-chatops/talosctl',
      maxBytes: 256 * 1024 * 1024,
    });
  });

  it('takes the other settings as given', () => {
    // Arrange
    const env = {
      ...SOCKET_MODE,
      REDIS_URL: 'rediss://redis.internal:6380/2',
      TALOSCTL_BIN: '/opt/talosctl/',
      TOFU_BIN: '/usr/local/bin/tofu',
      HTTP_PORT: '8080',
      LOG_LEVEL: 'debug',
      LOG_PRETTY: 'true',
      IMAGE_FACTORY_URL: 'http://127.0.0.1:9000',
      CREDENTIALS_DIR: '/run/talos-chatops',
    };

    // Act
    const config = loadConfig(env);

    // Assert
    expect(config).toMatchObject({
      redisUrl: 'rediss://redis.internal:6380/2',
      talosctlBin: '/opt/talosctl/',
      tofuBin: '/usr/local/bin/tofu',
      httpPort: 8080,
      logLevel: 'debug',
      logPretty: true,
      imageFactoryUrl: 'http://127.0.0.1:9000',
      credentialsDir: '/run/talos-chatops',
    });
  });

  it('takes the retention periods and the record export directory', () => {
    const config = loadConfig({
      ...SOCKET_MODE,
      OPERATION_RETENTION_DAYS: '730',
      DEDUPE_RETENTION_MINUTES: '15',
      JOB_RETENTION_DAYS: '0.5',
      SIGNOFF_MAX_AGE_DAYS: '30',
      RECORD_EXPORT_DIR: '/var/lib/talos-chatops/records',
    });

    expect(config.retention).toEqual({ operationMs: 730 * 86_400_000, dedupeSeconds: 900, jobSeconds: 43_200, signOffMs: 30 * 86_400_000 });
    expect(config.recordExportDir).toBe('/var/lib/talos-chatops/records');
  });

  it.each([
    ['HTTP_PORT', 'http', /^HTTP_PORT: .*\(a TCP port/],
    ['HTTP_PORT', '70000', /^HTTP_PORT: /],
    ['HTTP_PORT', '80.5', /^HTTP_PORT: /],
    ['LOG_LEVEL', 'verbose', /^LOG_LEVEL: .*\(one of fatal, error, warn, info, debug, trace, silent\)$/],
    ['LOG_PRETTY', 'yes', /^LOG_PRETTY: /],
    ['REDIS_URL', 'http://127.0.0.1:6379', /^REDIS_URL: must be a redis:\/\/ or rediss:\/\/ URL/],
    ['STEP_TIMEOUT_SECONDS', '0', /^STEP_TIMEOUT_SECONDS: /],
    ['PROBE_TIMEOUT_SECONDS', '-5', /^PROBE_TIMEOUT_SECONDS: /],
    ['POLL_INTERVAL_MS', '1.5', /^POLL_INTERVAL_MS: /],
    ['SHUTDOWN_GRACE_SECONDS', '-1', /^SHUTDOWN_GRACE_SECONDS: .*0 stops at once\)$/],
    ['READ_CONCURRENCY', '0', /^READ_CONCURRENCY: .*1 to 256\)$/],
    ['APPROVAL_REMINDER_MINUTES', '-1', /^APPROVAL_REMINDER_MINUTES: .*0 sends no reminder\)$/],
    ['APPROVAL_REMINDER_MINUTES', 'soon', /^APPROVAL_REMINDER_MINUTES: /],
    ['IMAGE_FACTORY_URL', 'factory.talos.dev', /^IMAGE_FACTORY_URL: /],
    ['OPERATION_RETENTION_DAYS', '0', /^OPERATION_RETENTION_DAYS: .*e\.g\. 400\)$/],
    ['DEDUPE_RETENTION_MINUTES', '5', /^DEDUPE_RETENTION_MINUTES: .*at least 10\)$/],
    ['JOB_RETENTION_DAYS', 'a week', /^JOB_RETENTION_DAYS: /],
    ['RECORD_EXPORT_DIR', 'records', /^RECORD_EXPORT_DIR: must be an absolute path/],
    [
      'TALOSCTL_RELEASE_URL',
      'http://mirror.example/talos',
      /^TALOSCTL_RELEASE_URL: must be an https:\/\/ URL: talosctl is downloaded only over TLS \(.*NODE_EXTRA_CA_CERTS.*TALOSCTL_DOWNLOAD=false/,
    ],
    ['TALOSCTL_CACHE_MAX_MB', '0', /^TALOSCTL_CACHE_MAX_MB: /],
    ['TALOSCTL_DOWNLOAD', 'yes', /^TALOSCTL_DOWNLOAD: /],
  ])('refuses %s=%s with a line naming it', (name, value, line) => {
    // Act
    const problems = problemsOf({ ...SOCKET_MODE, [name]: value });

    // Assert
    expect(problems).toHaveLength(1);
    expect(problems[0]).toMatch(line);
  });
});

describe('loadConfig: child environments', () => {
  /** The bot's own environment as a deployment sets it, with state-backend credentials for tofu. */
  const DEPLOYED = {
    ...SOCKET_MODE,
    SLACK_SIGNING_SECRET: 'signing-secret-value',
    PATH: '/usr/local/bin:/usr/bin:/bin',
    HOME: '/home/bot',
    LANG: 'C.UTF-8',
    TZ: 'UTC',
    SSL_CERT_FILE: '/etc/ssl/certs/ca-certificates.crt',
    TF_VAR_region: 'eu-central',
    TF_TOKEN_app_terraform_io: 'tf-cloud-token',
    TOFU_BIN: '/usr/local/bin/tofu',
    AWS_ACCESS_KEY_ID: 'AKIAEXAMPLE',
    AWS_SECRET_ACCESS_KEY: 'aws-secret',
    B2_APPLICATION_KEY: 'b2-key',
    PROXMOX_VE_API_TOKEN: 'pve-token',
    KUBECONFIG: '/home/bot/.kube/config',
    NODE_OPTIONS: '--max-old-space-size=512',
    UNSET_VALUE: undefined,
  };

  it('gives every child only PATH, HOME, locale, time zone and CA settings', () => {
    // Act
    const config = loadConfig(DEPLOYED);

    // Assert
    expect(config.childEnv).toEqual({
      PATH: '/usr/local/bin:/usr/bin:/bin',
      HOME: '/home/bot',
      LANG: 'C.UTF-8',
      TZ: 'UTC',
      SSL_CERT_FILE: '/etc/ssl/certs/ca-certificates.crt',
    });
  });

  it("passes state-backend credentials to tofu only, never the bot's own settings", () => {
    // Act
    const config = loadConfig(DEPLOYED);

    // Assert
    expect(config.tofuEnv).toEqual({
      TF_VAR_region: 'eu-central',
      TF_TOKEN_app_terraform_io: 'tf-cloud-token',
      AWS_ACCESS_KEY_ID: 'AKIAEXAMPLE',
      AWS_SECRET_ACCESS_KEY: 'aws-secret',
      B2_APPLICATION_KEY: 'b2-key',
      PROXMOX_VE_API_TOKEN: 'pve-token',
    });
  });

  it('never puts a Slack credential into a child environment', () => {
    // Act
    const config = loadConfig(DEPLOYED);

    // Assert
    const childValues = [...Object.values(config.childEnv), ...Object.values(config.tofuEnv)];
    for (const secret of [DEPLOYED.SLACK_BOT_TOKEN, DEPLOYED.SLACK_APP_TOKEN, DEPLOYED.SLACK_SIGNING_SECRET]) {
      expect(childValues).not.toContain(secret);
    }
    expect(Object.keys(config.childEnv).filter((k) => k.startsWith('SLACK_'))).toEqual([]);
    expect(Object.keys(config.tofuEnv).filter((k) => k.startsWith('SLACK_'))).toEqual([]);
  });
});

describe('loadConfig: credentials from files', () => {
  it('reads each token from its <NAME>_FILE, trimmed, so the variable itself can stay unset', () => {
    // Arrange
    const dir = mkdtempSync(join(tmpdir(), 'env-files-'));
    const file = (name: string, text: string): string => (writeFileSync(join(dir, name), text, { mode: 0o600 }), join(dir, name));
    const env = {
      CLUSTERS_FILE: SOCKET_MODE.CLUSTERS_FILE,
      SLACK_BOT_TOKEN_FILE: file('bot', 'xoxb-from-file-0123456789\n'),
      SLACK_APP_TOKEN_FILE: file('app', 'xapp-from-file-0123456789\n'),
      REDIS_URL_FILE: file('redis', 'redis://:pass-from-file@127.0.0.1:6379\n'),
    };

    // Act
    const config = loadConfig(env);

    // Assert
    expect(config.slack).toMatchObject({ botToken: 'xoxb-from-file-0123456789', appToken: 'xapp-from-file-0123456789' });
    expect(config.redisUrl).toBe('redis://:pass-from-file@127.0.0.1:6379');
  });

  it('refuses a token set both ways, and a file that cannot be read, naming the variables and never a value', () => {
    // Arrange
    const env = {
      ...SOCKET_MODE,
      SLACK_BOT_TOKEN_FILE: '/etc/talos-chatops/bot-token',
      SLACK_APP_TOKEN: undefined,
      SLACK_APP_TOKEN_FILE: '/nonexistent/app-token',
    };

    // Act
    const problems = problemsOf(env);

    // Assert
    expect(problems).toEqual([
      'SLACK_BOT_TOKEN and SLACK_BOT_TOKEN_FILE are both set: keep one (the file is preferred)',
      'SLACK_APP_TOKEN_FILE: /nonexistent/app-token cannot be read (ENOENT): mount the secret there or fix the path',
    ]);
    expect(problems.join('\n')).not.toContain(SOCKET_MODE.SLACK_BOT_TOKEN);
  });
});

describe('loadConfig: where the bot runs (the downward API)', () => {
  it('takes its node name, host IP and pod IP, IPv4 or IPv6, and leaves each unset when not given', () => {
    // Act
    const given = loadConfig({
      ...SOCKET_MODE,
      BOT_NODE_NAME: 'talos-mgmt-w-1.example.org',
      BOT_HOST_IP: '10.0.50.21',
      BOT_POD_IP: 'fd00:10:244::7',
    });
    const unset = loadConfig({ ...SOCKET_MODE, BOT_NODE_NAME: ' ' });

    // Assert
    expect(given.placement).toEqual({ nodeName: 'talos-mgmt-w-1.example.org', hostIp: '10.0.50.21', podIp: 'fd00:10:244::7' });
    expect(unset.placement).toEqual({ nodeName: undefined, hostIp: undefined, podIp: undefined });
  });

  it('refuses an address that is no IP and a name the API server would refuse for a Node, each with its fix', () => {
    // Act
    const problems = problemsOf({ ...SOCKET_MODE, BOT_NODE_NAME: 'Talos_Node', BOT_HOST_IP: '10.0.50', BOT_POD_IP: 'pod.local' });

    // Assert
    expect(problems).toHaveLength(3);
    expect(problems.find((p) => p.startsWith('BOT_NODE_NAME'))).toMatch(
      /^BOT_NODE_NAME: must be a Kubernetes Node name: lowercase letters, digits, "-" and "\.".* \(set it from the downward API \(fieldRef spec\.nodeName\)/,
    );
    expect(problems.find((p) => p.startsWith('BOT_HOST_IP'))).toMatch(
      /^BOT_HOST_IP: must be an IPv4 or IPv6 address, such as 10\.0\.50\.21 \(set it from the downward API \(fieldRef status\.hostIP\)/,
    );
    expect(problems.find((p) => p.startsWith('BOT_POD_IP'))).toMatch(/^BOT_POD_IP: must be an IPv4 or IPv6 address/);
  });

  it('refuses a node name longer than the 253 characters of a DNS subdomain', () => {
    // Act
    const problems = problemsOf({ ...SOCKET_MODE, BOT_NODE_NAME: `${'a'.repeat(63)}.`.repeat(4) + 'b' });

    // Assert
    expect(problems).toEqual([expect.stringMatching(/^BOT_NODE_NAME: must be a Kubernetes Node name of at most 253 characters/)]);
  });
});
