--[[
  ring-read: claims the next `count` positions of one version's ring queue for one user.

  KEYS[1] recommend:short:queue:{V}   LIST of video ids
  KEYS[2] recommend:short:offset:{V}  HASH user -> next offset
  ARGV[1] user key (field in the offset hash)
  ARGV[2] count: positions to claim (the caller never asks for more than one circle)
  ARGV[3] optional 'peek': read only, the offset does not move (explain uses this, so it
          reads exactly what a claim would)
  ARGV[4] optional, with 'peek': start this many positions past the user's offset

  Reply: { length, oldOffset, id1, ..., idN } with N = min(count, length), in ring order
  starting at oldOffset (+ ARGV[4]) and wrapping at the tail; a claim moves the user's offset
  to (oldOffset + N) % length. { 0 } when the queue does not exist (version gone).

  Both keys carry the version hash tag, so this runs unchanged on Redis Cluster.
]]
local length = redis.call('LLEN', KEYS[1])
if length == 0 then
  return { 0 }
end

local peek = ARGV[3] == 'peek'
local offset = tonumber(redis.call('HGET', KEYS[2], ARGV[1]) or '0') or 0
offset = offset % length
local start = offset
if peek then start = (offset + (tonumber(ARGV[4] or '0') or 0)) % length end
local count = math.min(tonumber(ARGV[2]), length)

local reply = { length, offset }
local last = start + count - 1
local ids
if last < length then
  ids = redis.call('LRANGE', KEYS[1], start, last)
else
  ids = redis.call('LRANGE', KEYS[1], start, length - 1)
  local wrapped = redis.call('LRANGE', KEYS[1], 0, last - length)
  for i = 1, #wrapped do ids[#ids + 1] = wrapped[i] end
end
for i = 1, #ids do reply[#reply + 1] = ids[i] end
if peek then
  return reply
end

redis.call('HSET', KEYS[2], ARGV[1], (offset + count) % length)
-- The offset hash is created by the first read: give it the queue's expiry (R10).
if redis.call('PTTL', KEYS[2]) == -1 then
  local ttl = redis.call('PTTL', KEYS[1])
  if ttl > 0 then redis.call('PEXPIRE', KEYS[2], ttl) end
end
return reply
