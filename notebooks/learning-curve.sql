-- # Learning curve: pass rate per policy version
--
-- Is the policy getting better? Every trajectory carries the policy version it was sampled with, and
-- every verification says whether the hidden tests passed. The pass rate per version is the learning
-- curve; the learner's own view of it is the mean reward of the batch behind each checkpoint.
--
-- Only live verdicts count: verdicts written by `trialrun verify rescore` (a `rescore_id`) are for
-- comparing verifiers and are left out.

-- @query pass_rate_by_version
-- ## Pass rate per policy version, with 95% intervals
-- Share of trajectories sampled under each version whose hidden tests all passed, one line per run:
-- `trialrun learn` lands its held-out evaluations as a run of their own (`<run>-heldout`), so
-- `--run <run> --run <run>-heldout` draws the training curve beside the held-out one (its trained point sits
-- at the newest version of the mean it played: `trainedVersions` in the run's report). Each point has its
-- 95% Wilson interval (the bars): versions differ in how many trajectories and tasks they were sampled for,
-- and a point over a handful of either has a wide interval. Two points whose bars overlap are not shown to
-- differ; the next query says so in words.
-- @chart
--   title: Pass rate per policy version (bars are 95% intervals)
--   layer:
--     - mark: {type: rule, aria: false}
--       encoding:
--         x: {field: policy_version, type: quantitative}
--         y: {field: ci_low, type: quantitative}
--         y2: {field: ci_high}
--         color: {field: run_id, type: nominal, title: run}
--     - mark: {type: line, point: true, tooltip: true}
--       encoding:
--         x: {field: policy_version, type: quantitative, title: policy version, axis: {tickMinStep: 1, format: d}}
--         y: {field: pass_rate, type: quantitative, title: pass rate, scale: {domain: [0, 1]}, axis: {format: '%'}}
--         color: {field: run_id, type: nominal, title: run}
-- One live verdict per trajectory, and 95% Wilson intervals over what the trajectories are worth as
-- independent ones (the view `version_pass_rates`: a task's episodes are correlated, so a version sampled on
-- few tasks has a wide interval however many trajectories it has).
SELECT run_id, policy_version, trajectories, tasks, pass_rate, effective_n,
       wilson_low(pass_rate, effective_n) AS ci_low, wilson_high(pass_rate, effective_n) AS ci_high
FROM version_pass_rates
ORDER BY run_id, policy_version;

-- @query first_against_last
-- ## Did it improve, beyond noise?
-- For each run, the first policy version against the last, each with its 95% Wilson interval. The verdict
-- says `within noise` when the intervals overlap: the difference may be chance. Only `improved` or
-- `worse` (intervals apart) is evidence of a change.
WITH intervals AS (
  SELECT run_id, policy_version, trajectories AS n, pass_rate AS p, wilson_low(pass_rate, effective_n) AS lo, wilson_high(pass_rate, effective_n) AS hi
  FROM version_pass_rates
),
ends AS (
  SELECT run_id,
         arg_min(policy_version, policy_version) AS first_version, arg_min(n, policy_version) AS first_n,
         arg_min(p, policy_version) AS first_rate, arg_min(lo, policy_version) AS first_lo, arg_min(hi, policy_version) AS first_hi,
         arg_max(policy_version, policy_version) AS last_version, arg_max(n, policy_version) AS last_n,
         arg_max(p, policy_version) AS last_rate, arg_max(lo, policy_version) AS last_lo, arg_max(hi, policy_version) AS last_hi
  FROM intervals
  GROUP BY run_id
)
SELECT run_id,
       first_version, first_n, round(first_rate, 3) AS first_pass_rate, round(first_lo, 3) AS first_ci_low, round(first_hi, 3) AS first_ci_high,
       last_version, last_n, round(last_rate, 3) AS last_pass_rate, round(last_lo, 3) AS last_ci_low, round(last_hi, 3) AS last_ci_high,
       CASE WHEN first_version = last_version THEN 'one version only'
            WHEN last_lo > first_hi THEN 'improved (intervals apart)'
            WHEN last_hi < first_lo THEN 'worse (intervals apart)'
            ELSE 'within noise (intervals overlap)' END AS verdict
FROM ends
ORDER BY run_id;

-- @query reward_by_version
-- ## Mean reward per policy version, for every policy kind
-- The pass rate is all-or-nothing; a task with partial credit (a RewardSpec of `fraction`, as the generated
-- single-turn tasks have) rewards every step toward passing, and its mean reward is what the learner raises. One
-- line per run and policy (`policy_id`: the built-in ONNX edit-chooser and an llm policy draw side by side), with a
-- 95% interval that treats each task's episodes as one cluster (a group of 8 answers to one prompt is not 8
-- independent draws); a version played on one task only gets the whole range. The held-out evaluations of `trialrun learn` land verdicts but no rewards: their mean
-- rewards are in the run's report.
-- @chart
--   title: Mean reward per policy version (bars are 95% intervals)
--   layer:
--     - mark: {type: rule, aria: false}
--       encoding:
--         x: {field: policy_version, type: quantitative}
--         y: {field: ci_low, type: quantitative}
--         y2: {field: ci_high}
--         color: {field: line, type: nominal, title: run / policy}
--     - mark: {type: line, point: true, tooltip: true}
--       encoding:
--         x: {field: policy_version, type: quantitative, title: policy version, axis: {tickMinStep: 1, format: d}}
--         y: {field: mean_reward, type: quantitative, title: mean reward, scale: {domain: [0, 1]}}
--         color: {field: line, type: nominal, title: run / policy}
WITH live_rewards AS (
  SELECT trajectory_id, arg_max(reward, created_at) AS reward
  FROM rewards
  WHERE rescore_id IS NULL
  GROUP BY trajectory_id
),
per_task AS (
  SELECT t.run_id, t.policy_id, t.policy_version, t.task_id, count(*)::DOUBLE AS m, sum(r.reward) AS y
  FROM trajectories t
  JOIN live_rewards r USING (trajectory_id)
  GROUP BY t.run_id, t.policy_id, t.policy_version, t.task_id
),
means AS (
  SELECT run_id, policy_id, policy_version, sum(m) AS n, count(*)::DOUBLE AS k, sum(y) / sum(m) AS mean
  FROM per_task
  GROUP BY run_id, policy_id, policy_version
),
spread AS (
  -- The cluster-robust variance of a ratio mean: k/(k-1) x the sum of squared task residuals, over n^2.
  SELECT m.run_id, m.policy_id, m.policy_version, m.n, m.k, m.mean,
         CASE WHEN m.k < 2 THEN NULL ELSE sqrt(m.k / (m.k - 1) * sum((t.y - m.mean * t.m) ^ 2) / (m.n * m.n)) END AS se
  FROM means m
  JOIN per_task t USING (run_id, policy_id, policy_version)
  GROUP BY m.run_id, m.policy_id, m.policy_version, m.n, m.k, m.mean
)
SELECT run_id || ' / ' || policy_id AS line, run_id, policy_id, policy_version, n::BIGINT AS trajectories, k::BIGINT AS tasks,
       round(mean, 3) AS mean_reward,
       -- One task's episodes say nothing of the spread between tasks: its interval is all of [0, 1] (greatest and least
       -- pass over the NULL), never a false zero width.
       round(greatest(0, mean - 1.96 * se), 3) AS ci_low,
       round(least(1, mean + 1.96 * se), 3) AS ci_high
FROM spread
ORDER BY run_id, policy_id, policy_version;

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
