--[[
  held-record: the release gate's held record (SPEC R23) and the shadow pointer, changed in one
  step. The record names the day on-call has to decide; a hold of an older day (a repair of an
  older current while the due day is held) never replaces a later day's record, and `shadow` then
  stays on the later day. Read-then-write in TypeScript, two holds at once could land in either order.

  KEYS[1] recommend:short:shadow
  KEYS[2] {recommend:short:shadow}:held (hash tag: the same slot as shadow)
  ARGV[1] 'hold' or 'clear'
  ARGV[2] the version (YYYYMMDD: string order is date order)
  hold:  ARGV[3] the record (JSON with version and buildId), ARGV[4] its expiry in seconds.
         Records it and points `shadow` at the version, unless a later day is held.
  clear: ARGV[3] '1' when only the record of exactly this version goes (a promote or a dismiss,
         which also drop a `shadow` pointing at it), '0' when any record up to it goes (it switched).

  Reply: the held version after the step (false when none).
]]
local held = false
local text = redis.call('GET', KEYS[2])
if text then
  local ok, record = pcall(cjson.decode, text)
  if ok and type(record) == 'table' and type(record.version) == 'string' and type(record.buildId) == 'string' then
    held = record.version
  end
end
local version = ARGV[2]
if ARGV[1] == 'hold' then
  if held and held > version then
    return held
  end
  redis.call('SET', KEYS[2], ARGV[3], 'EX', ARGV[4])
  redis.call('SET', KEYS[1], version)
  return version
end
if held == version or (ARGV[3] ~= '1' and held and held < version) then
  redis.call('DEL', KEYS[2])
  held = false
end
if ARGV[3] == '1' and redis.call('GET', KEYS[1]) == version then
  redis.call('DEL', KEYS[1])
end
return held
