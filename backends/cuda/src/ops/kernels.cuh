// kernels.cuh - CUDA kernel entries, one per op family (backends/cuda/src/ops/*.cu).
//
// Same semantics as the CPU reference (backends/cpu/src/ops/kernels.h and ggml-lite/ops.def):
// every entry honours ne/nb strides of its sources, writes dst (contiguous unless the op is
// CPY/SET_ROWS, which write through views), launches on ctx.stream and never synchronises.
// supports_* says whether the entry handles this node's dtypes/shapes; the backend's
// supports() asks it, so the scheduler can fall back to the CPU for the rest.
#pragma once

#include <span>

#include "../common.cuh"

namespace gl::cuda {

void binary(const Ctx& ctx, Tensor& dst);  // ADD, SUB, MUL, DIV (broadcasting)
void unary(const Ctx& ctx, Tensor& dst);   // SCALE, SILU, SIGMOID, SOFTPLUS, EXP
void swiglu(const Ctx& ctx, Tensor& dst);  // SWIGLU
void norm(const Ctx& ctx, Tensor& dst);    // RMS_NORM, L2_NORM
// A norm and the MUL by a broadcast weight that follows it, as one kernel writing both results;
// false (nothing launched) when the pair does not have that shape.
bool norm_mul(const Ctx& ctx, Tensor& norm, Tensor& mul);
// ADD -> norm -> MUL by a weight (a layer's residual add and the next RMSNorm), one kernel
// writing all three results; false (nothing launched) when the three do not have that shape.
bool norm_add_mul(const Ctx& ctx, Tensor& add, Tensor& norm, Tensor& mul);
// RMS_NORM -> MUL(weight) -> ROPE (NEOX) of rows up to 256 (the attention's q and k heads): one
// kernel writing all three results; false (nothing launched) when the three do not have that shape.
bool norm_mul_rope(const Ctx& ctx, Tensor& norm, Tensor& mul, Tensor& rope);
// The longest run (2..4) of elementwise nodes at the front of nodes, each reading the previous
// one, as one kernel writing every node's result; 0 (nothing launched) when there is none.
int elementwise_chain(const Ctx& ctx, std::span<Tensor* const> nodes);
void softmax(const Ctx& ctx, Tensor& dst);     // SOFTMAX
void flash_attn(const Ctx& ctx, Tensor& dst);  // FLASH_ATTN
void rope(const Ctx& ctx, Tensor& dst);        // ROPE
void get_rows(const Ctx& ctx, Tensor& dst);    // GET_ROWS
void set_rows(const Ctx& ctx, Tensor& dst);    // SET_ROWS
void concat(const Ctx& ctx, Tensor& dst);      // CONCAT
void copy(const Ctx& ctx, Tensor& dst);        // CONT, CPY
void argmax(const Ctx& ctx, Tensor& dst);      // ARGMAX
void top_k(const Ctx& ctx, Tensor& dst);       // TOP_K
void sum_rows(const Ctx& ctx, Tensor& dst);    // SUM_ROWS
// MUL of the experts' rows by their weights -> PERMUTE -> SUM_ROWS over the experts (the MoE's
// weighted sum), one kernel writing the product and the sums; 3 when launched, 0 (nothing
// launched) otherwise.
int weighted_sum(const Ctx& ctx, std::span<Tensor* const> nodes);
// A MoE router's SOFTMAX (no mask) and the TOP_K of its result, one kernel writing both; false
// (nothing launched) when the pair does not have that shape.
bool softmax_top_k(const Ctx& ctx, Tensor& softmax, Tensor& top_k);
// GET_ROWS of the picked probabilities -> RESHAPE -> SUM_ROWS -> DIV (the experts' renormalised
// weights), one kernel writing every result; 4 when launched, 0 (nothing launched) otherwise.
int expert_weights(const Ctx& ctx, std::span<Tensor* const> nodes);
// Those four nodes, the RESHAPE of the weights to [1, k, T], then the weighted sum's MUL -> PERMUTE
// -> SUM_ROWS (weighted_sum) over them: one block (decode, verify) writing every result; 8 when
// launched, 0 (nothing launched) otherwise.
int weighted_experts(const Ctx& ctx, std::span<Tensor* const> nodes);
void mul_mat(const Ctx& ctx, Tensor& dst);  // MUL_MAT
// A MUL_MAT on the GEMV path followed by elementwise nodes reading its result (a gate's sigmoid,
// the softplus gate chain, swiglu on the up projection): one launch, the chain applied by each
// output's writer; how many nodes were launched, 0 (nothing launched) when there is no such run.
int mul_mat_chain(const Ctx& ctx, std::span<Tensor* const> nodes);
// Two such runs back to back whose narrow products read the same input with weights of one type
// and layout (the Gated DeltaNet's alpha -> add, softplus, mul and beta -> sigmoid): one launch for
// both; the nodes launched, or 0.
int mul_mat_twin(const Ctx& ctx, std::span<Tensor* const> nodes);
// An FFN's gate and up products of one input (MUL_MAT, or MUL_MAT_ID of at most 8 tokens) and the
// SWIGLU of the two: one GEMV launch writing all three; 3 when launched, 0 (nothing launched) when
// the nodes do not have that shape.
int mul_mat_pair(const Ctx& ctx, std::span<Tensor* const> nodes);
void mul_mat_id(const Ctx& ctx, Tensor& dst);  // MUL_MAT_ID
void ssm_conv(const Ctx& ctx, Tensor& dst);    // SSM_CONV
// CONCAT(state, new, dim 1) -> SSM_CONV -> SILU (the GDN input path), one kernel writing all three
// results; false (nothing launched) when the three do not have that shape.
bool conv_window(const Ctx& ctx, Tensor& concat, Tensor& conv, Tensor& silu);
// The same three, then (past views) the L2_NORM of the activation's q and k head rows and the
// SCALE of the q rows, as the Gated DeltaNet builds them: one kernel writing all five results; with
// one new column it also does the CPY that carries the window's last columns into the state (set
// in *carried, which the caller then does not launch). The nodes launched, or 0.
int conv_window_norm(const Ctx& ctx, std::span<Tensor* const> nodes, const Tensor** carried);
void gated_delta_rule(const Ctx& ctx, Tensor& dst);  // GATED_DELTA_RULE
// A GATED_DELTA_RULE (recurrent form) with what the decode graph does next, in one kernel:
// - the CPY that puts its last state back into the state it read (the model's cache update, an
//   effect at the end of the step graph), with nothing between touching that cache: the kernel
//   writes the state there, each thread the elements it read at the start (set in *carried, which
//   the caller then does not launch);
// - the gated RMSNorm right after it (VIEW(o) -> RMS_NORM -> MUL(weight) -> RESHAPE -> MUL(z)),
//   and under FAST the int8 rows of a GEMV of its result (Ctx::q8).
// The leading nodes launched (1, or 6 with the norm), or 0 when it fused neither.
int gated_delta_rule_fused(const Ctx& ctx, std::span<Tensor* const> nodes, const Tensor** carried);
// GATED_DELTA_RULE in chunked (WY) form: n_states == 1, F32 q, k, v, g, beta; gated_delta_rule picks it.
void gated_delta_rule_chunked(const Ctx& ctx, Tensor& dst);

// Scratch bytes an entry uses beside dst (Backend::workspace_size): the planner reserves them and
// sets dst.workspace; 0 when the path the node takes needs none.
size_t flash_attn_workspace(const Tensor& dst);
size_t gated_delta_rule_workspace(const Tensor& dst);  // the chunked form's, when gated_delta_rule picks it
size_t gated_delta_rule_chunked_workspace(const Tensor& dst);
size_t mul_mat_id_workspace(const Tensor& dst);
size_t mul_mat_id_route_bytes(const Tensor& dst);  // the routing tables at the workspace's start
// The GEMV path's int8 activations of src[1], the same for every product of that input: the
// node's Backend::workspace_share key (src[1]), so the input is quantized once for all of them.
const Tensor* mul_mat_workspace_share(const Tensor& dst);
size_t mul_mat_workspace(const Tensor& dst);  // the cuBLAS path's converted activations and weight tile
size_t argmax_workspace(const Tensor& dst);   // per-segment partials of long rows

// Per family: can the entry compute this node (dtypes, layouts)? Unsupported nodes run on the CPU.
bool supports_flash_attn(const Tensor& node);
bool supports_elementwise(const Tensor& node);  // binary, unary, swiglu, norm, softmax, rope
bool supports_layout(const Tensor& node);       // get_rows, set_rows, concat, copy
bool supports_reduce(const Tensor& node);       // argmax, top_k, sum_rows
bool supports_matmul(const Tensor& node);       // mul_mat, mul_mat_id
bool supports_ssm(const Tensor& node);          // ssm_conv, gated_delta_rule

}  // namespace gl::cuda
