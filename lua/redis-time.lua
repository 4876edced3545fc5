--[[
  redis-time: Redis's clock, read by an API instance to measure its own clock's skew (R11).

  KEYS[1] any key of the service (recommend:short:current): it names the node that answers, so
          the script routes on Redis Cluster like every other command; it is not read
  ARGV    none

  Reply: {seconds, microseconds} of Redis's TIME.
]]
return redis.call('TIME')
