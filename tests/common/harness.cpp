// harness.cpp - running one op case on one backend and checking it.
#include "common/harness.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <numeric>

#include "common/reference.h"
#include "ggml-lite/executor.h"

namespace gl::test {

Tensor* CaseInputs::input(DType type, std::initializer_list<int64_t> ne, const Fill& fill) {
  Tensor* t = ctx.new_tensor(type, ne, fmt::format("in{}", data_.size()));
  t->flags |= TENSOR_INPUT;
  data_[t] = encode(type, t->ne, generate(fill, t->ne, rng_));
  return t;
}

const std::vector<uint8_t>* CaseInputs::data_of(const Tensor* t) const {
  auto it = data_.find(t);
  return it == data_.end() ? nullptr : &it->second;
}

namespace {

std::string index_str(const RefArray& a, size_t flat) {
  const auto i = static_cast<int64_t>(flat);
  return fmt::format("({}, {}, {}, {})", i % a.ne[0], i / a.ne[0] % a.ne[1], i / (a.ne[0] * a.ne[1]) % a.ne[2],
                     i / (a.ne[0] * a.ne[1] * a.ne[2]));
}

// The `count` elements with the largest |got - want|, one per line.
std::string worst_elements(const RefArray& got, const RefArray& want, size_t count) {
  std::vector<size_t> idx(got.v.size());
  std::iota(idx.begin(), idx.end(), 0);
  auto err = [&](size_t i) {
    const double e = std::fabs(got.v[i] - want.v[i]);
    return std::isnan(e) ? INFINITY : e;
  };
  count = std::min(count, idx.size());
  std::partial_sort(idx.begin(), idx.begin() + static_cast<std::ptrdiff_t>(count), idx.end(),
                    [&](size_t a, size_t b) { return err(a) > err(b); });
  std::string s;
  for (size_t k = 0; k < count; ++k)
    s += fmt::format("\n  at {}: got {:.9g}, want {:.9g}", index_str(want, idx[k]), got.v[idx[k]], want.v[idx[k]]);
  return s;
}

// The whole arena as one tensor, so it can be filled and read through any backend.
Tensor arena_tensor(Buffer& arena) {
  Tensor t;
  t.type = DType::I32;
  t.ne = {static_cast<int64_t>(arena.size() / 4), 1, 1, 1};
  set_contiguous_strides(t);
  t.data = arena.base();
  t.buffer = &arena;
  t.name = "arena";
  return t;
}

bool writes_into_root(const Tensor& t) { return t.op == Op::CPY || t.op == Op::SET_ROWS; }

// Bytes of root(t) that t's elements occupy.
std::vector<bool> footprint(const Tensor& t, size_t root_size) {
  std::vector<bool> used(root_size, false);
  const DTypeTraits& tr = dtype_traits(t.type);
  for (int64_t i3 = 0; i3 < t.ne[3]; ++i3)
    for (int64_t i2 = 0; i2 < t.ne[2]; ++i2)
      for (int64_t i1 = 0; i1 < t.ne[1]; ++i1)
        for (int64_t b = 0; b < t.ne[0] / tr.block_size; ++b) {
          const size_t off = t.view_offs + static_cast<size_t>(b) * t.nb[0] + static_cast<size_t>(i1) * t.nb[1] +
                             static_cast<size_t>(i2) * t.nb[2] + static_cast<size_t>(i3) * t.nb[3];
          std::fill_n(used.begin() + static_cast<std::ptrdiff_t>(off), tr.block_bytes, true);
        }
  return used;
}

class CaseRun {
 public:
  CaseRun(const OpCase& c, Backend& be) : c_(c), be_(be), rng_(seed_from_name(c.name)), in_(ctx_, rng_), ex_({&be}) {}

  // Two passes: the second sentinel reads as NaN in every float type, so a
  // kernel that reads memory it has not written shows up as a non-finite output.
  CaseReport run() {
    if (!build()) return std::move(report_);
    for (uint8_t s : kSentinels) {
      sentinel_ = s;
      if (!execute()) break;
      check_guards();
      check_inputs();
      check_views();
      check_output();
      if (!report_.failures.empty()) break;
    }
    return std::move(report_);
  }

 private:
  void fail(std::string msg) {
    report_.failures.push_back(fmt::format("[{} on {}, sentinel {:#04x}] {}", c_.name, be_.name(), sentinel_, msg));
  }

  bool build() {
    out_ = c_.build(in_);
    // Sources computed by other nodes stay readable after compute: outputs are never reused.
    std::vector<Tensor*> outs{out_};
    for (int i = 0; i < out_->n_srcs(); ++i) {
      Tensor* r = out_->src[i]->view_src ? out_->src[i]->view_src : out_->src[i];
      if (r->op != Op::NONE && std::find(outs.begin(), outs.end(), r) == outs.end()) outs.push_back(r);
    }
    graph_ = Graph::build(outs);
    if (Status s = graph_.verify(); !s) fail("graph does not verify: " + s.error());
    for (const Tensor* l : graph_.leafs())
      if (!in_.data_of(l)) fail(fmt::format("leaf '{}' was not made by CaseInputs::input", l->name));
    for (const Tensor* n : graph_.nodes()) {
      if (!be_.supports(*n)) {
        report_.skipped = true;
        report_.skip_reason = fmt::format("{} does not support {} '{}'", be_.name(), op_name(n->op), n->name);
        return false;
      }
    }
    return report_.failures.empty();
  }

  bool execute() {
    if (Status s = ex_.allocate(graph_); !s) {
      fail("allocate: " + s.error());
      return false;
    }
    plan_ = ex_.last_plan();
    Tensor whole = arena_tensor(*ex_.arena());
    const size_t size = ex_.arena()->size();
    const std::vector<uint8_t> sentinel(size, sentinel_);
    be_.set_tensor(whole, sentinel.data(), 0, size);
    for (Tensor* l : graph_.leafs()) {
      const std::vector<uint8_t>& d = *in_.data_of(l);
      GL_ASSERT(d.size() == nbytes(*l) && l->arena_offset >= 0, "harness: inputs are whole arena tensors");
      ex_.set_input(*l, d.data());
    }
    if (Status s = ex_.compute(graph_); !s) {
      fail("compute: " + s.error());
      return false;
    }
    arena_.resize(size);
    be_.get_tensor(whole, arena_.data(), 0, size);
    return true;
  }

  // Memory of root r: after compute, or (for leafs) the data written before it.
  std::span<const uint8_t> bytes_after(const Tensor& r) const {
    GL_ASSERT(r.arena_offset >= 0, "harness: every tensor of a case lives in the arena");
    return {arena_.data() + r.arena_offset, nbytes(r)};
  }
  std::span<const uint8_t> bytes_before(const Tensor& r) const {
    if (r.op == Op::NONE) return *in_.data_of(&r);
    return bytes_after(r);
  }

  void check_guards() {
    std::vector<bool> covered(arena_.size(), false);
    for (const auto& [t, off] : plan_->offsets)
      std::fill_n(covered.begin() + static_cast<std::ptrdiff_t>(off), nbytes(*t), true);
    // A node's scratch (Backend::workspace_size) is planned memory its kernel may write.
    for (const MemoryPlan::Slot& w : plan_->workspace_slots)
      if (w.offset >= 0) std::fill_n(covered.begin() + static_cast<std::ptrdiff_t>(w.offset), w.size, true);
    size_t n_bad = 0, first = 0;
    for (size_t i = 0; i < arena_.size(); ++i)
      if (!covered[i] && arena_[i] != sentinel_ && n_bad++ == 0) first = i;
    if (n_bad == 0) return;
    std::string near;
    for (const auto& [t, off] : plan_->offsets)
      if (off <= first && first < off + plan_->sizes.at(t))
        near = fmt::format(" ({} bytes past the end of '{}' {})", first - off - nbytes(*t), t->name, op_name(t->op));
    fail(fmt::format("{} guard bytes outside every planned tensor were overwritten; first at arena byte {}{}", n_bad,
                     first, near));
  }

  void check_inputs() {
    for (const Tensor* l : graph_.leafs()) {
      const std::span<const uint8_t> before = bytes_before(*l), after = bytes_after(*l);
      const bool written = writes_into_root(*out_) && out_->view_src == l;
      const std::vector<bool> may_change = written ? footprint(*out_, before.size()) : std::vector<bool>();
      for (size_t i = 0; i < before.size(); ++i) {
        if (before[i] != after[i] && !(written && may_change[i])) {
          fail(fmt::format("input '{}' changed at byte {} (not part of the output)", l->name, i));
          break;
        }
      }
    }
  }

  // Each view between a source and its data must match its op's meaning.
  void check_views() {
    for (int i = 0; i < out_->n_srcs(); ++i) {
      for (const Tensor* t = out_->src[i]; is_view_op(t->op); t = t->src[0]) {
        const Tensor& s = *t->src[0];
        if (t->op == Op::VIEW && (!is_contiguous(s) || dtype_traits(s.type).is_quant)) continue;
        const RefArray src = decode(s, bytes_before(root(s)));
        const RefArray want = reference_eval(*t, std::span<const RefArray>(&src, 1));
        const std::string why = compare_exact(decode(*t, bytes_before(root(*t))), want);
        if (!why.empty()) fail(fmt::format("view '{}' ({}) disagrees with its op: {}", t->name, op_name(t->op), why));
      }
    }
  }

  void check_output() {
    std::vector<RefArray> srcs;
    for (int i = 0; i < out_->n_srcs(); ++i) srcs.push_back(decode(*out_->src[i], bytes_before(root(*out_->src[i]))));
    const RefArray want = reference_eval(*out_, srcs);
    const RefArray got = decode(*out_, bytes_after(root(*out_)));
    for (size_t i = 0; i < want.v.size(); ++i) {
      if (!std::isfinite(want.v[i]) && !c_.allow_nonfinite)
        return fail(fmt::format("the reference is not finite at {}: fix the case's inputs", index_str(want, i)));
      if (!std::isfinite(got.v[i]) && !c_.allow_nonfinite)
        return fail(fmt::format("output is {} at {} (want {:.9g})", got.v[i], index_str(got, i), want.v[i]));
    }
    if (c_.compare) {
      if (std::string why = c_.compare(got, want); !why.empty()) fail(why);
      return;
    }
    const double max_nmse = c_.threshold(be_.name(), be_.precision());
    if (max_nmse == 0.0) {
      if (std::string why = compare_exact(got, want); !why.empty()) fail("expected exact values: " + why);
      return;
    }
    report_.nmse = nmse(got, want);
    if (!(report_.nmse <= max_nmse))
      fail(
          fmt::format("nmse {:.3g} > {:.3g}; largest errors:{}", report_.nmse, max_nmse, worst_elements(got, want, 5)));
  }

  const OpCase& c_;
  Backend& be_;
  Rng rng_;
  Context ctx_;
  CaseInputs in_;
  Executor ex_;
  Tensor* out_ = nullptr;
  Graph graph_;
  const MemoryPlan* plan_ = nullptr;
  std::vector<uint8_t> arena_;
  uint8_t sentinel_ = kSentinels[0];
  CaseReport report_;
};

}  // namespace

CaseReport run_case(const OpCase& c, Backend& backend) { return CaseRun(c, backend).run(); }

double nmse(const RefArray& got, const RefArray& want) {
  double err = 0.0, ref = 0.0;
  for (size_t i = 0; i < want.v.size(); ++i) {
    const double d = got.v[i] - want.v[i];
    err += d * d;
    ref += want.v[i] * want.v[i];
  }
  return ref > 0.0 ? err / ref : err;
}

std::string compare_exact(const RefArray& got, const RefArray& want) {
  if (got.ne != want.ne) return "shapes differ";
  size_t n_bad = 0;
  std::string first;
  for (size_t i = 0; i < want.v.size(); ++i) {
    if (got.v[i] == want.v[i] || (std::isnan(got.v[i]) && std::isnan(want.v[i]))) continue;
    if (n_bad++ < 5)
      first += fmt::format("\n  at {}: got {:.9g}, want {:.9g}", index_str(want, i), got.v[i], want.v[i]);
  }
  return n_bad == 0 ? std::string() : fmt::format("{} of {} elements differ:{}", n_bad, want.v.size(), first);
}

}  // namespace gl::test
