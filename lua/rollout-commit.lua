--[[
  rollout-commit: the rollout override (SPEC R16) and the rollout ramp (R23) change together, in
  one step, over the revisions their writer read. Both keys share a hash slot (the ramp's key is
  tagged with the override's name), so a ramp's state and the percent it decides are never apart:
  a tick or a command that lost a race to another writer changes nothing, notices included.

  KEYS[1] the override's hash (recommend:short:rollout): fields enabled, percent, revision
  KEYS[2] the ramp's hash ({recommend:short:rollout}:ramp): fields revision, state
  ARGV[1] the ramp revision the writer read ('0' when it read none)
  ARGV[2] the override revision the writer read ('0' when none), or '' for any (a human's change)
  ARGV[3] the ramp's new revision, or '' to leave the ramp as it is
  ARGV[4] the ramp's new state (JSON), with ARGV[3]
  ARGV[5] 'set' (ARGV[6..] field, value pairs: enabled, percent), 'clear' (removes both) or 'none'

  Reply: 1 when written (the override's revision bumped when it changed), 0 when a revision is
  another than the one read (nothing written).
]]
-- A ramp key of another type (written by hand) is no ramp, as none is: revision '0', replaced by a new one.
local rampIsHash = redis.call('TYPE', KEYS[2]).ok == 'hash'
if (rampIsHash and redis.call('HGET', KEYS[2], 'revision') or '0') ~= ARGV[1] then
  return 0
end
if ARGV[2] ~= '' and (redis.call('HGET', KEYS[1], 'revision') or '0') ~= ARGV[2] then
  return 0
end
if ARGV[3] ~= '' then
  if not rampIsHash then
    redis.call('DEL', KEYS[2])
  end
  redis.call('HSET', KEYS[2], 'revision', ARGV[3], 'state', ARGV[4])
end
if ARGV[5] == 'clear' then
  redis.call('HDEL', KEYS[1], 'enabled', 'percent')
elseif ARGV[5] == 'set' then
  local fields = {}
  for i = 6, #ARGV do
    fields[#fields + 1] = ARGV[i]
  end
  redis.call('HSET', KEYS[1], unpack(fields))
end
if ARGV[5] ~= 'none' then
  redis.call('HINCRBY', KEYS[1], 'revision', 1)
end
return 1
