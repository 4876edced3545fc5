--[[
  ramp-save: stores the rollout ramp's state (SPEC R23) only when the revision stored is still
  the one the caller read, so a human's command and the driver's check never overwrite each other.

  KEYS[1] the ramp's hash (recommend:short:ramp): fields revision, state
  ARGV[1] the revision the caller read ('0' when it read no ramp)
  ARGV[2] the new revision
  ARGV[3] the new state (JSON)

  Reply: 1 when saved, 0 when the stored revision is another (nothing written).
]]
local stored = redis.call('HGET', KEYS[1], 'revision') or '0'
if stored ~= ARGV[1] then
  return 0
end
redis.call('HSET', KEYS[1], 'revision', ARGV[2], 'state', ARGV[3])
return 1
