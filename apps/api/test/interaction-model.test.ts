/**
 * Model-based test of the interaction counters (SPEC R3, C): fast-check draws programs of likes,
 * unlikes, collects, uncollects, comments (with and without Idempotency-Key), comment deletions
 * and shares by 2-6 users on 1-3 videos, in rounds whose commands are all in flight together.
 * Every MongoDB command of those requests waits at a turnstile that lets one through at a time,
 * in an order fast-check draws, once every request is either waiting there or done: the
 * interleavings are the seed's, replayable. A multi-statement write goes statement by statement
 * (MongoDB is atomic per document only, not per command). Random requests crash at the service's
 * hooks (after the record write; in the video's tally, between its count and its write), and the
 * tallies running behind the requests pass the turnstile too. Then the repair job runs, and the history is
 * checked against the model: per video and kind, the users that ever succeeded and the states
 * each user's record may be in at the end.
 *
 * `CI` set: a fixed seed. Otherwise a random one, printed. `MODEL_RUNS` sets the number of runs
 * (the reliability run uses a longer one), `MODEL_SEED` (and `MODEL_PATH`) replay a failure.
 */
import { AsyncLocalStorage } from 'node:async_hooks';
import fc from 'fast-check';
import mongoose, { Types, type Model, type Schema } from 'mongoose';
import { AppError } from '@feed/http';
import { InteractionService } from '@feed/api';
import { VideoCatalog } from '../src/feed/video-catalog';
import { demoVideo } from '@feed/demo-data';
import { COUNTER_KINDS, CounterTallies, interactionModels, repairPendingCounters, RequestBudget, videoModel, type CountedRecord, type CounterHooks, type CounterKind, type InteractionModels, type VideoModel } from '@feed/storage';
import { useTestServices } from '../../../test/support/services';

/** Lets the MongoDB commands of concurrent requests through one at a time, in a drawn order. */
class Turnstile {
  private readonly waiting: Array<() => void> = [];
  private active = false;

  /** Called before each command (mongoose middleware): waits for its turn while a round runs. */
  enter(): Promise<void> | undefined {
    if (!this.active) return undefined;
    return new Promise((resolve) => this.waiting.push(resolve));
  }

  /**
   * Runs the tasks together; `pick(n)` chooses which of the n waiting commands goes next, until the
   * tasks and the `background()` actors (the tallies behind them) are all done.
   */
  async run<T>(tasks: Array<() => Promise<T>>, pick: (n: number) => number, background: () => number): Promise<Array<{ ok: true; value: T } | { ok: false; error: unknown }>> {
    this.active = true;
    let finished = 0;
    const settled = tasks.map((task) =>
      task()
        .then((value) => ({ ok: true as const, value }), (error: unknown) => ({ ok: false as const, error }))
        .finally(() => void finished++),
    );
    try {
      while (finished < tasks.length || background() > 0) {
        // Every request and tally is waiting at the turnstile or done: nothing else runs, the draw decides.
        await until(() => finished + this.waiting.length >= tasks.length + background());
        if (this.waiting.length > 0) this.waiting.splice(pick(this.waiting.length), 1)[0]();
      }
    } finally {
      this.active = false;
      for (const resolve of this.waiting.splice(0)) resolve();
    }
    return Promise.all(settled);
  }
}

/** Polls `condition` on each turn of the event loop, failing after a generous deadline (a hang, not slowness). */
async function until(condition: () => boolean, deadlineMs = 60_000): Promise<void> {
  const deadline = Date.now() + deadlineMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error(`turnstile: requests neither reached MongoDB nor finished within ${deadlineMs} ms`);
    await new Promise((resolve) => setImmediate(resolve));
  }
}

const turnstile = new Turnstile();
// Registered before the file's models are compiled, so every command of theirs passes it.
mongoose.plugin((schema: Schema) => {
  const wait = async () => {
    await turnstile.enter();
  };
  for (const op of ['find', 'findOne', 'updateOne', 'updateMany'] as const) schema.pre(op, wait);
  schema.pre('aggregate', wait);
  schema.pre('save', wait);
  schema.pre('bulkWrite', wait);
});

type CrashPoint = 'none' | 'afterRecord' | 'beforeTally';
class InjectedCrash extends Error {}
const crashPlan = new AsyncLocalStorage<CrashPoint>();
const crashAt = (point: CrashPoint) => async () => {
  if (crashPlan.getStore() === point) throw new InjectedCrash(`injected crash ${point}`);
};
const hooks: CounterHooks = { afterRecord: crashAt('afterRecord'), beforeTally: crashAt('beforeTally') };

const s = useTestServices('interaction-model');
let videos: VideoModel;
let records: InteractionModels;
/** Two API replicas: each its own tallies (one per video at a time in each), a user's requests on one of them. */
let replicas: Array<{ service: InteractionService; tallies: CounterTallies }>;
/** A request's budget, generous: the turnstile holds commands back on purpose. */
const budget = () => new RequestBudget({ redisMs: 1_000, mongoMs: 60_000 });

/** findOneAndUpdate waits at the turnstile below mongoose: the toggles send it through the model's collection. */
function findAndModifyThroughTurnstile(model: Model<CountedRecord>) {
  const { collection } = model;
  const findOneAndUpdate = collection.findOneAndUpdate.bind(collection) as (...args: unknown[]) => Promise<unknown>;
  Object.assign(collection, {
    findOneAndUpdate: async (...args: unknown[]) => {
      await turnstile.enter();
      return findOneAndUpdate(...args);
    },
  });
}

/** Real MongoDB runs the statements of one bulk write each on its own: others may run between them. */
function statementByStatement(model: Model<CountedRecord>) {
  const bulkWrite = model.bulkWrite.bind(model);
  Object.assign(model, {
    bulkWrite: async (ops: Parameters<typeof bulkWrite>[0], options?: Parameters<typeof bulkWrite>[1]) => {
      for (const op of ops) await bulkWrite([op], options);
    },
  });
}

beforeAll(async () => {
  videos = videoModel(s.mongo);
  records = interactionModels(s.mongo);
  await Promise.all([videos.init(), ...Object.values(records).map((m) => m.init())]);
  for (const model of Object.values(records)) {
    statementByStatement(model as Model<CountedRecord>);
    findAndModifyThroughTurnstile(model as Model<CountedRecord>);
  }
  // A crashed tally (InjectedCrash) leaves its records dirty, as a process killed there would.
  // A catalog per read: the feed's one batches a loop turn's misses of several requests into one
  // query, which the turnstile would count as one waiting command for two requests.
  replicas = [0, 1].map(() => {
    // No pause between a video's tallies: it only delays them, and the turnstile would wait it out.
    const tallies = new CounterTallies({ videos, records, hooks, onError: () => undefined, pauseMs: 0 });
    return { tallies, service: new InteractionService({ catalog: { load: (ids, budget) => new VideoCatalog({ model: videos, ttlMs: 0 }).load(ids, budget) }, records, tallies, hooks }) };
  });
});

type Toggle = 'like' | 'unlike' | 'collect' | 'uncollect';
type Command =
  | { op: Toggle | 'share'; user: number; video: number; crash: CrashPoint }
  | { op: 'comment'; user: number; video: number; key: number | null; crash: CrashPoint }
  | { op: 'deleteComment'; user: number; pick: number; crash: CrashPoint };

const TOGGLES: Record<Toggle, { kind: 'likes' | 'collects'; on: boolean }> = {
  like: { kind: 'likes', on: true },
  unlike: { kind: 'likes', on: false },
  collect: { kind: 'collects', on: true },
  uncollect: { kind: 'collects', on: false },
};

const crash = fc.constantFrom<CrashPoint>('none', 'none', 'none', 'afterRecord', 'beforeTally');
const command = (users: number, videoCount: number): fc.Arbitrary<Command> => {
  const user = fc.nat({ max: users - 1 });
  const video = fc.nat({ max: videoCount - 1 });
  return fc.oneof(
    { weight: 6, arbitrary: fc.record({ op: fc.constantFrom<Toggle>('like', 'unlike', 'collect', 'uncollect'), user, video, crash }) },
    { weight: 2, arbitrary: fc.record({ op: fc.constant('comment' as const), user, video, key: fc.option(fc.nat({ max: 1 })), crash }) },
    { weight: 1, arbitrary: fc.record({ op: fc.constant('deleteComment' as const), user, pick: fc.nat({ max: 3 }), crash }) },
    { weight: 2, arbitrary: fc.record({ op: fc.constant('share' as const), user, video, crash }) },
  );
};
/** One user's taps on one video, all in flight together (double taps, two devices), plus another command. */
const doubleTaps = (users: number, videoCount: number): fc.Arbitrary<Command[]> =>
  fc
    .record({
      user: fc.nat({ max: users - 1 }),
      video: fc.nat({ max: videoCount - 1 }),
      ops: fc.constantFrom<Array<Toggle>>(['like', 'unlike'], ['collect', 'uncollect']).chain((pair) => fc.array(fc.constantFrom(...pair), { minLength: 2, maxLength: 4 })),
      crashes: fc.array(crash, { minLength: 4, maxLength: 4 }),
      other: fc.option(command(users, videoCount)),
    })
    .map(({ user, video, ops, crashes, other }) => [...ops.map((op, i): Command => ({ op, user, video, crash: crashes[i] })), ...(other ? [other] : [])]);

const program = fc
  .record({ users: fc.integer({ min: 2, max: 6 }), videos: fc.integer({ min: 1, max: 3 }) })
  .chain(({ users, videos: videoCount }) =>
    fc.record({
      users: fc.constant(users),
      videos: fc.constant(videoCount),
      rounds: fc
        .tuple(fc.array(fc.oneof({ weight: 2, arbitrary: fc.array(command(users, videoCount), { minLength: 1, maxLength: 6 }) }, { weight: 3, arbitrary: doubleTaps(users, videoCount) }), { minLength: 1, maxLength: 6 }), fc.boolean())
        // Half the programs crash nowhere: their counters must be exact before the repair too.
        .map(([rounds, crashes]) => (crashes ? rounds : rounds.map((round) => round.map((cmd) => ({ ...cmd, crash: 'none' as const }))))),
      schedule: fc.infiniteStream(fc.nat()),
    }),
  );

/**
 * One user's taps alone, 3-4 in flight together on a video (already liked or collected, or not
 * yet), with no crash: the case of a double tap answered 500 (a duplicate key on a second upsert),
 * which the general programs reach only once in tens of runs.
 */
const tapsOnly = fc
  .record({
    ops: fc.constantFrom<Array<Toggle>>(['like', 'unlike'], ['collect', 'uncollect']).chain(([on, off]) =>
      fc
        .tuple(fc.boolean(), fc.array(fc.array(fc.constantFrom(on, off), { minLength: 3, maxLength: 4 }), { minLength: 2, maxLength: 4 }))
        .map(([likedBefore, rounds]) => (likedBefore ? [[on], ...rounds] : rounds)),
    ),
    schedule: fc.infiniteStream(fc.nat()),
  })
  .map(({ ops, schedule }) => ({ users: 1, videos: 1, rounds: ops.map((round) => round.map((op): Command => ({ op, user: 0, video: 0, crash: 'none' }))), schedule }));

/** What must be true of one video: the model (plain data). */
interface VideoModelState {
  /** likes/collects: per user, whether they ever succeeded and the states their record may be in now. */
  toggles: Record<'likes' | 'collects', Map<string, { ever: boolean; states: Set<boolean> }>>;
  /** Comment identities published: `user|key` for a keyed one, one entry per request without a key. */
  comments: Set<string>;
  deletedComments: Set<string>;
  sharers: Set<string>;
}

let runs = 0;

async function runProgram({ users, videos: videoCount, rounds, schedule }: { users: number; videos: number; rounds: Command[][]; schedule: fc.Stream<number> }) {
  const run = ++runs;
  const userIds = Array.from({ length: users }, (_, i) => `r${run}-u${i}`);
  const inserted = await videos.insertMany(Array.from({ length: videoCount }, () => demoVideo()));
  const vids = inserted.map((doc) => doc._id as Types.ObjectId);
  const model: VideoModelState[] = vids.map(() => ({ toggles: { likes: new Map(), collects: new Map() }, comments: new Set(), deletedComments: new Set(), sharers: new Set() }));
  /** Comments a user was told about: id and video. */
  const known = new Map<string, Array<{ id: string; video: number }>>();
  const history: string[] = [];
  const draws = schedule[Symbol.iterator]();
  let keyless = 0;

  for (const [r, round] of rounds.entries()) {
    // Fixed before the round runs: a deletion names a comment the user learnt of earlier.
    const targets = round.map((cmd) => (cmd.op === 'deleteComment' ? known.get(userIds[cmd.user])?.at(cmd.pick % Math.max(1, known.get(userIds[cmd.user])?.length ?? 1)) : undefined));
    const execute = (cmd: Command, i: number): Promise<unknown> => {
      const userId = userIds[cmd.user];
      const { service } = replicas[cmd.user % 2];
      switch (cmd.op) {
        case 'like':
          return service.like(vids[cmd.video].toHexString(), userId, budget());
        case 'unlike':
          return service.unlike(vids[cmd.video].toHexString(), userId, budget());
        case 'collect':
          return service.collect(vids[cmd.video].toHexString(), userId, budget());
        case 'uncollect':
          return service.uncollect(vids[cmd.video].toHexString(), userId, budget());
        case 'share':
          return service.share(vids[cmd.video].toHexString(), userId, budget());
        case 'comment':
          return service.comment(vids[cmd.video].toHexString(), userId, 'hi', budget(), cmd.key === null ? undefined : `key-${userId}-${cmd.video}-${cmd.key}`);
        case 'deleteComment':
          return targets[i] ? service.deleteComment(targets[i].id, userId, budget()) : Promise.resolve('skipped');
      }
    };
    const outcomes = await turnstile.run(
      round.map((cmd, i) => () => crashPlan.run(cmd.crash, () => execute(cmd, i))),
      (n) => draws.next().value % n,
      () => replicas.reduce((sum, { tallies }) => sum + (Reflect.get(tallies, 'running') as Map<string, unknown>).size, 0),
    );

    /** Per user, video and kind: the toggles of this round that took effect (a crash after the record write did). */
    const toggled = new Map<string, { kind: 'likes' | 'collects'; video: number; user: string; on: Set<boolean> }>();
    for (const [i, cmd] of round.entries()) {
      const outcome = outcomes[i];
      const told = outcome.ok ? JSON.stringify(outcome.value) : outcome.error instanceof InjectedCrash ? 'crash' : String(outcome.error);
      history.push(`round ${r}: ${JSON.stringify(cmd)} -> ${told}`);
      if (!outcome.ok && !(outcome.error instanceof InjectedCrash)) {
        const status = outcome.error instanceof AppError ? outcome.error.status : 500;
        throw new Error(`${status} for ${JSON.stringify(cmd)}: ${String(outcome.error)}\n${history.join('\n')}`);
      }
      const userId = userIds[cmd.user];
      if (cmd.op === 'deleteComment') {
        const target = targets[i];
        if (target) model[target.video].deletedComments.add(target.id);
        continue;
      }
      const state = model[cmd.video];
      if (cmd.op === 'share') state.sharers.add(userId);
      else if (cmd.op === 'comment') {
        state.comments.add(cmd.key === null ? `keyless-${keyless++}` : `${userId}|${cmd.key}`);
        if (outcome.ok) known.set(userId, [...(known.get(userId) ?? []), { id: (outcome.value as { commentId: string }).commentId, video: cmd.video }]);
      } else {
        const { kind, on } = TOGGLES[cmd.op];
        const key = `${kind}|${cmd.video}|${userId}`;
        const entry = toggled.get(key) ?? { kind, video: cmd.video, user: userId, on: new Set<boolean>() };
        entry.on.add(on);
        toggled.set(key, entry);
      }
    }
    // Requests of one round were in flight together: the last record write may be any of them.
    for (const { kind, video, user, on } of toggled.values()) {
      const users = model[video].toggles[kind];
      const previous = users.get(user) ?? { ever: false, states: new Set([false]) };
      users.set(user, { ever: previous.ever || on.has(true), states: on });
    }
  }

  await Promise.all(replicas.map(({ tallies }) => tallies.idle()));
  // Without a crash the tallies behind the requests leave the counters exact on their own.
  if (rounds.every((round) => round.every((cmd) => cmd.crash === 'none'))) await checkAgainstModel(vids, model, ['(before the repair)', ...history], false);
  await repairPendingCounters(videos, records, { minAgeMs: 0 });
  await checkAgainstModel(vids, model, history, true);
}

async function checkAgainstModel(vids: Types.ObjectId[], model: VideoModelState[], history: string[], repaired: boolean) {
  const problems: string[] = [];
  for (const [v, videoId] of vids.entries()) {
    const video = (await videos.findById(videoId).lean()) as Record<string, unknown> | null;
    const counter = (name: string) => Number(video?.[name] ?? 0);
    const state = model[v];
    const expect = (what: string, actual: unknown, wanted: unknown) => {
      if (actual !== wanted) problems.push(`video ${v}: ${what} is ${String(actual)}, want ${String(wanted)}`);
    };
    for (const kind of ['likes', 'collects'] as const) {
      const { recommend, display } = COUNTER_KINDS[kind];
      const users = state.toggles[kind];
      const stored = await records[kind].find({ videoId }).lean();
      const ever = [...users].filter(([, u]) => u.ever).map(([user]) => user);
      expect(`${recommend} (users that ever succeeded)`, counter(recommend), ever.length);
      expect(`${kind} records`, stored.map((rec) => rec.userId).sort().join(','), [...ever].sort().join(','));
      for (const rec of stored) {
        const possible = users.get(rec.userId)?.states;
        if (!possible?.has(rec.active)) problems.push(`video ${v}: ${rec.userId}'s ${kind} record is active=${rec.active}, the model allows ${[...(possible ?? [])].join('/')}`);
      }
      expect(`${display} (active at the end)`, counter(display), stored.filter((rec) => rec.active).length);
    }
    const comments = await records.comments.find({ videoId }).lean();
    expect('recommendCommentCount', counter('recommendCommentCount'), state.comments.size);
    expect('comment records', comments.length, state.comments.size);
    const published = comments.filter((rec) => !state.deletedComments.has(rec._id.toHexString()));
    expect('commentCount', counter('commentCount'), published.length);
    for (const rec of comments) expect(`comment ${rec._id.toHexString()} status`, rec.status, published.includes(rec) ? 'published' : 'deleted');
    expect('recommendShareCount', counter('recommendShareCount'), state.sharers.size);
    expect('shareCount', counter('shareCount'), state.sharers.size);
    for (const kind of Object.keys(COUNTER_KINDS) as CounterKind[]) {
      for (const rec of await (records[kind] as Model<CountedRecord>).find({ videoId }).lean()) {
        if (repaired && rec.dirty) problems.push(`video ${v}: ${kind} record of ${rec.userId} still dirty after the repair`);
      }
    }
  }
  if (problems.length > 0) throw new Error(`${problems.join('\n')}\nhistory:\n${history.join('\n')}`);
}

const seed = Number(process.env.MODEL_SEED ?? (process.env.CI ? 33 : Math.floor(Math.random() * 2 ** 31)));
const numRuns = Number(process.env.MODEL_RUNS ?? 25);

it('when users like, unlike, collect, comment, delete and share concurrently with crashes, then after the repair every counter matches the model', async () => {
  console.log(`interaction model: seed ${seed}, ${numRuns} runs (MODEL_SEED=${seed} replays)`);
  await fc.assert(fc.asyncProperty(program, runProgram), { seed, numRuns, path: process.env.MODEL_PATH, endOnFailure: false });
}, Math.max(600_000, numRuns * 5_000));

it("when one user's taps of like and unlike (or collect and uncollect) are in flight together, then every one is answered and the counters match the model", async () => {
  console.log(`interaction model, taps only: seed ${seed}, ${numRuns} runs (MODEL_SEED=${seed} replays)`);
  await fc.assert(fc.asyncProperty(tapsOnly, runProgram), { seed, numRuns, path: process.env.MODEL_PATH, endOnFailure: false });
}, Math.max(600_000, numRuns * 5_000));
