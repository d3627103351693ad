// File: dropout_scalars.h
// Private: a Backend call's dropout (dropout_site.h) in the form the kernels and the CPU loops
// read (kernel_math/dropout_math.h).
#pragma once

#include "backend/kernel_math/dropout_math.h"
#include "whale/exec/backend/dropout_site.h"

namespace whale::exec {

inline kmath::DropoutScalars dropout_scalars(const DropoutSite& site) {
  return kmath::dropout_scalars(site.stream, site.probability);
}

inline kmath::AttentionDropoutScalars attention_dropout_scalars(const AttentionDropout& dropout) {
  kmath::AttentionDropoutScalars a;
  a.mask = dropout_scalars(dropout.site);
  a.first_sample = dropout.first_sample;
  a.first_head = dropout.first_head;
  a.total_heads = dropout.total_heads;
  return a;
}

}  // namespace whale::exec
