import { existsSync, mkdirSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { AnalyticsCatalog, notebookHtml, parseNotebook, runNotebook } from '../../connectors/analytics/index.js';
import { ConfigError } from '../../schemas/index.js';
import type { Command } from '../command.js';
import { existingDir, listOption, stringOption } from '../options.js';
import { dataDirHelp, lakeLocation, repoRoot, stateDir } from '../paths.js';

export const notebooksDir = (): string => join(repoRoot(), 'notebooks');

function notebookNames(dir: string): string[] {
  return existsSync(dir) ? readdirSync(dir).filter((file) => file.endsWith('.sql')).map((file) => file.slice(0, -4)).sort() : [];
}

export const notebookCommand: Command = {
  name: 'notebook',
  summary:
    'Run an analysis notebook (a documented SQL file under notebooks/) over the analytics store and write an HTML report with charts.\n' +
    'Usage: trialrun notebook list | trialrun notebook run <name>|all [--out <dir>] [--run <run id>]',
  usage: 'list | run <name>|all',
  options: {
    out: { type: 'string' },
    run: { type: 'string', multiple: true },
    'data-dir': { type: 'string' },
    notebooks: { type: 'string' },
  },
  help: {
    out: `folder for <name>.html (default: ${join(stateDir(), 'reports')})`,
    run: 'only this loop run\'s rows (repeatable; default: every run)',
    'data-dir': dataDirHelp(),
    notebooks: 'folder of notebook .sql files (default: the notebooks/ of this checkout)',
  },
  async run(values, [action, name, ...extra]) {
    const dir = existingDir(stringOption(values, 'notebooks') ?? notebooksDir(), '--notebooks');
    const available = notebookNames(dir);
    if (action === 'list') {
      for (const notebook of available) process.stdout.write(`${notebook.padEnd(24)} ${parseNotebook(notebook, readFileSync(join(dir, `${notebook}.sql`), 'utf8')).title}\n`);
      return 0;
    }
    if (action !== 'run' || !name || extra.length > 0) throw new ConfigError(`use "list" or "run <name>|all", got "${[action, name, ...extra].filter(Boolean).join(' ')}"`);
    if (available.length === 0) throw new ConfigError(`no notebooks (.sql files) in ${dir}`);
    const names = name === 'all' ? available : [name];
    const missing = names.filter((n) => !available.includes(n));
    if (missing.length) throw new ConfigError(`no notebook "${missing.join('", "')}" in ${dir}; one of ${available.join(', ')}`);
    const store = lakeLocation(values);
    const runIds = listOption(values, 'run');
    const out = resolve(stringOption(values, 'out') ?? join(stateDir(), 'reports'));
    if (existsSync(out) && !statSync(out).isDirectory()) throw new ConfigError(`--out ${out} is a file; give a folder for the reports`);
    // Refuses a missing folder, one without Parquet files and unknown run ids, before anything is written.
    const catalog = await AnalyticsCatalog.open(store, { runIds, requireData: true });
    try {
      mkdirSync(out, { recursive: true });
      for (const notebookName of names) {
        const notebook = parseNotebook(notebookName, readFileSync(join(dir, `${notebookName}.sql`), 'utf8'));
        const results = await runNotebook(catalog, notebook);
        const path = join(out, `${notebookName}.html`);
        writeFileSync(path, notebookHtml(notebook, results, { source: runIds ? `${store} (runs ${runIds.join(', ')})` : store, generatedAt: new Date() }));
        const charts = results.reduce((sum, r) => sum + r.svgs.length, 0);
        process.stdout.write(`wrote ${path} (${results.length} queries, ${charts} charts) from ${store}\n`);
      }
      return 0;
    } finally {
      catalog.close();
    }
  },
};
