/**
 * Prints `--max-old-space-size=N` for API_MEMORY_BUDGET_MB's share: V8 sizes its heap before our
 * code runs. A bad value prints nothing, so the API starts and stops naming the variable.
 */
import { loadSetting } from '@feed/config';
import { memoryShares } from './memory-budget';

export function heapFlag(env: NodeJS.ProcessEnv = process.env): string {
  try {
    return `--max-old-space-size=${memoryShares(loadSetting('apiMemoryBudgetMb', env)).oldSpaceMb}`;
  } catch {
    return '';
  }
}

if (require.main === module) process.stdout.write(heapFlag());
