/**
 * The operation jobs' names and enqueue functions, under the path the engine and the handlers
 * import them from; {@link ./jobs.ts} decides every job's id and options.
 */
export {
  ENDED_JOB_NAME,
  enqueueEnded,
  enqueuePreflight,
  enqueueRun,
  newNonce,
  PLAN_EXPIRY_JOB_NAME,
  PREFLIGHT_JOB_NAME,
  RUN_JOB_NAME,
} from './jobs.ts';
