--[[
  push-ids: appends fixed-width ids, packed end to end in one argument, to a list or a set.

  KEYS[1] the list (RPUSH) or set (SADD)
  ARGV[1] 'RPUSH' or 'SADD'
  ARGV[2] the width of one id in bytes
  ARGV[3] the ids, concatenated

  Reply: the number of ids pushed. One packed argument per batch instead of one per id keeps
  the client's work per id to writing its hex digits (no string per id to make, encode or collect).
]]
local command, width, packed = ARGV[1], tonumber(ARGV[2]), ARGV[3]
local chunk, n, total = {}, 0, 0
for i = 1, #packed, width do
  n = n + 1
  chunk[n] = string.sub(packed, i, i + width - 1)
  -- unpack is bounded by Lua's C stack (LUAI_MAXCSTACK 8000): push in chunks.
  if n == 4000 then
    redis.call(command, KEYS[1], unpack(chunk, 1, n))
    total, n = total + n, 0
  end
end
if n > 0 then redis.call(command, KEYS[1], unpack(chunk, 1, n)) end
return total + n
