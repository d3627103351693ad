// File: test_ops_precision.cpp
// Mixed precision on the CPU backend: every op computed with bf16 (or fp16) activations and
// weights against the same op in fp32 on the same inputs, within a tolerance derived from the
// dtype's unit roundoff; casts round to nearest even; fp32 statistics and gradients stay fp32.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <functional>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "host_views.h"
#include "whale/exec/backend/backend_factory.h"

using namespace whale;
using namespace whale::exec;

namespace {

std::vector<float> random_vector(std::size_t n, unsigned seed, float scale = 1.0f) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(-scale, scale);
  std::vector<float> v(n);
  for (float& x : v) x = dist(rng);
  return v;
}

/// Tensors of one backend at one precision: inputs made from host floats in the compute dtype
/// ("act", also weights used in compute) or in fp32, outputs read back widened to floats.
class OpBench {
 public:
  explicit OpBench(plan::Precision precision) {
    BackendRequest request;
    request.precision = precision;
    be_ = make_backend(request);
  }
  Backend& be() { return *be_; }
  TensorView act(const std::vector<float>& host) { return make(host, be_->compute_dtype()); }
  TensorView fp32(const std::vector<float>& host) { return make(host, DType::fp32); }
  TensorView tokens(const std::vector<int32_t>& host) {
    tensors_.emplace_back(*be_, host.size(), DType::i32);
    be_->upload(tensors_.back(), host.data(), Stream::compute);
    return tensors_.back();
  }
  std::vector<float> read(ConstTensorView view) {
    Tensor wide(*be_, view.count, DType::fp32);
    be_->cast(wide, view, Stream::compute);
    return test::host_floats(*be_, wide);
  }

 private:
  TensorView make(const std::vector<float>& host, DType dtype) {
    tensors_.emplace_back(*be_, host.size(), DType::fp32);
    be_->upload(tensors_.back(), host.data(), Stream::compute);
    if (dtype == DType::fp32) return tensors_.back();
    const TensorView wide = tensors_.back();
    tensors_.emplace_back(*be_, host.size(), dtype);
    be_->cast(tensors_.back(), wide, Stream::compute);
    return tensors_.back();
  }

  std::unique_ptr<Backend> be_;
  std::vector<Tensor> tensors_;  // a moved Tensor keeps its memory, so views stay valid
};

/// One op test: runs ops on a bench, returns their outputs (concatenated, as floats).
using OpCase = std::function<std::vector<float>(OpBench&)>;

void append(std::vector<float>& all, const std::vector<float>& part) {
  all.insert(all.end(), part.begin(), part.end());
}

const int N = 6, C = 8, OC = 12, B = 2, T = 3, NH = 2, HS = 4, V = 10;

std::vector<std::pair<std::string, OpCase>> op_cases() {
  const auto x = random_vector(N * C, 1), w = random_vector(OC * C, 2), b = random_vector(OC, 3);
  const auto dy = random_vector(N * OC, 4), g = random_vector(C, 5), dyc = random_vector(N * C, 6);
  const auto qkv = random_vector(B * T * 3 * NH * HS, 7), dq = random_vector(B * T * NH * HS, 8);
  const auto logits = random_vector(N * V, 9, 3.0f), wte = random_vector(V * C, 10);
  const auto wpe = random_vector(T * C, 11);
  const std::vector<int32_t> ids = {1, 3, 9, 0, 2, 5};
  return {
      {"linear_forward", [=](OpBench& o) {
         const TensorView out = o.act(std::vector<float>(N * OC));
         o.be().linear_forward(out, o.act(x), o.act(w), o.act(b), N, C, OC);
         return o.read(out);
       }},
      {"linear_backward", [=](OpBench& o) {
         const TensorView dx = o.act(std::vector<float>(N * C));
         const TensorView dw = o.fp32(std::vector<float>(OC * C));
         const TensorView db = o.fp32(std::vector<float>(OC));
         o.be().linear_backward(dx, dw, db, o.act(dy), o.act(x), o.act(w), N, C, OC);
         std::vector<float> all = o.read(dx);
         append(all, o.read(dw));
         append(all, o.read(db));
         return all;
       }},
      {"layernorm", [=](OpBench& o) {
         const TensorView out = o.act(std::vector<float>(N * C));
         const TensorView mean = o.fp32(std::vector<float>(N)), rstd = o.fp32(std::vector<float>(N));
         const TensorView gamma = o.act(g), beta = o.act(random_vector(C, 12));
         o.be().layernorm_forward(out, mean, rstd, o.act(x), gamma, beta, N, C);
         const TensorView dx = o.act(std::vector<float>(N * C));
         const TensorView dg = o.fp32(std::vector<float>(C)), dbeta = o.fp32(std::vector<float>(C));
         o.be().layernorm_backward(dx, dg, dbeta, o.act(dyc), o.act(x), gamma, mean, rstd, N, C);
         std::vector<float> all = o.read(out);
         for (ConstTensorView t : {ConstTensorView(mean), ConstTensorView(rstd),
                                   ConstTensorView(dx), ConstTensorView(dg)})
           append(all, o.read(t));
         return all;
       }},
      {"gelu", [=](OpBench& o) {
         const TensorView out = o.act(std::vector<float>(N * C));
         const TensorView dx = o.act(std::vector<float>(N * C));
         o.be().gelu_forward(out, o.act(x), N * C);
         o.be().gelu_backward(dx, o.act(x), o.act(dyc), N * C);
         std::vector<float> all = o.read(out);
         append(all, o.read(dx));
         return all;
       }},
      {"attention", [=](OpBench& o) {
         const TensorView out = o.act(std::vector<float>(B * T * NH * HS));
         const TensorView probs = o.act(std::vector<float>(B * NH * T * T));
         const TensorView dqkv = o.act(std::vector<float>(qkv.size()));
         o.be().attention_forward(out, probs, o.act(qkv), B, T, NH, HS);
         o.be().attention_backward(dqkv, o.act(dq), o.act(qkv), probs, B, T, NH, HS);
         std::vector<float> all = o.read(out);
         append(all, o.read(dqkv));
         return all;
       }},
      {"embedding", [=](OpBench& o) {
         const TensorView out = o.act(std::vector<float>(B * T * C));
         const TensorView dwte = o.fp32(std::vector<float>(V * C));
         const TensorView dwpe = o.fp32(std::vector<float>(T * C));
         o.be().embedding_forward(out, o.tokens(ids), o.act(wte), o.act(wpe), B, T, C);
         o.be().embedding_backward(dwte, dwpe, o.act(dyc), o.tokens(ids), B, T, C);
         std::vector<float> all = o.read(out);
         append(all, o.read(dwte));
         append(all, o.read(dwpe));
         return all;
       }},
      {"cross_entropy", [=](OpBench& o) {
         const TensorView dl = o.act(std::vector<float>(N * V));
         const double loss = o.be().cross_entropy_forward(o.act(logits), o.tokens(ids), N, V);
         o.be().cross_entropy_backward(dl, o.act(logits), o.tokens(ids), N, V, 1.0 / N);
         std::vector<float> all = o.read(dl);
         all.push_back(static_cast<float>(loss));
         return all;
       }},
  };
}

/// ||a - reference|| / ||reference||.
double relative_error(const std::vector<float>& a, const std::vector<float>& reference) {
  REQUIRE(a.size() == reference.size());
  double diff = 0.0, norm = 0.0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    diff += std::pow(static_cast<double>(a[i]) - reference[i], 2);
    norm += static_cast<double>(reference[i]) * reference[i];
  }
  REQUIRE(norm > 0.0);
  return std::sqrt(diff / norm);
}

/// Every op at `precision` against fp32 within 4 unit roundoffs u: operands rounded to the
/// dtype (u each, 2u for a product), the output rounded once (u), and u of headroom for the
/// amplification in normalisations; accumulation is fp32 and adds about 1e-7. The error must
/// also be nonzero: the 16-bit path really rounds.
void check_against_fp32(plan::Precision precision, double unit_roundoff) {
  for (const auto& entry : op_cases()) {
    const auto& name = entry.first;  // a named reference: INFO's lambda cannot capture a binding
    const auto& op = entry.second;
    OpBench reference(plan::Precision::fp32), mixed(precision);
    const double error = relative_error(op(mixed), op(reference));
    INFO(name << ": relative error " << error);
    CHECK(error <= 4 * unit_roundoff);
    CHECK(error > 0.0);
  }
}

}  // namespace

TEST_CASE("bf16 ops equal fp32 ops within 4 bf16 unit roundoffs (2^-8 each)") {
  check_against_fp32(plan::Precision::bf16, std::ldexp(1.0, -8));  // 8-bit significand
}

TEST_CASE("fp16 ops equal fp32 ops within 4 fp16 unit roundoffs (2^-11 each)") {
  check_against_fp32(plan::Precision::fp16, std::ldexp(1.0, -11));  // 11-bit significand
}

TEST_CASE("cast rounds to nearest even and widens exactly") {
  OpBench o(plan::Precision::bf16);
  // 1 + 2^-8 is halfway between bf16 neighbours 1 and 1 + 2^-7: ties go to the even 1.
  // 1 + 3*2^-8 is halfway between 1 + 2^-7 and 1 + 2^-6: ties go to the even 1 + 2^-6.
  const std::vector<float> x = {1.0f + std::ldexp(1.0f, -8), 1.0f + 3 * std::ldexp(1.0f, -8),
                                -2.5f, 1e30f};
  const TensorView narrow = o.act(x);
  CHECK(narrow.dtype == DType::bf16);
  const std::vector<float> back = o.read(narrow);
  CHECK(back[0] == 1.0f);
  CHECK(back[1] == 1.0f + std::ldexp(1.0f, -6));
  CHECK(back[2] == -2.5f);
  CHECK(back[3] == doctest::Approx(1e30).epsilon(std::ldexp(1.0, -8)));
  OpBench h(plan::Precision::fp16);
  const std::vector<float> half = h.read(h.act({65504.0f, 70000.0f, std::ldexp(1.0f, -24)}));
  CHECK(half[0] == 65504.0f);        // fp16's largest finite value
  CHECK(std::isinf(half[1]));        // beyond it: inf
  CHECK(half[2] == std::ldexp(1.0f, -24));  // the smallest subnormal
}

TEST_CASE("fp32-only tensors reject other dtypes") {
  OpBench o(plan::Precision::bf16);
  const TensorView dx = o.act(std::vector<float>(N * C));
  const TensorView dw_wrong = o.act(std::vector<float>(OC * C));
  CHECK_THROWS_WITH_AS(o.be().linear_backward(dx, dw_wrong, TensorView{}, o.act(std::vector<float>(N * OC)),
                                              o.act(std::vector<float>(N * C)),
                                              o.act(std::vector<float>(OC * C)), N, C, OC),
                       doctest::Contains("dweight must be fp32, got bf16"), std::invalid_argument);
}
