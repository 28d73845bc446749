export { AnalyticsCatalog, readParquetSql, sqlString, type CatalogOptions, type QueryResult } from './catalog.js';
export { compactStore, planMerges, type CompactOptions, type CompactTableReport } from './compact.js';
export * from './layout.js';
export { JsonRowEncoder, ParquetWriter, RecordLines, recordLinesOf, writeFileAtomically, writeParquetRows, type ParquetMetadata, type ParquetWriterOptions, type ValueColumn } from './parquet.js';
export { duckdbRecordType } from './record-type.js';
export * from './tables.js';
export { renderChartSvg, type ChartOptions } from './chart.js';
export { markdownToHtml, notebookHtml, parseNotebook, recordsOf, runNotebook, type CellResult, type Notebook, type NotebookCell, type ReportContext } from './notebook.js';
export { exportTrainingSamples, SAMPLE_EXPORT_FORMATS, type SampleExportFormat, type SampleExportOptions, type SampleExportReport } from './samples.js';
