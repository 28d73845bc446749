export { CHAOS_POLICIES, resolveChaos, runChaos, type ChaosOptions, type ChaosPolicy, type ChaosResult, type KillRecord } from './run.js';
export { chaosSchedule, chaosTargets, CHAOS_PROCESSORS, CHAOS_TARGETS, type ChaosProcessor, type ChaosTarget, type ScheduledKill } from './schedule.js';
export { formatTally, POISON_STAGES, tallyChaos, type ChaosRecords, type ChaosTally, type KindCount } from './tally.js';
