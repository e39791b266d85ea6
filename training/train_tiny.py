#!/usr/bin/env python3
"""Train the embedded default model: a tiny Qwen3.5 (hybrid Gated DeltaNet + gated full attention)
with one MTP layer, on Tiny Shakespeare, and export it in Hugging Face layout for gguf-convert.

Runs on the GPU machine (torch, transformers 5.x with Qwen3_5ForCausalLM, tokenizers, safetensors);
the trunk is transformers' own Qwen3_5ForCausalLM on its pure-torch Gated DeltaNet path. transformers
has no MTP module, so the MTP layer is assembled from its classes (spec section 9.2): two RMSNorms,
fc Linear(2H, H), one full-attention decoder layer of the trunk class, a final RMSNorm, with the
trunk's embed_tokens and lm_head. MTP row t pairs final_norm(h_t) with embed(x_{t+1}) at position t
and predicts x_{t+2}. Loss = CE(trunk next token) + lambda * CE(MTP), trained jointly.

  python3 training/train_tiny.py [--out training/out/tiny-shakespeare] [--seed 1234] [--steps 1500]

Writes to --out: config.json (qwen3_5 vision-language nesting), model-0000{1,2}-of-00002.safetensors
+ index (model.language_model.*, mtp.*), tokenizer.json, tokenizer_config.json, train_log.json
(hyperparameters, losses, acceptance, versions) and reference.json (prompt, greedy ids, teacher-forced
MTP drafts, for the C++ tests). Exit status 3 when held-out acceptance is under --min-acceptance.
"""
import os

os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")  # before torch initialises cuBLAS

import argparse
import copy
import hashlib
import json
import math
import platform
import random
import sys
import time
import warnings

import torch
import torch.nn.functional as F
from torch import nn

HERE = os.path.dirname(os.path.abspath(__file__))
QWEN2_SPLIT = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*"
               r"|\s*[\r\n]+|\s+(?!\S)|\s+")
SPECIALS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]  # ids 0, 1, 2
PROMPT = "First Citizen:\nBefore we proceed any further, hear me speak."
TOKENIZER_PROBES = [
    "Hello world", "ROMEO:\nBut, soft! what light through yonder window breaks?",
    "  leading spaces and trailing  ", "numbers 12345 and 3.14159", "don't won't I'll we've they're",
    "tabs\tand\nnewlines\r\n\n", "unicode: caf\u00e9 na\u00efve \u00fcber \u4f60\u597d \U0001F600",
    "<|im_start|>user\nhi<|im_end|>", "MiXeD CaSe!!! ???", "",
]
CONF_EDGES = (0.3, 0.6)  # acceptance is also reported by the trunk's top-1 probability at t+1
MAX_FILE_BYTES = 16 * 2 ** 20  # what the device tool brings back per file


# ----------------------------------------------------------------------------- setup, data, tokenizer

def parse_args():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", default=os.path.join(HERE, "out", "tiny-shakespeare"))
    ap.add_argument("--corpus", default=os.path.join(HERE, "data", "tinyshakespeare.txt"))
    ap.add_argument("--seed", type=int, default=1234)
    ap.add_argument("--steps", type=int, default=700, help="optimizer steps (the cosine schedule's length)")
    ap.add_argument("--max-minutes", type=float, default=5.5,
                    help="training-loop budget; the schedule is shortened to fit after timing the first "
                         "steps, and the loop stops at 1.05x it. 0 = no limit (fully deterministic run)")
    ap.add_argument("--device", default="cuda", help="cuda (default; falls back to cpu) or cpu")
    ap.add_argument("--lambda-mtp", type=float, default=1.0, help="weight of the MTP cross-entropy")
    ap.add_argument("--detach-hidden", action="store_true",
                    help="stop MTP gradients at the trunk hidden state (default: joint training)")
    ap.add_argument("--kd-weight", type=float, default=1.0,
                    help="extra KL(trunk_{t+1} || mtp_t) term on the MTP head only (0 = the plain CE loss)")
    ap.add_argument("--batch-size", type=int, default=16)
    ap.add_argument("--seq-len", type=int, default=512)
    ap.add_argument("--lr", type=float, default=1.5e-3)
    ap.add_argument("--min-lr-ratio", type=float, default=0.1)
    ap.add_argument("--warmup", type=int, default=50)
    ap.add_argument("--weight-decay", type=float, default=0.1)
    ap.add_argument("--grad-clip", type=float, default=1.0)
    ap.add_argument("--dropout", type=float, default=0.2,
                    help="dropout on each mixer / MLP output before the residual add (training only)")
    ap.add_argument("--vocab-size", type=int, default=1024)
    ap.add_argument("--val-frac", type=float, default=0.05, help="validation split (checkpoint selection)")
    ap.add_argument("--test-frac", type=float, default=0.10, help="held-out split: the corpus's last part")
    ap.add_argument("--eval-every", type=int, default=100)
    ap.add_argument("--log-every", type=int, default=100)
    ap.add_argument("--min-acceptance", type=float, default=0.60)
    return ap.parse_args()


def setup(seed, want):
    """Seeds, deterministic kernels, exact fp32 (no TF32); returns the device."""
    if want.startswith("cuda") and not torch.cuda.is_available():
        print("note: CUDA is not available, using the CPU", flush=True)
        want = "cpu"
    random.seed(seed)
    torch.manual_seed(seed)
    torch.use_deterministic_algorithms(True, warn_only=True)
    warnings.filterwarnings("once", message=".*deterministic.*")
    torch.backends.cudnn.benchmark = False
    torch.backends.cudnn.deterministic = True
    try:  # exact float32 matmuls and convolutions (the C++ reference comparisons want IEEE fp32)
        torch.backends.cuda.matmul.allow_tf32 = False
        torch.backends.cudnn.allow_tf32 = False
    except Exception as err:  # a torch that only offers the fp32_precision settings
        print(f"note: could not turn TF32 off: {err}", flush=True)
    return torch.device(want)


def sha256_bytes(data):
    return hashlib.sha256(data).hexdigest()


def split_corpus(text, val_frac, test_frac):
    """train | val | held-out, cut at line ends; held-out is the last test_frac of the corpus."""
    def cut(frac):
        j = text.find("\n", int(len(text) * frac))
        return len(text) if j < 0 else j + 1
    c_val, c_test = cut(1.0 - test_frac - val_frac), cut(1.0 - test_frac)
    return {"train": text[:c_val], "val": text[c_val:c_test], "held_out": text[c_test:]}


def train_tokenizer(train_text, vocab_size):
    """Byte-level BPE, Qwen2 split regex then ByteLevel(use_regex=False); specials first (id 0..2)."""
    from tokenizers import Regex, Tokenizer, decoders, models, pre_tokenizers, trainers
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.Split(Regex(QWEN2_SPLIT), behavior="isolated", invert=False),
        pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False),
    ])
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=vocab_size, special_tokens=SPECIALS, min_frequency=2,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), show_progress=False)
    tok.train_from_iterator([train_text], trainer=trainer)
    for i, s in enumerate(SPECIALS):
        assert tok.token_to_id(s) == i, f"special token {s} has id {tok.token_to_id(s)}, expected {i}"
    return tok


def encode_splits(tok, texts, device):
    ids = {k: torch.tensor(tok.encode(v).ids, dtype=torch.long, device=device) for k, v in texts.items()}
    sample = texts["held_out"][:2000]
    assert tok.decode(tok.encode(sample).ids) == sample, "tokenizer does not round-trip the held-out text"
    return ids


def sample_batch(ids, batch, seq_len, gen):
    """batch random windows of seq_len + 1 tokens (inputs and shifted targets)."""
    starts = torch.randint(0, len(ids) - seq_len - 1, (batch,), generator=gen)
    idx = starts[:, None] + torch.arange(seq_len + 1)[None]
    return ids[idx.to(ids.device)]


def eval_windows(ids, seq_len, max_windows=None):
    """Non-overlapping windows of seq_len + 1 tokens (consecutive windows share one token)."""
    n = (len(ids) - 1) // seq_len
    if max_windows:
        n = min(n, max_windows)
    return torch.stack([ids[i * seq_len: i * seq_len + seq_len + 1] for i in range(n)])


# ----------------------------------------------------------------------------- model

def text_config(vocab):
    """The trunk: 8 layers (3 Gated DeltaNet + 1 gated full attention, twice), H=192, tied embeddings."""
    return dict(
        vocab_size=vocab, hidden_size=192, intermediate_size=512, num_hidden_layers=8,
        num_attention_heads=4, num_key_value_heads=2, head_dim=64, hidden_act="silu",
        max_position_embeddings=2048, rms_norm_eps=1e-6, initializer_range=0.02,
        rope_parameters=dict(rope_type="default", rope_theta=10000000.0, partial_rotary_factor=0.25,
                             mrope_section=[3, 3, 2], mrope_interleaved=True),
        layer_types=(["linear_attention"] * 3 + ["full_attention"]) * 2, full_attention_interval=4,
        linear_conv_kernel_dim=4, linear_key_head_dim=32, linear_value_head_dim=32,
        linear_num_key_heads=4, linear_num_value_heads=8, attn_output_gate=True, attention_bias=False,
        mtp_num_hidden_layers=1, mtp_use_dedicated_embeddings=False,
        bos_token_id=None, eos_token_id=0, pad_token_id=None, tie_word_embeddings=True,
    )


def make_config(cfg):
    from transformers import Qwen3_5TextConfig as Cfg
    cfg = {k: v for k, v in cfg.items() if k != "model_type"}
    try:
        config = Cfg(**cfg)
    except TypeError as err:  # a strict config class that rejects keys it does not declare
        print(f"note: {err}; passing declared fields only", flush=True)
        config = Cfg(**{k: v for k, v in cfg.items() if k in getattr(Cfg, "__dataclass_fields__", cfg)})
    config._attn_implementation = "eager"
    return config


def build_trunk(cfg, seed):
    """transformers' Qwen3_5ForCausalLM with its own initialisation (seeded), float32, on the CPU."""
    from transformers import Qwen3_5ForCausalLM
    config = make_config(cfg)
    torch.manual_seed(seed)
    model = Qwen3_5ForCausalLM(config).float()
    if cfg["tie_word_embeddings"] and model.lm_head.weight is not model.model.embed_tokens.weight:
        model.tie_weights()
        if model.lm_head.weight is not model.model.embed_tokens.weight:
            model.lm_head.weight = model.model.embed_tokens.weight
    return model, config


class MTPHead(nn.Module):
    """Qwen3.5's MTP layer from transformers' own classes; attribute names are the checkpoint's
    (mtp.pre_fc_norm_embedding, mtp.pre_fc_norm_hidden, mtp.fc, mtp.layers.0.*, mtp.norm)."""

    def __init__(self, model, config):
        super().__init__()
        H, eps = config.hidden_size, config.rms_norm_eps
        norm_cls = type(model.model.norm)
        full = list(config.layer_types).index("full_attention")
        self.pre_fc_norm_embedding = norm_cls(H, eps=eps)
        self.pre_fc_norm_hidden = norm_cls(H, eps=eps)
        self.fc = nn.Linear(2 * H, H, bias=False)
        self.layers = nn.ModuleList([type(model.model.layers[full])(config, full)])
        self.norm = norm_cls(H, eps=eps)

    def forward(self, embeds, hidden, position_embeddings, attention_mask):
        """embeds = embed(x_{t+1}), hidden = final_norm(h_t), rows t = 0..n-1 -> h_mtp (post mtp.norm)."""
        c = torch.cat([self.pre_fc_norm_embedding(embeds), self.pre_fc_norm_hidden(hidden)], dim=-1)
        u = run_layer(self.layers[0], self.fc(c), position_embeddings, attention_mask)
        return self.norm(u)


def init_mtp(mtp, std, seed):
    """Linear weights ~ N(0, std) like the trunk's; RMSNorm weights stay 0 (scale 1 + w = 1)."""
    gen = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, p in mtp.named_parameters():
            if p.ndim == 2:
                p.copy_(torch.randn(p.shape, generator=gen) * std)
            elif "norm" not in name.rsplit(".", 2)[-2]:
                raise RuntimeError(f"unexpected MTP parameter {name}")


def run_layer(layer, hidden, position_embeddings, attention_mask):
    out = layer(hidden, position_embeddings=position_embeddings, attention_mask=attention_mask)
    return out[0] if isinstance(out, tuple) else out


def add_dropout_hooks(layers, p):
    """Residual dropout: on each decoder layer's mixer and MLP outputs, active in training mode only."""
    def hook(module, _inputs, output):
        if not module.training or p <= 0:
            return None
        if isinstance(output, tuple):
            return (F.dropout(output[0], p, True),) + tuple(output[1:])
        return F.dropout(output, p, True)
    for layer in layers:
        for name in ("linear_attn", "self_attn", "mlp"):
            if hasattr(layer, name):
                getattr(layer, name).register_forward_hook(hook)


def mtp_position_inputs(model, batch, n, ref):
    """RoPE for positions 0..n-1 from the trunk's own rotary module, and a causal additive mask."""
    pos = torch.arange(n, device=ref.device).view(1, 1, n).expand(3, batch, n)  # text: 3 equal mrope rows
    cos, sin = model.model.rotary_emb(ref, pos)
    mask = torch.full((n, n), torch.finfo(ref.dtype).min, device=ref.device, dtype=ref.dtype).triu(1)
    return (cos, sin), mask.view(1, 1, n, n)


def forward_all(model, mtp, x, detach_hidden=False):
    """Trunk logits [B, T, V] for x_0..x_{T-1}; MTP logits [B, T-1, V] for rows t = 0..T-2
    ((x_{t+1}, final_norm(h_t)) at position t, predicting x_{t+2}); h = final_norm output."""
    h = model.model(input_ids=x, use_cache=False).last_hidden_state
    trunk_logits = model.lm_head(h)
    n = x.shape[1] - 1
    h_in = h[:, :n].detach() if detach_hidden else h[:, :n]
    embeds = model.model.embed_tokens(x[:, 1:])
    pe, mask = mtp_position_inputs(model, x.shape[0], n, h)
    mtp_logits = model.lm_head(mtp(embeds, h_in, pe, mask))
    return trunk_logits, mtp_logits, h


def compute_losses(trunk_logits, mtp_logits, w, lam, kd):
    """w: [B, T+1] window; trunk targets w[:, 1:], MTP targets w[:, 2:]."""
    V = trunk_logits.shape[-1]
    ce_t = F.cross_entropy(trunk_logits.reshape(-1, V), w[:, 1:].reshape(-1))
    ce_m = F.cross_entropy(mtp_logits.reshape(-1, V), w[:, 2:].reshape(-1))
    loss = ce_t + lam * ce_m
    if kd > 0:
        t_logp = F.log_softmax(trunk_logits[:, 1:].detach(), dim=-1)
        m_logp = F.log_softmax(mtp_logits, dim=-1)
        loss = loss + kd * (t_logp.exp() * (t_logp - m_logp)).sum(-1).mean()
    return loss, ce_t, ce_m


# ----------------------------------------------------------------------------- self-checks

def check_trunk_calls(model, x):
    """(a) lm_head(last_hidden_state) == model logits, i.e. h is the post-final-norm tap; (b) the
    trunk's full-attention layer, re-run with the MTP's RoPE/mask, reproduces its own output."""
    layer = model.model.layers[list(model.config.layer_types).index("full_attention")]
    cap = {}

    def pre(_m, args, kwargs):
        cap["inp"] = args[0] if args else kwargs["hidden_states"]
        cap["kw"] = dict(kwargs)

    def post(_m, _args, out):
        cap["out"] = out[0] if isinstance(out, tuple) else out
    handles = [layer.register_forward_pre_hook(pre, with_kwargs=True), layer.register_forward_hook(post)]
    try:
        hid = model.model(input_ids=x, use_cache=False).last_hidden_state
    finally:
        for hd in handles:
            hd.remove()
    logits = model(input_ids=x, use_cache=False).logits
    pe, mask = mtp_position_inputs(model, x.shape[0], x.shape[1], hid)
    ref_pe = cap["kw"].get("position_embeddings")
    pe_diff = max((a - b).abs().max().item() for a, b in zip(pe, ref_pe)) if ref_pe is not None else float("nan")
    rerun = run_layer(layer, cap["inp"], pe, mask)
    return {"post_norm_tap_max_abs": (model.lm_head(hid) - logits).abs().max().item(),
            "rope_vs_trunk_max_abs": pe_diff,
            "full_attn_layer_recall_max_abs": (rerun - cap["out"]).abs().max().item()}


def manual_mtp_row(cfg, sd, emb, head, ids, hid, t):
    """MTP logits of row t by hand from spec section 8.2 / 5, in float64 (no transformers code)."""
    eps, d = cfg["rms_norm_eps"], cfg["head_dim"]
    n_h, n_kv = cfg["num_attention_heads"], cfg["num_key_value_heads"]
    rope = cfg["rope_parameters"]
    R, L, rows = int(d * rope["partial_rotary_factor"]), "layers.0.", t + 1

    def rms(x, w):  # zero-centred RMSNorm: scale (1 + w)
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * (1.0 + w)

    def lin(x, name):
        return x @ sd[L + name + ".weight"].T

    e_hat = rms(emb[ids[1:rows + 1]], sd["pre_fc_norm_embedding.weight"])  # embedding FIRST
    h_hat = rms(hid[:rows], sd["pre_fc_norm_hidden.weight"])
    u = torch.cat([e_hat, h_hat], -1) @ sd["fc.weight"].T
    a = rms(u, sd[L + "input_layernorm.weight"])
    qg = lin(a, "self_attn.q_proj").view(rows, n_h, 2 * d)  # per head: [query d | gate d]
    q, gate = qg[..., :d], qg[..., d:].reshape(rows, n_h * d)
    q = rms(q, sd[L + "self_attn.q_norm.weight"])
    k = rms(lin(a, "self_attn.k_proj").view(rows, n_kv, d), sd[L + "self_attn.k_norm.weight"])
    v = lin(a, "self_attn.v_proj").view(rows, n_kv, d)
    inv = (1.0 / (rope["rope_theta"] ** (torch.arange(0, R, 2).float() / R))).double()  # fp32 like HF
    ang = torch.arange(rows, dtype=torch.float64)[:, None] * inv[None]
    cos, sin = torch.cat([ang.cos()] * 2, -1)[:, None], torch.cat([ang.sin()] * 2, -1)[:, None]

    def rot(x):  # NeoX-style partial RoPE on the first R dims
        xr = x[..., :R]
        return torch.cat([xr * cos + torch.cat([-xr[..., R // 2:], xr[..., :R // 2]], -1) * sin, x[..., R:]], -1)
    q, k = rot(q), rot(k)
    kv = torch.arange(n_h) // (n_h // n_kv)  # GQA: head j reads kv head j // (nH / nKV)
    scores = torch.einsum("hd,jhd->hj", q[t], k[:, kv]) / math.sqrt(d)  # causal: rows 0..t only
    o = torch.einsum("hj,jhd->hd", scores.softmax(-1), v[:, kv]).reshape(n_h * d)
    u1 = u[t] + (o * torch.sigmoid(gate[t])) @ sd[L + "self_attn.o_proj.weight"].T
    m = rms(u1, sd[L + "post_attention_layernorm.weight"])
    u2 = u1 + lin(F.silu(lin(m, "mlp.gate_proj")) * lin(m, "mlp.up_proj"), "mlp.down_proj")
    return rms(u2, sd["norm.weight"]) @ head.T


@torch.no_grad()
def check_mtp_rows(cfg, model, mtp, x):
    """The batched MTP forward (training path) against manual_mtp_row for a few rows of x[0]."""
    _, mtp_logits, h = forward_all(model, mtp, x)
    sd = {k: v.detach().double().cpu() for k, v in mtp.state_dict().items()}
    emb = model.model.embed_tokens.weight.detach().double().cpu()
    head = model.lm_head.weight.detach().double().cpu()
    ids, hid = x[0].cpu(), h[0].detach().double().cpu()
    worst, scale = 0.0, 0.0
    for t in sorted({0, 1, x.shape[1] // 2, x.shape[1] - 2}):
        ref = manual_mtp_row(cfg, sd, emb, head, ids, hid, t)
        worst = max(worst, (mtp_logits[0, t].double().cpu() - ref).abs().max().item())
        scale = max(scale, ref.abs().max().item())
    return {"mtp_manual_rows_max_abs": worst, "mtp_manual_rows_logit_scale": scale}


def run_self_checks(cfg, model, mtp, x, stage):
    model.eval()
    mtp.eval()
    with torch.no_grad():
        res = check_trunk_calls(model, x)
    res.update(check_mtp_rows(cfg, model, mtp, x))
    tol = 1e-4 * max(1.0, res["mtp_manual_rows_logit_scale"])
    ok = (res["post_norm_tap_max_abs"] <= 1e-5 and res["rope_vs_trunk_max_abs"] <= 1e-6
          and res["full_attn_layer_recall_max_abs"] <= 1e-5 and res["mtp_manual_rows_max_abs"] <= tol)
    res["ok"] = bool(ok)
    print(f"self-check ({stage}): " + ", ".join(f"{k} {v:.2e}" if isinstance(v, float) else f"{k} {v}"
                                                 for k, v in res.items()), flush=True)
    if not ok:
        raise SystemExit(f"self-check ({stage}) FAILED: {res}")
    return res


# ----------------------------------------------------------------------------- evaluation

@torch.no_grad()
def evaluate(model, mtp, windows, batch):
    """Trunk CE/ppl/accuracy, MTP CE/accuracy vs x_{t+2}, teacher-forced greedy acceptance (k=1):
    mean over rows t of [argmax mtp_logits[t] == argmax trunk_logits[t+1]]."""
    model.eval()
    mtp.eval()
    s = dict(ce_t=0.0, ce_m=0.0, n_t=0, n_m=0, acc_t=0, acc_m=0, accept=0)
    edges = torch.tensor(CONF_EDGES, device=windows.device)
    b_n = torch.zeros(len(CONF_EDGES) + 1, device=windows.device)
    b_acc = torch.zeros_like(b_n)
    for i in range(0, len(windows), batch):
        w = windows[i: i + batch]
        tl, ml, _ = forward_all(model, mtp, w[:, :-1])
        V = tl.shape[-1]
        s["ce_t"] += F.cross_entropy(tl.reshape(-1, V), w[:, 1:].reshape(-1), reduction="sum").item()
        s["ce_m"] += F.cross_entropy(ml.reshape(-1, V), w[:, 2:].reshape(-1), reduction="sum").item()
        s["n_t"] += w[:, 1:].numel()
        s["n_m"] += w[:, 2:].numel()
        s["acc_t"] += (tl.argmax(-1) == w[:, 1:]).sum().item()
        s["acc_m"] += (ml.argmax(-1) == w[:, 2:]).sum().item()
        nxt = tl[:, 1:]
        agree = ml.argmax(-1) == nxt.argmax(-1)
        s["accept"] += agree.sum().item()
        bucket = torch.bucketize(nxt.softmax(-1).amax(-1), edges).flatten()
        b_n += torch.bincount(bucket, minlength=len(b_n)).float()
        b_acc += torch.bincount(bucket, weights=agree.flatten().float(), minlength=len(b_n))
    names = [f"p<={CONF_EDGES[0]}"] + [f"{a}<p<={b}" for a, b in zip(CONF_EDGES, CONF_EDGES[1:])]
    names.append(f"p>{CONF_EDGES[-1]}")
    by_conf = {nm: {"share": round(n / max(1.0, b_n.sum().item()), 4), "accept": round(a / max(1.0, n), 4)}
               for nm, n, a in zip(names, b_n.tolist(), b_acc.tolist())}
    return {"trunk_loss": s["ce_t"] / s["n_t"], "trunk_ppl": math.exp(s["ce_t"] / s["n_t"]),
            "trunk_acc": s["acc_t"] / s["n_t"], "mtp_loss": s["ce_m"] / s["n_m"],
            "mtp_ppl": math.exp(s["ce_m"] / s["n_m"]), "mtp_acc_vs_x_t+2": s["acc_m"] / s["n_m"],
            "accept_k1": s["accept"] / s["n_m"], "accept_by_trunk_top1_prob": by_conf,
            "windows": len(windows), "tokens": s["n_t"]}


def fmt_metrics(m):
    return (f"trunk loss {m['trunk_loss']:.4f} (ppl {m['trunk_ppl']:.2f}, acc {m['trunk_acc']:.3f}) | "
            f"mtp loss {m['mtp_loss']:.4f} (acc {m['mtp_acc_vs_x_t+2']:.3f}) | accept k=1 {m['accept_k1']:.4f}")


# ----------------------------------------------------------------------------- training

def make_optimizer(args, params, device):
    decay = [p for p in params if p.ndim >= 2]
    no_decay = [p for p in params if p.ndim < 2]
    groups = [{"params": decay, "weight_decay": args.weight_decay}, {"params": no_decay, "weight_decay": 0.0}]
    kw = {"fused": True} if device.type == "cuda" else {}
    return torch.optim.AdamW(groups, lr=args.lr, betas=(0.9, 0.95), eps=1e-8, **kw)


def lr_at(step, total, warmup, peak, min_ratio):
    if step < warmup:
        return peak * (step + 1) / warmup
    prog = min(1.0, (step - warmup) / max(1, total - warmup))
    return peak * (min_ratio + (1.0 - min_ratio) * 0.5 * (1.0 + math.cos(math.pi * prog)))


def sync(device):
    if device.type == "cuda":
        torch.cuda.synchronize()


class Budget:
    """Times the first steps, prints the ETA, and shortens the schedule to fit --max-minutes."""
    PROBE = (5, 25)

    def __init__(self, args, device, warmup):
        self.limit = args.max_minutes * 60.0
        self.device, self.warmup = device, warmup
        self.t0 = time.time()
        self.t_probe = None
        self.shrunk_from = None
        self.step_s = None

    def after_step(self, step, total):
        """step = steps done; returns the (possibly shortened) total."""
        if step == self.PROBE[0]:
            sync(self.device)
            self.t_probe = time.time()
        if step != self.PROBE[1]:
            return total
        sync(self.device)
        self.step_s = (time.time() - self.t_probe) / (self.PROBE[1] - self.PROBE[0])
        eta = self.step_s * (total - step)
        print(f"timing: {self.step_s * 1e3:.1f} ms/step, ETA {eta / 60:.1f} min for {total} steps", flush=True)
        if self.limit > 0:
            fit = step + int(0.93 * (self.limit - self.elapsed()) / self.step_s)
            if fit < total:
                self.shrunk_from, total = total, max(fit, min(total, 2 * self.warmup))
                print(f"timing: schedule shortened to {total} steps to fit --max-minutes "
                      f"{self.limit / 60:g} (rerun with --steps {total} --max-minutes 0 to reproduce)",
                      flush=True)
        return total

    def elapsed(self):
        return time.time() - self.t0

    def over(self):
        return self.limit > 0 and self.elapsed() > 1.05 * self.limit


def train(args, model, mtp, data, device):
    params = list(model.parameters()) + list(mtp.parameters())
    opt = make_optimizer(args, params, device)
    gen = torch.Generator().manual_seed(args.seed + 2)
    val_w = eval_windows(data["val"], args.seq_len)
    warmup = min(args.warmup, max(1, args.steps // 10))
    budget, total, step = Budget(args, device, warmup), args.steps, 0
    run = {"loss": [], "ce_t": [], "ce_m": [], "gnorm": []}
    best = {"objective": float("inf")}
    history, stopped_early, t_log = [], False, time.time()
    model.train()
    mtp.train()
    while step < total:
        lr = lr_at(step, total, warmup, args.lr, args.min_lr_ratio)
        for g in opt.param_groups:
            g["lr"] = lr
        w = sample_batch(data["train"], args.batch_size, args.seq_len, gen)
        tl, ml, _ = forward_all(model, mtp, w[:, :-1], args.detach_hidden)
        loss, ce_t, ce_m = compute_losses(tl, ml, w, args.lambda_mtp, args.kd_weight)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        gnorm = torch.nn.utils.clip_grad_norm_(params, args.grad_clip)
        opt.step()
        for k, v in zip(run, (loss, ce_t, ce_m, gnorm)):
            run[k].append(v.detach())
        step += 1
        total = budget.after_step(step, total)
        stopped_early = budget.over()
        last = step >= total or stopped_early
        if step % args.log_every == 0 or last:
            sync(device)
            avg = {k: torch.stack(v).float().mean().item() for k, v in run.items()}
            tok_s = len(run["loss"]) * args.batch_size * args.seq_len / (time.time() - t_log)
            print(f"step {step:5d}/{total} lr {lr:.2e} loss {avg['loss']:.4f} (trunk {avg['ce_t']:.4f} "
                  f"mtp {avg['ce_m']:.4f}) gnorm {avg['gnorm']:.2f} | {tok_s / 1e3:.0f}k tok/s | "
                  f"{budget.elapsed() / 60:.1f} min", flush=True)
            history.append({"step": step, "lr": lr, **{f"train_{k}": round(v, 5) for k, v in avg.items()}})
            run, t_log = {k: [] for k in run}, time.time()
        if step % args.eval_every == 0 or last:
            m = evaluate(model, mtp, val_w, args.batch_size)
            objective = m["trunk_loss"] + args.lambda_mtp * m["mtp_loss"]
            tag = ""
            if objective < best["objective"]:
                best = {"objective": objective, "step": step, "val": m,
                        "model": {k: v.detach().clone() for k, v in model.state_dict().items()},
                        "mtp": {k: v.detach().clone() for k, v in mtp.state_dict().items()}}
                tag = " [best]"
            print(f"  val @{step}: {fmt_metrics(m)}{tag}", flush=True)
            history.append({"step": step, "val_trunk_loss": round(m["trunk_loss"], 5),
                            "val_mtp_loss": round(m["mtp_loss"], 5), "val_accept_k1": round(m["accept_k1"], 5)})
            model.train()
            mtp.train()
        if stopped_early:
            print(f"stopping early at step {step}: over --max-minutes", flush=True)
            break
    model.load_state_dict(best["model"])
    mtp.load_state_dict(best["mtp"])
    model.eval()
    mtp.eval()
    info = {"steps_requested": args.steps, "steps_scheduled": total, "steps_done": step,
            "schedule_shortened_from": budget.shrunk_from, "stopped_early": stopped_early,
            "best_step": best["step"], "best_val_objective": best["objective"], "warmup": warmup,
            "ms_per_step_probe": None if budget.step_s is None else round(budget.step_s * 1e3, 2),
            "train_minutes": round(budget.elapsed() / 60, 3),
            "tokens_seen": step * args.batch_size * args.seq_len,
            "epochs": round(step * args.batch_size * args.seq_len / len(data["train"]), 2)}
    return info, history


# ----------------------------------------------------------------------------- reference outputs

def f16_rounded_copy(model, mtp):
    """Weights as gguf-convert --outtype f16 stores them: 2-D .weight matrices in F16; norms, A_log,
    dt_bias and the (3-D) conv1d stay F32. Arithmetic stays float32."""
    m2, t2 = copy.deepcopy(model), copy.deepcopy(mtp)
    with torch.no_grad():
        for p in list(m2.parameters()) + list(t2.parameters()):
            if p.ndim == 2:
                p.copy_(p.half().float())
    return m2.eval(), t2.eval()


@torch.no_grad()
def greedy(model, ids, n, device):
    """n greedy tokens by full recompute (no cache), with each step's top-1 minus top-2 logit."""
    seq = torch.tensor([ids], device=device)
    out, margins = [], []
    for _ in range(n):
        logits = model.lm_head(model.model(input_ids=seq, use_cache=False).last_hidden_state[:, -1])[0]
        top = logits.topk(2)
        out.append(int(top.indices[0]))
        margins.append(round(float(top.values[0] - top.values[1]), 5))
        seq = torch.cat([seq, top.indices[:1].view(1, 1)], dim=1)
    return out, margins


@torch.no_grad()
def teacher_forced(model, mtp, seq, n_prompt, device):
    """MTP drafts for rows t = 0..len-2 of seq and their agreement with the trunk's argmax at t+1."""
    tl, ml, _ = forward_all(model, mtp, torch.tensor([seq], device=device))
    trunk_argmax = tl[0].argmax(-1)
    top = ml[0].topk(2, dim=-1)
    agree = (top.indices[:, 0] == trunk_argmax[1:]).float()
    return {"trunk_argmax": trunk_argmax.tolist(), "mtp_draft_ids": top.indices[:, 0].tolist(),
            "mtp_top2_margins": [round(float(v), 5) for v in (top.values[:, 0] - top.values[:, 1])],
            "acceptance_prompt": agree[: n_prompt - 1].mean().item(), "rows_prompt": n_prompt - 1,
            "acceptance_sequence": agree.mean().item(), "rows_sequence": len(seq) - 1}


@torch.no_grad()
def cached_decode_diff(model, ids, device):
    """Max |logit| difference between prefill + cached one-token decode and a full forward."""
    x = torch.tensor([ids], device=device)
    T = x.shape[1]
    full = model(input_ids=x, use_cache=False).logits[0]
    out = model(input_ids=x[:, : T - 4], use_cache=True)
    pkv, worst = out.past_key_values, 0.0
    for t in range(T - 4, T):
        step = model(input_ids=x[:, t: t + 1], past_key_values=pkv, use_cache=True)
        pkv = step.past_key_values
        worst = max(worst, (step.logits[0, -1] - full[t]).abs().max().item())
    return worst


def build_reference(model, mtp, tok, device, n_new=64):
    """reference.json for the C++ tests, computed with F16-rounded weights (what the F16 GGUF holds)."""
    m16, t16 = f16_rounded_copy(model, mtp)
    ids = tok.encode(PROMPT).ids
    cont, margins = greedy(m16, ids, n_new, device)
    tf = teacher_forced(m16, t16, ids + cont, len(ids), device)
    cont32, _ = greedy(model, ids, n_new, device)
    tf32 = teacher_forced(model, mtp, ids + cont32, len(ids), device)
    return {
        "weights": "float32 master weights rounded to F16 like gguf-convert --outtype f16 (2-D .weight "
                   "tensors; norms, A_log, dt_bias, conv1d stay F32); arithmetic in float32",
        "prompt": PROMPT, "prompt_ids": ids, "greedy_ids": cont, "greedy_text": tok.decode(cont),
        "greedy_top2_margins": margins,
        "mtp_rows": "row t pairs final_norm(h_t) with embed(x_{t+1}) at position t (vLLM convention); "
                    "predicts x_{t+2}; rows cover prompt_ids + greedy_ids",
        "teacher_forced": tf,
        "f32_weights": {"greedy_ids": cont32, "same_as_f16": cont32 == cont,
                        "acceptance_prompt": tf32["acceptance_prompt"],
                        "acceptance_sequence": tf32["acceptance_sequence"]},
        "checks": {"cached_decode_max_abs": cached_decode_diff(model, ids + cont[:8], device)},
        "tokenizer_probes": [{"text": s, "ids": tok.encode(s).ids} for s in TOKENIZER_PROBES],
    }


# ----------------------------------------------------------------------------- export

def hf_state_dict(model, mtp, tied):
    """Hugging Face names, vision-language nesting: model.language_model.*, lm_head.weight, mtp.*."""
    sd = {}
    for k, v in model.state_dict().items():
        if tied and k == "lm_head.weight":
            continue
        name = "model.language_model." + k[len("model."):] if k.startswith("model.") else k
        sd[name] = v.detach().float().cpu().contiguous().clone()
    for k, v in mtp.state_dict().items():
        sd["mtp." + k] = v.detach().float().cpu().contiguous().clone()
    return sd


def param_report(model, mtp, sd):
    f16_bytes = sum(v.numel() * (2 if v.ndim == 2 else 4) for v in sd.values())
    return {"trunk_params": sum(p.numel() for p in model.parameters()),
            "embedding_params": model.model.embed_tokens.weight.numel(),
            "mtp_params": sum(p.numel() for p in mtp.parameters()),
            "total_params": sum(v.numel() for v in sd.values()),
            "gguf_f16_tensor_bytes_estimate": f16_bytes}


def save_checkpoint(out, sd, cfg):
    """config.json (qwen3_5, text_config nested) and two safetensors shards of about equal size."""
    from safetensors.torch import save_file
    os.makedirs(out, exist_ok=True)
    names = sorted(sd)
    total = sum(sd[k].numel() * sd[k].element_size() for k in names)
    first, acc = [], 0
    for k in names:
        if acc >= total / 2:
            break
        first.append(k)
        acc += sd[k].numel() * sd[k].element_size()
    shards = {"model-00001-of-00002.safetensors": first,
              "model-00002-of-00002.safetensors": names[len(first):]}
    weight_map = {}
    for fname, keys in shards.items():
        save_file({k: sd[k] for k in keys}, os.path.join(out, fname), metadata={"format": "pt"})
        weight_map.update({k: fname for k in keys})
    with open(os.path.join(out, "model.safetensors.index.json"), "w") as f:
        json.dump({"metadata": {"total_size": total}, "weight_map": weight_map}, f, indent=1, sort_keys=True)
    H = cfg["hidden_size"]
    config = {"architectures": ["Qwen3_5ForConditionalGeneration"], "model_type": "qwen3_5",
              "text_config": dict(cfg, model_type="qwen3_5_text"),
              "vision_config": {"model_type": "qwen3_5_vision", "depth": 1, "hidden_size": 32, "num_heads": 2,
                                "intermediate_size": 64, "out_hidden_size": H},
              "tie_word_embeddings": cfg["tie_word_embeddings"], "image_token_id": 248056}
    with open(os.path.join(out, "config.json"), "w") as f:
        json.dump(config, f, indent=1)


def save_tokenizer(out, tok):
    os.makedirs(out, exist_ok=True)
    tok.save(os.path.join(out, "tokenizer.json"))
    with open(os.path.join(out, "tokenizer_config.json"), "w") as f:
        json.dump({"tokenizer_class": "Qwen2Tokenizer", "eos_token": "<|endoftext|>",
                   "pad_token": "<|endoftext|>", "bos_token": None, "add_bos_token": False,
                   "model_max_length": 2048}, f, indent=1)


@torch.no_grad()
def reload_check(out, model, mtp, x, device):
    """Rebuild trunk + MTP from the written files only; logits must equal the in-memory model's."""
    from safetensors.torch import load_file
    with open(os.path.join(out, "config.json")) as f:
        cfg = json.load(f)["text_config"]
    with open(os.path.join(out, "model.safetensors.index.json")) as f:
        files = sorted(set(json.load(f)["weight_map"].values()))
    sd = {}
    for fname in files:
        sd.update(load_file(os.path.join(out, fname)))
    prefix = "model.language_model."
    trunk_sd = {("model." + k[len(prefix):]) if k.startswith(prefix) else k: v
                for k, v in sd.items() if not k.startswith("mtp.")}
    model2, config2 = build_trunk(cfg, seed=0)
    missing, unexpected = model2.load_state_dict(trunk_sd, strict=False)
    bad_missing = [k for k in missing if not (cfg["tie_word_embeddings"] and k == "lm_head.weight")]
    if bad_missing or unexpected:
        raise RuntimeError(f"reload: missing {bad_missing}, unexpected {unexpected}")
    mtp2 = MTPHead(model2, config2)
    mtp2.load_state_dict({k[len("mtp."):]: v for k, v in sd.items() if k.startswith("mtp.")}, strict=True)
    model2, mtp2 = model2.to(device).eval(), mtp2.to(device).eval()
    a_t, a_m, _ = forward_all(model, mtp, x)
    b_t, b_m, _ = forward_all(model2, mtp2, x)
    return {"trunk_logits_max_abs": (a_t - b_t).abs().max().item(),
            "mtp_logits_max_abs": (a_m - b_m).abs().max().item(), "tensors": len(sd)}


@torch.no_grad()
def hf_load_check(out, model, x, device):
    """Informational: Qwen3_5ForConditionalGeneration.from_pretrained(out) (drops mtp.*) vs in-memory."""
    import transformers
    verbosity = transformers.logging.get_verbosity()
    transformers.logging.set_verbosity_error()
    try:
        from transformers import Qwen3_5ForConditionalGeneration
        m = Qwen3_5ForConditionalGeneration.from_pretrained(out, dtype=torch.float32,
                                                            attn_implementation="eager").to(device).eval()
        diff = (m(input_ids=x, use_cache=False).logits - model(input_ids=x, use_cache=False).logits).abs().max()
        return {"ok": bool(diff.item() <= 1e-4), "trunk_logits_max_abs": diff.item()}
    except Exception as err:  # informational only; reload_check is the binding one
        return {"ok": False, "error": repr(err)[:400]}
    finally:
        transformers.logging.set_verbosity(verbosity)


def list_outputs(out):
    files = sorted(os.listdir(out))
    sizes = {f: os.path.getsize(os.path.join(out, f)) for f in files}
    for f, n in sizes.items():
        if n > MAX_FILE_BYTES:
            print(f"warning: {f} is {n / 2 ** 20:.1f} MiB, over the device tool's 16 MiB per file", flush=True)
    if len(files) > 8:
        print(f"warning: {len(files)} files in {out}; the device tool brings back at most 8", flush=True)
    return sizes


# ----------------------------------------------------------------------------- main

def versions(device):
    import importlib.metadata as md
    import transformers
    v = {"python": platform.python_version(), "torch": torch.__version__, "transformers": transformers.__version__}
    for pkg in ("tokenizers", "safetensors", "numpy"):
        try:
            v[pkg] = md.version(pkg)
        except md.PackageNotFoundError:
            v[pkg] = None
    import importlib.util
    v["fla_importable"] = importlib.util.find_spec("fla") is not None
    v["causal_conv1d_importable"] = importlib.util.find_spec("causal_conv1d") is not None
    v["device"] = torch.cuda.get_device_name(device) if device.type == "cuda" else platform.processor() or "cpu"
    return v


def prepare(args, device):
    with open(args.corpus, "rb") as f:
        raw = f.read()
    texts = split_corpus(raw.decode("utf-8"), args.val_frac, args.test_frac)
    t0 = time.time()
    tok = train_tokenizer(texts["train"], args.vocab_size)
    data = encode_splits(tok, texts, device)
    info = {"corpus": os.path.relpath(args.corpus, os.path.dirname(HERE)), "corpus_sha256": sha256_bytes(raw),
            "chars": {k: len(v) for k, v in texts.items()}, "tokens": {k: len(v) for k, v in data.items()},
            "vocab_size": tok.get_vocab_size(), "tokenizer_seconds": round(time.time() - t0, 2),
            "tokenizer_sha256": sha256_bytes(tok.to_str().encode("utf-8"))}
    print(f"data: {info['tokens']} tokens (vocab {info['vocab_size']}, "
          f"{info['chars']['train'] / info['tokens']['train']:.2f} chars/token), "
          f"tokenizer sha256 {info['tokenizer_sha256'][:16]}", flush=True)
    return tok, data, info


def build_models(args, cfg, device):
    model, config = build_trunk(cfg, args.seed)
    mtp = MTPHead(model, config)
    init_mtp(mtp, config.initializer_range, args.seed + 1)
    model, mtp = model.to(device), mtp.to(device)
    assert model.lm_head.weight is model.model.embed_tokens.weight, "embeddings are not tied"
    add_dropout_hooks(list(model.model.layers) + list(mtp.layers), args.dropout)
    init = {"embed_std": model.model.embed_tokens.weight.std().item(),
            "q_proj_std": mtp.layers[0].self_attn.q_proj.weight.std().item(),
            "trunk_linear_std": model.model.layers[0].mlp.up_proj.weight.std().item()}
    print("init: " + ", ".join(f"{k} {v:.4f}" for k, v in init.items()), flush=True)
    return model, mtp, init


def final_evaluation(args, model, mtp, data):
    res = {}
    for split, cap in (("train_subset", 64), ("val", None), ("held_out", None)):
        ids = data["train"] if split == "train_subset" else data[split]
        res[split] = evaluate(model, mtp, eval_windows(ids, args.seq_len, cap), args.batch_size)
        print(f"final {split:12s}: {fmt_metrics(res[split])}", flush=True)
    m16, t16 = f16_rounded_copy(model, mtp)
    res["held_out_f16_weights"] = evaluate(m16, t16, eval_windows(data["held_out"], args.seq_len),
                                           args.batch_size)
    print(f"final {'held_out f16':12s}: {fmt_metrics(res['held_out_f16_weights'])}", flush=True)
    print(f"held-out acceptance by the trunk's top-1 probability at t+1: "
          f"{res['held_out']['accept_by_trunk_top1_prob']}", flush=True)
    return res


def write_json(path, obj):
    with open(path, "w") as f:
        json.dump(obj, f, indent=1)


def main():
    args = parse_args()
    t_start = time.time()
    device = setup(args.seed, args.device)
    tok, data, data_info = prepare(args, device)
    cfg = text_config(tok.get_vocab_size())
    model, mtp, init_stats = build_models(args, cfg, device)
    params = param_report(model, mtp, hf_state_dict(model, mtp, cfg["tie_word_embeddings"]))
    print(f"params: {params}", flush=True)
    check_x = eval_windows(data["val"], 64, 2)[:, :-1]
    checks = {"before_training": run_self_checks(cfg, model, mtp, check_x, "before training")}

    train_info, history = train(args, model, mtp, data, device)
    checks["after_training"] = run_self_checks(cfg, model, mtp, eval_windows(data["held_out"], 128, 2)[:, :-1],
                                               "after training")
    metrics = final_evaluation(args, model, mtp, data)

    save_tokenizer(args.out, tok)
    save_checkpoint(args.out, hf_state_dict(model, mtp, cfg["tie_word_embeddings"]), cfg)
    log = {"issue": "tiny Qwen3.5 + MTP on Tiny Shakespeare (embedded default model)",
           "args": vars(args), "model_config": cfg, "params": params, "init": init_stats, "data": data_info,
           "optimizer": {"name": "AdamW", "betas": [0.9, 0.95], "eps": 1e-8, "schedule": "linear warmup + cosine",
                         "checkpoint": "best validation objective (trunk CE + lambda * MTP CE)"},
           "train": train_info, "metrics": metrics, "checks": checks, "history": history,
           "versions": versions(device)}
    write_json(os.path.join(args.out, "train_log.json"), log)  # a first copy, before the export checks

    x = eval_windows(data["held_out"], args.seq_len, 2)[:, :-1]
    checks["reload_from_files"] = reload_check(args.out, model, mtp, x, device)
    checks["hf_from_pretrained"] = hf_load_check(args.out, model, x, device)
    print(f"export checks: {checks['reload_from_files']}; from_pretrained: {checks['hf_from_pretrained']}",
          flush=True)
    reference = build_reference(model, mtp, tok, device)
    write_json(os.path.join(args.out, "reference.json"), reference)
    acc = metrics["held_out"]["accept_k1"]
    passed = acc >= args.min_acceptance
    log.update(acceptance={"held_out_accept_k1": acc, "target": args.min_acceptance, "pass": passed},
               wall_minutes=round((time.time() - t_start) / 60, 3), files=list_outputs(args.out))
    write_json(os.path.join(args.out, "train_log.json"), log)

    reload_ok = (checks["reload_from_files"]["trunk_logits_max_abs"] <= 1e-5
                 and checks["reload_from_files"]["mtp_logits_max_abs"] <= 1e-5)
    print(f"greedy: {reference['greedy_text']!r}")
    print(f"reference prompt: acceptance {reference['teacher_forced']['acceptance_prompt']:.3f} "
          f"(prompt rows), {reference['teacher_forced']['acceptance_sequence']:.3f} (prompt + greedy)")
    print(f"wrote {args.out}: {log['files']}")
    print(f"HELD-OUT teacher-forced greedy MTP acceptance (k=1): {acc:.4f} -> "
          f"{'PASS' if passed else 'FAIL'} (target {args.min_acceptance}); reload {'ok' if reload_ok else 'MISMATCH'}; "
          f"{log['wall_minutes']:.1f} min", flush=True)
    if not reload_ok:
        sys.exit(4)
    sys.exit(0 if passed else 3)


if __name__ == "__main__":
    main()
