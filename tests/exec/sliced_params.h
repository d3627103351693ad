// File: sliced_params.h
// Two parameters with gradients for the sliced optimizers' hand-worked tests, concatenated as
// [a0 a1 a2 | b0 b1]: the slice [2, 4) holds a2 and b0, across the parameter boundary.
#pragma once

#include <vector>

#include "whale/exec/model/stage_module.h"
#include "host_views.h"

namespace whale::exec::test {

struct SlicedParams {
  std::vector<float> a = {1, 2, -4}, ga = {2, -1, 0.5f};
  std::vector<float> b = {8, 0.5f}, gb = {-0.25f, 4};
  std::vector<ParameterView> views() {
    return {{"a", host_view(a), host_view(ga), 3, false}, {"b", host_view(b), host_view(gb), 2, false}};
  }
  void flip_gradients() {
    for (float& g : ga) g = -g;
    for (float& g : gb) g = -g;
  }
};

}  // namespace whale::exec::test
