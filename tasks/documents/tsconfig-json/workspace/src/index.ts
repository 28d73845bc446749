export const greet = (name: string): string => `hello, ${name}`;
