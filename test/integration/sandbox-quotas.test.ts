import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { resolveSandboxLimits, type AgentSandboxPool, type Sandbox } from '../../connectors/sandbox/index.js';
import { ensureStack } from './harness.js';
import { BACKENDS, sandboxImage } from './sandbox-backends.js';

// Empty files cost no bytes but an inode each, and inodes cost kernel memory charged to the sandbox: without a
// tmpfs inode cap, a loop of a million creates ends in the OOM killer taking the whole sandbox. With it, the loop
// sees ENOSPC at the cap and the sandbox goes on. The default limits are the ones under test.
const LIMITS = resolveSandboxLimits();
const FILL = `
import errno, json, os, sys
folder, made = sys.argv[1], 0
try:
    for made in range(1_000_000):
        open(os.path.join(folder, 'f%d' % made), 'w').close()
    made = 1_000_000
    print(json.dumps({"made": made, "error": None}))
except OSError as e:
    print(json.dumps({"made": made, "error": errno.errorcode.get(e.errno, str(e.errno))}))
`;

for (const backend of BACKENDS) {
  describe(`sandbox inode quotas (${backend.name} backend)`, () => {
    let pool: AgentSandboxPool;

    before(async () => {
      await ensureStack();
      pool = backend.pool({ warmSize: 0 });
    });

    after(async () => {
      await pool.close();
    });

    for (const [folder, inodes] of [['/workspace', LIMITS.workspaceInodes], ['/tmp', LIMITS.tmpInodes]] as const) {
      it(`a million empty files in ${folder} end in ENOSPC at the inode cap, not in the OOM killer`, { timeout: 300_000 }, async () => {
        const sandbox: Sandbox = await pool.acquire({ image: sandboxImage(), runId: 'quotas', taskId: `fill-${folder.slice(1)}` });
        try {
          const result = await sandbox.exec(['python3', '-c', FILL, folder], { timeoutMs: 240_000 });
          assert.equal(result.status, 'exited', `status ${result.status}: ${result.stderr}`);
          const { made, error } = JSON.parse(result.stdout) as { made: number; error: string | null };
          assert.equal(error, 'ENOSPC');
          assert.ok(made > 0 && made < inodes, `made ${made} files under a cap of ${inodes} inodes`);
          const after = await sandbox.exec(['sh', '-c', `rm -f ${folder}/f1 && echo ok > ${folder}/f1 && cat ${folder}/f1`]);
          assert.equal(after.stdout, 'ok\n', 'the sandbox still works, and a freed inode can be used again');
        } finally {
          await sandbox.release();
        }
      });
    }

    it('takes the cap as a limit and refuses one too small', async () => {
      const sandbox = await pool.acquire({ image: sandboxImage(), runId: 'quotas', taskId: 'small-cap', limits: { workspaceInodes: 200 } });
      try {
        const result = await sandbox.exec(['python3', '-c', FILL, '/workspace'], { timeoutMs: 60_000 });
        const { made, error } = JSON.parse(result.stdout) as { made: number; error: string | null };
        assert.equal(error, 'ENOSPC');
        assert.ok(made < 200, `made ${made}`);
      } finally {
        await sandbox.release();
      }
      assert.throws(() => resolveSandboxLimits({ tmpInodes: 10 }), /SandboxLimits\.tmpInodes must be a whole number >= 64, got 10/);
    });
  });
}
