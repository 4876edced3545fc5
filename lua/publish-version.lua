--[[
  publish-version: makes a build's staged queue, scores and meta the version's keys, in one step,
  only while the build still holds its lock (SPEC R10).

  KEYS[1] the build lock (recommend:short:build-lock:{V})
  KEYS[2] the build's staging queue (recommend:short:queue:{V}:staging:<token>)
  KEYS[3] the build's staging scores (recommend:short:scores:{V}:staging:<token>)
  KEYS[4] the build's staging meta (recommend:short:meta:{V}:staging:<token>)
  KEYS[5] the target queue (recommend:short:queue:{V}, or its :shadow key)
  KEYS[6] the target scores (recommend:short:scores:{V}, or its :shadow key)
  KEYS[7] the target meta (recommend:short:meta:{V}, or its :shadow key)
  ARGV[1] the build's lock token
  ARGV[2] the expiry of the published keys, in seconds from now
  ARGV[3] the queue length the build wrote (meta.length)
  ARGV[4] (a promote: KEYS[2..4] are the version's shadow keys) the held build: the source meta's
          buildId must be it, and the published meta says it is live (shadow 0)

  Reply: 1 when published. Errors (nothing changed): LOCK_LOST when the lock expired or
  belongs to another build; BUILD_CHANGED when the source is not the held build ARGV[4] (another
  shadow build replaced it, or it expired); LENGTH_MISMATCH when the staged queue, scores or
  meta disagree with ARGV[3].

  The length check is the script's own copy of "complete" (VersionStore.completeness in
  packages/storage/src/version-store.ts: the queue holds meta.length ids), made here because it
  must be atomic with the rename; it also checks the scores, which the TS definition leaves out,
  and leaves meta.length > 0 to the build's verify step. Change both together.

  All keys carry the version's hash tag: one slot, so this runs on Redis Cluster too. The
  version's offset buckets have slots of their own (R22): the build gives them their expiry.
]]
if redis.call('GET', KEYS[1]) ~= ARGV[1] then
  return redis.error_reply('LOCK_LOST the build lock expired or belongs to another build')
end
if ARGV[4] and redis.call('HGET', KEYS[4], 'buildId') ~= ARGV[4] then
  return redis.error_reply('BUILD_CHANGED the shadow keys are not the held build ' .. ARGV[4])
end
local length = tonumber(ARGV[3])
local written = redis.call('LLEN', KEYS[2])
local scores = redis.call('LLEN', KEYS[3])
local metaLength = tonumber(redis.call('HGET', KEYS[4], 'length') or '-1')
if written ~= length or scores ~= length or metaLength ~= length then
  return redis.error_reply('LENGTH_MISMATCH staged queue ' .. written .. ', scores ' .. scores .. ', meta.length ' .. metaLength .. ', built ' .. length)
end
redis.call('RENAME', KEYS[2], KEYS[5])
redis.call('RENAME', KEYS[3], KEYS[6])
redis.call('RENAME', KEYS[4], KEYS[7])
for i = 5, 7 do
  redis.call('EXPIRE', KEYS[i], ARGV[2])
end
if ARGV[4] then
  redis.call('HSET', KEYS[7], 'shadow', '0')
end
return 1
