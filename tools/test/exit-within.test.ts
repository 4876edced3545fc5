/** The reliability suite's bound on a child process (tools/support/processes.ts): it waits for the exit, and kills a child that overstays. */
import { exited, exitWithin, startProcess } from '../support/processes';

describe('exitWithin', () => {
  it('when the child exits, then its exit code is returned', async () => {
    const child = startProcess(['-e', 'process.exit(3)'], {});
    await expect(exitWithin(child, 'a quick child', 60_000)).resolves.toBe(3);
  });

  it('when the child never exits, then it is killed and the wait fails naming it', async () => {
    const child = startProcess(['-e', 'setInterval(() => undefined, 1000)'], {});
    await expect(exitWithin(child, 'a stuck child', 100)).rejects.toThrow(/a stuck child did not exit within 0.1 s: killed/);
    await exited(child);
    expect(child.child.signalCode).toBe('SIGKILL');
  });
});
