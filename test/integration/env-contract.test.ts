import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { DockerSandboxPool, type Sandbox, type SandboxPool } from '../../connectors/sandbox/index.js';
import { AGENT_COMMAND_ENV, ENVIRONMENTS, envToolSpecs, PROGRAM_REPAIR_ENV, SINGLE_TURN_ENV, WORKSPACE_ENV, type AnyEnvSpec, type EnvDeps, type Environment } from '../../envs/index.js';
import type { FileTree, Task, ToolCall } from '../../schemas/index.js';
import { imageFor } from '../../stack/index.js';
import { ensureStack } from './harness.js';
import { bundledTasks } from './verifier-fixtures.js';
import { singleTurnTasks, workspaceMiniTasks } from './workspace-fixtures.js';

/**
 * The contract every registered environment keeps (Hono's common.case shape: one suite, one case per
 * environment). A case says only what differs: a task to run and how the agent acts on it. An environment with a
 * workspace says how it writes a file (and runs bash, where it has bash) and which of the workspace's files are the
 * final files (program repair leaves out its visible tests); a single-turn one says how a reply is given.
 */
interface EnvCase {
  readonly task: () => Promise<Task>;
  readonly workspace?: {
    readonly write: (path: string, content: string) => ToolCall;
    readonly bash?: (command: string) => ToolCall;
    /** A call that succeeds and changes nothing. */
    readonly harmless: ToolCall;
    readonly finalOf: (snapshot: FileTree, task: Task) => FileTree;
  };
  /** Single-turn environments (no sandbox while the agent acts): the call that gives `text` as the reply, and the path it lands at. */
  readonly reply?: { readonly answer: (text: string) => ToolCall; readonly path: string };
}

/** workspace/v1's tasks and tools; agent-command/v1 runs the same tasks with the same tools. */
const WORKSPACE_CASE: EnvCase = {
  task: async () => (await workspaceMiniTasks())[0]!,
  workspace: {
    write: (path, content) => ({ name: 'write_file', arguments: { path, content } }),
    bash: (command) => ({ name: 'bash', arguments: { command } }),
    harmless: { name: 'read_file', arguments: { path: 'tests/test_store.py', startLine: 1, endLine: 2 } },
    finalOf: (snapshot) => snapshot,
  },
};

const CASES: Record<string, EnvCase> = {
  [PROGRAM_REPAIR_ENV]: {
    task: async () => (await bundledTasks(1))[0]!,
    workspace: {
      write: (path, content) => ({ name: 'write_file', arguments: { path, content } }),
      harmless: { name: 'run_tests', arguments: {} },
      finalOf: (snapshot, task) => Object.fromEntries(Object.entries(snapshot).filter(([path]) => !Object.hasOwn(task.visibleTests, path))),
    },
  },
  [WORKSPACE_ENV]: WORKSPACE_CASE,
  // Its workspace tools are the workspace's; its agent program (agent_turn) is tested with a gateway in agent-command.test.ts.
  [AGENT_COMMAND_ENV]: WORKSPACE_CASE,
  [SINGLE_TURN_ENV]: {
    task: async () => (await singleTurnTasks('python-expressions', 1))[0]!,
    reply: { answer: (text) => ({ name: 'answer', arguments: { text } }), path: 'answer.txt' },
  },
};

/** Bad calls any environment must answer with a failed result: derived from its own spec, so each env gets the ones that fit. */
function badCalls(spec: AnyEnvSpec): ToolCall[] {
  const calls: unknown[] = [{ name: 'no_such_tool', arguments: {} }];
  const withArgs = envToolSpecs(spec).find((tool) => ((tool.parameters.required as string[] | undefined) ?? []).length > 0)!;
  const required = (withArgs.parameters.required as string[])[0]!;
  const type = ((withArgs.parameters.properties as Record<string, { type: string }>)[required]!).type;
  calls.push({ name: withArgs.name, arguments: { [required]: type === 'string' ? 42 : 'not a number' } }, { name: withArgs.name, arguments: {} });
  for (const args of [null, [], 'text', 7]) calls.push({ name: withArgs.name, arguments: args });
  calls.push({ name: 'submit', arguments: { unexpected: true } });
  return calls as ToolCall[];
}

describe('the environment contract, for every registered environment (Docker sandboxes)', () => {
  let pool: DockerSandboxPool;
  before(async () => {
    await ensureStack();
    pool = new DockerSandboxPool({ warmSize: 0 });
  });
  after(async () => {
    await pool.close();
  });

  it('has a case for every registered environment', () => {
    assert.deepEqual(Object.keys(CASES).sort(), ENVIRONMENTS.ids().sort());
  });

  /** Environments over a pool that remembers the sandbox each acquired, so a test can look inside. */
  const envFor = (spec: AnyEnvSpec, maxTurns: number, overrides: Partial<EnvDeps> = {}): { env: Environment<{ turn: number }>; sandbox: () => Sandbox } => {
    let acquired: Sandbox | null = null;
    const watching: SandboxPool = { acquire: async (options) => (acquired = await pool.acquire(options)), close: async () => undefined };
    const env = spec.create({ pool: watching, runId: 'env-contract', imageFor, maxTurns, ...overrides }) as Environment<{ turn: number }>;
    return { env, sandbox: () => acquired! };
  };

  for (const spec of ENVIRONMENTS.ids().map((id) => ENVIRONMENTS.get(id))) {
    const envCase = CASES[spec.id]!;

    it(`${spec.id}: init, step, close; close is idempotent and safe before init and after a failed init`, { timeout: 180_000 }, async () => {
      const task = await envCase.task();
      const { env } = envFor(spec, 10);
      const first = await env.init(task);
      assert.equal(first.turn, 0);
      if (envCase.workspace) {
        assert.notEqual(env.imageDigest, null);
        const step = await env.step(envCase.workspace.harmless);
        assert.equal(step.result.ok, true, step.result.output);
        assert.deepEqual([step.done, step.truncated, step.finalFiles, step.observation.turn], [false, false, null, 1]);
      }
      await env.close();
      await env.close();
      await envFor(spec, 10).env.close();
      if (envCase.workspace) {
        const broken = envFor(spec, 10, { imageFor: () => 'trialrun/no-such-image:none' }).env;
        await assert.rejects(broken.init(task), /no-such-image|No such image|not found/i);
        await broken.close();
        await broken.close();
      }
    });

    it(`${spec.id}: every bad tool call is a failed ToolResult and the episode goes on`, { timeout: 180_000 }, async () => {
      const task = await envCase.task();
      const { env } = envFor(spec, 50);
      await env.init(task);
      try {
        let turn = 0;
        for (const call of badCalls(spec)) {
          const step = await env.step(call);
          turn++;
          assert.equal(step.result.ok, false, `${JSON.stringify(call)} should fail, got ${step.result.output}`);
          assert.ok(step.result.output.length > 0, 'it says why');
          assert.deepEqual([step.done, step.observation.turn], [false, turn]);
        }
      } finally {
        await env.close();
      }
    });

    const reply = envCase.reply;
    if (reply) {
      it(`${spec.id}: the reply is the final files, at the task's path, and ends the episode as terminated`, { timeout: 180_000 }, async () => {
        const task = await envCase.task();
        const { env } = envFor(spec, 10);
        await env.init(task);
        try {
          const answered = await env.step(reply.answer('sum(xs)'));
          assert.deepEqual([answered.result.ok, answered.done, answered.truncated, answered.finalFiles], [true, true, false, { [reply.path]: 'sum(xs)' }]);
        } finally {
          await env.close();
        }
      });
    }

    const workspace = envCase.workspace;
    if (workspace) {
    it(`${spec.id}: the final files are what the sandbox holds, written by the env's write tool${workspace.bash ? ' and by bash' : ''}`, { timeout: 180_000 }, async () => {
      const task = await envCase.task();
      const { env, sandbox } = envFor(spec, 50);
      await env.init(task);
      try {
        assert.equal((await env.step(workspace.write('notes/written.txt', 'by the write tool\n'))).result.ok, true);
        if (workspace.bash) {
          const made = await env.step(workspace.bash('mkdir -p made && printf "by bash\\n" > made/by-bash.txt && rm -f README.md'));
          assert.equal(made.result.ok, true, made.result.output);
        }
        const submitted = await env.step({ name: 'submit', arguments: {} });
        assert.deepEqual([submitted.done, submitted.truncated], [true, false]);
        const snapshot = await sandbox().snapshot({ skipDirs: ['__pycache__', '.pytest_cache'] });
        assert.deepEqual(submitted.finalFiles, workspace.finalOf(snapshot.files, task));
        assert.equal(submitted.finalFiles!['notes/written.txt'], 'by the write tool\n');
        if (workspace.bash) assert.equal(submitted.finalFiles!['made/by-bash.txt'], 'by bash\n');
      } finally {
        await env.close();
      }
    });

    it(`${spec.id}: the environment counts no turns; truncated, the episode ends with the final files`, { timeout: 180_000 }, async () => {
      const task = await envCase.task();
      const { env } = envFor(spec, 2);
      await env.init(task);
      try {
        assert.equal(env.maxTurns, 2);
        assert.equal((await env.step(workspace.write('capped.txt', 'kept\n'))).done, false);
        const past = await env.step(workspace.harmless);
        assert.deepEqual([past.done, past.truncated], [false, false], 'a step at the cap is a step like any other: runEpisode applies the cap');
        const end = await env.truncate();
        assert.equal(end.finalFiles['capped.txt'], 'kept\n');
      } finally {
        await env.close();
      }
    });
    } else {
      it(`${spec.id}: the environment counts no turns; truncated, the episode ends with the starting files`, { timeout: 180_000 }, async () => {
        const task = await envCase.task();
        const { env } = envFor(spec, 2);
        await env.init(task);
        try {
          assert.equal(env.maxTurns, 2);
          assert.equal((await env.step({ name: 'no_such_tool', arguments: {} })).done, false);
          const past = await env.step({ name: 'no_such_tool', arguments: {} });
          assert.deepEqual([past.done, past.truncated], [false, false], 'a step at the cap is a step like any other: runEpisode applies the cap');
          assert.deepEqual((await env.truncate()).finalFiles, task.files);
        } finally {
          await env.close();
        }
      });
    }
  }
});
