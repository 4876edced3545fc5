--[[
  extend-lock: renews a lock's expiry only while the caller still owns it (the build's heartbeat).

  KEYS[1] the lock key (recommend:short:build-lock:{V})
  ARGV[1] the owner token written by SET NX PX
  ARGV[2] the new expiry in milliseconds

  Reply: 1 when renewed, 0 when the lock expired or belongs to someone else.
]]
if redis.call('GET', KEYS[1]) == ARGV[1] then
  return redis.call('PEXPIRE', KEYS[1], ARGV[2])
end
return 0
