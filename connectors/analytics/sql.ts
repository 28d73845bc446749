/** A SQL string literal. */
export const sqlString = (text: string): string => `'${text.replaceAll("'", "''")}'`;
