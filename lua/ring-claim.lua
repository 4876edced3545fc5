--[[
  ring-claim: claims the next `count` positions of one version's ring queue for one user.

  KEYS[1] recommend:short:queue:{V}   LIST of video ids
  KEYS[2] recommend:short:offset:{V}  HASH user -> next offset
  ARGV[1] user key (field in the offset hash)
  ARGV[2] count: positions to claim (the caller never asks for more than one circle)
  ARGV[3] deadline: epoch milliseconds past which the caller no longer waits for this claim
          (0 = none). Run later than that by Redis's clock (TIME), the claim moves nothing:
          the caller has served another page, and positions are consumed only when served (R11).

  Reply: { length, oldOffset, id1, ..., idN } with N = min(count, length), in ring order
  starting at oldOffset and wrapping at the tail; the user's offset moves to
  (oldOffset + N) % length. { length, -1 } when run past the deadline (nothing moved);
  { 0 } when the queue does not exist (version gone).

  Both keys carry the version hash tag, so this runs unchanged on Redis Cluster.
]]
local length = redis.call('LLEN', KEYS[1])
if length == 0 then
  return { 0 }
end

local deadline = tonumber(ARGV[3] or '0') or 0
if deadline > 0 then
  local now = redis.call('TIME')
  if tonumber(now[1]) * 1000 + math.floor(tonumber(now[2]) / 1000) > deadline then
    return { length, -1 }
  end
end

local offset = (tonumber(redis.call('HGET', KEYS[2], ARGV[1]) or '0') or 0) % length
local count = math.min(tonumber(ARGV[2]), length)

local reply = { length, offset }
local last = offset + count - 1
local ids
if last < length then
  ids = redis.call('LRANGE', KEYS[1], offset, last)
else
  ids = redis.call('LRANGE', KEYS[1], offset, length - 1)
  local wrapped = redis.call('LRANGE', KEYS[1], 0, last - length)
  for i = 1, #wrapped do ids[#ids + 1] = wrapped[i] end
end
for i = 1, #ids do reply[#reply + 1] = ids[i] end

redis.call('HSET', KEYS[2], ARGV[1], (offset + count) % length)
-- The offset hash is created by the first claim: give it the queue's expiry (R10).
if redis.call('PTTL', KEYS[2]) == -1 then
  local ttl = redis.call('PTTL', KEYS[1])
  if ttl > 0 then redis.call('PEXPIRE', KEYS[2], ttl) end
end
return reply
