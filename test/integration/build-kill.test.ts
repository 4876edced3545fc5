/**
 * A worker killed (SIGKILL) at a phase of its build, with 3 workers running (SPEC R21): the dead
 * holder's build lock lapses within its 30 s lease, BullMQ hands the job to another worker, and
 * today's ring is back within 2 minutes. Two phases here (`pnpm test:reliability` runs all
 * seven; KILL_PHASES=read,write,... picks others).
 */
import { versionFor } from '@feed/domain';
import { deleteKeysWithPrefix, videoModel } from '@feed/storage';
import { seedVideos } from '@feed/demo-data';
import { tsx, type Managed } from '../../tools/support/processes';
import { KILL_PHASES, killBuildAt, type KillPhase } from '../../tools/reliability/build-kill';
import { startTestDeployable } from '../support/deployables';
import { useTestServices } from '../support/services';

const PHASES = (process.env.KILL_PHASES?.split(',') ?? ['read', 'switch']) as KillPhase[];
const TIME_ZONE = 'Asia/Shanghai';
const s = useTestServices('buildkill');

beforeAll(async () => {
  // Enough videos that the build's read and write phases last a moment.
  await seedVideos(videoModel(s.mongo), { videos: 20_000, fresh: 400 });
}, 120_000);

describe.each(PHASES)('a building worker SIGKILLed in its %s phase', (phase) => {
  it('when 3 workers run and the building one is killed, then today\'s ring is back within 2 minutes', async () => {
    expect(KILL_PHASES).toContain(phase);
    const startWorker = async (): Promise<Managed> => {
      const worker = await startTestDeployable(tsx('apps/worker/src/main.ts'), { prefix: s.prefix, mongoUrl: s.config.mongoUrl! }, { NODE_ENV: 'development', LOG_LEVEL: 'info', TZ_BUSINESS: TIME_ZONE });
      s.disposeAfter(() => worker.process.stop('SIGKILL'));
      return worker.process;
    };
    // One after another: three cold starts at once overrun a start's bound on a busy machine.
    const workers = [await startWorker(), await startWorker(), await startWorker()];
    const today = () => versionFor(new Date(), TIME_ZONE);
    const outcome = await killBuildAt(phase, {
      workers,
      startWorker,
      flush: () => deleteKeysWithPrefix(s.redis, s.prefix),
      ringIsBack: async () => (await s.redis.get(s.keys.current)) === today() && Boolean(await s.redis.hExists(s.keys.meta(today()), 'completedAt')),
    });
    console.log(`killed in ${phase} (last logged: ${outcome.lastLogged}): ring back ${outcome.secondsToRing} s after the kill`);
  }, 4 * 60_000);
});
