--[[
  The ring cursor as a user's offset field stores it (SPEC R11; ring.ts's parseCursor reads its
  first number): "total[,start:end...]", positions claimed and not given back (absolute: the ring
  position is total % length), then the holes given back out of order (absolute, end exclusive).
]]
local function decodeCursor(state)
  local comma = string.find(state, ',', 1, true)
  local total = tonumber(comma and string.sub(state, 1, comma - 1) or state) or 0
  local holes = {}
  if comma then
    for s, e in string.gmatch(string.sub(state, comma + 1), '(%d+):(%d+)') do
      holes[#holes + 1] = { tonumber(s), tonumber(e) }
    end
  end
  return total, holes
end

local function encodeCursor(total, holes)
  local encoded = string.format('%d', total)
  for _, hole in ipairs(holes) do
    encoded = encoded .. string.format(',%d:%d', hole[1], hole[2])
  end
  return encoded
end
