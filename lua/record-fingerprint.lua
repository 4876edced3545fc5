--[[
  record-fingerprint: appends a video's 4-byte fingerprint to a user's bounded list, moving it
  to the newest end when already present, dropping the oldest beyond the bound.

  KEYS[1] the user's blob (recommend:short:views:{user} or recommend:short:not-interested:{user})
  ARGV[1] the 4-byte fingerprint (binary)
  ARGV[2] maximum number of entries kept
  ARGV[3] expiry in milliseconds, refreshed on every write

  Reply: the number of entries now stored.
]]
local blob = redis.call('GET', KEYS[1]) or ''
local fingerprint = ARGV[1]
local kept = {}
for i = 1, #blob, 4 do
  local entry = string.sub(blob, i, i + 3)
  if entry ~= fingerprint then kept[#kept + 1] = entry end
end
kept[#kept + 1] = fingerprint
local first = math.max(1, #kept - tonumber(ARGV[2]) + 1)
redis.call('SET', KEYS[1], table.concat(kept, '', first, #kept), 'PX', ARGV[3])
return #kept - first + 1
