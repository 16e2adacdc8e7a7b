import { z } from 'zod';

/** A node that already ran the target when a continuation was planned: it gets no step. */
export const DoneNode = z.object({
  node: z.string(),
  nodeName: z.string().optional(),
  /** The installer image the rules give it on the target; the schematic it runs was checked to be this image's. */
  image: z.string(),
  /** The earlier operation whose step upgraded it, when the bot's records show one. */
  op: z.string().optional(),
});
export type DoneNode = z.infer<typeof DoneNode>;

/**
 * A Talos upgrade that continues an earlier one to the same target (stopped half-way, then
 * cancelled): the version the other nodes still ran, and the nodes already on the target.
 */
export const UpgradeContinuation = z.object({
  from: z.string(),
  done: z.array(DoneNode),
});
export type UpgradeContinuation = z.infer<typeof UpgradeContinuation>;

/** The continuation an operation's `data` carries, read leniently: a record is written for any operation. */
export function continuationOf(op: { data?: Record<string, unknown> }): UpgradeContinuation | undefined {
  const parsed = UpgradeContinuation.safeParse(op.data?.['continuation']);
  return parsed.success ? parsed.data : undefined;
}

/** `talos-prd-cp-1 (10.0.30.11)`, with the operation that upgraded it when known. */
export function doneNodeText(done: DoneNode, withOp = false): string {
  const name = `${done.nodeName === undefined ? '' : `${done.nodeName} `}(${done.node})`;
  return withOp && done.op !== undefined ? `${name} by ${done.op}` : name;
}
