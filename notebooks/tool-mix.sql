-- # Tool-call mix per trajectory
--
-- What does the policy do in an episode? The mix of tool calls per trajectory shows whether it explores
-- (list_edits, apply_edit, revert), checks its work (run_tests) and finishes (submit), and how that
-- changes as it learns.

-- @query calls_per_trajectory_by_version
-- ## Mean calls of each tool per trajectory, per policy version
-- @chart
--   title: Tool calls per trajectory
--   mark: {type: bar, tooltip: true}
--   encoding:
--     x: {field: policy_version, type: ordinal, title: policy version}
--     y: {field: calls_per_trajectory, type: quantitative, title: calls per trajectory, stack: zero}
--     color: {field: tool, type: nominal, title: tool}
WITH per_version AS (
  SELECT policy_version, count(*) AS trajectories FROM trajectories GROUP BY 1
)
SELECT s.policy_version, s.tool, count(*) / any_value(p.trajectories) AS calls_per_trajectory, count(*) AS calls
FROM steps s JOIN per_version p USING (policy_version)
GROUP BY 1, 2
ORDER BY 1, 2;

-- @query steps_per_trajectory
-- ## Steps per trajectory
-- @chart
--   title: Episode length
--   mark: {type: bar, tooltip: true}
--   encoding:
--     x: {field: num_steps, type: ordinal, title: steps in the episode}
--     y: {field: trajectories, type: quantitative, title: trajectories}
SELECT num_steps, count(*) AS trajectories
FROM trajectories
GROUP BY 1
ORDER BY 1;

-- @query tool_success
-- ## How often each tool call succeeds
SELECT tool, count(*) AS calls, avg(CASE WHEN ok THEN 1.0 ELSE 0.0 END) AS ok_rate, avg(duration_ms) AS mean_ms
FROM steps
GROUP BY 1
ORDER BY 2 DESC;
