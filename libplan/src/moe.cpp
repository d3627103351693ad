// File: moe.cpp
// The router's names as model files write them (moe.h).
#include "whale/plan/moe.h"

namespace whale::plan {

const char* to_string(MoeRouter router) {
  switch (router) {
    case MoeRouter::softmax_topk: return "softmax_topk";
    case MoeRouter::sigmoid_bias: return "sigmoid_bias";
  }
  return "softmax_topk";
}

bool parse_moe_router(const std::string& name, MoeRouter* router) {
  for (MoeRouter r : {MoeRouter::softmax_topk, MoeRouter::sigmoid_bias}) {
    if (name == to_string(r)) {
      *router = r;
      return true;
    }
  }
  return false;
}

}  // namespace whale::plan
