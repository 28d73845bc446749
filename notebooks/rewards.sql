-- # Rewards: distribution and groups without signal
--
-- GRPO-style advantages compare the G samples of one task under one policy version. A group whose
-- rewards are all 0 or all 1 teaches nothing: every advantage is 0. Many such groups mean the tasks are
-- too hard or too easy for the current policy.

-- @query reward_distribution
-- ## Reward distribution
-- @chart
--   title: Rewards
--   mark: {type: bar, tooltip: true}
--   encoding:
--     x: {field: reward, type: ordinal, title: reward}
--     y: {field: rewards, type: quantitative, title: rewards}
SELECT reward, count(*) AS rewards
FROM rewards
WHERE rescore_id IS NULL
GROUP BY reward
ORDER BY reward;

-- @query group_kinds
-- ## Groups by outcome, per policy version
-- `all-0`: every sample failed; `all-1`: every sample passed; `mixed`: the only groups with signal.
-- @chart
--   title: Reward groups per policy version
--   mark: {type: bar, tooltip: true}
--   encoding:
--     x: {field: policy_version, type: ordinal, title: policy version}
--     y: {field: groups, type: quantitative, title: groups, stack: zero}
--     color: {field: group_kind, type: nominal, title: group, scale: {domain: [all-0, mixed, all-1], range: ['#d62728', '#1f77b4', '#2ca02c']}}
WITH groups AS (
  SELECT group_id, any_value(policy_version) AS policy_version, min(reward) AS lo, max(reward) AS hi, count(*) AS members
  FROM rewards
  WHERE rescore_id IS NULL
  GROUP BY group_id
)
SELECT policy_version,
       CASE WHEN hi = 0 THEN 'all-0' WHEN lo = 1 THEN 'all-1' ELSE 'mixed' END AS group_kind,
       count(*) AS groups,
       sum(members) AS rewards
FROM groups
GROUP BY 1, 2
ORDER BY 1, 2;

-- @query advantages
-- ## Advantage distribution
-- Group-relative advantages; a spike at 0 is the no-signal groups.
-- @chart
--   title: Advantages
--   mark: {type: bar, tooltip: true}
--   encoding:
--     x: {field: advantage, type: quantitative, title: advantage (rounded to 0.25)}
--     y: {field: rewards, type: quantitative, title: rewards}
SELECT round(advantage * 4) / 4 AS advantage, count(*) AS rewards
FROM rewards
WHERE rescore_id IS NULL
GROUP BY 1
ORDER BY 1;

-- @query dispositions
-- ## What went to the learner
-- `learn` rewards train the policy; `no-signal`, `withheld` and `late` ones do not.
SELECT disposition, count(*) AS rewards, avg(reward) AS mean_reward
FROM rewards
WHERE rescore_id IS NULL
GROUP BY 1
ORDER BY 2 DESC;
