import { splitLines } from './parse-error.ts';
import { readGoQuoted } from './parse-go-quoted.ts';

/** An error talosctl attributed to one node. */
export interface NodeError {
  /** The node as talosctl named it (address or hostname). */
  node: string;
  /** The error text after the node, e.g. `rpc error: code = Unavailable desc = …`. */
  message: string;
  /** The gRPC status code when the message is an `rpc error`, e.g. `Unimplemented`. */
  code?: string;
}

/**
 * hashicorp multierror (≤1.13): `WARNING: 2 errors occurred:` for a partial failure, or the
 * command's error prefix (`error getting version: 3 errors occurred:`) when every node failed.
 */
const MULTI_ERROR_HEADER = /(?:^|: )[0-9]+ errors? occurred:$/;
/** `\t* 192.168.1.54: rpc error: …`; the node is the text before the first `: `. */
const MULTI_ERROR_ITEM = /^\t\* (\S+?): (.*)$/;
/** 1.14 client-side multiplexing: `error from node X: …`, `error getting version from node X: …`. */
const FROM_NODE = /^error(?: [a-z]+)*? from node (\S+?): (.*)$/;
/** New upgrade flow: `node X: upgrade failed with exit code 1`. */
const NODE_PREFIX = /^node (\S+?): (.*)$/;
const RPC_CODE = /rpc error: code = (\w+)/;

function nodeError(node: string, message: string): NodeError {
  const code = RPC_CODE.exec(message)?.[1];
  return code === undefined ? { node, message } : { node, message, code };
}

/** `"10.0.0.5": rpc error: …` (%q-quoted node). Progress lines share the shape, so only errors count. */
function quotedNodeError(line: string): NodeError | undefined {
  const quoted = readGoQuoted(line);
  if (quoted === undefined || !line.startsWith(': ', quoted.end)) return undefined;
  const message = line.slice(quoted.end + 2);
  return /\b(error|failed)\b/i.test(message) ? nodeError(quoted.value, message) : undefined;
}

/**
 * Extracts per-node errors from talosctl stderr, in the forms talosctl prints them:
 * - ≤1.13: `WARNING: N error(s) occurred:` (partial failure) or `<prefix>: N error(s) occurred:`
 *   (every node failed), then `\t* <node>: <msg>` items;
 * - 1.14: `error from node <node>: <msg>` (one line per node, joined by newlines);
 * - upgrade rejections: `"<node>": rpc error: code = X desc = Y`.
 *
 * Lines that name no node (progress, skew warnings, a whole-command error) are not returned:
 * callers compare the nodes that answered with the nodes they expected.
 */
export function parseNodeErrors(stderr: string): NodeError[] {
  const errors: NodeError[] = [];
  let inMultiError = false;
  let last: NodeError | undefined;
  for (const line of splitLines(stderr)) {
    if (line.trim() === '') {
      inMultiError = false;
      last = undefined;
      continue;
    }
    if (MULTI_ERROR_HEADER.test(line.trim())) {
      inMultiError = true;
      last = undefined;
      continue;
    }
    if (inMultiError) {
      const item = MULTI_ERROR_ITEM.exec(line);
      if (item !== null) {
        last = nodeError(item[1] ?? '', item[2] ?? '');
        errors.push(last);
        continue;
      }
      if (line.startsWith('\t* ')) {
        last = undefined;
        continue;
      }
      if (last !== undefined && !line.startsWith('WARNING:') && singleLineError(line) === undefined) {
        // A multi-line error: Go printed its newlines as they are.
        last.message = `${last.message}\n${line}`;
        continue;
      }
      inMultiError = false;
    }
    last = undefined;
    const error = singleLineError(line);
    if (error !== undefined) errors.push(error);
  }
  return errors;
}

function singleLineError(line: string): NodeError | undefined {
  const match = FROM_NODE.exec(line) ?? NODE_PREFIX.exec(line);
  if (match !== null) return nodeError(match[1] ?? '', match[2] ?? '');
  return quotedNodeError(line);
}
