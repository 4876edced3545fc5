--[[
  remove-fingerprint: removes a video's 4-byte fingerprint from a user's bounded list.

  KEYS[1] the user's blob (recommend:short:not-interested:{user})
  ARGV[1] the 4-byte fingerprint (binary)

  Reply: the number of entries removed (0 or 1).
]]
local blob = redis.call('GET', KEYS[1])
if not blob then return 0 end
local kept = {}
local removed = 0
for i = 1, #blob, 4 do
  local entry = string.sub(blob, i, i + 3)
  if entry == ARGV[1] then removed = removed + 1 else kept[#kept + 1] = entry end
end
if removed == 0 then return 0 end
if #kept == 0 then
  redis.call('DEL', KEYS[1])
else
  redis.call('SET', KEYS[1], table.concat(kept), 'KEEPTTL')
end
return removed
