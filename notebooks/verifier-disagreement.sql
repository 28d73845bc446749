-- # Verifier disagreement between two verifier versions
--
-- When a trajectory is verified by more than one verifier version (a change to the verifier re-scored
-- by `trialrun verify rescore`), where do the verdicts differ? Each pair of versions (a, b) is counted
-- once, the older-named version as a. A disagreement is a task passing under one and failing under the
-- other; a high rate means the new verifier changes what the learner is rewarded for.

-- @query disagreement_by_pair
-- ## Verdicts per pair of verifier versions
-- @chart
--   title: Agreement between verifier versions
--   mark: {type: bar, tooltip: true}
--   encoding:
--     y: {field: pair, type: nominal, title: versions (a vs b)}
--     x: {field: trajectories, type: quantitative, title: trajectories, stack: zero}
--     color: {field: verdicts, type: nominal, title: verdicts, scale: {domain: [both pass, both fail, a passes only, b passes only], range: ['#2ca02c', '#7f7f7f', '#ff7f0e', '#9467bd']}}
WITH latest AS (
  SELECT trajectory_id, verifier_version, arg_max(passed, created_at) AS passed, any_value(task_id) AS task_id
  FROM verifications
  WHERE verifier_version IS NOT NULL
  GROUP BY 1, 2
),
pairs AS (
  SELECT a.trajectory_id, a.verifier_version || ' vs ' || b.verifier_version AS pair, a.passed AS a_passed, b.passed AS b_passed
  FROM latest a JOIN latest b ON a.trajectory_id = b.trajectory_id AND a.verifier_version < b.verifier_version
)
SELECT pair,
       CASE WHEN a_passed AND b_passed THEN 'both pass'
            WHEN NOT a_passed AND NOT b_passed THEN 'both fail'
            WHEN a_passed THEN 'a passes only'
            ELSE 'b passes only' END AS verdicts,
       count(*) AS trajectories
FROM pairs
GROUP BY 1, 2
ORDER BY 1, 2;

-- @query disagreeing_tasks
-- ## Tasks with the most disagreement
WITH latest AS (
  SELECT trajectory_id, verifier_version, arg_max(passed, created_at) AS passed, any_value(task_id) AS task_id
  FROM verifications
  WHERE verifier_version IS NOT NULL
  GROUP BY 1, 2
)
SELECT a.task_id, a.verifier_version AS version_a, b.verifier_version AS version_b,
       count(*) AS trajectories,
       count(*) FILTER (WHERE a.passed <> b.passed) AS disagreements
FROM latest a
JOIN latest b ON a.trajectory_id = b.trajectory_id AND a.verifier_version < b.verifier_version
GROUP BY 1, 2, 3
HAVING count(*) FILTER (WHERE a.passed <> b.passed) > 0
ORDER BY disagreements DESC, a.task_id
LIMIT 50;

-- @query versions
-- ## Verifier versions in the store
SELECT verifier_version, count(*) AS verifications, count(DISTINCT trajectory_id) AS trajectories,
       avg(CASE WHEN passed THEN 1.0 ELSE 0.0 END) AS pass_rate, min(created_at) AS first_seen, max(created_at) AS last_seen
FROM verifications
GROUP BY 1
ORDER BY first_seen;
