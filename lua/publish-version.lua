--[[
  publish-version: makes a build's staged queue and meta the version's keys, in one step, only
  while the build still holds its lock (SPEC R10).

  KEYS[1] the build lock (recommend:short:build-lock:{V})
  KEYS[2] the build's staging queue (recommend:short:queue:{V}:staging:<token>)
  KEYS[3] the build's staging meta (recommend:short:meta:{V}:staging:<token>)
  KEYS[4] the target queue (recommend:short:queue:{V}, or its :shadow key)
  KEYS[5] the target meta (recommend:short:meta:{V}, or its :shadow key)
  KEYS[6] optional: the version's offset hash, given the same expiry when it exists (a forced
          rebuild keeps the offsets; a new version's hash is created by ring-claim with the
          queue's expiry)
  ARGV[1] the build's lock token
  ARGV[2] the expiry of the published keys, in seconds from now
  ARGV[3] the queue length the build wrote (meta.length)

  Reply: 1 when published. Errors (nothing changed): LOCK_LOST when the lock expired or
  belongs to another build; LENGTH_MISMATCH when the staged queue or meta disagree with ARGV[3].

  All keys carry the version's hash tag: one slot, so this runs on Redis Cluster too.
]]
if redis.call('GET', KEYS[1]) ~= ARGV[1] then
  return redis.error_reply('LOCK_LOST the build lock expired or belongs to another build')
end
local length = tonumber(ARGV[3])
local written = redis.call('LLEN', KEYS[2])
local metaLength = tonumber(redis.call('HGET', KEYS[3], 'length') or '-1')
if written ~= length or metaLength ~= length then
  return redis.error_reply('LENGTH_MISMATCH staged queue ' .. written .. ', meta.length ' .. metaLength .. ', built ' .. length)
end
redis.call('RENAME', KEYS[2], KEYS[4])
redis.call('RENAME', KEYS[3], KEYS[5])
redis.call('EXPIRE', KEYS[4], ARGV[2])
redis.call('EXPIRE', KEYS[5], ARGV[2])
if KEYS[6] then
  redis.call('EXPIRE', KEYS[6], ARGV[2])
end
return 1
