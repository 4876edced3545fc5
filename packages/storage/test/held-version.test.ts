/** The held version's record (R23): a record that cannot be read is said so in the log, not silently "none held". */
import { logger } from '@feed/logger';
import { readHeldVersion } from '../src';
import { useTestServices } from '../../../test/support/services';

const s = useTestServices('held-version');

afterEach(() => jest.restoreAllMocks());

describe('reading the held version', () => {
  it.each([
    ['not JSON', '{"version":'],
    ['JSON without a build id', '{"version":"20260724"}'],
    ['JSON null', 'null'],
  ])('when the record is %s, then it reads as none held and a warning names the key', async (_case, record) => {
    const warn = jest.spyOn(logger, 'warn').mockImplementation(() => logger);
    await s.redis.set(s.keys.held, record);
    expect(await readHeldVersion(s.redis, s.keys)).toBeNull();
    expect(warn).toHaveBeenCalledWith('held version record unreadable: read as none held', expect.objectContaining({ key: s.keys.held }));
  });

  it('when the record is whole, then it is read without a warning', async () => {
    const warn = jest.spyOn(logger, 'warn').mockImplementation(() => logger);
    await s.redis.set(s.keys.held, JSON.stringify({ version: '20260724', buildId: 'b1' }));
    expect(await readHeldVersion(s.redis, s.keys)).toMatchObject({ version: '20260724', buildId: 'b1' });
    expect(warn).not.toHaveBeenCalled();
  });
});
