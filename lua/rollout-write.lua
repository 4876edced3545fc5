--[[
  rollout-write: every write of the rollout override (SPEC R16, R23) in one atomic step with its
  revision bump. A human's change (a manual percent, the kill switch, a clear) is unconditional;
  the ramp's write is made only when the revision is still the one the ramp observed, so a human
  change that landed after the ramp's read is never overwritten by it (and none can land between
  a write and its bump).

  KEYS[1] the override's hash (recommend:short:rollout): fields enabled, percent, revision
  ARGV[1] the revision the writer observed ('0' when the hash had none), or '' for any
  ARGV[2] 'set' (ARGV[3..] field, value pairs: enabled, percent) or 'clear' (removes both fields)

  Reply: 1 when written (the revision bumped), 0 when the revision is another (nothing written).
]]
if ARGV[1] ~= '' and (redis.call('HGET', KEYS[1], 'revision') or '0') ~= ARGV[1] then
  return 0
end
if ARGV[2] == 'clear' then
  redis.call('HDEL', KEYS[1], 'enabled', 'percent')
else
  local fields = {}
  for i = 3, #ARGV do
    fields[#fields + 1] = ARGV[i]
  end
  redis.call('HSET', KEYS[1], unpack(fields))
end
redis.call('HINCRBY', KEYS[1], 'revision', 1)
return 1
