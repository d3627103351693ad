// File: test_flash_tiles.cpp
// The tensor-core flash attention's tile-level math (kmath, flash_tile_math.h) on the host:
// exact hand-checked cases, then the kernels' tiled algorithm (query tiles x causal key tiles,
// online-softmax merge, the backward's dq pass and dk/dv pass recomputing the scores from the
// saved log-sum-exp) against a naive attention in double, over several tile shapes and
// sequences that are not multiples of the tile.
#include <doctest/doctest.h>

#include <cmath>
#include <random>
#include <vector>

#include "backend/kernel_math/attention_saved_state.h"
#include "backend/kernel_math/flash_tile_math.h"

using namespace whale::exec;
using namespace whale::exec::kmath;

namespace {

/// One head: q, k, v, out, dout (T, D) row-major; lse (T).
struct Head {
  int T, D;
  std::vector<float> q, k, v;
};

Head random_head(int T, int D, unsigned seed) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> u(-1.5f, 1.5f);
  Head h{T, D, {}, {}, {}};
  for (auto* x : {&h.q, &h.k, &h.v}) {
    x->resize(static_cast<std::size_t>(T) * D);
    for (float& e : *x) e = u(gen);
  }
  return h;
}

float dot(const float* a, const float* b, int n) {
  float s = 0.0f;
  for (int d = 0; d < n; ++d) s += a[d] * b[d];
  return s;
}

struct Forward {
  std::vector<double> out, lse;
};

/// Naive causal attention in double: P = softmax(scale Q K^T, future masked), out = P V.
Forward naive_forward(const Head& h, std::vector<std::vector<double>>* probs = nullptr) {
  const double scale = 1.0 / std::sqrt(static_cast<double>(h.D));
  Forward f{std::vector<double>(h.q.size(), 0.0), std::vector<double>(h.T)};
  if (probs) probs->assign(h.T, std::vector<double>(h.T, 0.0));
  for (int i = 0; i < h.T; ++i) {
    std::vector<double> s(i + 1);
    double m = -INFINITY, sum = 0.0;
    for (int j = 0; j <= i; ++j) {
      s[j] = 0.0;
      for (int d = 0; d < h.D; ++d) s[j] += double(h.q[i * h.D + d]) * h.k[j * h.D + d];
      s[j] *= scale;
      m = std::max(m, s[j]);
    }
    for (int j = 0; j <= i; ++j) sum += std::exp(s[j] - m);
    f.lse[i] = m + std::log(sum);
    for (int j = 0; j <= i; ++j) {
      const double p = std::exp(s[j] - f.lse[i]);
      if (probs) (*probs)[i][j] = p;
      for (int d = 0; d < h.D; ++d) f.out[i * h.D + d] += p * h.v[j * h.D + d];
    }
  }
  return f;
}

struct Grads {
  std::vector<double> dq, dk, dv;
};

/// Naive backward: dV = P^T dO, dP = dO V^T, dS = P (dP - rowsum(P dP)), dQ = scale dS K,
/// dK = scale dS^T Q.
Grads naive_backward(const Head& h, const std::vector<float>& dout) {
  std::vector<std::vector<double>> P;
  naive_forward(h, &P);
  const double scale = 1.0 / std::sqrt(static_cast<double>(h.D));
  const std::size_t n = h.q.size();
  Grads g{std::vector<double>(n, 0.0), std::vector<double>(n, 0.0), std::vector<double>(n, 0.0)};
  for (int i = 0; i < h.T; ++i) {
    std::vector<double> dp(i + 1, 0.0);
    double rowsum = 0.0;
    for (int j = 0; j <= i; ++j) {
      for (int d = 0; d < h.D; ++d) dp[j] += double(dout[i * h.D + d]) * h.v[j * h.D + d];
      rowsum += P[i][j] * dp[j];
    }
    for (int j = 0; j <= i; ++j) {
      const double ds = P[i][j] * (dp[j] - rowsum);
      for (int d = 0; d < h.D; ++d) {
        g.dv[j * h.D + d] += P[i][j] * dout[i * h.D + d];
        g.dq[i * h.D + d] += scale * ds * h.k[j * h.D + d];
        g.dk[j * h.D + d] += scale * ds * h.q[i * h.D + d];
      }
    }
  }
  return g;
}

struct TiledForward {
  std::vector<float> out, lse;
};

/// The forward kernel's algorithm: query tiles of br rows, causal key tiles of bc keys, each
/// tile's masked scores (log2 units) merged into the row's running max and sum.
TiledForward tiled_forward(const Head& h, int br, int bc) {
  const float scale_log2 = 1.0f / std::sqrt(float(h.D)) * kLog2e;
  TiledForward f{std::vector<float>(h.q.size()), std::vector<float>(h.T)};
  for (int qt = 0; qt * br < h.T; ++qt)
    for (int r = 0; r < br; ++r) {
      const int i = qt * br + r;
      if (i >= h.T) break;
      SoftmaxRow row;
      std::vector<float> acc(h.D, 0.0f);
      for (int kt = 0; kt < causal_key_tiles(qt, br, bc, h.T); ++kt) {
        const bool masked = tile_needs_mask(qt, br, kt, bc, h.T);
        std::vector<float> s(bc);
        float tile_max = -INFINITY;
        for (int c = 0; c < bc; ++c) {
          const int j = kt * bc + c;
          const bool visible = !masked || score_visible(i, j, h.T);
          s[c] = visible ? dot(&h.q[i * h.D], &h.k[j * h.D], h.D) * scale_log2 : -INFINITY;
          tile_max = std::max(tile_max, s[c]);
        }
        const float factor = softmax_row_rescale(row, tile_max);
        for (float& a : acc) a *= factor;
        for (int c = 0; c < bc; ++c) {
          const float p = softmax_row_weight(row, s[c]);
          row.sum += p;
          if (p != 0.0f)
            for (int d = 0; d < h.D; ++d) acc[d] += p * h.v[(kt * bc + c) * h.D + d];
        }
      }
      for (int d = 0; d < h.D; ++d) f.out[i * h.D + d] = acc[d] / row.sum;
      f.lse[i] = softmax_row_logsumexp(row);
    }
  return f;
}

/// The backward kernels' algorithm: D = rowsum(dout * out); dq by query tiles over causal key
/// tiles; dk, dv by key tiles over the query tiles from causal_first_query_tile on (bq queries
/// each), P recomputed from the saved lse.
Grads tiled_backward(const Head& h, const std::vector<float>& dout, int br, int bc, int bq) {
  const TiledForward f = tiled_forward(h, br, bc);
  const float scale = 1.0f / std::sqrt(float(h.D)), scale_log2 = scale * kLog2e;
  const std::size_t n = h.q.size();
  Grads g{std::vector<double>(n, 0.0), std::vector<double>(n, 0.0), std::vector<double>(n, 0.0)};
  std::vector<float> delta(h.T);
  for (int i = 0; i < h.T; ++i) delta[i] = dot(&dout[i * h.D], &f.out[i * h.D], h.D);
  auto ds_of = [&](int i, int j, bool masked, float* p_out) {
    const bool visible = !masked || score_visible(i, j, h.T);
    const float p = visible ? recomputed_probability(dot(&h.q[i * h.D], &h.k[j * h.D], h.D) * scale_log2,
                                                     f.lse[i] * kLog2e)
                            : 0.0f;
    *p_out = p;
    return score_gradient(p, dot(&dout[i * h.D], &h.v[j * h.D], h.D), delta[i]);
  };
  for (int qt = 0; qt * br < h.T; ++qt)  // the dq kernel
    for (int kt = 0; kt < causal_key_tiles(qt, br, bc, h.T); ++kt) {
      const bool masked = tile_needs_mask(qt, br, kt, bc, h.T);
      for (int i = qt * br; i < std::min((qt + 1) * br, h.T); ++i)
        for (int j = kt * bc; j < std::min((kt + 1) * bc, h.T); ++j) {
          float p;
          const float ds = ds_of(i, j, masked, &p);
          for (int d = 0; d < h.D; ++d) g.dq[i * h.D + d] += scale * ds * h.k[j * h.D + d];
        }
    }
  for (int kt = 0; kt * bc < h.T; ++kt)  // the dk/dv kernel
    for (int qt = causal_first_query_tile(kt, bc, bq); qt * bq < h.T; ++qt) {
      const bool masked = tile_needs_mask(qt, bq, kt, bc, h.T);
      for (int j = kt * bc; j < std::min((kt + 1) * bc, h.T); ++j)
        for (int i = qt * bq; i < std::min((qt + 1) * bq, h.T); ++i) {
          float p;
          const float ds = ds_of(i, j, masked, &p);
          for (int d = 0; d < h.D; ++d) {
            g.dv[j * h.D + d] += p * dout[i * h.D + d];
            g.dk[j * h.D + d] += scale * ds * h.q[i * h.D + d];
          }
        }
    }
  return g;
}

template <class A, class B>
double max_abs_difference(const A& a, const B& b) {
  double worst = 0.0;
  for (std::size_t e = 0; e < a.size(); ++e) worst = std::max(worst, std::abs(double(a[e]) - double(b[e])));
  return worst;
}

}  // namespace

TEST_CASE("causal tile bookkeeping, checked by hand") {
  // Queries 4..7 (tile 1 of 4 rows) of a 7-row sequence: rows 4..6 exist, keys 0..6 in tiles of 2.
  CHECK(causal_key_tiles(1, 4, 2, 7) == 4);
  CHECK(causal_key_tiles(0, 4, 2, 7) == 2);
  CHECK(causal_key_tiles(2, 4, 2, 7) == 0);  // no query row exists
  CHECK(causal_key_tiles(1, 64, 64, 70) == 2);
  CHECK(causal_first_query_tile(3, 2, 4) == 1);  // keys 6, 7 are first seen by query 6 (tile 1)
  CHECK(causal_first_query_tile(1, 64, 32) == 2);
  // Query tile 1 (rows 4..7) of 8: key tile 1 (keys 2, 3) is wholly visible, key tile 2 (4, 5)
  // is the diagonal; with 7 rows query 7 is missing, so every tile needs the mask.
  CHECK_FALSE(tile_needs_mask(1, 4, 1, 2, 8));
  CHECK(tile_needs_mask(1, 4, 2, 2, 8));
  CHECK(tile_needs_mask(1, 4, 0, 2, 7));
  CHECK(score_visible(5, 5, 8));
  CHECK_FALSE(score_visible(5, 6, 8));
  CHECK_FALSE(score_visible(8, 0, 8));
}

TEST_CASE("online softmax merge across key tiles, checked by hand") {
  // Scores in log2 units 2, 1 (first tile) and 3 (second tile): sum of 2^x = 4 + 2 + 8 = 14.
  SoftmaxRow row;
  CHECK(softmax_row_rescale(row, 2.0f) == 0.0f);  // the empty row's sum and output vanish
  row.sum += softmax_row_weight(row, 2.0f) + softmax_row_weight(row, 1.0f);
  CHECK(row.sum == 1.5f);
  CHECK(softmax_row_rescale(row, 3.0f) == 0.5f);
  CHECK(row.sum == 0.75f);
  row.sum += softmax_row_weight(row, 3.0f);
  CHECK(row.sum == 1.75f);
  CHECK(softmax_row_logsumexp(row) == doctest::Approx(std::log(14.0)).epsilon(1e-6));
  // A tile whose every score is masked changes nothing; on an empty row it leaves it empty.
  CHECK(softmax_row_rescale(row, -INFINITY) == 1.0f);
  CHECK(row.sum == 1.75f);
  SoftmaxRow empty;
  CHECK(softmax_row_rescale(empty, -INFINITY) == 1.0f);
  CHECK(softmax_row_weight(empty, -INFINITY) == 0.0f);
  // Backward: P = 2^(x - lse2); dS = P (dP - D).
  CHECK(recomputed_probability(1.0f, 3.0f) == 0.25f);
  CHECK(score_gradient(0.25f, 3.0f, 1.0f) == 0.5f);
}

TEST_CASE("the attention saved state: lse, then the output copy at a 16-byte boundary") {
  // 2 samples x 1 head x 3 rows = 6 rows: 24 bytes of lse, the copy at 32, 6 x 4 bf16 = 48 bytes.
  const AttentionSavedState s = attention_saved_state(2, 3, 1, 4, 2);
  CHECK(s.lse_bytes == 24);
  CHECK(s.out_offset == 32);
  CHECK(s.bytes == 80);
  CHECK(attention_saved_elements(s, 2) == 40);
  CHECK(attention_saved_elements(attention_saved_state(1, 1, 1, 1, 4), 4) == 5);  // 16 + 4 bytes
}

TEST_CASE("tiled flash attention equals naive attention, forward and backward") {
  struct Shape {
    int T, D, br, bc, bq;
  };
  const Shape shapes[] = {{1, 8, 4, 4, 4},    {7, 8, 4, 2, 2},    {7, 8, 2, 4, 4},
                          {70, 16, 64, 64, 32}, {70, 16, 16, 16, 16}, {37, 8, 8, 4, 16},
                          {130, 8, 64, 64, 64}};
  for (const Shape& sh : shapes) {
    CAPTURE(sh.T);
    CAPTURE(sh.br);
    CAPTURE(sh.bc);
    const Head h = random_head(sh.T, sh.D, 100u + static_cast<unsigned>(sh.T));
    const Forward ref = naive_forward(h);
    const TiledForward tiled = tiled_forward(h, sh.br, sh.bc);
    CHECK(max_abs_difference(tiled.out, ref.out) < 1e-5);
    CHECK(max_abs_difference(tiled.lse, ref.lse) < 1e-5);
    std::vector<float> dout(h.q.size());
    std::mt19937 gen(7u);
    std::uniform_real_distribution<float> u(-1.0f, 1.0f);
    for (float& e : dout) e = u(gen);
    const Grads want = naive_backward(h, dout), got = tiled_backward(h, dout, sh.br, sh.bc, sh.bq);
    CHECK(max_abs_difference(got.dq, want.dq) < 1e-4);
    CHECK(max_abs_difference(got.dk, want.dk) < 1e-4);
    CHECK(max_abs_difference(got.dv, want.dv) < 1e-4);
  }
}

TEST_CASE("tiled attention of one query and one key: out = v, lse = the score, no gradient") {
  // T = 1: the single probability is 1, so out = v and dq = dk = 0 (dS = 1 * (dP - dP)).
  Head h{1, 2, {1.0f, 2.0f}, {3.0f, -1.0f}, {0.5f, -4.0f}};
  const TiledForward f = tiled_forward(h, 4, 4);
  CHECK(f.out[0] == 0.5f);
  CHECK(f.out[1] == -4.0f);
  CHECK(f.lse[0] == doctest::Approx((1.0 * 3.0 + 2.0 * -1.0) / std::sqrt(2.0)).epsilon(1e-6));
  const Grads g = tiled_backward(h, {1.0f, 1.0f}, 4, 4, 4);
  CHECK(g.dq[0] == 0.0);
  CHECK(g.dk[1] == 0.0);
  CHECK(g.dv[0] == doctest::Approx(1.0).epsilon(1e-6));
}
