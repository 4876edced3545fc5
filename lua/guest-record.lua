--[[
  guest-record: one guest device's record in its bucket (SPEC V1, R23, issue 52): first seen, the
  recent views' 4-byte fingerprints and the readout's hourly count of the device's first views.
  A record whose last write is older than the views' expiry has lapsed: it starts again as a new
  device. Each call also drops up to two lapsed records of the bucket, picked at random, so
  devices gone quiet leave a bucket that lives on.

  KEYS[1] the bucket (recommend:short:guests:{N})
  ARGV[1] the device's 8-byte field
  ARGV[2] the video's 4-byte fingerprint, or '' to record the device's sight only
  ARGV[3] the most fingerprints kept (the newest)
  ARGV[4] now, in hours since the epoch
  ARGV[5] the views' expiry in hours (a record lapses past it); ARGV[6] the same in ms, for the key
  ARGV[7] the readout's cap of counted first views per device and hour

  Record: big-endian u32 first-seen hour, u32 last-write hour, u32 cap hour, u16 cap count, fingerprints.
  Reply: {admitted, first-seen hour}; admitted is 0 for a sight or a video already among the
  views, -1 over the cap, 1 the device's first counted view of the hour, 2 counted.
]]
local now, ttl = tonumber(ARGV[4]), tonumber(ARGV[5])
local record = redis.call('HGET', KEYS[1], ARGV[1])
local first, capHour, capCount, body = now, now, 0, ''
if record and #record >= 14 then
  local f, last, h, c = struct.unpack('>I4I4I4I2', record)
  if last + ttl >= now then first, capHour, capCount, body = f, h, c, string.sub(record, 15) end
end
local kept, seen = {}, false
for i = 1, #body, 4 do
  local entry = string.sub(body, i, i + 3)
  if entry == ARGV[2] then seen = true else kept[#kept + 1] = entry end
end
local admitted = 0
if ARGV[2] ~= '' then
  kept[#kept + 1] = ARGV[2]
  if not seen then
    if capHour ~= now then capHour, capCount = now, 0 end
    capCount = math.min(capCount + 1, 65535)
    if capCount > tonumber(ARGV[7]) then admitted = -1 elseif capCount == 1 then admitted = 1 else admitted = 2 end
  end
end
local from = math.max(1, #kept - tonumber(ARGV[3]) + 1)
redis.call('HSET', KEYS[1], ARGV[1], struct.pack('>I4I4I4I2', first, now, capHour, capCount) .. table.concat(kept, '', from, #kept))
redis.call('PEXPIRE', KEYS[1], ARGV[6])
local sample = redis.call('HRANDFIELD', KEYS[1], 2, 'WITHVALUES')
for i = 1, #sample, 2 do
  if #sample[i + 1] >= 8 then
    local _, last = struct.unpack('>I4I4', sample[i + 1])
    if last + ttl < now then redis.call('HDEL', KEYS[1], sample[i]) end
  end
end
return {admitted, first}
