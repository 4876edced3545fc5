import { demoVideo } from '@feed/demo-data';
import { initRecommendHistory, videoModel, type VideoModel } from '../src';
import { useTestServices } from '../../../test/support/services';

const s = useTestServices('history');
let videos: VideoModel;

beforeAll(() => {
  videos = videoModel(s.mongo);
});

describe('init-history (R5)', () => {
  it('when run over a few thousand videos, then recommend counters = max(display, 0), fake never read, second run changes nothing', async () => {
    const docs = Array.from({ length: 3000 }, (_, i) =>
      demoVideo({
        likeCount: i % 7 === 0 ? -3 : i,
        collectCount: i % 5,
        commentCount: i % 11,
        shareCount: i % 3,
        fakeLikeCount: 1_000_000,
        fakeCommentCount: 1_000_000,
        fakeShareCount: 1_000_000,
      }),
    );
    await videos.insertMany(docs);
    const progress: number[] = [];
    const first = await initRecommendHistory(s.mongo, videos, (n) => progress.push(n));
    expect(first.initialised).toBe(3000);
    expect(progress.length).toBeGreaterThanOrEqual(3);

    const sample = await videos.find({}).lean();
    for (const v of sample) {
      expect(v.recommendLikeCount).toBe(Math.max(v.likeCount ?? 0, 0));
      expect(v.recommendCollectCount).toBe(v.collectCount);
      expect(v.recommendCommentCount).toBe(v.commentCount);
      expect(v.recommendShareCount).toBe(v.shareCount);
    }

    // Live events after the first run raise a counter; display counters move too.
    const live = sample[10]._id;
    await videos.updateOne({ _id: live }, { $inc: { recommendLikeCount: 5, likeCount: -2 } });
    const liveBefore = (await videos.findById(live).lean())!.recommendLikeCount;

    const second = await initRecommendHistory(s.mongo, videos);
    expect(second.initialised).toBe(0);
    expect(second.previouslyCompletedAt).toBeInstanceOf(Date);
    expect((await videos.findById(live).lean())!.recommendLikeCount).toBe(liveBefore);
    const marker = await s.mongo.collection('migrations').findOne({ _id: 'recommend-history-init' as never });
    expect(marker).toMatchObject({ version: 1, initialised: 3000 });
  });

  it('when live events raised a counter before the first run, then initialisation never lowers it', async () => {
    const [doc] = await videos.insertMany([demoVideo({ likeCount: 2, recommendLikeCount: 9 })]);
    await initRecommendHistory(s.mongo, videos);
    expect((await videos.findById(doc._id).lean())!.recommendLikeCount).toBe(9);
  });
});
