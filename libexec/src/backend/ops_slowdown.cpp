// File: ops_slowdown.cpp
// SlowedBackend: forwards every op to the inner backend; compute ops are timed (after a
// synchronize) and followed by a wait of (factor - 1) times their duration.
#include "backend/ops_slowdown.h"

#include <chrono>
#include <thread>

namespace whale::exec {
namespace {

class SlowedBackend : public Backend {
 public:
  SlowedBackend(std::unique_ptr<Backend> inner, double factor, SlowdownClock clock)
      : inner_(std::move(inner)), extra_(factor - 1.0), clock_(std::move(clock)) {}

  const char* name() const override { return inner_->name(); }
  DType compute_dtype() const override { return inner_->compute_dtype(); }
  void* allocate(std::size_t n) override { return inner_->allocate(n); }
  void release(void* p) override { inner_->release(p); }
  std::size_t peak_memory_bytes() const override { return inner_->peak_memory_bytes(); }
  void upload(TensorView d, const void* h, Stream s) override { inner_->upload(d, h, s); }
  void download(void* h, ConstTensorView d, Stream s) override { inner_->download(h, d, s); }
  void copy(TensorView d, ConstTensorView x, Stream s) override { inner_->copy(d, x, s); }
  void cast(TensorView d, ConstTensorView x, Stream s) override { inner_->cast(d, x, s); }
  void fill_zero(TensorView p, Stream s) override { inner_->fill_zero(p, s); }
  Event create_event() override { return inner_->create_event(); }
  void destroy_event(Event e) override { inner_->destroy_event(e); }
  void record_event(Event e, Stream s) override { inner_->record_event(e, s); }
  void wait_event(Stream s, Event e) override { inner_->wait_event(s, e); }
  void synchronize(Stream s) override { inner_->synchronize(s); }
  void synchronize() override { inner_->synchronize(); }
  void* native_stream(Stream s) override { return inner_->native_stream(s); }

  void matmul(bool ta, bool tb, int m, int n, int k, ConstTensorView a, ConstTensorView b,
              TensorView c, bool acc) override {
    slowed([&] { inner_->matmul(ta, tb, m, n, k, a, b, c, acc); });
  }
  void linear_forward(TensorView o, ConstTensorView i, ConstTensorView w, ConstTensorView b,
                      int r, int ic, int oc) override {
    slowed([&] { inner_->linear_forward(o, i, w, b, r, ic, oc); });
  }
  void linear_backward(TensorView di, TensorView dw, TensorView db, ConstTensorView d,
                       ConstTensorView i, ConstTensorView w, int r, int ic, int oc) override {
    slowed([&] { inner_->linear_backward(di, dw, db, d, i, w, r, ic, oc); });
  }
  void bias_add_forward(TensorView o, ConstTensorView b, int r, int c) override {
    slowed([&] { inner_->bias_add_forward(o, b, r, c); });
  }
  void bias_add_backward(TensorView db, ConstTensorView d, int r, int c) override {
    slowed([&] { inner_->bias_add_backward(db, d, r, c); });
  }
  void add_forward(TensorView o, ConstTensorView a, ConstTensorView b, std::size_t n) override {
    slowed([&] { inner_->add_forward(o, a, b, n); });
  }
  void add_backward(TensorView da, TensorView db, ConstTensorView d, std::size_t n) override {
    slowed([&] { inner_->add_backward(da, db, d, n); });
  }
  void layernorm_forward(TensorView o, TensorView m, TensorView s, ConstTensorView i,
                         ConstTensorView w, ConstTensorView b, int r, int c) override {
    slowed([&] { inner_->layernorm_forward(o, m, s, i, w, b, r, c); });
  }
  void layernorm_backward(TensorView di, TensorView dw, TensorView db, ConstTensorView d,
                          ConstTensorView i, ConstTensorView w, ConstTensorView m,
                          ConstTensorView s, int r, int c) override {
    slowed([&] { inner_->layernorm_backward(di, dw, db, d, i, w, m, s, r, c); });
  }
  void dropout(TensorView d, const DropoutSite& site, int64_t first, int r, int c) override {
    slowed([&] { inner_->dropout(d, site, first, r, c); });
  }
  void gelu_forward(TensorView o, ConstTensorView i, std::size_t n) override {
    slowed([&] { inner_->gelu_forward(o, i, n); });
  }
  void gelu_backward(TensorView di, ConstTensorView i, ConstTensorView d,
                     std::size_t n) override {
    slowed([&] { inner_->gelu_backward(di, i, d, n); });
  }
  void rmsnorm_forward(TensorView o, TensorView s, ConstTensorView i, ConstTensorView w, int r,
                       int c) override {
    slowed([&] { inner_->rmsnorm_forward(o, s, i, w, r, c); });
  }
  void rmsnorm_backward(TensorView di, TensorView dw, ConstTensorView d, ConstTensorView i,
                        ConstTensorView w, ConstTensorView s, int r, int c) override {
    slowed([&] { inner_->rmsnorm_backward(di, dw, d, i, w, s, r, c); });
  }
  void swiglu_forward(TensorView o, ConstTensorView g, ConstTensorView u,
                      std::size_t n) override {
    slowed([&] { inner_->swiglu_forward(o, g, u, n); });
  }
  void swiglu_backward(TensorView dg, TensorView du, ConstTensorView g, ConstTensorView u,
                       ConstTensorView d, std::size_t n) override {
    slowed([&] { inner_->swiglu_backward(dg, du, g, u, d, n); });
  }
  void moe_router_forward(plan::MoeRouter m, TensorView p, TensorView c, TensorView g,
                          ConstTensorView l, ConstTensorView b, int r, int e, int k) override {
    slowed([&] { inner_->moe_router_forward(m, p, c, g, l, b, r, e, k); });
  }
  void moe_router_backward(plan::MoeRouter m, TensorView dl, ConstTensorView p, ConstTensorView c,
                           ConstTensorView g, ConstTensorView dg, ConstTensorView a, int r, int e,
                           int k) override {
    slowed([&] { inner_->moe_router_backward(m, dl, p, c, g, dg, a, r, e, k); });
  }
  void moe_dispatch_forward(TensorView o, ConstTensorView i, ConstTensorView s, int m,
                            int c) override {
    slowed([&] { inner_->moe_dispatch_forward(o, i, s, m, c); });
  }
  void moe_dispatch_backward(TensorView di, ConstTensorView d, ConstTensorView s, int r, int k,
                             int c) override {
    slowed([&] { inner_->moe_dispatch_backward(di, d, s, r, k, c); });
  }
  void moe_combine_forward(TensorView o, ConstTensorView y, ConstTensorView g, ConstTensorView s,
                           int r, int k, int c) override {
    slowed([&] { inner_->moe_combine_forward(o, y, g, s, r, k, c); });
  }
  void moe_combine_backward(TensorView dy, TensorView dg, ConstTensorView d, ConstTensorView y,
                            ConstTensorView g, ConstTensorView s, int r, int k, int c) override {
    slowed([&] { inner_->moe_combine_backward(dy, dg, d, y, g, s, r, k, c); });
  }
  using Backend::attention_forward;
  using Backend::attention_backward;
  std::size_t attention_saved_count(int b, int t, int h, int hs, DType act) const override {
    return inner_->attention_saved_count(b, t, h, hs, act);
  }
  bool attention_recomputes_scores() const override { return inner_->attention_recomputes_scores(); }
  void attention_forward(TensorView o, TensorView p, ConstTensorView q, int b, int t, int h,
                         int kv, int hs, const AttentionDropout& drop) override {
    slowed([&] { inner_->attention_forward(o, p, q, b, t, h, kv, hs, drop); });
  }
  void attention_backward(TensorView dq, ConstTensorView d, ConstTensorView q,
                          ConstTensorView p, int b, int t, int h, int kv, int hs,
                          const AttentionDropout& drop) override {
    slowed([&] { inner_->attention_backward(dq, d, q, p, b, t, h, kv, hs, drop); });
  }
  void rope_forward(TensorView d, int b, int t, int w, int h, int hs, double theta) override {
    slowed([&] { inner_->rope_forward(d, b, t, w, h, hs, theta); });
  }
  void rope_backward(TensorView g, int b, int t, int w, int h, int hs, double theta) override {
    slowed([&] { inner_->rope_backward(g, b, t, w, h, hs, theta); });
  }
  void embedding_forward(TensorView o, ConstTensorView t, ConstTensorView wte,
                         ConstTensorView wpe, int b, int s, int c) override {
    slowed([&] { inner_->embedding_forward(o, t, wte, wpe, b, s, c); });
  }
  void embedding_backward(TensorView dwte, TensorView dwpe, ConstTensorView d,
                          ConstTensorView t, int b, int s, int c) override {
    slowed([&] { inner_->embedding_backward(dwte, dwpe, d, t, b, s, c); });
  }
  double cross_entropy_forward(ConstTensorView l, ConstTensorView t, int r, int v) override {
    double loss = 0.0;
    slowed([&] { loss = inner_->cross_entropy_forward(l, t, r, v); });
    return loss;
  }
  void cross_entropy_backward(TensorView dl, ConstTensorView l, ConstTensorView t, int r, int v,
                              double scale) override {
    slowed([&] { inner_->cross_entropy_backward(dl, l, t, r, v, scale); });
  }
  void cross_entropy_backward_in_place(TensorView l, ConstTensorView t, int r, int v,
                                       double scale) override {
    slowed([&] { inner_->cross_entropy_backward_in_place(l, t, r, v, scale); });
  }
  void cross_entropy_shard_statistics(ConstTensorView l, ConstTensorView t, int r, int c,
                                      TensorView stats) override {
    slowed([&] { inner_->cross_entropy_shard_statistics(l, t, r, c, stats); });
  }
  void cross_entropy_shard_backward_in_place(TensorView l, ConstTensorView t, ConstTensorView lse,
                                             int r, int c, double scale) override {
    slowed([&] { inner_->cross_entropy_shard_backward_in_place(l, t, lse, r, c, scale); });
  }
  void adamw_update(TensorView p, ConstTensorView g, TensorView m, TensorView v, std::size_t n,
                    double lr, double b1, double b2, double eps, double wd, int step) override {
    slowed([&] { inner_->adamw_update(p, g, m, v, n, lr, b1, b2, eps, wd, step); });
  }
  void adamw_update_batch(const std::vector<AdamwSegment>& segments, double lr, double b1,
                          double b2, double eps, double wd, int step) override {
    slowed([&] { inner_->adamw_update_batch(segments, lr, b1, b2, eps, wd, step); });
  }
  void sgd_update(TensorView p, ConstTensorView g, TensorView b, std::size_t n, double lr,
                  double mu, double wd) override {
    slowed([&] { inner_->sgd_update(p, g, b, n, lr, mu, wd); });
  }
  void sgd_update_batch(const std::vector<SgdSegment>& segments, double lr, double mu,
                        double wd) override {
    slowed([&] { inner_->sgd_update_batch(segments, lr, mu, wd); });
  }
  void scale(TensorView d, double f) override {
    slowed([&] { inner_->scale(d, f); });
  }
  double sum_of_squares(const std::vector<ConstTensorView>& tensors) override {
    double sum = 0;
    slowed([&] { sum = inner_->sum_of_squares(tensors); });
    return sum;
  }
  bool has_non_finite(ConstTensorView d) override {
    bool found = false;
    slowed([&] { found = inner_->has_non_finite(d); });
    return found;
  }

 private:
  template <class Op>
  void slowed(Op op) {
    const double start_s = clock_.now_s();
    op();
    inner_->synchronize();
    clock_.wait_s((clock_.now_s() - start_s) * extra_);
  }

  std::unique_ptr<Backend> inner_;
  double extra_;
  SlowdownClock clock_;
};

}  // namespace

SlowdownClock steady_wait() {
  return SlowdownClock{
      [] {
        return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch())
            .count();
      },
      [](double seconds) { std::this_thread::sleep_for(std::chrono::duration<double>(seconds)); }};
}

std::unique_ptr<Backend> make_slowed_backend(std::unique_ptr<Backend> inner, double factor,
                                             SlowdownClock clock) {
  if (factor <= 1.0) return inner;
  return std::make_unique<SlowedBackend>(std::move(inner), factor, std::move(clock));
}

}  // namespace whale::exec
