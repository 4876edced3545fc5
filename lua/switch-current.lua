--[[
  switch-current: moves `current` to a version by compare-and-set (SPEC R10): never to a version
  older than the one it holds unless asked; the version it replaces becomes `previous`.

  KEYS[1] recommend:short:current
  KEYS[2] {recommend:short:current}:previous (hash tag: the same slot as current)
  ARGV[1] the version to make current (YYYYMMDD: string order is date order)
  ARGV[2] '1' to allow a version older than current (an explicit switch), else '0'

  Reply: { 1, replaced } when switched (replaced is current before, or false), or
  { 0, current } when current holds a newer version and no switch was asked.
]]
local current = redis.call('GET', KEYS[1])
if current and ARGV[1] < current and ARGV[2] ~= '1' then
  return { 0, current }
end
redis.call('SET', KEYS[1], ARGV[1])
if current and current ~= ARGV[1] then
  redis.call('SET', KEYS[2], current)
end
return { 1, current }
