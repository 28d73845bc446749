import * as vega from 'vega';
import { compile, type TopLevelSpec } from 'vega-lite';

export interface ChartOptions {
  /** Prefix for the SVG's element ids, so several charts can share one HTML page. @default 'chart' */
  idPrefix?: string;
  /** @default 560 */
  width?: number;
  /** @default 260 */
  height?: number;
}

/**
 * Renders a Vega-Lite spec over the given rows to a standalone SVG, offline and without a canvas (the
 * headless view measures text by estimate). Each mark carries an `aria-label` with its data values
 * (`policy_version: 3; pass_rate: 0.5`), which is also how a test reads back what a chart shows.
 */
export async function renderChartSvg(spec: Readonly<Record<string, unknown>>, rows: ReadonlyArray<Record<string, unknown>>, options: ChartOptions = {}): Promise<string> {
  const full = {
    $schema: 'https://vega.github.io/schema/vega-lite/v6.json',
    width: options.width ?? 560,
    height: options.height ?? 260,
    ...spec,
    data: { values: rows },
  } as unknown as TopLevelSpec;
  const compiled = compile(full).spec;
  const view = new vega.View(vega.parse(compiled), { renderer: 'none' });
  try {
    const svg = await view.toSVG();
    return uniqueIds(svg, options.idPrefix ?? 'chart');
  } finally {
    view.finalize();
  }
}

/** Vega numbers its clip paths and gradients from 1 in every chart; prefix them so charts on one page do not collide. */
function uniqueIds(svg: string, prefix: string): string {
  return svg.replace(/\bid="([^"]+)"/g, `id="${prefix}-$1"`).replace(/url\(#([^)]+)\)/g, `url(#${prefix}-$1)`).replace(/href="#([^"]+)"/g, `href="#${prefix}-$1"`);
}
