/** A SQL string literal. */
export const sqlString = (text: string): string => `'${text.replaceAll("'", "''")}'`;

/** A SQL identifier, quoted: any name, keywords and quotes included. */
export const sqlIdent = (name: string): string => `"${name.replaceAll('"', '""')}"`;
