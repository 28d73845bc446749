-- # Hack flags over time
--
-- A verification carries a hack flag, with evidence, when the agent's files or actions tried to game
-- the verifier (a conftest.py, an edited test, an early exit, a fake report, ...). Any flag scores 0.
-- A rising rate means the policy is learning to cheat, or a task leaks a way to.

-- @query flags_over_time
-- ## Flags per hour, by kind
-- @chart
--   title: Hack flags per hour
--   mark: {type: bar, tooltip: true}
--   encoding:
--     x: {field: hour, type: temporal, title: hour (UTC), timeUnit: utcyearmonthdatehours}
--     y: {field: flags, type: quantitative, title: flags, stack: zero}
--     color: {field: kind, type: nominal, title: kind}
-- Times are UTC; written as ISO strings with a Z so the chart does not read them as local time.
SELECT strftime(date_trunc('hour', created_at), '%Y-%m-%dT%H:00:00Z') AS hour, flag.kind AS kind, count(*) AS flags
FROM (SELECT created_at, unnest(hacks) AS flag FROM verifications WHERE rescore_id IS NULL)
GROUP BY 1, 2
ORDER BY 1, 2;

-- @query flagged_share_by_version
-- ## Share of trajectories flagged, per policy version
-- @chart
--   title: Flagged trajectories per policy version
--   mark: {type: line, point: true, tooltip: true}
--   encoding:
--     x: {field: policy_version, type: quantitative, title: policy version, axis: {tickMinStep: 1, format: d}}
--     y: {field: flagged_share, type: quantitative, title: share flagged, axis: {format: '%'}}
SELECT policy_version,
       count(*) AS verifications,
       count(*) FILTER (WHERE len(hacks) > 0) AS flagged,
       avg(CASE WHEN len(hacks) > 0 THEN 1.0 ELSE 0.0 END) AS flagged_share
FROM verifications
WHERE rescore_id IS NULL
GROUP BY 1
ORDER BY 1;

-- @query evidence
-- ## The latest flags and their evidence
SELECT created_at, task_id, trajectory_id, flag.kind AS kind, flag.source AS source, flag.path AS path, flag.evidence AS evidence
FROM (SELECT created_at, task_id, trajectory_id, unnest(hacks) AS flag FROM verifications WHERE rescore_id IS NULL)
ORDER BY created_at DESC
LIMIT 50;
