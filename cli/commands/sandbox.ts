import Docker from 'dockerode';
import { defaultRootfsDir, newOwner, reapDockerSandboxes, reapProcessSandboxes, RootfsStore } from '../../connectors/sandbox/index.js';
import { imageFor } from '../../stack/index.js';
import { ConfigError } from '../../schemas/index.js';
import type { Command } from '../command.js';

export const sandboxCommand: Command = {
  name: 'sandbox',
  summary:
    'Sandbox housekeeping.\n' +
    '  gc              remove sandbox containers (and process-sandbox cgroups) whose executor is gone\n' +
    "  rootfs <image>  export an image's root file system for the process backend; copy the printed\n" +
    '                  folder to a host without Docker (<image> may be a recipe name such as python-repair)',
  usage: 'gc|rootfs <image>',
  options: {
    all: { type: 'boolean' },
    'rootfs-dir': { type: 'string' },
  },
  help: {
    all: 'gc: also remove the sandboxes of executors that are still running',
    'rootfs-dir': `rootfs: cache folder (default: ${defaultRootfsDir()})`,
  },
  async run(values, [action, target, ...extra]) {
    if (extra.length > 0 || (target !== undefined && action !== 'rootfs')) throw new ConfigError(`expected gc or rootfs <image>, got "${[action, target, ...extra].join(' ')}"`);
    if (action === 'gc') {
      const all = values.all === true;
      const containers = await reapDockerSandboxes(new Docker(), { all });
      const cgroups = await reapProcessSandboxes({ all });
      process.stdout.write(
        `removed ${containers.removed.length} sandbox container(s)${containers.removed.length ? `: ${containers.removed.map((id) => id.slice(0, 12)).join(' ')}` : ''}\n` +
          `removed ${cgroups.removed.length} process-sandbox cgroup(s)${cgroups.removed.length ? `: ${cgroups.removed.join(' ')}` : ''}\n`,
      );
      if (containers.unknownOwner.length > 0) {
        process.stdout.write(`left ${containers.unknownOwner.length} container(s) made on other hosts; --all removes them too\n`);
      }
      return 0;
    }
    if (action === 'rootfs' && target) {
      const image = target.includes(':') || target.includes('/') ? target : imageFor(target);
      const store = new RootfsStore((values['rootfs-dir'] as string | undefined) ?? defaultRootfsDir(), new Docker(), newOwner());
      const rootfs = await store.get(image);
      process.stdout.write(`${image} (${rootfs.digest}): ${rootfs.dir}\ncopy ${store.cacheDir} to the same place on the target host\n`);
      return 0;
    }
    throw new ConfigError(`expected gc or rootfs <image>, got "${[action, target].filter(Boolean).join(' ')}"`);
  },
};
