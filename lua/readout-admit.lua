--[[
  readout-admit: decides whether one action of one client is counted by the V2 vs legacy readout
  (SPEC D7): once per client, video, variant and event over the client's hashes of today and the
  two days before (at least 48 h: the longest a step's readout sums), and at most a cap of
  counted actions per client, UTC hour, variant and event. Both live in the client's one hash of
  the day, so the state is a few dozen bytes per counted action and expires with it.

  KEYS[1] the client's readout hash of today (recommend:short:readout:{client}:YYYYMMDD)
  KEYS[2], KEYS[3] the client's hashes of the two days before (read only)
  ARGV[1] the first-success field (`variant:event:vid`), or '' for an action whose first success
          the caller already knows (a like, a collect, a comment with a new Idempotency-Key)
  ARGV[2] the hourly counter field (`HH:variant:event`)
  ARGV[3] the cap of counted actions per client, hour, variant and event
  ARGV[4] expiry of the hash in seconds (over three days), set on its first write

  Reply: 0 a repeat (not counted), -1 over the cap (not counted), 1 counted and the client's first
  counted action of that hour, variant and event, 2 counted.
]]
if ARGV[1] ~= '' then
  if redis.call('HEXISTS', KEYS[2], ARGV[1]) == 1 or redis.call('HEXISTS', KEYS[3], ARGV[1]) == 1 then return 0 end
  if redis.call('HSETNX', KEYS[1], ARGV[1], '1') == 0 then return 0 end
end
local counted = redis.call('HINCRBY', KEYS[1], ARGV[2], 1)
if redis.call('TTL', KEYS[1]) < 0 then redis.call('EXPIRE', KEYS[1], ARGV[4]) end
if counted > tonumber(ARGV[3]) then return -1 end
if counted == 1 then return 1 end
return 2
