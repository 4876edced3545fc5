--[[
  ring-unclaim: gives back a claim whose page was never served (the API gave up waiting for the
  claim's answer and served a fallback page; the answer came later). Compare-and-set: only when
  the user's offset is still where that claim left it, so a later claim is never undone.

  KEYS[1] recommend:short:offset:{V:b}  HASH user field -> next offset (the user's bucket)
  ARGV[1] the user's field
  ARGV[2] the offset the claim set
  ARGV[3] the offset before the claim

  Reply: 1 when given back, 0 when the offset has moved on since (the positions stay consumed).
]]
if redis.call('HGET', KEYS[1], ARGV[1]) == ARGV[2] then
  redis.call('HSET', KEYS[1], ARGV[1], ARGV[3])
  return 1
end
return 0
