import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ConfigError } from '../schemas/index.js';
import { topicNamesFromEnv } from './context.js';

test('the topic prefix comes from TRIALRUN_TOPIC_PREFIX; an empty or malformed one is a user error naming the variable', () => {
  assert.equal(topicNamesFromEnv({}).name('rewards'), 'trialrun.rewards');
  assert.equal(topicNamesFromEnv({ TRIALRUN_TOPIC_PREFIX: 'exp1.' }).name('rewards'), 'exp1.rewards');
  assert.throws(() => topicNamesFromEnv({ TRIALRUN_TOPIC_PREFIX: '' }), (error: unknown) => error instanceof ConfigError && /TRIALRUN_TOPIC_PREFIX is set but empty/.test(error.message));
  assert.throws(() => topicNamesFromEnv({ TRIALRUN_TOPIC_PREFIX: 'bad prefix!' }), (error: unknown) => error instanceof ConfigError && /^TRIALRUN_TOPIC_PREFIX: topic prefix "bad prefix!" may only hold/.test(error.message));
});
