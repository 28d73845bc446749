export { DEFAULT_DASHBOARD_PORT, resolveDashboardOptions, type DashboardOptions, type ResolvedDashboardOptions } from './options.js';
export { startDashboard, type Dashboard } from './server.js';
export { LoopWatcher, queryAnalytics, type Snapshot } from './snapshot.js';
export { meanInterval } from './stats.js';
