// File: ops_slowdown.cpp
// SlowedBackend: forwards every op to the inner backend; compute ops are timed (after a
// synchronize) and followed by a sleep of (factor - 1) times their duration.
#include "backend/ops_slowdown.h"

#include <chrono>
#include <thread>

namespace whale::exec {
namespace {

class SlowedBackend : public Backend {
 public:
  SlowedBackend(std::unique_ptr<Backend> inner, double factor)
      : inner_(std::move(inner)), extra_(factor - 1.0) {}

  const char* name() const override { return inner_->name(); }
  float* allocate(std::size_t n) override { return inner_->allocate(n); }
  void release(float* p) override { inner_->release(p); }
  void upload(float* d, const float* h, std::size_t n) override { inner_->upload(d, h, n); }
  void download(float* h, const float* d, std::size_t n) override { inner_->download(h, d, n); }
  void copy(float* d, const float* s, std::size_t n) override { inner_->copy(d, s, n); }
  void fill_zero(float* p, std::size_t n) override { inner_->fill_zero(p, n); }
  void synchronize() override { inner_->synchronize(); }

  void matmul(bool ta, bool tb, int m, int n, int k, const float* a, const float* b, float* c,
              bool acc) override {
    slowed([&] { inner_->matmul(ta, tb, m, n, k, a, b, c, acc); });
  }
  void linear_forward(float* o, const float* i, const float* w, const float* b, int r, int ic,
                      int oc) override {
    slowed([&] { inner_->linear_forward(o, i, w, b, r, ic, oc); });
  }
  void linear_backward(float* di, float* dw, float* db, const float* d, const float* i,
                       const float* w, int r, int ic, int oc) override {
    slowed([&] { inner_->linear_backward(di, dw, db, d, i, w, r, ic, oc); });
  }
  void bias_add_forward(float* o, const float* b, int r, int c) override {
    slowed([&] { inner_->bias_add_forward(o, b, r, c); });
  }
  void bias_add_backward(float* db, const float* d, int r, int c) override {
    slowed([&] { inner_->bias_add_backward(db, d, r, c); });
  }
  void add_forward(float* o, const float* a, const float* b, std::size_t n) override {
    slowed([&] { inner_->add_forward(o, a, b, n); });
  }
  void add_backward(float* da, float* db, const float* d, std::size_t n) override {
    slowed([&] { inner_->add_backward(da, db, d, n); });
  }
  void layernorm_forward(float* o, float* m, float* s, const float* i, const float* w,
                         const float* b, int r, int c) override {
    slowed([&] { inner_->layernorm_forward(o, m, s, i, w, b, r, c); });
  }
  void layernorm_backward(float* di, float* dw, float* db, const float* d, const float* i,
                          const float* w, const float* m, const float* s, int r,
                          int c) override {
    slowed([&] { inner_->layernorm_backward(di, dw, db, d, i, w, m, s, r, c); });
  }
  void gelu_forward(float* o, const float* i, std::size_t n) override {
    slowed([&] { inner_->gelu_forward(o, i, n); });
  }
  void gelu_backward(float* di, const float* i, const float* d, std::size_t n) override {
    slowed([&] { inner_->gelu_backward(di, i, d, n); });
  }
  void attention_forward(float* o, float* p, const float* q, int b, int t, int h,
                         int hs) override {
    slowed([&] { inner_->attention_forward(o, p, q, b, t, h, hs); });
  }
  void attention_backward(float* dq, const float* d, const float* q, const float* p, int b,
                          int t, int h, int hs) override {
    slowed([&] { inner_->attention_backward(dq, d, q, p, b, t, h, hs); });
  }
  void embedding_forward(float* o, const int32_t* t, const float* wte, const float* wpe, int b,
                         int s, int c) override {
    slowed([&] { inner_->embedding_forward(o, t, wte, wpe, b, s, c); });
  }
  void embedding_backward(float* dwte, float* dwpe, const float* d, const int32_t* t, int b,
                          int s, int c) override {
    slowed([&] { inner_->embedding_backward(dwte, dwpe, d, t, b, s, c); });
  }
  double cross_entropy_forward(const float* l, const int32_t* t, int r, int v) override {
    double loss = 0.0;
    slowed([&] { loss = inner_->cross_entropy_forward(l, t, r, v); });
    return loss;
  }
  void cross_entropy_backward(float* dl, const float* l, const int32_t* t, int r, int v,
                              double scale) override {
    slowed([&] { inner_->cross_entropy_backward(dl, l, t, r, v, scale); });
  }
  void adamw_update(float* p, const float* g, float* m, float* v, std::size_t n, double lr,
                    double b1, double b2, double eps, double wd, int step) override {
    slowed([&] { inner_->adamw_update(p, g, m, v, n, lr, b1, b2, eps, wd, step); });
  }

 private:
  template <class Op>
  void slowed(Op op) {
    const auto start = std::chrono::steady_clock::now();
    op();
    inner_->synchronize();
    const auto elapsed = std::chrono::steady_clock::now() - start;
    std::this_thread::sleep_for(
        std::chrono::duration_cast<std::chrono::nanoseconds>(elapsed * extra_));
  }

  std::unique_ptr<Backend> inner_;
  double extra_;
};

}  // namespace

std::unique_ptr<Backend> make_slowed_backend(std::unique_ptr<Backend> inner, double factor) {
  if (factor <= 1.0) return inner;
  return std::make_unique<SlowedBackend>(std::move(inner), factor);
}

}  // namespace whale::exec
