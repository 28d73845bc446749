import { GraphBuilder, type Dim } from './onnx-graph.js';

/**
 * The policy's parameters, in the order they are stored and fed. Scores are
 *   score(x) = outputWeights . tanh(x hiddenWeights + hiddenBias) + skipWeights . x
 * over each candidate's feature vector x: a one-hidden-layer MLP with a linear skip path, so that what a
 * linear policy learns quickly the skip path learns too, and the hidden layer adds feature interactions
 * (this edit kind when the failure is an exception, say).
 */
export const PARAM_NAMES = ['hiddenWeights', 'hiddenBias', 'outputWeights', 'skipWeights'] as const;
export type ParamName = (typeof PARAM_NAMES)[number];

/** Symbolic shapes: F features, H hidden units. */
export const PARAM_DIMS: Readonly<Record<ParamName, readonly ('features' | 'hidden')[]>> = {
  hiddenWeights: ['features', 'hidden'],
  hiddenBias: ['hidden'],
  outputWeights: ['hidden'],
  skipWeights: ['features'],
};

/** Padded candidates get this score, so their probability underflows to exactly zero. */
const PADDING_SCORE = -1e9;

/** Graph input and output names shared by the graphs and the code that feeds them. */
export const GRAPH = {
  features: 'features',
  mask: 'mask',
  logProbs: 'logProbs',
  chosen: 'chosen',
  oldLogProbs: 'oldLogProbs',
  advantages: 'advantages',
  sampleCount: 'sampleCount',
  step: 'step',
  learningRate: 'learningRate',
  clip: 'clip',
  beta1: 'beta1',
  beta2: 'beta2',
  epsilon: 'epsilon',
  loss: 'loss',
  gradNorm: 'gradNorm',
  clipFraction: 'clipFraction',
  approxKl: 'approxKl',
  entropy: 'entropy',
  adamM: (name: ParamName) => `adamM.${name}`,
  adamV: (name: ParamName) => `adamV.${name}`,
  nextParam: (name: ParamName) => `next.${name}`,
  nextAdamM: (name: ParamName) => `nextAdamM.${name}`,
  nextAdamV: (name: ParamName) => `nextAdamV.${name}`,
  gradient: (name: ParamName) => `gradient.${name}`,
} as const;

const BATCH: readonly Dim[] = ['decisions', 'candidates'];

interface Forward {
  /** Candidate features as rows: [decisions * candidates, F]. */
  readonly rows: string;
  /** tanh activations: [decisions * candidates, H]. */
  readonly hidden: string;
  readonly mask: string;
  /** [decisions, candidates]; padded candidates hold about -1e9. */
  readonly logProbs: string;
}

/** features [B, C, F] + mask [B, C] + params -> log-probabilities over each decision's candidates [B, C]. */
function forward(g: GraphBuilder): Forward {
  const features = g.input(GRAPH.features, [...BATCH, 'features']);
  const mask = g.input(GRAPH.mask, BATCH);
  for (const name of PARAM_NAMES) g.input(name, PARAM_DIMS[name]);
  const rows = g.op('Flatten', [features], { axis: 2 });
  const hidden = g.op('Tanh', [g.op('Add', [g.op('MatMul', [rows, 'hiddenWeights']), 'hiddenBias'])]);
  const scores = g.op('Add', [g.op('MatMul', [hidden, 'outputWeights']), g.op('MatMul', [rows, 'skipWeights'])]);
  const grid = g.op('Reshape', [scores, g.op('Shape', [mask])]);
  const padding = g.op('Mul', [g.op('Sub', [mask, g.constant(1)]), g.constant(-PADDING_SCORE)]);
  const masked = g.op('Add', [g.op('Mul', [grid, mask]), padding]);
  return { rows, hidden, mask, logProbs: g.op('LogSoftmax', [masked], { axis: 1 }) };
}

/** The scoring model: what a rollout worker runs for every learned choice. */
export function scoringModel(): Uint8Array {
  const g = new GraphBuilder('onnx-repair-score');
  const { logProbs } = forward(g);
  g.output(GRAPH.logProbs, logProbs, BATCH);
  return g.encode();
}

/**
 * The training model: the forward pass, the PPO clipped surrogate on group advantages, its analytic
 * gradient written out as operators, and one Adam ascent step. Hyperparameters are inputs, and so are the
 * parameters and moments, so one session serves every version and every setting.
 *
 * Objective, over decisions b of N samples with advantage A_b and ratio r_b = exp(logp_b - old_b):
 *   J = (1/N) sum_b min(r_b A_b, clip(r_b, 1-eps, 1+eps) A_b)
 * dJ/dlogp_b = r_b A_b / N, or 0 where the ratio already left the clip range in the direction A_b pushes.
 */
export function updateModel(): Uint8Array {
  const g = new GraphBuilder('onnx-repair-update');
  const { rows, hidden, mask, logProbs } = forward(g);
  const chosen = g.input(GRAPH.chosen, BATCH);
  const oldLogProbs = g.input(GRAPH.oldLogProbs, ['decisions']);
  const advantages = g.input(GRAPH.advantages, ['decisions']);
  const scalars = Object.fromEntries(
    (['sampleCount', 'step', 'learningRate', 'clip', 'beta1', 'beta2', 'epsilon'] as const).map((name) => [name, g.input(GRAPH[name], [])]),
  ) as Record<'sampleCount' | 'step' | 'learningRate' | 'clip' | 'beta1' | 'beta2' | 'epsilon', string>;
  const one = g.constant(1);
  const zero = g.constant(0);
  const axis1 = g.constant([1], [1], 'int64');
  const sumOver = (value: string, axes: string, keepdims: 0 | 1): string => g.op('ReduceSum', [value, axes], { keepdims });
  const total = (value: string): string => g.op('ReduceSum', [value], { keepdims: 0 });
  const mean = (value: string): string => g.op('ReduceMean', [value], { keepdims: 0 });

  // The surrogate objective.
  const chosenLogProbs = sumOver(g.op('Mul', [logProbs, chosen]), axis1, 0);
  const logRatio = g.op('Sub', [chosenLogProbs, oldLogProbs]);
  const ratio = g.op('Exp', [logRatio]);
  const low = g.op('Sub', [one, scalars.clip]);
  const high = g.op('Add', [one, scalars.clip]);
  const unclipped = g.op('Mul', [ratio, advantages]);
  const clipped = g.op('Mul', [g.op('Clip', [ratio, low, high]), advantages]);
  const objective = g.op('Div', [total(g.op('Min', [unclipped, clipped])), scalars.sampleCount]);
  g.output(GRAPH.loss, g.op('Neg', [objective]), []);

  // Decisions whose ratio left the clip range in the direction their advantage pushes pass no gradient.
  const pushedUp = g.op('And', [g.op('Greater', [advantages, zero]), g.op('Greater', [ratio, high])]);
  const pushedDown = g.op('And', [g.op('Less', [advantages, zero]), g.op('Less', [ratio, low])]);
  const isClipped = g.op('Cast', [g.op('Or', [pushedUp, pushedDown])], { to: 1 });
  g.output(GRAPH.clipFraction, mean(isClipped), []);
  // k3 estimator of KL(old || new): (r - 1) - log r, never negative.
  g.output(GRAPH.approxKl, mean(g.op('Sub', [g.op('Sub', [ratio, one]), logRatio])), []);
  const probs = g.op('Exp', [logProbs]);
  g.output(GRAPH.entropy, mean(g.op('Neg', [sumOver(g.op('Mul', [g.op('Mul', [probs, logProbs]), mask]), axis1, 0)])), []);

  // Backward: dJ/dlogp on the chosen candidates, through log-softmax, the skip path and the tanh layer.
  const perDecision = g.op('Div', [g.op('Mul', [unclipped, g.op('Sub', [one, isClipped])]), scalars.sampleCount]);
  const upstream = g.op('Mul', [chosen, g.op('Unsqueeze', [perDecision, axis1])]);
  const scoreGradient = g.op('Mul', [g.op('Sub', [upstream, g.op('Mul', [probs, sumOver(upstream, axis1, 1)])]), mask]);
  const scoreRow = g.op('Flatten', [scoreGradient], { axis: 0 });
  const scoreColumn = g.op('Flatten', [scoreGradient], { axis: 2 });
  const flat = g.constant([-1], [1], 'int64');
  const hiddenGradient = g.op('Mul', [g.op('Mul', [scoreColumn, 'outputWeights']), g.op('Sub', [one, g.op('Mul', [hidden, hidden])])]);
  const gradients: Record<(typeof PARAM_NAMES)[number], string> = {
    hiddenWeights: g.op('Gemm', [rows, hiddenGradient], { transA: 1 }),
    hiddenBias: g.op('ReduceSum', [hiddenGradient, g.constant([0], [1], 'int64')], { keepdims: 0 }),
    outputWeights: g.op('Reshape', [g.op('MatMul', [scoreRow, hidden]), flat]),
    skipWeights: g.op('Reshape', [g.op('MatMul', [scoreRow, rows]), flat]),
  };
  const squaredNorm = PARAM_NAMES.map((name) => g.op('ReduceSumSquare', [gradients[name]], { keepdims: 0 })).reduce((sum, term) => g.op('Add', [sum, term]));
  g.output(GRAPH.gradNorm, g.op('Sqrt', [squaredNorm]), []);

  // Adam, ascending J: m' = b1 m + (1-b1) g; v' = b2 v + (1-b2) g^2; p' = p + lr m'/(1-b1^t) / (sqrt(v'/(1-b2^t)) + eps).
  const { beta1, beta2, step, learningRate, epsilon } = scalars;
  const stepSize = g.op('Div', [learningRate, g.op('Sub', [one, g.op('Pow', [beta1, step])])]);
  const secondCorrection = g.op('Sub', [one, g.op('Pow', [beta2, step])]);
  for (const name of PARAM_NAMES) {
    const gradient = gradients[name];
    const m = g.input(GRAPH.adamM(name), PARAM_DIMS[name]);
    const v = g.input(GRAPH.adamV(name), PARAM_DIMS[name]);
    const nextM = g.op('Add', [g.op('Mul', [beta1, m]), g.op('Mul', [g.op('Sub', [one, beta1]), gradient])]);
    const nextV = g.op('Add', [g.op('Mul', [beta2, v]), g.op('Mul', [g.op('Sub', [one, beta2]), g.op('Mul', [gradient, gradient])])]);
    const denominator = g.op('Add', [g.op('Sqrt', [g.op('Div', [nextV, secondCorrection])]), epsilon]);
    const next = g.op('Add', [name, g.op('Div', [g.op('Mul', [stepSize, nextM]), denominator])]);
    g.output(GRAPH.gradient(name), gradient, PARAM_DIMS[name]);
    g.output(GRAPH.nextParam(name), next, PARAM_DIMS[name]);
    g.output(GRAPH.nextAdamM(name), nextM, PARAM_DIMS[name]);
    g.output(GRAPH.nextAdamV(name), nextV, PARAM_DIMS[name]);
  }
  return g.encode();
}
