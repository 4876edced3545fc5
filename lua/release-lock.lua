--[[
  release-lock: deletes a lock only when the caller still owns it.

  KEYS[1] the lock key (recommend:short:build-lock:{V})
  ARGV[1] the owner token written by SET NX PX

  Reply: 1 when released, 0 when the lock expired or belongs to someone else.
]]
if redis.call('GET', KEYS[1]) == ARGV[1] then
  return redis.call('DEL', KEYS[1])
end
return 0
