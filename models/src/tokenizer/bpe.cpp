// bpe.cpp - byte-level BPE merging of one pre-tokenized piece.
//
// Symbols form a linked list over the piece's bytes; candidate merges of adjacent symbols wait
// in a min-heap ordered by (rank, position), as in Hugging Face's BPE (Word::merge_all). A
// popped candidate is stale when either symbol has changed since it was pushed; the pair of ids
// determines the merge, so checking both ids is enough. O(n log n) in the piece length.
#include <functional>
#include <queue>
#include <vector>

#include "ggml-lite/models/tokenizer.h"

namespace gl {
namespace {

struct Symbol {
  int32_t id;    // kNoToken once merged into its left neighbour
  int32_t prev;  // index of the previous live symbol, -1 at the start
  int32_t next;  // index of the next live symbol, -1 at the end
};

struct Candidate {
  int32_t rank;
  int32_t left;  // symbol index
  int32_t left_id, right_id, result;
  bool operator>(const Candidate& o) const { return rank != o.rank ? rank > o.rank : left > o.left; }
};

using CandidateHeap = std::priority_queue<Candidate, std::vector<Candidate>, std::greater<>>;

}  // namespace

void Tokenizer::encode_piece(std::string_view piece, std::vector<int32_t>& out) const {
  const auto n = static_cast<int32_t>(piece.size());
  if (n == 0) return;
  std::vector<Symbol> sym(piece.size());
  for (int32_t i = 0; i < n; ++i)
    sym[size_t(i)] = {byte_ids_[static_cast<uint8_t>(piece[size_t(i)])], i - 1, i + 1 < n ? i + 1 : -1};

  CandidateHeap heap;
  auto consider = [&](int32_t left) {
    const int32_t right = sym[size_t(left)].next;
    if (right < 0) return;
    const int32_t a = sym[size_t(left)].id, b = sym[size_t(right)].id;
    auto it = merges_.find((uint64_t(uint32_t(a)) << 32) | uint32_t(b));
    if (it != merges_.end()) heap.push({it->second.rank, left, a, b, it->second.result});
  };
  for (int32_t i = 0; i + 1 < n; ++i) consider(i);

  while (!heap.empty()) {
    const Candidate c = heap.top();
    heap.pop();
    Symbol& l = sym[size_t(c.left)];
    if (l.id != c.left_id || l.next < 0 || sym[size_t(l.next)].id != c.right_id) continue;  // stale
    Symbol& r = sym[size_t(l.next)];
    l.id = c.result;
    l.next = r.next;
    if (r.next >= 0) sym[size_t(r.next)].prev = c.left;
    r.id = kNoToken;
    if (l.prev >= 0) consider(l.prev);
    consider(c.left);
  }
  // Symbol 0 is always the left side of its merges, so it is never removed.
  for (int32_t i = 0; i >= 0; i = sym[size_t(i)].next) out.push_back(sym[size_t(i)].id);
}

}  // namespace gl
