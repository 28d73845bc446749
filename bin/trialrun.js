#!/usr/bin/env node
// The CLI is compiled TypeScript; `npm run build` (run by the README commands) produces dist/.
const entry = new URL('../dist/cli/main.js', import.meta.url);
let cli;
try {
  cli = await import(entry.href);
} catch (error) {
  if (error?.code !== 'ERR_MODULE_NOT_FOUND' || !String(error.message).includes(entry.pathname)) throw error;
  process.stderr.write(`trialrun: not built yet (no ${entry.pathname}); run \`npm run build\` in ${new URL('..', import.meta.url).pathname}\n`);
  process.exit(1);
}
// Exit when the command is done: client connections and timers of libraries must not keep the process alive.
process.exit(await cli.main(process.argv.slice(2)));
