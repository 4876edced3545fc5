/** The part of jstat (no bundled types) that two-proportion.ts uses. */
declare module 'jstat' {
  export const jStat: {
    normal: {
      /** P(X <= x) for X ~ N(mean, sd). */
      cdf(x: number, mean: number, sd: number): number;
      /** The x with P(X <= x) = p for X ~ N(mean, sd). */
      inv(p: number, mean: number, sd: number): number;
    };
  };
}
