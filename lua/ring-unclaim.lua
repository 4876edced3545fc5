--[[
  ring-unclaim: gives back one claim whose page was never served (the API gave up waiting for
  the claim's answer and served a fallback page; the answer came later). Exact: it returns that
  claim's own positions, whatever other claims of the user ran since and on rings of any length,
  since positions are absolute (see ring-claim.lua): no two claims ever hold the same one.
    - the claim is the last one standing (it ends at the cursor): the cursor moves back to its
      start, and holes that then end at the cursor close up too;
    - later claims ran since: its positions become a hole, served first by the user's next
      claims (ring-claim.lua).

  KEYS[1] recommend:short:offset:{V:b}  HASH user field -> the user's cursor (the user's bucket)
  ARGV[1] the user's field
  ARGV[2] start: the claim's first absolute position (ring-claim's reply)
  ARGV[3] count: positions it claimed

  Reply: how many positions are left consumed unserved. 0 when the claim was given back in full
  (cursor moved back or hole kept); the claim's count when nothing was (the user's offset is
  gone: the version's offsets expired or were lost); the oldest hole's size when keeping this one
  pushed that hole out of the bound.
]]
--- @include "ring-cursor"
local MAX_HOLES = 16
local start = tonumber(ARGV[2])
local stop = start + tonumber(ARGV[3])
local state = redis.call('HGET', KEYS[1], ARGV[1])
if not state then return stop - start end
local total, holes = decodeCursor(state)
if stop > total then return stop - start end
local dropped = 0

if stop == total then
  total = start
  local closed = true
  while closed do
    closed = false
    for i, hole in ipairs(holes) do
      if hole[2] == total then
        total = hole[1]
        table.remove(holes, i)
        closed = true
        break
      end
    end
  end
else
  local at = #holes + 1
  for i, hole in ipairs(holes) do
    if hole[1] > start then
      at = i
      break
    end
  end
  table.insert(holes, at, { start, stop })
  -- Adjacent holes (pages given back one after another) are one.
  local merged = {}
  for _, hole in ipairs(holes) do
    local last = merged[#merged]
    if last and last[2] == hole[1] then last[2] = hole[2] else merged[#merged + 1] = hole end
  end
  holes = merged
  -- Bounded (a user with more than MAX_HOLES pages given back out of order): the oldest hole's positions stay consumed.
  if #holes > MAX_HOLES then
    dropped = holes[1][2] - holes[1][1]
    table.remove(holes, 1)
  end
end

redis.call('HSET', KEYS[1], ARGV[1], encodeCursor(total, holes))
return dropped
