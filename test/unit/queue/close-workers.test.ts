import { describe, expect, it } from 'vitest';
import { ActiveJobs, closeWorkers, type ClosableWorker } from '../../../src/queue/close-workers.ts';

/** Records what shutdown asked of a worker. */
function fakeWorker(): ClosableWorker & { calls: string[] } {
  const calls: string[] = [];
  return {
    calls,
    pause(doNotWaitActive) {
      calls.push(`pause(${String(doNotWaitActive)})`);
      return Promise.resolve();
    },
    close(force) {
      calls.push(`close(${String(force ?? false)})`);
      return Promise.resolve();
    },
  };
}

function deferred(): { promise: Promise<void>; resolve: () => void } {
  let resolve!: () => void;
  const promise = new Promise<void>((r) => {
    resolve = r;
  });
  return { promise, resolve };
}

describe('closeWorkers', () => {
  it('stops taking jobs, waits for the running one to finish, then closes gracefully', async () => {
    const workers = [fakeWorker(), fakeWorker()];
    const active = new ActiveJobs();
    const step = deferred();
    const job = active.run(() => step.promise);

    const closing = closeWorkers(workers, { graceMs: 60_000, active });
    await new Promise((r) => setTimeout(r, 20));
    const closedBeforeTheStepEnded = workers[0]!.calls.includes('close(false)');
    step.resolve();
    await job;

    expect(await closing).toEqual({ forced: false });
    expect(closedBeforeTheStepEnded).toBe(false);
    expect(workers.map((w) => w.calls)).toEqual([
      ['pause(true)', 'close(false)'],
      ['pause(true)', 'close(false)'],
    ]);
  });

  it('closes by force when the running job outlasts the grace period', async () => {
    const worker = fakeWorker();
    const active = new ActiveJobs();
    void active.run(() => new Promise(() => undefined));

    expect(await closeWorkers([worker], { graceMs: 10, active })).toEqual({ forced: true });
    expect(worker.calls).toEqual(['pause(true)', 'close(true)']);
    expect(active.count).toBe(1);
  });

  it('does not wait forever on a close that hangs once nothing runs', async () => {
    const worker = { ...fakeWorker(), close: () => new Promise<void>(() => undefined) };

    expect(await closeWorkers([worker], { graceMs: 60_000, active: new ActiveJobs(), closeTimeoutMs: 10 })).toEqual({ forced: false });
  });
});

describe('ActiveJobs', () => {
  it('counts running processors, and is idle once a failed one has ended too', async () => {
    const active = new ActiveJobs();
    const failing = active.wrap(() => Promise.reject(new Error('boom')));
    const run = failing({} as never);
    expect(active.count).toBe(1);

    await expect(run).rejects.toThrow('boom');
    await active.idle();
    expect(active.count).toBe(0);
  });
});
