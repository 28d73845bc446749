export { hashFiles } from './hash.js';
export { RejectsFile, type Reject } from './rejects.js';
export { MAX_ROW_DEPTH, measureRow, type RowShape } from './shape.js';
export { formatOf, SOURCE_FORMATS, TabularFiles, type ReadRowsOptions, type ReadRowsReport, type RowReject, type SourceFormat, type SourceRow } from './tabular.js';
