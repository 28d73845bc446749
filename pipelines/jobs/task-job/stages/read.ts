import { hashFiles, TabularFiles, type SourceFormat } from '../../../../connectors/files/index.js';
import { ConfigError, errorMessage } from '../../../../schemas/index.js';
import { runHelperLines } from '../python.js';
import type { MappedItem } from '../row-check.js';
import { RowMapper } from '../rows.js';
import { Stage, type JobRun } from './stage.js';
import type { ValidatedRows } from './validate.js';

/**
 * Maps one row; anything the mapping throws on a row's content becomes that row's reject, never the job's
 * end (rows reaching here are already bounded in size and depth by the read stage).
 */
function mapRow(mapper: RowMapper, value: Readonly<Record<string, unknown>>): ReturnType<RowMapper['map']> {
  try {
    return mapper.map(value);
  } catch (error) {
    return { ok: false, reason: `cannot be mapped: ${errorMessage(error).slice(0, 500)}` };
  }
}

/** read + map: every row of every source through DuckDB, then the column mapping; each batch to `validated` when given (nothing is collected), else into `items`. */
export async function readSources(run: JobRun, validated?: ValidatedRows): Promise<{ items: MappedItem[]; rowsRead: number; datasetHash: string }> {
  const { job, rejects } = run;
  const { spec, mapping } = job;
  const mapper = new RowMapper(mapping);
  const required = mapper.requiredColumns();
  const read = new Stage('read', 0);
  const mapStage = new Stage('map', 0);
  const items: MappedItem[] = [];
  let rowsRead = 0;
  let delivered = 0;
  let mapped_ = 0;
  const files: Array<{ file: string; format?: SourceFormat }> = [];
  const tables = await TabularFiles.open();
  try {
    for (const source of job.sources) for (const file of await tables.expand(source.path)) files.push({ file, format: source.format });
    for (const { file, format } of files) {
      const columns = await tables.columns(file, format);
      if (columns) {
        const missing = [...required].filter(([column]) => !columns.includes(column));
        if (missing.length > 0) {
          throw new ConfigError(`${file} lacks column(s) the mapping needs: ${missing.map(([column, field]) => `"${column}" (${field})`).join(', ')}; its columns are: ${columns.join(', ')}`);
        }
      }
      const report = await tables.readRows(file, {
        format,
        maxRowBytes: spec.limits.maxRowBytes,
        maxRowDepth: spec.limits.maxRowDepth,
        onReject: ({ row, reason }) => {
          read.count(reason.startsWith('not valid JSON') ? 'not valid JSON' : reason.replace(/[:(].*$/, '').trim());
          rejects.add({ source: file, row, stage: 'read', reason });
        },
        onRows: async (rows) => {
          const batch = validated ? [] : items;
          mapStage.time(() => {
            delivered += rows.length;
            for (const { row, value } of rows) {
              const mapped = mapRow(mapper, value);
              if (!mapped.ok) {
                mapStage.count(mapped.reason.replace(/"[^"]*"/, '<column>'));
                rejects.add({ source: file, row, stage: 'map', reason: `${mapped.reason} (mapping of ${spec.importer ? `importer ${spec.importer}` : 'the job'})` });
                continue;
              }
              mapped_++;
              batch.push({ source: file, row, fields: mapped.fields, tests: mapped.tests });
            }
          });
          await validated?.accept(batch);
        },
      });
      rowsRead += report.rows + report.rejects;
    }
  } finally {
    tables.close();
  }
  read.notes.push(`${files.length} file(s)`);
  read.lend(mapStage);
  if (validated) read.lend(validated.stage);
  run.stages.push(read.end(delivered, rowsRead));
  run.stages.push(mapStage.end(mapped_, delivered));
  const datasetHash = await hashFiles(files.map((f) => f.file));
  return { items, rowsRead, datasetHash };
}

/** tests: assert-style tests (HumanEval's check function, assert lists) become visible and hidden pytest files. */
export async function convertTests(run: JobRun, items: readonly MappedItem[]): Promise<readonly MappedItem[]> {
  const { rejects } = run;
  if (!items.some((item) => item.tests)) return items;
  const testsStage = new Stage('tests', items.length);
  const pending = items.filter((item) => item.tests);
  const answers = await runHelperLines<Record<string, unknown>, { key: number; error?: string; visible_tests?: string; hidden_tests?: string }>(
    'split_tests.py',
    pending.map((item, key) => ({ key, module: item.fields.module, ...item.tests })),
    { onCrash: (request, reason) => ({ key: request.key as number, error: reason }) },
  );
  const failed = new Set<MappedItem>();
  for (const answer of answers) {
    const item = pending[answer.key]!;
    if (answer.error) {
      failed.add(item);
      testsStage.count(answer.error.replace(/\d+/g, 'N').slice(0, 60));
      rejects.add({ source: item.source, row: item.row, stage: 'tests', reason: `tests cannot be converted: ${answer.error}`, taskId: String(item.fields.id) });
      continue;
    }
    item.fields.visible_tests = answer.visible_tests;
    item.fields.hidden_tests = answer.hidden_tests;
  }
  const kept = items.filter((item) => !failed.has(item));
  run.stages.push(testsStage.end(kept.length));
  return kept;
}
