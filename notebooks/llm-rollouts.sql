-- # LLM rollouts: tokens, turn latency, invalid calls, pass rate
--
-- Episodes of the `llm` policy (docs/llm.md): every model turn lands in `llm_turns` (its tokens, latency,
-- finish reason, whether its reply was a valid tool call) and every episode's token sequences in
-- `training_samples`. Other policies' trajectories have no model turns and are left out. Each query
-- answers one question a run of a language model raises: how long its episodes are in tokens, how long a
-- turn waits on the model, how often a reply is no valid call, why generation stopped, and whether the
-- pass rate moves between policy versions.

-- @query tokens_per_episode
-- ## Tokens per episode
-- One point per episode: the tokens of its sequences (prompts, the tool results appended to them, and the
-- model's completions) against the completion tokens alone, the part a trainer learns from. The budget per
-- episode is `--episode-tokens`.
-- @chart
--   title: Tokens per episode
--   mark: {type: point, filled: true, tooltip: true}
--   encoding:
--     x: {field: sequence_tokens, type: quantitative, title: sequence tokens (prompt + completions)}
--     y: {field: completion_tokens, type: quantitative, title: completion tokens}
--     color: {field: outcome, type: nominal, title: outcome}
SELECT trajectory_id,
       any_value(outcome) AS outcome,
       count(*) AS model_turns,
       sum(completion_tokens) AS completion_tokens,
       sum(appended_prompt_tokens) + sum(completion_tokens) AS sequence_tokens
FROM llm_turns
GROUP BY trajectory_id
ORDER BY sequence_tokens DESC;

-- @query turn_latency
-- ## Model turn latency (p50, p95), by policy version
-- Wall-clock time of each model request as the policy saw it (retries included), and the completion tokens
-- per second of a turn. A turn's latency covers the prompt tokens the server had to evaluate as well: with
-- llama.cpp's prompt cache, the ones appended since the previous turn.
-- @chart
--   title: Model turn latency
--   mark: {type: bar, tooltip: true}
--   encoding:
--     x: {field: turn_policy_version, type: ordinal, title: policy version of the turn}
--     xOffset: {field: percentile, type: nominal, sort: [p50, p95]}
--     y: {field: latency_ms, type: quantitative, title: latency ms}
--     color: {field: percentile, type: nominal, title: percentile, sort: [p50, p95]}
WITH per_version AS (
  SELECT coalesce(turn_policy_version, -1) AS turn_policy_version,
         quantile_cont(latency_ms, 0.5) AS p50,
         quantile_cont(latency_ms, 0.95) AS p95,
         count(*) AS turns,
         sum(completion_tokens) / (sum(latency_ms) / 1000) AS completion_tokens_per_second
  FROM llm_turns
  GROUP BY 1
)
SELECT turn_policy_version, percentile, latency_ms, turns, completion_tokens_per_second
FROM per_version UNPIVOT (latency_ms FOR percentile IN (p50, p95))
ORDER BY turn_policy_version, percentile;

-- @query invalid_calls
-- ## Invalid replies per policy version, with 95% intervals
-- A reply that is no valid call of one of the environment's tools (cut off at the token limit, or on a
-- server that cannot constrain decoding) is a failed turn the model is told about. The interval is
-- Wilson's score interval, which stays inside [0, 1] for a handful of turns.
-- @chart
--   title: Invalid-reply rate per policy version
--   layer:
--     - mark: {type: errorbar}
--       encoding:
--         x: {field: turn_policy_version, type: ordinal, title: policy version of the turn}
--         y: {field: low, type: quantitative, title: invalid-reply rate, scale: {domain: [0, 1]}, axis: {format: '%'}}
--         y2: {field: high}
--     - mark: {type: point, filled: true, tooltip: true}
--       encoding:
--         x: {field: turn_policy_version, type: ordinal}
--         y: {field: invalid_rate, type: quantitative}
WITH counts AS (
  SELECT coalesce(turn_policy_version, -1) AS turn_policy_version,
         count(*) AS turns,
         count(*) FILTER (WHERE invalid_reply IS NOT NULL) AS invalid,
         count(*) FILTER (WHERE constrained) AS constrained_turns
  FROM llm_turns
  GROUP BY 1
), rates AS (
  SELECT *, invalid / turns AS p FROM counts
)
SELECT turn_policy_version, turns, invalid, constrained_turns, p AS invalid_rate,
       wilson_low(p, turns) AS low, wilson_high(p, turns) AS high
FROM rates
ORDER BY turn_policy_version;

-- @query finish_reasons
-- ## Why generation stopped
-- `stop`: the model ended its reply (an end-of-generation token, or the grammar's end); `length`: it was cut
-- off at `--max-tokens-per-turn`. Invalid replies are counted beside each.
-- @chart
--   title: Finish reasons
--   mark: {type: bar, tooltip: true}
--   encoding:
--     x: {field: finish_reason, type: nominal, title: finish reason}
--     y: {field: turns, type: quantitative, title: model turns}
SELECT coalesce(finish_reason, 'none') AS finish_reason,
       count(*) AS turns,
       count(*) FILTER (WHERE invalid_reply IS NOT NULL) AS invalid,
       avg(completion_tokens) AS mean_completion_tokens
FROM llm_turns
GROUP BY 1
ORDER BY turns DESC;

-- @query pass_rate_by_version
-- ## Pass rate per policy version, with 95% intervals
-- Share of the llm policy's episodes whose hidden tests all passed (the first live verdict of each; re-scored
-- verdicts are left out), per policy version the episode was sampled with, with Wilson's 95% interval.
-- @chart
--   title: Pass rate per policy version (llm policy)
--   layer:
--     - mark: {type: errorbar}
--       encoding:
--         x: {field: policy_version, type: ordinal, title: policy version}
--         y: {field: low, type: quantitative, title: pass rate, scale: {domain: [0, 1]}, axis: {format: '%'}}
--         y2: {field: high}
--     - mark: {type: point, filled: true, tooltip: true}
--       encoding:
--         x: {field: policy_version, type: ordinal}
--         y: {field: pass_rate, type: quantitative}
WITH counts AS (
  SELECT t.policy_version, count(*) AS episodes, count(*) FILTER (WHERE v.passed) AS passed
  FROM trajectories t
  JOIN live_verdicts v USING (trajectory_id)
  WHERE len(t.llm_turns) > 0
  GROUP BY t.policy_version
), rates AS (
  SELECT *, passed / episodes AS p FROM counts
)
SELECT policy_version, episodes, passed, p AS pass_rate,
       wilson_low(p, episodes) AS low, wilson_high(p, episodes) AS high
FROM rates
ORDER BY policy_version;
