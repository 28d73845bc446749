/** Numerically stable log-softmax of linear scores w . x over candidates. */
export function logSoftmax(weights: readonly number[], features: readonly (readonly number[])[]): number[] {
  const scores = features.map((x) => x.reduce((sum, value, i) => sum + value * (weights[i] ?? 0), 0));
  const max = Math.max(...scores);
  const logZ = max + Math.log(scores.reduce((sum, s) => sum + Math.exp(s - max), 0));
  return scores.map((s) => s - logZ);
}

export function sampleIndex(logProbs: readonly number[], random: () => number): number {
  let u = random();
  for (let i = 0; i < logProbs.length; i++) {
    u -= Math.exp(logProbs[i]!);
    if (u <= 0) return i;
  }
  return logProbs.length - 1;
}
