-- examples/quickstart.lua — a tour of netcl tensors on every device present:
-- creation, views, arithmetic, reductions, matmul, autograd, moving data
-- between devices. `make demo` runs it.
local netcl = require("netcl")

print(("netcl %s; devices:"):format(netcl.version))
for _, d in ipairs(netcl.devices()) do
  print(("  %-10s %-12s %s"):format(d.name, d.type, d.hw_name))
end
print("default device: " .. netcl.default_device())

for _, d in ipairs(netcl.devices()) do
  local dev = d.name
  print(("\n== %s =="):format(dev))
  local x = netcl.arange(12, { device = dev }):view(3, 4)
  print("x = arange(12):view(3, 4)")
  print(x)
  print("x:t() is a view (no copy); contiguous: " .. tostring(x:t():is_contiguous()))
  print("x[2] =", x[2]:totable()[1], "...  x[{2, {2, 3}}] =", table.concat(x[{ 2, { 2, 3 } }]:totable(), ", "))
  local y = (x * 0.5 - 1):relu()
  print("(x * 0.5 - 1):relu():sum(2) =", table.concat(y:sum(2):totable(), ", "))
  local v, i = x:max(2)
  print("x:max(2) values", table.concat(v:totable(), ", "), "indices (1-based)", table.concat(i:totable(), ", "))

  netcl.manual_seed(42)
  local a = netcl.randn(64, 32, { device = dev })
  local b = netcl.randn(32, 16, { device = dev })
  local c = a:matmul(b)
  print(("matmul: %s @ %s -> %s, mean %.4f"):format(table.concat(a:size(), "x"), table.concat(b:size(), "x"),
                                                     table.concat(c:size(), "x"), c:mean():item()))

  -- autograd: gradient of a small least-squares loss
  local w = netcl.zeros(32, 1, { device = dev, requires_grad = true })
  local target = a:matmul(netcl.ones(32, 1, { device = dev }))
  for step = 1, 50 do
    local loss = ((a:matmul(w) - target) ^ 2):mean()
    loss:backward()
    netcl.no_grad(function() w:copy_(w - w.grad * 0.05) end)
    w.grad = nil
    if step % 25 == 0 then print(("least squares step %d: loss %.5f"):format(step, loss:item())) end
  end

  local back = c:to("cpu")
  print(("moved to cpu: %s on %s, same values: %s"):format(back.dtype, back.device,
        tostring(math.abs(back:sum():item() - c:sum():item()) < 1e-3)))
end
