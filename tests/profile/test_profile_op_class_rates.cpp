// File: test_profile_op_class_rates.cpp
// op_class_rates: a CPU op class's forward and backward figures from its measured pass times,
// hand-checked, with the mean of both passes where a pass has nothing left after its GEMMs.
#include <doctest/doctest.h>

#include "whale/exec/profile/profile_op_class_rates.h"

using whale::exec::op_class_rates;
using whale::exec::OpClassRates;

TEST_CASE("each pass gets its own figure: the forward's bytes over the pass's time less its GEMMs") {
  // A layernorm as one core ran it: 1 MB counted, forward 0.05 ms, backward 0.45 ms, no GEMMs.
  const OpClassRates norm = op_class_rates(1e6, 0.05e-3, 0.45e-3, 0, true);
  CHECK(norm.forward == doctest::Approx(20e9));
  CHECK(norm.backward == doctest::Approx(1e6 / 0.45e-3));
  // The softmax class: its GEMMs priced 0.1 ms a pass, charged once forward and twice backward:
  // forward 0.3 - 0.1 = 0.2 ms, backward 0.6 - 0.2 = 0.4 ms.
  const OpClassRates softmax = op_class_rates(2e6, 0.3e-3, 0.6e-3, 0.1e-3, true);
  CHECK(softmax.forward == doctest::Approx(2e6 / 0.2e-3));
  CHECK(softmax.backward == doctest::Approx(2e6 / 0.4e-3));
}

TEST_CASE("a pass the GEMMs use up leaves the mean of the two as the forward's figure alone") {
  // Backward 0.15 ms against 0.2 ms of GEMMs: -0.05 ms left; forward 0.25 ms: the mean
  // (0.25 - 0.05) / 2 = 0.1 ms prices both passes.
  const OpClassRates mean = op_class_rates(1e6, 0.35e-3, 0.15e-3, 0.1e-3, true);
  CHECK(mean.forward == doctest::Approx(1e6 / 0.1e-3));
  CHECK(mean.backward == 0);
  // Nothing left even summed: nothing recorded.
  const OpClassRates none = op_class_rates(1e6, 0.1e-3, 0.1e-3, 0.1e-3, true);
  CHECK(none.forward == 0);
  CHECK(none.backward == 0);
}

TEST_CASE("an op without a backward (the optimizer step) gets the forward's figure alone") {
  const OpClassRates adamw = op_class_rates(28e6, 2e-3, 2e-3, 0, false);
  CHECK(adamw.forward == doctest::Approx(14e9));
  CHECK(adamw.backward == 0);
}
