/** Record headers as text, the form the port hands over: a header given several times is joined with ','. */
export function headerText(headers: Readonly<Record<string, Buffer | string | ReadonlyArray<Buffer | string> | undefined>> | undefined): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [name, value] of Object.entries(headers ?? {})) {
    if (value !== undefined) out[name] = Array.isArray(value) ? value.map(String).join(',') : String(value);
  }
  return out;
}
