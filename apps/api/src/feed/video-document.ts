/**
 * The one reader of video documents on the read path (SPEC R1a, C), for every strategy, explain
 * and the counters. Nothing stored is trusted: no ObjectId `_id`, skipped; dates and counters of
 * any numeric BSON type count by value (the build's rule), anything else is 0 or absent, reported
 * so the caller counts it.
 */
import { counterValue, dateValue, numericValue } from '@feed/domain';
import { mongo, Types } from 'mongoose';

/** What was odd about a document: the labels it adds to `feed_skipped_videos_total`. */
export type DocumentIssue = 'unreadable_id' | 'non_numeric_field';

export type ReadDocument = { video: CatalogVideo; issue: 'non_numeric_field' | null } | { video: null; issue: 'unreadable_id' };

const COUNTERS = ['likeCount', 'collectCount', 'commentCount', 'shareCount', 'fakeLikeCount', 'fakeCommentCount', 'fakeShareCount'] as const;
const FLAGS = ['vip', 'coin', 'isAd', 'special'] as const;
const TEXTS = ['title', 'coverUrl', 'playUrl', 'authorId'] as const;

/** A video document as the read path uses it: every field of a known type. */
export type CatalogVideo = Record<(typeof TEXTS)[number], string> &
  Record<(typeof FLAGS)[number], boolean> &
  Record<(typeof COUNTERS)[number], number> & {
    _id: Types.ObjectId;
    durationSec: number;
    newsType: string | null;
    status: string | null;
    deleted: boolean;
    /** Epoch milliseconds of approval, by value; null when not a date or a number. */
    reviewAt: number | null;
  };

/** The document's `_id` when it is an ObjectId (the driver's, or another copy of the bson library's). */
export function objectIdOf(value: unknown): Types.ObjectId | null {
  if (value instanceof mongo.ObjectId) return value;
  if (typeof value === 'object' && value !== null && (value as { _bsontype?: unknown })._bsontype === 'ObjectId') {
    const hex = (value as { toHexString?: () => unknown }).toHexString?.();
    if (typeof hex === 'string' && /^[0-9a-f]{24}$/.test(hex)) return new Types.ObjectId(hex);
  }
  return null;
}

/** A 24-hex id as an ObjectId, or null (an id from Redis is not trusted either). */
export function parseVideoId(id: string): Types.ObjectId | null {
  return /^[0-9a-f]{24}$/.test(id) ? new Types.ObjectId(id) : null;
}

/** Reads a deserialised document (any field may hold any BSON value, or be missing). */
export function readVideoDocument(document: Readonly<Record<string, unknown>>): ReadDocument {
  const _id = objectIdOf(document._id);
  if (!_id) return { video: null, issue: 'unreadable_id' };
  let odd = false;
  const counter = (field: (typeof COUNTERS)[number] | 'durationSec'): number => {
    const value = document[field];
    if (value === undefined) return 0;
    if (numericValue(value) === null) odd = true;
    return counterValue(value);
  };
  const text = (field: (typeof TEXTS)[number] | 'status' | 'newsType'): string | null => {
    const value = document[field];
    return typeof value === 'string' ? value : null;
  };
  const rawReviewAt = document.reviewAt;
  const reviewAt = rawReviewAt === undefined || rawReviewAt === null ? null : dateValue(rawReviewAt);
  if (reviewAt === null && rawReviewAt !== undefined && rawReviewAt !== null) odd = true;
  const video = {
    _id,
    title: text('title') ?? '',
    coverUrl: text('coverUrl') ?? '',
    playUrl: text('playUrl') ?? '',
    authorId: text('authorId') ?? '',
    durationSec: counter('durationSec'),
    newsType: text('newsType'),
    status: text('status'),
    // R1's filter is `deleted: {$ne: true}`: only a true boolean deletes.
    deleted: document.deleted === true,
    reviewAt,
  } as CatalogVideo;
  for (const flag of FLAGS) video[flag] = document[flag] === true;
  for (const field of COUNTERS) video[field] = counter(field);
  return { video, issue: odd ? 'non_numeric_field' : null };
}
