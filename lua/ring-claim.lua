--[[
  ring-claim: claims a user's next positions of one version's ring (SPEC R11, R22).

  KEYS[1] recommend:short:offset:{V:b}  HASH user field -> the user's cursor (the user's bucket)
  ARGV[1] the user's field (8 bytes of the user key's hash)
  ARGV[2] count: positions to claim (the caller never asks for more than one circle)
  ARGV[3] length: the published queue's length (meta.length)
  ARGV[4] the queue's expiry (epoch ms, 0 = none): a bucket created by this claim gets it, so
          offsets live exactly as long as the version (R10)

  The field holds the cursor (includes/ring-cursor.lua): an absolute position and the holes
  given back out of order (ring-unclaim.lua), served before the cursor moves on: every absolute
  position is served once, so over the circles [k * length, (k + 1) * length) no ring position
  is served twice and none is skipped, however the give-backs interleave with later claims.
  No clock is read: whether the caller still waits for the answer is the caller's business (R11).

  Reply: {start, count}: the absolute position of the first claimed position (its ring position
  is start % length) and how many were claimed from there (fewer than asked when they come from
  a hole).
]]
--- @include "ring-cursor"
local length = tonumber(ARGV[3])
local want = math.min(tonumber(ARGV[2]), length)
local state = redis.call('HGET', KEYS[1], ARGV[1])
local total = 0
local holes = {}
if state then
  total, holes = decodeCursor(state)
  -- A cursor that is no whole, non-negative count (written by hand, corrupted) starts again at 0:
  -- a negative start would be a negative ring position to the caller.
  if total < 0 or total ~= math.floor(total) then
    total = 0
    holes = {}
  end
end

local start, count
if #holes > 0 then
  local hole = holes[1]
  start = hole[1]
  count = math.min(want, hole[2] - hole[1])
  hole[1] = hole[1] + count
  if hole[1] >= hole[2] then table.remove(holes, 1) end
else
  start = total
  count = want
  total = total + want
end

redis.call('HSET', KEYS[1], ARGV[1], encodeCursor(total, holes))
local expiresAt = tonumber(ARGV[4]) or 0
if expiresAt > 0 and redis.call('PTTL', KEYS[1]) == -1 then
  redis.call('PEXPIREAT', KEYS[1], expiresAt)
end
return { start, count }
