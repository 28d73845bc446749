export { AnalyticsCatalog, type QueryResult } from './catalog.js';
export { toArrowTable, writeParquetFile } from './parquet.js';
export * from './tables.js';
