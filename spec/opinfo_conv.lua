-- spec/opinfo_conv.lua — cases for unfold/fold, the convolutions and 2-D
-- pooling: strides, paddings, dilations, groups, odd and size-1 shapes.
return function(M)
  local R, P, T, U, case = M.R, M.P, M.T, M.U, M.case
  local n = M.netcl
  case({ op = "unfold", inputs = { R(2, 3, 5, 4) }, fn = function(x) return n.unfold(x, { 2, 3 }, { padding = 1 }) end })
  case({ op = "unfold", inputs = { R(1, 2, 7, 6) },
         fn = function(x) return n.unfold(x, 3, { stride = 2, dilation = { 2, 1 }, padding = { 2, 0 } }) end })
  case({ op = "fold", inputs = { R(2, 12, 25) }, fn = function(c) return n.fold(c, { 4, 5 }, { 2, 3 }, { padding = 1 }) end })
  case({ op = "fold", inputs = { R(1, 9, 4) }, fn = function(c) return n.fold(c, { 5, 5 }, 3, { stride = 2 }) end })
  case({ op = "conv2d", inputs = { R(2, 3, 6, 5), R(4, 3, 3, 3), R(4) },
         fn = function(x, w, b) return n.conv2d(x, w, b, { padding = 1 }) end })
  case({ op = "conv2d", inputs = { R(2, 4, 7, 7), R(6, 2, 3, 2) },
         fn = function(x, w) return n.conv2d(x, w, nil, { stride = { 2, 1 }, padding = { 1, 0 }, dilation = { 1, 2 }, groups = 2 }) end })
  case({ op = "conv2d", inputs = { R(1, 3, 5, 5), R(3, 1, 3, 3) },
         fn = function(x, w) return n.conv2d(x, w, nil, { groups = 3, padding = 1 }) end, label = "conv2d_depthwise" })
  case({ op = "conv2d", inputs = { T(1, 2, 4, 4), R(3, 2, 1, 1), R(3) },
         fn = function(x, w, b) return n.conv2d(x, w, b) end, label = "conv2d_1x1" })
  case({ op = "conv1d", inputs = { R(2, 3, 9), R(5, 3, 3), R(5) },
         fn = function(x, w, b) return n.conv1d(x, w, b, { stride = 2, padding = 1 }) end })
  case({ op = "conv1d", inputs = { R(1, 4, 8), R(4, 2, 2) },
         fn = function(x, w) return n.conv1d(x, w, nil, { dilation = 3, groups = 2 }) end })
  case({ op = "conv_transpose2d", inputs = { R(2, 3, 4, 3), R(3, 2, 3, 3), R(2) },
         fn = function(x, w, b) return n.conv_transpose2d(x, w, b, { stride = 2, padding = 1, output_padding = 1 }) end })
  case({ op = "conv_transpose2d", inputs = { R(1, 4, 3, 3), R(4, 1, 2, 3) },
         fn = function(x, w) return n.conv_transpose2d(x, w, nil, { groups = 2, dilation = { 2, 1 } }) end })
  case({ op = "max_pool2d", inputs = { R(2, 3, 6, 5) }, fn = function(x) return n.max_pool2d(x, 2) end })
  case({ op = "max_pool2d", inputs = { R(1, 2, 7, 7) },
         fn = function(x) return n.max_pool2d(x, 3, { stride = 2, padding = 1, ceil_mode = true }) end })
  case({ op = "max_pool2d", inputs = { R(1, 1, 8, 6) }, fn = function(x) return n.max_pool2d(x, { 2, 3 }, { dilation = 2, stride = 1 }) end })
  case({ op = "avg_pool2d", inputs = { R(2, 3, 6, 5) }, fn = function(x) return n.avg_pool2d(x, 2) end })
  case({ op = "avg_pool2d", inputs = { R(1, 2, 7, 7) },
         fn = function(x) return n.avg_pool2d(x, 3, { stride = 2, padding = 1, count_include_pad = false, ceil_mode = true }) end })
  case({ op = "avg_pool2d", inputs = { R(1, 2, 5, 5) }, fn = function(x) return n.avg_pool2d(x, 3, { padding = 1, divisor_override = 4 }) end })
  case({ op = "adaptive_avg_pool2d", inputs = { R(2, 3, 7, 5) }, fn = function(x) return n.adaptive_avg_pool2d(x, { 3, 2 }) end })
  case({ op = "adaptive_avg_pool2d", inputs = { R(1, 2, 3, 3) }, fn = function(x) return n.adaptive_avg_pool2d(x, { 5, 4 }) end })
  case({ op = "adaptive_avg_pool2d", inputs = { R(2, 4, 5, 6) }, fn = function(x) return n.adaptive_avg_pool2d(x, 1) end })
  local F = require("netcl.nn.functional")
  case({ op = "interpolate", inputs = { R(2, 3, 3, 4) }, fn = function(x) return F.interpolate(x, { scale_factor = 2 }) end })
  case({ op = "interpolate", inputs = { R(1, 2, 4, 3) }, label = "interpolate_bilinear",
         fn = function(x) return F.interpolate(x, { size = { 7, 5 }, mode = "bilinear" }) end })
  case({ op = "interpolate", inputs = { R(1, 2, 3, 3) }, label = "interpolate_corners",
         fn = function(x) return F.interpolate(x, { size = 5, mode = "bilinear", align_corners = true }) end })
  case({ op = "interpolate", inputs = { R(2, 3, 6) }, label = "interpolate_linear_down",
         fn = function(x) return F.interpolate(x, { size = 4, mode = "linear" }) end })
end
