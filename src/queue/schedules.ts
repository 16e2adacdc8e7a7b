import type { Queue } from 'bullmq';
import type { Inventory } from '../config/inventory.ts';
import { dailySummaryCron } from '../config/schedules.ts';
import { GATE_SUMMARY_JOB_NAME, SCHEDULED_GATE_JOB_NAME, SCHEDULED_JOB_OPTIONS, SCHEDULED_SNAPSHOT_JOB_NAME } from './jobs.ts';

/** Every scheduler the inventory declares has an id with this prefix; any other with it is left over and removed. */
const PREFIX = 'sched-';

export interface ScheduleSpec {
  queue: 'read' | 'ops';
  /** The job scheduler's id: the same on every replica, so a schedule fires once however many run. */
  id: string;
  /** The job it adds. */
  name: string;
  cluster: string;
  pattern: string;
  tz: string;
}

/** The job schedulers the inventory asks for: a gate and its daily summary (read-only), snapshots (the operations queue). */
export function desiredSchedules(inventory: Inventory): ScheduleSpec[] {
  const specs: ScheduleSpec[] = [];
  for (const c of inventory.clusters) {
    const gate = c.schedules?.healthGate;
    if (gate !== undefined) {
      specs.push({
        queue: 'read',
        id: `${PREFIX}gate-${c.name}`,
        name: SCHEDULED_GATE_JOB_NAME,
        cluster: c.name,
        pattern: gate.cron,
        tz: gate.timeZone,
      });
      if (gate.dailySummary !== undefined) {
        specs.push({
          queue: 'read',
          id: `${PREFIX}summary-${c.name}`,
          name: GATE_SUMMARY_JOB_NAME,
          cluster: c.name,
          pattern: dailySummaryCron(gate.dailySummary),
          tz: gate.timeZone,
        });
      }
    }
    const snapshot = c.schedules?.snapshot;
    if (snapshot !== undefined) {
      specs.push({
        queue: 'ops',
        id: `${PREFIX}snapshot-${c.name}`,
        name: SCHEDULED_SNAPSHOT_JOB_NAME,
        cluster: c.name,
        pattern: snapshot.cron,
        tz: snapshot.timeZone,
      });
    }
  }
  return specs;
}

export interface ScheduleSync {
  upserted: string[];
  /** Ids of schedulers no cluster declares any more (the cluster or its schedule left the inventory). */
  removed: string[];
}

/**
 * Makes the queues' job schedulers what the inventory says, at start-up: upserts each declared
 * one (the same id on every replica: BullMQ keeps one scheduler per id, so two replicas schedule
 * once) and removes those of clusters or schedules that left the inventory.
 */
export async function syncSchedules(queues: { read: Queue; ops: Queue }, inventory: Inventory): Promise<ScheduleSync> {
  const specs = desiredSchedules(inventory);
  const wanted = new Set(specs.map((s) => s.id));
  for (const spec of specs) {
    await queues[spec.queue].upsertJobScheduler(
      spec.id,
      { pattern: spec.pattern, tz: spec.tz },
      { name: spec.name, data: { cluster: spec.cluster }, opts: SCHEDULED_JOB_OPTIONS },
    );
  }
  const removed: string[] = [];
  for (const queue of [queues.read, queues.ops]) {
    for (const scheduler of await queue.getJobSchedulers(0, -1)) {
      if (!scheduler.key.startsWith(PREFIX) || wanted.has(scheduler.key)) continue;
      await queue.removeJobScheduler(scheduler.key);
      removed.push(scheduler.key);
    }
  }
  return { upserted: specs.map((s) => s.id), removed };
}

/** The cluster a gate scheduler id belongs to, for clearing what its gates remembered. */
export function gateSchedulerCluster(id: string): string | undefined {
  return id.startsWith(`${PREFIX}gate-`) ? id.slice(`${PREFIX}gate-`.length) : undefined;
}
