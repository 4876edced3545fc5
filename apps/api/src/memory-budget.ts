const MB = 1024 * 1024;

/** Each cache's share of API_MEMORY_BUDGET_MB and V8's old-space limit; ~25% left for what no cache owns. */
export function memoryShares(budgetMb: number) {
  const budgetBytes = budgetMb * MB;
  return {
    /** The whole budget, in bytes (`feed_memory_budget_bytes`). */
    budgetBytes,
    /** `--max-old-space-size` in MB: the two in-heap caches plus the request working set. */
    oldSpaceMb: Math.floor(budgetMb / 2),
    /** Video documents with their item shape and JSON (lru-cache maxSize). */
    videoCacheBytes: Math.floor(budgetBytes * 0.1),
    /** Verified tokens (lru-cache maxSize): ~610 bytes each, so the default budget keeps 50,000 users' tokens. */
    tokenCacheBytes: Math.floor(budgetBytes * 0.125),
    /** Queue copies: Buffers, outside the V8 heap. */
    queueCopyBytes: Math.floor(budgetBytes * 0.15),
  };
}
