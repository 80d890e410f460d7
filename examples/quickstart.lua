-- examples/quickstart.lua — a tour of netcl tensors on every device present:
-- creation, views and slicing, arithmetic, reductions, matmul, autograd,
-- dtypes, moving data between devices, printing. `make demo` runs it.
local netcl = require("netcl")

print(("netcl %s; devices:"):format(netcl.version))
for _, d in ipairs(netcl.devices()) do
  print(("  %-10s %-12s %s"):format(d.name, d.type, d.hw_name))
end
print("default device: " .. netcl.default_device())

local function list(t) return "{" .. table.concat(t:totable(), ", ") .. "}" end

for _, d in ipairs(netcl.devices()) do
  local dev = d.name
  print(("\n== %s =="):format(dev))

  -- creation and views (1-based indices; negative dims count from the end)
  local x = netcl.arange(12, { device = dev }):view(3, 4)
  print("x = netcl.arange(12):view(3, 4)")
  print(x)
  print("x:t() is a view: contiguous " .. tostring(x:t():is_contiguous()) .. ", size " .. table.concat(x:t():size(), "x"))
  print("x[2][3] = " .. x[2][3] .. ",  x[{2, {2, 3}}] = " .. list(x[{ 2, { 2, 3 } }]) ..
        ",  x[{{}, -1}] = " .. list(x[{ {}, -1 }]))
  local z = netcl.zeros(2, 3, { device = dev })
  z[{ {}, 2 }] = 7          -- assign into a slice
  z[1] = netcl.tensor({ 1, 2, 3 }, { device = dev })
  print("after z[{{}, 2}] = 7; z[1] = {1, 2, 3}:")
  print(z)

  -- arithmetic with broadcasting, comparisons, reductions
  local y = (x * 0.5 - 1):relu()
  print("(x * 0.5 - 1):relu():sum(2) = " .. list(y:sum(2)))
  print("x + row vector: " .. list((x + netcl.tensor({ 100, 200, 300, 400 }, { device = dev }))[1]))
  print("count of x > 5: " .. x:gt(5):int():sum():item())
  local v, i = x:max(2)
  print("x:max(2) values " .. list(v) .. ", indices (1-based) " .. list(i))

  -- matmul and random numbers (same stream on every device)
  netcl.manual_seed(42)
  local a = netcl.randn(64, 32, { device = dev })
  local b = netcl.randn(32, 16, { device = dev })
  local c = a:matmul(b)
  print(("matmul: %s @ %s -> %s, mean %.4f"):format(table.concat(a:size(), "x"), table.concat(b:size(), "x"),
                                                     table.concat(c:size(), "x"), c:mean():item()))

  -- autograd: a few steps of least squares
  local w = netcl.zeros(32, 1, { device = dev, requires_grad = true })
  local target = a:matmul(netcl.ones(32, 1, { device = dev }))
  for step = 1, 50 do
    local loss = ((a:matmul(w) - target) ^ 2):mean()
    loss:backward()
    netcl.no_grad(function() w:copy_(w - w.grad * 0.05) end)
    w.grad = nil
    if step % 25 == 0 then print(("least squares step %d: loss %.5f"):format(step, loss:item())) end
  end

  -- dtypes and devices
  local h = x:half()
  print("x:half() is " .. h.dtype .. "; x:double():sum() = " .. x:double():sum():item())
  local other = dev == "cpu" and (netcl.devices()[2] or d).name or "cpu"
  local moved = c:to(other)
  print(("c:to(%q): %s on %s, same sum: %s"):format(other, moved.dtype, moved.device,
        tostring(math.abs(moved:sum():item() - c:sum():item()) < 1e-3)))
  print(netcl.arange(8, { device = dev, dtype = "int32" }):view(2, 2, 2))
end
