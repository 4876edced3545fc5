/**
 * The limit side of `pnpm bench likes`, in its own process: Express reading the JSON body, a
 * verified HS256 token, one mongoose upsert of the user's record on its unique key (lean) and
 * one `$inc` on the video. What a like cannot cost less than on this stack.
 */
import express from 'express';
import jwt from 'jsonwebtoken';
import mongoose, { Schema } from 'mongoose';

async function main(): Promise<void> {
  const mongo = await mongoose.createConnection(process.env.MONGO_URL!, { minPoolSize: 100, maxPoolSize: 100 }).asPromise();
  const records = mongo.model('LimitLike', new Schema({ userId: String, videoId: Schema.Types.ObjectId, active: Boolean }, { collection: 'limitlikes' }));
  await records.collection.createIndex({ userId: 1, videoId: 1 }, { unique: true });
  const videos = mongo.collection('videos');
  const secret = process.env.AUTH_JWT_SECRET!;
  const app = express();
  app.use(express.json({ limit: '16kb' }));
  app.get('/cpu', (_req, res) => void res.json(process.cpuUsage()));
  app.post('/api/app/vid/:action', async (req, res) => {
    const { sub } = jwt.verify(/^Bearer (.+)$/.exec(req.header('authorization') ?? '')![1], secret) as { sub: string };
    const videoId = new mongoose.Types.ObjectId(String((req.body as { vid: string }).vid));
    const active = req.params.action === 'like';
    const before = await records.findOneAndUpdate({ userId: sub, videoId }, { $set: { active } }, { upsert: true, returnDocument: 'before' }).lean();
    if (before?.active !== active) await videos.updateOne({ _id: videoId }, { $inc: { limitLikes: active ? 1 : -1 } });
    res.json({ active, changed: before?.active !== active });
  });
  const server = app.listen({ port: Number(process.env.PORT), host: '127.0.0.1', backlog: 4096 }, () => process.stdout.write(`listening ${process.env.PORT}\n`));
  process.once('SIGTERM', () => server.close(() => process.exit(0)));
}

void main();
