-- # Sandbox latency and timeouts
--
-- Every step records how long it waited on the sandbox. Slow tools slow the whole loop; timeouts in
-- rollouts (`timeout` outcome) or in verification (`timeout` failure) cost samples.

-- @query step_latency_by_tool
-- ## Sandbox time per step, by tool (p50, p90, p99)
-- @chart
--   title: Sandbox latency per tool call
--   mark: {type: bar, tooltip: true}
--   encoding:
--     x: {field: tool, type: nominal, title: tool}
--     xOffset: {field: percentile, type: nominal, sort: [p50, p90, p99]}
--     y: {field: sandbox_ms, type: quantitative, title: sandbox ms}
--     color: {field: percentile, type: nominal, title: percentile, sort: [p50, p90, p99]}
WITH per_tool AS (
  SELECT tool,
         quantile_cont(sandbox_ms, 0.5) AS p50,
         quantile_cont(sandbox_ms, 0.9) AS p90,
         quantile_cont(sandbox_ms, 0.99) AS p99,
         count(*) AS calls
  FROM steps
  GROUP BY tool
)
SELECT tool, percentile, sandbox_ms, calls
FROM per_tool UNPIVOT (sandbox_ms FOR percentile IN (p50, p90, p99))
ORDER BY tool, percentile;

-- @query episode_latency
-- ## Episode and verification time percentiles
SELECT 'rollout episode' AS what,
       quantile_cont(total_ms, 0.5) AS p50_ms, quantile_cont(total_ms, 0.9) AS p90_ms, quantile_cont(total_ms, 0.99) AS p99_ms, count(*) AS n
FROM trajectories
UNION ALL
SELECT 'verification',
       quantile_cont(duration_ms, 0.5), quantile_cont(duration_ms, 0.9), quantile_cont(duration_ms, 0.99), count(*)
FROM verifications;

-- @query timeouts
-- ## Timeouts and sandbox errors per policy version
-- @chart
--   title: Timeouts and sandbox errors
--   mark: {type: bar, tooltip: true}
--   encoding:
--     x: {field: policy_version, type: ordinal, title: policy version}
--     y: {field: count, type: quantitative, title: count, stack: zero}
--     color: {field: kind, type: nominal, title: kind}
SELECT policy_version, 'rollout ' || outcome AS kind, count(*) AS count
FROM trajectories WHERE outcome IN ('timeout', 'sandbox-error')
GROUP BY 1, 2
UNION ALL
SELECT policy_version, 'verification ' || failure, count(*)
FROM verifications WHERE failure IN ('timeout', 'oom', 'sandbox-error') AND rescore_id IS NULL
GROUP BY 1, 2
ORDER BY 1, 2;

-- @query outcomes
-- ## Every episode outcome
SELECT outcome, count(*) AS trajectories, avg(total_ms) AS mean_ms
FROM trajectories
GROUP BY 1
ORDER BY 2 DESC;
