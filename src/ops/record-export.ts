import { randomUUID } from 'node:crypto';
import { chmod, mkdir, open, rename, rm } from 'node:fs/promises';
import { join } from 'node:path';
import type { Logger } from '../log/logger.ts';
import { systemClock, type Clock } from '../time/clock.ts';
import { withDeadline } from '../time/deadline.ts';
import type { Operation } from './operation.ts';

/** Names the JSON's shape; raised when a field changes meaning, not when one is added. */
export const RECORD_SCHEMA = 'talos-chatops/maintenance-record';
export const RECORD_SCHEMA_VERSION = 1;

/**
 * Fields that steer the bot's own bookkeeping (write ids, button nonces, unposted replies), not
 * what happened: left out of the export. Everything else of the operation is the record, so a
 * field a new playbook adds is exported without a change here.
 */
const BOOKKEEPING = new Set(['revision', 'writes', 'planNonce']);
const AUDIT_BOOKKEEPING = new Set(['post', 'attempted', 'hold']);
const NONCE = 'nonce';

/** Drops the bookkeeping of nested objects too (approval and retry nonces, an approval's shown blocks). */
function strip(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(strip);
  if (value === null || typeof value !== 'object') return value;
  return Object.fromEntries(
    Object.entries(value)
      .filter(([k]) => k !== NONCE && k !== 'shown')
      .map(([k, v]) => [k, strip(v)]),
  );
}

/** A person the record names, by Slack id, with the display name Slack gave when the record was exported. */
export interface RecordPerson {
  id: string;
  /** Absent when the name could not be read (no users:read scope, Slack unreachable): the id still names them. */
  displayName?: string;
}

/** A Slack user id (`U…`, or `W…` in an Enterprise Grid). */
const SLACK_USER = /^[UW][A-Z0-9]{2,}$/;
/** Fields that name a person: `requestedBy`, `startedBy`, an approval's or override's `by`, an audit entry's `actor`. */
const isPersonField = (key: string): boolean => key === 'by' || key === 'actor' || key.endsWith('By');

/** Every Slack user the operation names in a person's field, each once, sorted by id. */
export function peopleOf(op: Operation): string[] {
  const found = new Set<string>();
  const walk = (value: unknown): void => {
    if (Array.isArray(value)) value.forEach(walk);
    else if (value !== null && typeof value === 'object')
      for (const [key, field] of Object.entries(value)) {
        if (isPersonField(key) && typeof field === 'string' && SLACK_USER.test(field)) found.add(field);
        else walk(field);
      }
  };
  walk(op);
  return [...found].sort();
}

/** The maintenance record as schema-versioned JSON: the operation's own fields, without the bot's bookkeeping, and the people it names. */
export function maintenanceRecordJson(
  op: Operation,
  exportedAt: Date,
  people: RecordPerson[] = peopleOf(op).map((id) => ({ id })),
): string {
  const record: Record<string, unknown> = {};
  for (const [field, value] of Object.entries(op)) {
    if (BOOKKEEPING.has(field) || value === undefined) continue;
    record[field] =
      field === 'audit'
        ? op.audit.map((entry) => Object.fromEntries(Object.entries(entry).filter(([k]) => !AUDIT_BOOKKEEPING.has(k))))
        : strip(value);
  }
  return `${JSON.stringify({ schema: RECORD_SCHEMA, schemaVersion: RECORD_SCHEMA_VERSION, exportedAt: exportedAt.toISOString(), people, record }, null, 2)}\n`;
}

/** Whether this change ended the operation (completed, failed, refused, cancelled), or ended it again after a Retry. */
export function justEnded(before: Operation, after: Operation): boolean {
  return after.endedAt !== undefined && (before.endedAt !== after.endedAt || before.state !== after.state);
}

export interface RecordExporter {
  /** Writes `op`'s record as `<dir>/<op id>.json`, replacing an earlier one atomically. */
  write(op: Operation): Promise<string>;
  /** For the store's change hook: writes the record when the change ended the operation. Never throws. */
  operationChanged(before: Operation, after: Operation): void;
}

export interface RecordExporterOptions {
  dir: string;
  now: () => Date;
  logger: Logger;
  /** A person's Slack display name, or undefined when it cannot be read; the record then names them by id only. */
  displayName?: (userId: string) => Promise<string | undefined>;
  /** Upper bound of one name lookup, in ms; default 5000. A slower one counts as failed. */
  nameTimeoutMs?: number;
  /** The clock the name lookups' bound runs on; default the system's. */
  clock?: Pick<Clock, 'sleep'>;
}

/**
 * One file per operation, written when it ends (failed and cancelled too; a Retry that ends it
 * again writes it again). Written to a temporary file in the same directory, flushed, then
 * renamed: a reader (a backup job) sees the old file or the new one, never half of one. 0640,
 * so a backup user in the bot's group can read the records and nobody else can.
 */
export function createRecordExporter(options: RecordExporterOptions): RecordExporter {
  const { dir, now, logger, displayName } = options;
  const nameTimeoutMs = options.nameTimeoutMs ?? 5000;
  const clock = options.clock ?? systemClock;
  // A slow or failed lookup names the person by id: it cannot hold the record back.
  const nameOf = (lookUp: (userId: string) => Promise<string | undefined>, id: string): Promise<string | undefined> =>
    withDeadline(clock, nameTimeoutMs, () => lookUp(id)).then(
      (outcome) => (outcome.ok ? outcome.value : undefined),
      () => undefined,
    );
  const people = (op: Operation): Promise<RecordPerson[]> =>
    Promise.all(
      peopleOf(op).map(async (id): Promise<RecordPerson> => {
        const name = displayName === undefined ? undefined : await nameOf(displayName, id);
        return name === undefined ? { id } : { id, displayName: name };
      }),
    );
  const write = async (op: Operation): Promise<string> => {
    const named = await people(op);
    await mkdir(dir, { recursive: true, mode: 0o750 });
    const path = join(dir, `${op.id}.json`);
    const temporary = join(dir, `.${op.id}.${randomUUID()}.tmp`);
    try {
      const file = await open(temporary, 'wx', 0o640);
      try {
        await file.writeFile(maintenanceRecordJson(op, now(), named), 'utf8');
        await file.sync();
      } finally {
        await file.close();
      }
      // The mode given to open is narrowed by the umask; the record's is set explicitly.
      await chmod(temporary, 0o640);
      await rename(temporary, path);
    } catch (error) {
      await rm(temporary, { force: true });
      throw error;
    }
    return path;
  };
  return {
    write,
    operationChanged(before, after) {
      if (!justEnded(before, after)) return;
      write(after).then(
        (path) => logger.info({ op: after.id, cluster: after.cluster, state: after.state, path }, 'maintenance record exported'),
        (error: unknown) =>
          logger.error({ op: after.id, cluster: after.cluster, err: (error as Error).message }, 'maintenance record not exported'),
      );
    },
  };
}
