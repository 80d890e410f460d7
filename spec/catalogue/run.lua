-- spec/catalogue/run.lua — a child of spec/catalogue_spec.lua: runs the
-- cases of entries FIRST..LAST of spec/catalogue/cases.lua on the cpu and
-- prints one line per case ("case E.A.V ok", or "case E.A.V BAD <why>"),
-- then "done". A crash shows as a missing "done" after the last case line.
local first, last = tonumber(arg[1]), tonumber(arg[2])
package.path = arg[0]:match("^(.*)/[^/]*$") .. "/?.lua;" .. package.path
local netcl = require("netcl")
netcl.set_default_device("cpu")
local C = require("cases")

-- a raw Lua or FFI error that escaped instead of a message of netcl's
local RAW = { "attempt to ", "bad argument #", "table index is nil", "cannot convert", "stack overflow", "C stack overflow" }

for e = first, last do
  local en = C.entries[e]
  local n = 0
  local args = { en.good(netcl) }
  for a, kind in pairs(en.kinds) do
    for v, bad in ipairs(C.BAD[kind]) do
      local call_args = {}
      for i = 1, math.max(#en.kinds, #args) do call_args[i] = args[i] end
      call_args[a] = bad[1]
      local id = ("%d.%d.%d"):format(e, a, v)
      local ok, err = pcall(en.call, netcl, unpack(call_args, 1, math.max(#en.kinds, #args)))
      local msg = tostring(err)
      local why
      if ok then why = "accepted"
      elseif not msg:find(en.who, 1, true) then why = "the message does not name " .. en.who
      else for _, r in ipairs(RAW) do if msg:find(r, 1, true) then why = "a raw Lua error" end end end
      if why then
        print(("case %s BAD %s(arg %d = %s): %s: %s"):format(id, en.who, a, bad[2], why, ok and "" or msg:gsub("\n.*", "")))
      else
        print(("case %s ok"):format(id))
      end
      io.stdout:flush()
      n = n + 1
    end
  end
end
print("done")
