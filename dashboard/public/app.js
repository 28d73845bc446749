// The dashboard page: one Vega-Lite chart per panel, each fed from a named data set that every snapshot
// from /events replaces, and tables filled with textContent only (hack evidence is agent-written text).
'use strict';

const unprefixed = (snapshot, name) => (name.startsWith(snapshot.prefix) ? name.slice(snapshot.prefix.length) : name);

const VERSION_AXIS = { field: 'version', type: 'ordinal', title: 'policy version' };

/** Vega-Lite specs; each reads the data set "table" that render() replaces. */
const CHARTS = {
  pool: {
    element: '#chart-pool',
    rows: (s) => (s.pool ? ['busy', 'idle', 'creating', 'destroying'].map((state) => ({ state, sandboxes: s.pool[state] })) : []),
    spec: {
      mark: { type: 'bar', tooltip: true },
      encoding: {
        y: { field: 'state', type: 'nominal', sort: null, title: null },
        x: { field: 'sandboxes', type: 'quantitative', axis: { tickMinStep: 1, format: 'd' } },
        color: { field: 'state', type: 'nominal', legend: null },
      },
    },
  },
  passRate: {
    element: '#chart-pass-rate',
    rows: (s) => s.policyVersions.map((r) => ({ version: r.policyVersion, passRate: r.passRate, low: r.passLow, high: r.passHigh, episodes: r.episodes, worth: Math.round(r.effectiveEpisodes), passes: r.passes })),
    spec: {
      encoding: { x: VERSION_AXIS },
      layer: [
        { mark: 'rule', encoding: { y: { field: 'low', type: 'quantitative', scale: { domain: [0, 1] }, title: 'pass rate' }, y2: { field: 'high' } } },
        {
          mark: { type: 'point', filled: true, size: 80, tooltip: true },
          encoding: { y: { field: 'passRate', type: 'quantitative' }, tooltip: [VERSION_AXIS, { field: 'passes' }, { field: 'episodes' }, { field: 'worth', title: 'worth (independent)' }, { field: 'passRate', format: '.1%' }, { field: 'low', format: '.1%' }, { field: 'high', format: '.1%' }] },
        },
      ],
    },
  },
  reward: {
    element: '#chart-reward',
    rows: (s) =>
      s.policyVersions
        .filter((r) => r.meanReward !== null)
        .map((r) => ({ version: r.policyVersion, mean: r.meanReward, low: r.rewardLow ?? r.meanReward, high: r.rewardHigh ?? r.meanReward, rewards: r.rewards })),
    spec: {
      encoding: { x: VERSION_AXIS },
      layer: [
        { mark: 'rule', encoding: { y: { field: 'low', type: 'quantitative', title: 'mean reward', axis: { format: '.2~f' } }, y2: { field: 'high' } } },
        { mark: { type: 'point', filled: true, size: 80, tooltip: true }, encoding: { y: { field: 'mean', type: 'quantitative' }, tooltip: [VERSION_AXIS, { field: 'rewards' }, { field: 'mean', format: '.3f' }, { field: 'low', format: '.3f' }, { field: 'high', format: '.3f' }] } },
      ],
    },
  },
  throughput: {
    element: '#chart-throughput',
    rows: (s) => s.throughput.map((r) => ({ stage: r.stage, at: r.at, perSecond: r.perSecond, records: r.records })),
    spec: {
      mark: { type: 'line', point: true, tooltip: true },
      encoding: {
        x: { field: 'at', type: 'temporal', title: null },
        y: { field: 'perSecond', type: 'quantitative', title: 'records / s' },
        color: { field: 'stage', type: 'nominal' },
      },
    },
  },
  lag: {
    element: '#chart-lag',
    // The prefix is in the header; the bars name the processor and the topic it reads.
    rows: (s) => s.lag.map((r) => ({ reader: `${unprefixed(s, r.group)} \u2190 ${unprefixed(s, r.topic)}`, lag: r.lag })),
    spec: {
      mark: { type: 'bar', tooltip: true },
      encoding: {
        y: { field: 'reader', type: 'nominal', title: null, sort: null },
        x: { field: 'lag', type: 'quantitative', title: 'records behind', axis: { tickMinStep: 1, format: 'd' } },
      },
    },
  },
  learner: {
    element: '#chart-learner',
    rows: (s) => s.learner,
    spec: {
      transform: [{ fold: ['meanReward', 'meanAbsAdvantage', 'gradNorm'], as: ['metric', 'value'] }],
      mark: { type: 'line', point: true, tooltip: true },
      encoding: {
        x: { field: 'version', type: 'ordinal', title: 'checkpoint version' },
        y: { field: 'value', type: 'quantitative', title: null, axis: { format: '.3~g' } },
        color: { field: 'metric', type: 'nominal' },
      },
    },
  },
};

/** What tests and curious users can read: the live views, and how many snapshots arrived. */
const state = { snapshots: 0, views: {}, last: null };
window.trialrunDashboard = state;

async function embedCharts() {
  await Promise.all(
    Object.entries(CHARTS).map(async ([name, chart]) => {
      const spec = { $schema: 'https://vega.github.io/schema/vega-lite/v6.json', width: 'container', height: 180, data: { name: 'table' }, ...chart.spec };
      const result = await vegaEmbed(chart.element, spec, { renderer: 'svg', actions: false });
      state.views[name] = result.view;
    }),
  );
}

function text(selector, value) {
  document.querySelector(selector).textContent = value === null || value === undefined ? '-' : String(value);
}

const fixed = (value, digits) => (value === null || value === undefined ? '-' : Number(value).toFixed(digits));
const percent = (value) => `${(100 * value).toFixed(1)}%`;

/** Replaces a table's body with one row per item; `cells` gives each cell's text and whether it is a number. */
function fillTable(selector, items, cells) {
  const body = document.querySelector(`${selector} tbody`);
  body.replaceChildren(
    ...items.map((item) => {
      const row = document.createElement('tr');
      for (const [value, kind] of cells(item)) {
        const cell = document.createElement('td');
        cell.textContent = value === null || value === undefined ? '-' : String(value);
        if (kind) cell.className = kind;
        row.append(cell);
      }
      return row;
    }),
  );
}

async function render(snapshot) {
  state.last = snapshot;
  text('#run-id', snapshot.runId ?? 'none yet');
  text('#prefix', snapshot.prefix);
  text('#taken-at', new Date(snapshot.takenAt).toLocaleTimeString());
  document.querySelector('#problems').replaceChildren(
    ...snapshot.problems.map((problem) => {
      const item = document.createElement('li');
      item.textContent = problem;
      return item;
    }),
  );

  fillTable('#stages', snapshot.stages, (r) => [[r.stage], [r.topic], [r.landed, 'number'], [r.offsets, 'number']]);
  snapshot.stages.forEach((r, i) => document.querySelectorAll('#stages tbody tr')[i].setAttribute('data-stage', r.stage));
  for (const [field, value] of Object.entries(snapshot.inFlight)) text(`#in-flight [data-field="${field}"]`, value);
  document.querySelector('#pool-absent').hidden = snapshot.pool !== null;
  text('#pool-reaped', snapshot.pool ? snapshot.pool.reaped : null);
  document.querySelector('#processors-absent').hidden = snapshot.processors.length > 0;
  fillTable('#processors', snapshot.processors, (r) => [
    [r.processor], [r.instance], [r.recordsIn, 'number'], [r.recordsOut, 'number'], [r.skipped, 'number'], [r.errors, 'number'],
    [r.deadLetters, 'number'], [r.retries, 'number'], [r.inFlight, 'number'], [fixed(r.meanLatencyMs, 0), 'number'],
    [r.p95LatencyMs === null ? null : Number.isFinite(r.p95LatencyMs) ? fixed(r.p95LatencyMs, 0) : 'more', 'number'], [fixed(r.perSecond, 2), 'number'],
  ]);
  text('#hacks-total', snapshot.hacks.total);
  fillTable('#hack-kinds', snapshot.hacks.byKind, (r) => [[r.kind], [r.count, 'number']]);
  fillTable('#hacks', snapshot.hacks.recent, (r) => [[r.trajectoryId], [r.policyVersion, 'number'], [r.kind], [r.evidence, 'evidence'], [r.path ? `${r.path}${r.line ? `:${r.line}` : ''}` : null], [r.source]]);
  text('#dead-letters-total', snapshot.deadLetters.total);
  fillTable('#dead-letter-reasons', snapshot.deadLetters.byReason, (r) => [[r.processor], [r.stage], [r.error], [r.count, 'number']]);
  fillTable('#dead-letters', snapshot.deadLetters.recent, (r) => [[r.failedAt], [r.processor], [r.source], [r.error], [r.message, 'evidence'], [r.attempts, 'number']]);
  fillTable('#verifier-versions', snapshot.verifierVersions, (r) => [[r.verifierVersion], [r.verifications, 'number'], [percent(r.passRate)]]);

  await Promise.all(
    Object.entries(CHARTS).map(([name, chart]) => {
      const view = state.views[name];
      return view.change('table', vega.changeset().remove(vega.truthy).insert(chart.rows(snapshot))).resize().runAsync();
    }),
  );
  state.snapshots++;
}

async function main() {
  await embedCharts();
  const connection = document.querySelector('#connection');
  // Snapshots are rendered one at a time, in order; a burst renders only the newest.
  let pending = null;
  let rendering = false;
  const drain = async () => {
    if (rendering) return;
    rendering = true;
    while (pending) {
      const next = pending;
      pending = null;
      await render(next);
    }
    rendering = false;
  };
  const events = new EventSource('/events');
  events.addEventListener('open', () => {
    connection.dataset.state = 'live';
    connection.textContent = 'live';
  });
  events.addEventListener('error', () => {
    connection.dataset.state = 'lost';
    connection.textContent = 'reconnecting';
  });
  events.addEventListener('snapshot', (event) => {
    pending = JSON.parse(event.data);
    void drain();
  });
}

main().catch((error) => {
  const item = document.createElement('li');
  item.textContent = `the page failed: ${error && error.message ? error.message : error}`;
  document.querySelector('#problems').append(item);
});
