-- # Pass rate by difficulty bucket and mutation kind
--
-- Where does the policy succeed, and where not? Tasks carry a difficulty estimate from the task job
-- (the probability a policy fails; null until estimated) and tags; for program-repair tasks derived by
-- mutation, one tag names the kind of single-site mutation that broke the code. Each task's latest
-- revision is used, and each trajectory's live verdict.
--
-- Difficulty buckets: `easy` below 0.33, `medium` below 0.67, `hard` above, `unrated` while unknown.
-- The mutation kind is the task's first tag that names one (`compare-op`, `arith-op`, `bool-op`,
-- `negation`, `off-by-one`, `range-bound`, `slice-bound`, `swap-args`, `return-value`); tasks with none
-- are `other`.

-- @query pass_rate_by_bucket
-- ## Pass rate per difficulty bucket and per mutation kind
-- One row per bucket of each dimension (`dimension` says which).
-- @chart
--   title: Pass rate by difficulty bucket
--   transform: [{filter: "datum.dimension === 'difficulty'"}]
--   mark: {type: bar, tooltip: true}
--   encoding:
--     x: {field: bucket, type: nominal, title: difficulty, sort: [easy, medium, hard, unrated]}
--     y: {field: pass_rate, type: quantitative, title: pass rate, scale: {domain: [0, 1]}, axis: {format: '%'}}
-- @chart
--   title: Pass rate by mutation kind
--   transform: [{filter: "datum.dimension === 'mutation kind'"}]
--   mark: {type: bar, tooltip: true}
--   encoding:
--     y: {field: bucket, type: nominal, title: mutation kind, sort: -x}
--     x: {field: pass_rate, type: quantitative, title: pass rate, scale: {domain: [0, 1]}, axis: {format: '%'}}
WITH task AS (
  SELECT task_id, arg_max(difficulty, created_at) AS difficulty, arg_max(tags, created_at) AS tags
  FROM tasks
  GROUP BY task_id
),
verdict AS (
  SELECT v.task_id,
         v.passed,
         CASE WHEN task.difficulty IS NULL THEN 'unrated'
              WHEN task.difficulty < 0.33 THEN 'easy'
              WHEN task.difficulty < 0.67 THEN 'medium'
              ELSE 'hard' END AS difficulty_bucket,
         coalesce(list_filter(task.tags, tag -> tag IN ('compare-op', 'arith-op', 'bool-op', 'negation', 'off-by-one',
                                                        'range-bound', 'slice-bound', 'swap-args', 'return-value'))[1],
                  'other') AS mutation_kind
  FROM verifications v
  LEFT JOIN task USING (task_id)
  WHERE v.rescore_id IS NULL
)
SELECT CASE WHEN grouping(difficulty_bucket) = 0 THEN 'difficulty' ELSE 'mutation kind' END AS dimension,
       coalesce(difficulty_bucket, mutation_kind) AS bucket,
       count(*) AS trajectories,
       count(DISTINCT task_id) AS tasks,
       avg(CASE WHEN passed THEN 1.0 ELSE 0.0 END) AS pass_rate
FROM verdict
GROUP BY GROUPING SETS ((difficulty_bucket), (mutation_kind))
ORDER BY 1, 2;

-- @query tasks_by_kind
-- ## The tasks behind each mutation kind
SELECT coalesce(list_filter(tags, tag -> tag IN ('compare-op', 'arith-op', 'bool-op', 'negation', 'off-by-one',
                                                 'range-bound', 'slice-bound', 'swap-args', 'return-value'))[1],
                'other') AS mutation_kind,
       count(DISTINCT task_id) AS tasks,
       count(DISTINCT task_id) FILTER (WHERE difficulty IS NOT NULL) AS rated
FROM tasks
GROUP BY 1
ORDER BY 2 DESC;
