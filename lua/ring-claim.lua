--[[
  ring-claim: claims a user's next `count` positions of one version's ring (SPEC R11, R22).

  KEYS[1] recommend:short:offset:{V:b}  HASH user field -> next offset (the user's bucket)
  ARGV[1] the user's field (8 bytes of the user key's hash)
  ARGV[2] count: positions to claim (the caller never asks for more than one circle)
  ARGV[3] length: the published queue's length (meta.length)
  ARGV[4] deadline: epoch milliseconds past which the caller no longer waits for this claim
          (0 = none). Run later than that by Redis's clock (TIME), the claim moves nothing:
          the caller has served another page, and positions are consumed only when served.
  ARGV[5] the queue's expiry (epoch ms, 0 = none): a bucket created by this claim gets it, so
          offsets live exactly as long as the version (R10)

  Reply: the user's offset before the claim; the offset moves to (offset + count) % length.
  -1 when run past the deadline (nothing moved).

  The ids at those positions are read from the immutable queue by the caller (its in-process
  copy, or LRANGE): the bucket has a hash tag of its own, so on Redis Cluster claims spread over
  every master, and this script touches one key.
]]
local deadline = tonumber(ARGV[4]) or 0
if deadline > 0 then
  local now = redis.call('TIME')
  if tonumber(now[1]) * 1000 + math.floor(tonumber(now[2]) / 1000) > deadline then
    return -1
  end
end

local length = tonumber(ARGV[3])
local offset = (tonumber(redis.call('HGET', KEYS[1], ARGV[1]) or '0') or 0) % length
local count = math.min(tonumber(ARGV[2]), length)
redis.call('HSET', KEYS[1], ARGV[1], (offset + count) % length)
local expiresAt = tonumber(ARGV[5]) or 0
if expiresAt > 0 and redis.call('PTTL', KEYS[1]) == -1 then
  redis.call('PEXPIREAT', KEYS[1], expiresAt)
end
return offset
