import assert from 'node:assert/strict';
import { test } from 'node:test';
import { topicNames } from '../../../schemas/index.js';
import { replayPrefix } from './replay.js';

test('a processor replay gets the same namespace for the same processor, inputs and range, and another for anything else', () => {
  const names = topicNames('trialrun.');
  const prefix = replayPrefix(names, 'learner', ['trajectories', 'rewards'], { timestamp: 1000 }, 'latest');
  assert.match(prefix, /^trialrun\.replay-learner-[0-9a-f]{10}\.$/);
  assert.doesNotThrow(() => topicNames(prefix), 'a valid topic prefix');
  assert.equal(replayPrefix(names, 'learner', ['rewards', 'trajectories'], { timestamp: 1000 }, 'latest'), prefix, 'input order does not matter');
  const others = [
    replayPrefix(names, 'reward', ['trajectories', 'rewards'], { timestamp: 1000 }, 'latest'),
    replayPrefix(names, 'learner', ['trajectories', 'rewards'], { timestamp: 1001 }, 'latest'),
    replayPrefix(names, 'learner', ['trajectories', 'rewards'], { offset: 1000n }, 'latest'),
    replayPrefix(names, 'learner', ['trajectories', 'rewards'], { timestamp: 1000 }, { timestamp: 2000 }),
    replayPrefix(topicNames('other.'), 'learner', ['trajectories', 'rewards'], { timestamp: 1000 }, 'latest'),
  ];
  assert.equal(new Set([prefix, ...others]).size, 6);
});
