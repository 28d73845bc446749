/**
 * A SQL string literal, for the places DuckDB binds no parameter (a file in COPY ... TO, a table function's file list,
 * CREATE SECRET); a value in a query is bound instead (`AnalyticsCatalog.query`'s params).
 */
export const sqlString = (text: string): string => `'${text.replaceAll("'", "''")}'`;

/** A SQL identifier, quoted: any name, keywords and quotes included. */
export const sqlIdent = (name: string): string => `"${name.replaceAll('"', '""')}"`;
