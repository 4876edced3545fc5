/**
 * `node dist/heap-flag.js` prints the V8 flag that caps the old space at API_MEMORY_BUDGET_MB's
 * share (`--max-old-space-size=N`): the image's command starts the API with it, since V8 sizes its
 * heap before any of our code runs. A bad value prints nothing, so the API itself starts and
 * stops with the message naming the variable.
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
