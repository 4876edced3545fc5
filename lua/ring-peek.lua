--[[
  ring-peek: reads, without claiming, the positions a claim (ring-claim.lua) would take next for
  one user: explain and the inspector use it, so they show exactly what the feed would serve.

  KEYS[1] recommend:short:queue:{V}   LIST of video ids
  KEYS[2] recommend:short:offset:{V}  HASH user -> next offset
  ARGV[1] user key (field in the offset hash)
  ARGV[2] count: positions to read
  ARGV[3] skip: start this many positions past the user's offset

  Reply: { length, offset, id1, ..., idN } with N = min(count, length), in ring order from
  (offset + skip) % length, wrapping at the tail. { 0 } when the queue does not exist.
]]
local length = redis.call('LLEN', KEYS[1])
if length == 0 then
  return { 0 }
end
local offset = (tonumber(redis.call('HGET', KEYS[2], ARGV[1]) or '0') or 0) % length
local start = (offset + (tonumber(ARGV[3]) or 0)) % length
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
return reply
