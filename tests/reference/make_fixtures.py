#!/usr/bin/env python3
"""Reference fixtures for the Qwen3.5 trunk and MTP head, made with transformers.

Runs on the GPU machine (transformers 5.17, torch, tokenizers, safetensors), on the
CPU in float32 with the pure-torch Gated DeltaNet path. For each variant it writes a
tiny random checkpoint in Hugging Face layout plus the reference outputs:

  tests/fixtures/<name>/config.json, *.safetensors, tokenizer.json   the checkpoint
  tests/fixtures/<name>/reference.safetensors                        logits, hidden states, MTP oracle
  tests/fixtures/<name>/reference.json                               prompt, greedy continuation, notes

Variants:
  qwen35-dense-tiny  vision-language layout (text_config, model.language_model.*), 2 shards
  qwen35-moe-tiny    flat text-only layout (Qwen3_5MoeForCausalLM), tied embeddings

transformers drops mtp.* on load, so the MTP oracle is assembled from its own layer
classes (spec section 9.2): norms + fc + a full-attention decoder layer + norm + lm_head,
run over rows (x_{t+1}, final_norm(h_t)) at positions t with a causal mask.

  python3 tests/reference/make_fixtures.py [--out tests/fixtures]
"""
import argparse
import inspect
import json
import os
import sys

import torch
from safetensors.torch import save_file

HERE = os.path.dirname(os.path.abspath(__file__))
QWEN2_SPLIT = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*"
               r"|\s*[\r\n]+|\s+(?!\S)|\s+")
SPECIALS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
PROMPT = "First Citizen:\nBefore we proceed any further, hear me speak."
TOKENIZER_PROBES = [
    "Hello world", "First Citizen:\nYou are all resolved rather to die than to famish?",
    "  leading spaces and trailing  ", "numbers 12345 and 3.14159", "don't won't I'll we've they're",
    "tabs\tand\nnewlines\r\n\n", "unicode: caf\u00e9 na\u00efve \u00fcber \u4f60\u597d \U0001F600",
    "<|im_start|>user\nhi<|im_end|>", "MiXeD CaSe!!! ???", "",
]


def train_tokenizer(path):
    from tokenizers import Regex, Tokenizer, decoders, models, pre_tokenizers, trainers
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.Split(Regex(QWEN2_SPLIT), behavior="isolated", invert=False),
        pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False),
    ])
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=384, special_tokens=SPECIALS,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), show_progress=False)
    tok.train([os.path.join(HERE, "corpus.txt")], trainer)
    tok.save(path)
    return tok


def text_config(vocab, moe):
    cfg = dict(
        vocab_size=vocab, hidden_size=64, num_hidden_layers=4, num_attention_heads=4, num_key_value_heads=2,
        head_dim=32, hidden_act="silu", max_position_embeddings=4096, rms_norm_eps=1e-6,
        rope_parameters=dict(rope_type="default", rope_theta=10000000.0, partial_rotary_factor=0.25,
                             mrope_section=[2, 1, 1], mrope_interleaved=True),
        layer_types=["linear_attention"] * 3 + ["full_attention"], full_attention_interval=4,
        linear_conv_kernel_dim=4, linear_key_head_dim=16, linear_value_head_dim=16,
        linear_num_key_heads=2, linear_num_value_heads=4, attn_output_gate=True, attention_bias=False,
        mtp_num_hidden_layers=1, mtp_use_dedicated_embeddings=False,
        bos_token_id=None, eos_token_id=0, pad_token_id=None, tie_word_embeddings=moe,
    )
    if moe:
        cfg.update(num_experts=8, num_experts_per_tok=2, moe_intermediate_size=32,
                   shared_expert_intermediate_size=48, router_aux_loss_coef=0.0)
    else:
        cfg.update(intermediate_size=160)
    return cfg


def randomize(module, gen):
    """O(1) activations: fan-in scaled weights, norms away from zero, sane decays."""
    for name, p in module.named_parameters():
        with torch.no_grad():
            if name.endswith("A_log"):
                p.copy_(torch.empty_like(p).uniform_(0.0, 2.5, generator=gen))
            elif name.endswith("dt_bias"):
                p.copy_(torch.randn(p.shape, generator=gen) * 0.5)
            elif "norm" in name:
                base = 1.0 if name.endswith("linear_attn.norm.weight") else 0.0
                p.copy_(base + torch.randn(p.shape, generator=gen) * 0.2)
            elif "conv1d" in name:
                p.copy_(torch.randn(p.shape, generator=gen) * 0.4)
            elif "embed" in name:
                p.copy_(torch.randn(p.shape, generator=gen))
            else:
                fan_in = p.shape[-1]
                p.copy_(torch.randn(p.shape, generator=gen) / fan_in ** 0.5)


def build_model(cfg, moe, seed):
    if moe:
        from transformers import Qwen3_5MoeForCausalLM as Cls, Qwen3_5MoeTextConfig as Cfg
    else:
        from transformers import Qwen3_5ForCausalLM as Cls, Qwen3_5TextConfig as Cfg
    try:
        config = Cfg(**cfg)
    except TypeError as err:  # a strict config class that rejects keys it does not declare
        print(f"note: {err}; passing declared fields only", file=sys.stderr)
        config = Cfg(**{k: v for k, v in cfg.items() if k in getattr(Cfg, "__dataclass_fields__", cfg)})
    config._attn_implementation = "eager"
    torch.manual_seed(seed)
    model = Cls(config).float().eval()
    gen = torch.Generator().manual_seed(seed)
    randomize(model, gen)
    if cfg["tie_word_embeddings"]:
        model.tie_weights()
    return model, config, gen


def make_mtp(model, config, gen):
    """MTP weights (HF names) and the modules that run them."""
    H = config.hidden_size
    layer_cls = type(model.model.layers[3])
    mtp_layer = layer_cls(config, 3).float().eval()
    randomize(mtp_layer, gen)
    norm_cls = type(model.model.norm)
    mods = {
        "pre_fc_norm_embedding": norm_cls(H, eps=config.rms_norm_eps),
        "pre_fc_norm_hidden": norm_cls(H, eps=config.rms_norm_eps),
        "norm": norm_cls(H, eps=config.rms_norm_eps),
        "fc": torch.nn.Linear(2 * H, H, bias=False),
    }
    for m in mods.values():
        randomize(m, gen)
    tensors = {f"mtp.layers.0.{k}": v for k, v in mtp_layer.state_dict().items()}
    for name, m in mods.items():
        tensors[f"mtp.{name}.weight"] = m.weight.detach()
    return mtp_layer, mods, tensors


class Capture:
    """Forward hooks: each decoder layer's output, the final norm output, and the
    kwargs the full-attention layer was called with (to call the MTP layer alike)."""

    def __init__(self, model):
        self.layers, self.final = [], None
        self.attn_kwargs = None
        self.handles = []
        for layer in model.model.layers:
            self.handles.append(layer.register_forward_hook(self._layer_hook))
        self.handles.append(model.model.norm.register_forward_hook(self._norm_hook))
        self.handles.append(model.model.layers[3].register_forward_pre_hook(self._pre_hook, with_kwargs=True))

    def _layer_hook(self, _m, _inp, out):
        self.layers.append((out[0] if isinstance(out, tuple) else out).detach().clone())

    def _norm_hook(self, _m, _inp, out):
        self.final = out.detach().clone()

    def _pre_hook(self, _m, args, kwargs):
        self.attn_kwargs = dict(kwargs)
        self.attn_args = args

    def close(self):
        for h in self.handles:
            h.remove()


def slice_kwargs(kwargs, n):
    """The captured layer kwargs restricted to the first n positions."""
    out = {}
    for k, v in kwargs.items():
        if k == "position_embeddings":
            out[k] = tuple(t[..., :n, :] for t in v)
        elif k == "attention_mask" and torch.is_tensor(v):
            out[k] = v[..., :n, :n]
        elif k in ("past_key_values", "past_key_value", "cache_position", "position_ids"):
            if torch.is_tensor(v):
                out[k] = v[..., :n]
            else:
                out[k] = None
        else:
            out[k] = v
    if out.get("attention_mask") is None:
        mask = torch.full((n, n), float("-inf")).triu(1)
        out["attention_mask"] = mask[None, None]
    return out


def run_layer(layer, hidden, kwargs):
    out = layer(hidden, **kwargs)
    return out[0] if isinstance(out, tuple) else out


def mtp_oracle(model, mtp_layer, mods, ids, cap):
    """MTP logits for rows t = 0..T-2: (x_{t+1}, final_norm(h_t)) at position t."""
    T = ids.shape[1]
    h = cap.final[:, : T - 1]
    e = model.model.embed_tokens(ids[:, 1:])
    c = torch.cat([mods["pre_fc_norm_embedding"](e), mods["pre_fc_norm_hidden"](h)], dim=-1)
    u = mods["fc"](c)
    kw = slice_kwargs(cap.attn_kwargs, T - 1)
    u2 = run_layer(mtp_layer, u, kw)
    h_mtp = mods["norm"](u2)
    return model.lm_head(h_mtp), h_mtp, u


def self_check_layer_call(model, cap, ids):
    """Re-running trunk layer 3 with the captured kwargs must reproduce its output,
    which proves the MTP layer is called the way the trunk calls its own."""
    layer3_in = cap.layers[2]
    T = ids.shape[1]
    out = run_layer(model.model.layers[3], layer3_in, slice_kwargs(cap.attn_kwargs, T))
    return (out - cap.layers[3]).abs().max().item()


def greedy(model, ids, n):
    seq = ids.clone()
    for _ in range(n):
        logits = model(seq).logits[:, -1]
        seq = torch.cat([seq, logits.argmax(-1, keepdim=True)], dim=1)
    return seq[0, ids.shape[1]:].tolist()


def cached_decode_diff(model, ids):
    """Max |logit| difference between prefill+cached decode and a full forward."""
    T = ids.shape[1]
    full = model(ids).logits[0]
    out = model(ids[:, : T - 4], use_cache=True)
    pkv, worst = out.past_key_values, 0.0
    for t in range(T - 4, T):
        step = model(ids[:, t: t + 1], past_key_values=pkv, use_cache=True)
        pkv = step.past_key_values
        worst = max(worst, (step.logits[0, -1] - full[t]).abs().max().item())
    return worst


def hf_layout(model, mtp_tensors, vl):
    sd = {k: v.detach().contiguous() for k, v in model.state_dict().items()}
    if model.config.tie_word_embeddings:
        sd.pop("lm_head.weight", None)
    if vl:
        sd = {(k.replace("model.", "model.language_model.", 1) if k.startswith("model.") else k): v
              for k, v in sd.items()}
    sd.update({k: v.detach().contiguous() for k, v in mtp_tensors.items()})
    return sd


def save_checkpoint(out, sd, cfg, vl, moe):
    os.makedirs(out, exist_ok=True)
    if vl:
        config = {"architectures": ["Qwen3_5ForConditionalGeneration"], "model_type": "qwen3_5",
                  "text_config": dict(cfg, model_type="qwen3_5_text"),
                  "vision_config": {"model_type": "qwen3_5_vision", "depth": 1, "hidden_size": 32},
                  "tie_word_embeddings": cfg["tie_word_embeddings"], "image_token_id": 248056}
        names = sorted(sd)
        half = len(names) // 2
        shards = {"model-00001-of-00002.safetensors": names[:half],
                  "model-00002-of-00002.safetensors": names[half:]}
        weight_map = {}
        for fname, keys in shards.items():
            save_file({k: sd[k] for k in keys}, os.path.join(out, fname), metadata={"format": "pt"})
            weight_map.update({k: fname for k in keys})
        total = sum(v.numel() * v.element_size() for v in sd.values())
        with open(os.path.join(out, "model.safetensors.index.json"), "w") as f:
            json.dump({"metadata": {"total_size": total}, "weight_map": weight_map}, f, indent=1, sort_keys=True)
    else:
        arch = "Qwen3_5MoeForCausalLM" if moe else "Qwen3_5ForCausalLM"
        config = dict(cfg, architectures=[arch], model_type="qwen3_5_moe_text" if moe else "qwen3_5_text")
        save_file(sd, os.path.join(out, "model.safetensors"), metadata={"format": "pt"})
    with open(os.path.join(out, "config.json"), "w") as f:
        json.dump(config, f, indent=1)


def tokenizer_probes(tok):
    return [{"text": s, "ids": tok.encode(s, add_special_tokens=False).ids} for s in TOKENIZER_PROBES]


def make_variant(root, name, moe, vl, seed):
    import transformers
    out = os.path.join(root, name)
    os.makedirs(out, exist_ok=True)
    tok = train_tokenizer(os.path.join(out, "tokenizer.json"))
    with open(os.path.join(out, "tokenizer_config.json"), "w") as f:
        json.dump({"tokenizer_class": "Qwen2Tokenizer", "eos_token": "<|endoftext|>", "pad_token": "<|endoftext|>",
                   "bos_token": None, "add_bos_token": False}, f, indent=1)
    cfg = text_config(tok.get_vocab_size(), moe)
    model, config, gen = build_model(cfg, moe, seed)
    mtp_layer, mods, mtp_tensors = make_mtp(model, config, gen)

    ids = torch.tensor([tok.encode(PROMPT).ids])
    with torch.no_grad():
        cap = Capture(model)
        logits = model(ids).logits[0]
        cap.close()
        layer_check = self_check_layer_call(model, cap, ids)
        mtp_logits, mtp_hidden, mtp_fc = mtp_oracle(model, mtp_layer, mods, ids, cap)
        cont = greedy(model, ids, 32)
        decode_diff = cached_decode_diff(model, ids)

    ref = {"logits": logits, "final_norm": cap.final[0], "mtp_logits": mtp_logits[0],
           "mtp_hidden": mtp_hidden[0], "mtp_fc": mtp_fc[0]}
    for i, h in enumerate(cap.layers):
        ref[f"layer_out.{i}"] = h[0]
    save_file({k: v.float().contiguous() for k, v in ref.items()}, os.path.join(out, "reference.safetensors"))
    save_checkpoint(out, hf_layout(model, mtp_tensors, vl), cfg, vl, moe)
    meta = {"prompt": PROMPT, "prompt_ids": ids[0].tolist(), "greedy_ids": cont,
            "greedy_text": tok.decode(cont), "layer_types": cfg["layer_types"], "seed": seed,
            "transformers": transformers.__version__, "torch": torch.__version__, "dtype": "float32",
            "mtp_rows": "row t pairs final_norm(h_t) with embed(x_{t+1}) at position t; predicts x_{t+2}",
            "checks": {"layer3_recall_max_abs": layer_check, "cached_decode_max_abs": decode_diff},
            "tokenizer_probes": tokenizer_probes(tok), "param_names": sorted(model.state_dict().keys())}
    with open(os.path.join(out, "reference.json"), "w") as f:
        json.dump(meta, f, indent=1)
    print(f"{name}: vocab {cfg['vocab_size']}, prompt {ids.shape[1]} tokens, layer recall {layer_check:.2e}, "
          f"cached decode {decode_diff:.2e}, greedy {cont[:8]}...")
    return meta


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", default=os.path.join(HERE, "..", "fixtures"))
    args = ap.parse_args()
    torch.set_num_threads(4)
    try:
        import fla  # noqa: F401
        print("warning: flash-linear-attention is importable; the oracle wants the pure-torch path", file=sys.stderr)
    except ImportError:
        pass
    make_variant(args.out, "qwen35-dense-tiny", moe=False, vl=True, seed=1234)
    make_variant(args.out, "qwen35-moe-tiny", moe=True, vl=False, seed=5678)


if __name__ == "__main__":
    main()
