import { ParseError, requireContent, splitLines } from './parse-error.ts';
import { parseTableRows, requireColumns, toRecords } from './parse-table.ts';

const SOURCE = 'talosctl service';
const LIST_SOURCE = 'talosctl service (list)';

/** Service health as talosctl prints it: `?` means not yet known. */
export type ServiceHealth = 'OK' | 'Fail' | '?';

/** One entry of a service's event history. */
export interface ServiceEvent {
  /** The state the service entered, e.g. `Running`, `Preparing`. */
  state: string;
  message: string;
  /** Age as printed (a Go duration without "ago"), e.g. `3m21s`. */
  ago: string;
}

/** `talosctl service <id>` for one node. */
export interface ServiceInfo {
  /** Absent when talosctl printed no NODE line (no proxy metadata, ≤1.13). */
  node?: string;
  id: string;
  /** e.g. `Running`, `Preparing`, `Waiting`, `Failed`, `Finished`. */
  state: string;
  health: ServiceHealth;
  lastHealthMessage?: string;
  /** Newest first, as printed. */
  events: ServiceEvent[];
}

/** One row of `talosctl service` (the list form). */
export interface ServiceListRow {
  node?: string;
  service: string;
  state: string;
  health: ServiceHealth;
  /** As printed, e.g. `3m21s ago`. */
  lastChange: string;
  lastEvent: string;
}

const KEY_LINE = /^(LAST HEALTH MESSAGE|NODE|ID|STATE|HEALTH|EVENTS)(?: {2,}(.*?))? *$/;
const OTHER_KEY_LINE = /^[A-Z][A-Z]*(?: [A-Z]+)*(?: {2,}|$)/;
const EVENT_START = /^\[[A-Za-z]*\]: /;
const EVENT = /^\[([A-Za-z]*)\]: ([\s\S]*) \(([^()\s]+) ago\)$/;

interface Block {
  node?: string;
  id?: string;
  state?: string;
  health?: string;
  lastHealthMessage?: string;
  events: ServiceEvent[];
  /** Text of an event whose `(… ago)` suffix has not been seen yet (message spans lines). */
  pendingEvent?: string;
  /** Which value a continuation line extends. */
  continues: 'events' | 'health-message' | undefined;
}

function healthOf(value: string, line: string, source: string): ServiceHealth {
  if (value === 'OK' || value === 'Fail' || value === '?') return value;
  throw new ParseError(source, `HEALTH should be OK, Fail or ?, found ${JSON.stringify(value)}`, line);
}

function addEventText(block: Block, text: string, line: string): void {
  if (EVENT_START.test(text)) {
    if (block.pendingEvent !== undefined) {
      throw new ParseError(SOURCE, 'an event line has no "(… ago)" age', block.pendingEvent);
    }
    block.pendingEvent = text;
  } else if (block.pendingEvent !== undefined) {
    // Go printed a message containing a newline: the event continues on this line.
    block.pendingEvent = `${block.pendingEvent}\n${text}`;
  } else {
    throw new ParseError(SOURCE, 'expected an event like "[Running]: message (3m21s ago)"', line);
  }
  const match = EVENT.exec(block.pendingEvent);
  if (match === null) return;
  const [, state = '', message = '', ago = ''] = match;
  block.events.push({ state, message, ago });
  block.pendingEvent = undefined;
}

function finish(block: Block): ServiceInfo {
  if (block.pendingEvent !== undefined) {
    throw new ParseError(SOURCE, 'the last event has no "(… ago)" age: the output is truncated', block.pendingEvent);
  }
  const where = block.node === undefined ? '' : ` for node ${block.node}`;
  for (const [key, value] of [
    ['ID', block.id],
    ['STATE', block.state],
    ['HEALTH', block.health],
  ] as const) {
    if (value === undefined || value === '') throw new ParseError(SOURCE, `the block${where} has no ${key} line`);
  }
  const info: ServiceInfo = {
    id: block.id ?? '',
    state: block.state ?? '',
    health: healthOf(block.health ?? '', `HEALTH ${block.health ?? ''}`, SOURCE),
    events: block.events,
  };
  if (block.node !== undefined && block.node !== '') info.node = block.node;
  if (block.lastHealthMessage !== undefined) info.lastHealthMessage = block.lastHealthMessage;
  return info;
}

/**
 * Parses `talosctl service <id>` stdout: key/value blocks (`NODE`, `ID`, `STATE`, `HEALTH`,
 * optional `LAST HEALTH MESSAGE`, `EVENTS` newest first), one block per node.
 *
 * @throws {ParseError} on empty, truncated or unrecognised output
 */
export function parseServiceInfo(stdout: string): ServiceInfo[] {
  requireContent(stdout, SOURCE);
  const blocks: Block[] = [];
  let current: Block | undefined;
  const startBlock = (): Block => {
    const block: Block = { events: [], continues: undefined };
    blocks.push(block);
    return block;
  };
  for (const line of splitLines(stdout)) {
    if (line.trim() === '') continue;
    const key = KEY_LINE.exec(line);
    if (key === null) {
      const continuing = current?.continues;
      if (current !== undefined && continuing === 'events') {
        addEventText(current, line.trim(), line);
      } else if (current !== undefined && continuing === 'health-message' && /^\s/.test(line)) {
        current.lastHealthMessage = `${current.lastHealthMessage ?? ''}\n${line.trim()}`;
      } else if (OTHER_KEY_LINE.test(line) && current !== undefined) {
        // A key this parser does not know: later talosctl releases may add fields.
        current.continues = undefined;
      } else {
        throw new ParseError(SOURCE, 'expected a "KEY  value" line of a service block', line);
      }
      continue;
    }
    const [, name = '', rawValue = ''] = key;
    const value = rawValue.trim();
    if (name === 'NODE' || (name === 'ID' && (current === undefined || current.id !== undefined))) {
      current = startBlock();
    }
    if (current === undefined) throw new ParseError(SOURCE, `${name} appears before NODE or ID`, line);
    current.continues = undefined;
    switch (name) {
      case 'NODE':
        current.node = value;
        break;
      case 'ID':
        current.id = value;
        break;
      case 'STATE':
        current.state = value;
        break;
      case 'HEALTH':
        current.health = value;
        break;
      case 'LAST HEALTH MESSAGE':
        current.lastHealthMessage = value;
        current.continues = 'health-message';
        break;
      default:
        current.continues = 'events';
        if (value !== '') addEventText(current, value, line);
    }
  }
  return blocks.map(finish);
}

/**
 * Parses the list form, `talosctl service` without an id:
 * `NODE  SERVICE  STATE  HEALTH  LAST CHANGE  LAST EVENT`.
 *
 * @throws {ParseError} on empty, truncated or unrecognised output
 */
export function parseServiceList(stdout: string): ServiceListRow[] {
  const table = parseTableRows(stdout, LIST_SOURCE);
  requireColumns(table.headers, ['SERVICE', 'STATE', 'HEALTH', 'LAST CHANGE', 'LAST EVENT'], LIST_SOURCE);
  const hasNode = table.headers.includes('NODE');
  return toRecords(table).map((cells, index) => {
    const line = table.lines[index] ?? '';
    const service = cells['SERVICE'] ?? '';
    const state = cells['STATE'] ?? '';
    if (service === '' || state === '') throw new ParseError(LIST_SOURCE, 'SERVICE or STATE is empty', line);
    const row: ServiceListRow = {
      service,
      state,
      health: healthOf(cells['HEALTH'] ?? '', line, LIST_SOURCE),
      lastChange: cells['LAST CHANGE'] ?? '',
      lastEvent: cells['LAST EVENT'] ?? '',
    };
    if (hasNode && (cells['NODE'] ?? '') !== '') row.node = cells['NODE'];
    return row;
  });
}
