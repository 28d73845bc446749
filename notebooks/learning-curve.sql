-- # Learning curve: pass rate per policy version
--
-- Is the policy getting better? Every trajectory carries the policy version it was sampled with, and
-- every verification says whether the hidden tests passed. The pass rate per version is the learning
-- curve; the learner's own view of it is the mean reward of the batch behind each checkpoint.
--
-- Only live verdicts count: verdicts written by `trialrun verify rescore` (a `rescore_id`) are for
-- comparing verifiers and are left out.

-- @query pass_rate_by_version
-- ## Pass rate per policy version
-- Share of trajectories sampled under each version whose hidden tests all passed, one line per run:
-- `trialrun learn` lands its held-out evaluations as a run of their own (`<run>-heldout`), so
-- `--run <run> --run <run>-heldout` draws the training curve beside the held-out one. Versions differ in
-- how many trajectories they were sampled for (the table says how many each point stands on): a point
-- over a handful of trajectories is noisy.
-- @chart
--   title: Pass rate per policy version
--   mark: {type: line, point: true, tooltip: true}
--   encoding:
--     x: {field: policy_version, type: quantitative, title: policy version, axis: {tickMinStep: 1, format: d}}
--     y: {field: pass_rate, type: quantitative, title: pass rate, scale: {domain: [0, 1]}, axis: {format: '%'}}
--     color: {field: run_id, type: nominal, title: run}
WITH verdict AS (
  -- One verdict per trajectory: the first live one.
  SELECT trajectory_id, arg_min(passed, created_at) AS passed
  FROM verifications
  WHERE rescore_id IS NULL
  GROUP BY trajectory_id
)
SELECT t.run_id,
       t.policy_version,
       count(*) AS trajectories,
       avg(CASE WHEN v.passed THEN 1.0 ELSE 0.0 END) AS pass_rate
FROM trajectories t
JOIN verdict v USING (trajectory_id)
GROUP BY t.run_id, t.policy_version
ORDER BY t.run_id, t.policy_version;

-- @query trajectories_per_version
-- ## How many trajectories each version produced
-- @chart
--   title: Trajectories per policy version
--   mark: {type: bar, tooltip: true}
--   encoding:
--     x: {field: policy_version, type: ordinal, title: policy version}
--     y: {field: trajectories, type: quantitative, title: trajectories}
SELECT t.policy_version, count(*) AS trajectories
FROM trajectories t
GROUP BY t.policy_version
ORDER BY t.policy_version;

-- @query checkpoint_metrics
-- ## What the learner saw
-- Mean reward of the batch each checkpoint was trained on, and the size of its gradient step.
-- @chart
--   title: Mean batch reward per checkpoint
--   mark: {type: line, point: true, tooltip: true}
--   encoding:
--     x: {field: version, type: quantitative, title: checkpoint version, axis: {tickMinStep: 1, format: d}}
--     y: {field: mean_reward, type: quantitative, title: mean reward of its batch, scale: {domain: [0, 1]}}
SELECT version, samples, mean_reward, mean_abs_advantage, grad_norm, stale_dropped
FROM checkpoints
ORDER BY version;
