/**
 * The double-tap program of issue 49, shared by the reliability check (tools/reliability/toggles.ts)
 * and `pnpm bench likes`: every user at once, each a like; then an unlike and a like sent together;
 * then a like; then every other user an unlike. `tap` sends one request and records its answer.
 */
export async function toggleBurst(users: string[], tap: (user: string, action: 'like' | 'unlike') => Promise<void>): Promise<void> {
  await Promise.all(
    users.map(async (user, i) => {
      await tap(user, 'like');
      await Promise.all([tap(user, 'unlike'), tap(user, 'like')]);
      await tap(user, 'like');
      if (i % 2 === 1) await tap(user, 'unlike');
    }),
  );
}
