import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { AnalyticsCatalog, notebookHtml, parseNotebook, runNotebook } from '../../connectors/analytics/index.js';
import { stackPaths } from '../../stack/index.js';
import type { Command } from '../command.js';
import { dataDir, repoRoot } from '../paths.js';

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
    out: 'folder for <name>.html (default: .trialrun/reports)',
    run: 'only this loop run\'s rows (repeatable; default: every run)',
    'data-dir': 'analytics store folder (default: $TRIALRUN_DATA_DIR or .trialrun/data)',
    notebooks: 'folder of notebook .sql files (default: the notebooks/ of this checkout)',
  },
  async run(values, [action, name]) {
    const dir = resolve((values.notebooks as string | undefined) ?? notebooksDir());
    const available = notebookNames(dir);
    if (action === 'list') {
      for (const notebook of available) process.stdout.write(`${notebook.padEnd(24)} ${parseNotebook(notebook, readFileSync(join(dir, `${notebook}.sql`), 'utf8')).title}\n`);
      return 0;
    }
    if (action !== 'run' || !name) {
      process.stderr.write('trialrun notebook: use "list" or "run <name>|all"\n');
      return 2;
    }
    const names = name === 'all' ? available : [name];
    const missing = names.filter((n) => !available.includes(n));
    if (missing.length) {
      process.stderr.write(`trialrun notebook: no notebook "${missing.join('", "')}" in ${dir}; one of ${available.join(', ')}\n`);
      return 2;
    }
    const store = (values['data-dir'] as string | undefined) ?? dataDir();
    const runIds = values.run as unknown as string[] | undefined;
    const out = resolve((values.out as string | undefined) ?? join(stackPaths().stateDir, 'reports'));
    mkdirSync(out, { recursive: true });
    const catalog = await AnalyticsCatalog.open(store, { runIds });
    try {
      for (const notebookName of names) {
        const notebook = parseNotebook(notebookName, readFileSync(join(dir, `${notebookName}.sql`), 'utf8'));
        const results = await runNotebook(catalog, notebook);
        const path = join(out, `${notebookName}.html`);
        writeFileSync(path, notebookHtml(notebook, results, { source: runIds ? `${store} (runs ${runIds.join(', ')})` : store, generatedAt: new Date() }));
        const charts = results.reduce((sum, r) => sum + r.svgs.length, 0);
        process.stdout.write(`wrote ${path} (${results.length} queries, ${charts} charts)\n`);
      }
      return 0;
    } catch (error) {
      process.stderr.write(`trialrun notebook: ${error instanceof Error ? error.message : String(error)}\n`);
      return 1;
    } finally {
      catalog.close();
    }
  },
};
