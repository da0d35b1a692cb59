#!/usr/bin/env python3
"""ssmjit's Mamba model against Hugging Face transformers' MambaForCausalLM.

A model with random weights is made and saved by transformers, loaded by
ssmjit from that directory, and both compute, in f32, the logits of the
same tokens, the causal-LM loss and every weight's gradient; then greedy
generation from a prompt, transformers' generate() against `ssmjit run`.
transformers runs its pure-PyTorch path unless mamba_ssm's kernels are
installed (printed below).  Exits 1 if any figure is over its bound:
logits 1e-4 and gradients 1e-3 relative (Frobenius norm), loss 1e-5.

usage: compare_hf.py BUILD_DIR   (holding libssmjit.so and the ssmjit CLI)
"""
import ctypes as C
import os
import subprocess
import sys
import tempfile

import cupy
import numpy as np
import torch
from transformers import MambaConfig, MambaForCausalLM
from transformers.models.mamba import modeling_mamba

LOGITS_TOL, GRAD_TOL, LOSS_TOL = 1e-4, 1e-3, 1e-5
B, L, PROMPT, NEW = 2, 96, [5, 17, 301, 42, 7], 16


# ssmjit.h's argument structs, struct_size first as their _init or the
# caller sets it.
class ForwardArgs(C.Structure):
    _fields_ = [("struct_size", C.c_size_t), ("batch", C.c_int64), ("seqlen", C.c_int64), ("ids", C.c_void_p),
                ("embeds", C.c_void_p), ("mode", C.c_int), ("logits", C.c_void_p),
                ("last_only", C.c_int), ("conv_state", C.c_void_p), ("ssm_state", C.c_void_p),
                ("workspace", C.c_void_p), ("workspace_bytes", C.c_size_t)]


class BackwardArgs(C.Structure):
    _fields_ = [("struct_size", C.c_size_t), ("logits", C.c_void_p), ("targets", C.c_void_p), ("loss", C.c_void_p),
                ("dlogits", C.c_void_p), ("d_embeds", C.c_void_p)]


class TensorInfo(C.Structure):
    _fields_ = [("name", C.c_char_p), ("dtype", C.c_int), ("ndim", C.c_int),
                ("shape", C.c_int64 * 3), ("data", C.c_void_p), ("grad", C.c_void_p)]


class ModelOptions(C.Structure):
    _fields_ = [("struct_size", C.c_size_t), ("dtype", C.c_int), ("allow_tf32", C.c_int),
                ("prepare", C.c_int), ("max_batch", C.c_int64), ("max_tokens", C.c_int64)]


def check(lib, status, what):
    if status != 0:
        lib.ssmjit_last_error.restype = C.c_char_p
        sys.exit(f"{what}: status {status}: {lib.ssmjit_last_error().decode()}")


def rel(a, b):
    return float(np.linalg.norm((a - b).ravel()) / np.linalg.norm(b.ravel()))


def device_f32(ptr, count):
    mem = cupy.cuda.UnownedMemory(ptr, count * 4, None)
    return cupy.ndarray((count,), cupy.float32, cupy.cuda.MemoryPointer(mem, 0)).get()


def main():
    build = sys.argv[1]
    os.environ["SSMJIT_FAST_MATH"] = "0"  # f32 bounds as for the ops' tests
    torch.manual_seed(1234)
    cfg = MambaConfig(vocab_size=1000, hidden_size=256, state_size=16, num_hidden_layers=3,
                      conv_kernel=4, expand=2, use_conv_bias=True, use_bias=False,
                      residual_in_fp32=True, layer_norm_epsilon=1e-5, tie_word_embeddings=True)
    hf = MambaForCausalLM(cfg).float().cuda()
    with torch.no_grad():  # no weight left at a constant (norms at 1, D at 1)
        for p in hf.parameters():
            p.add_(0.05 * torch.randn_like(p))
    fast = getattr(modeling_mamba, "is_fast_path_available", False)
    print(f"transformers path: {'CUDA kernels' if fast else 'pure PyTorch'}")
    ckpt = tempfile.mkdtemp()
    hf.save_pretrained(ckpt, safe_serialization=True)

    ids = torch.randint(0, cfg.vocab_size, (B, L), device="cuda")
    out = hf(input_ids=ids, labels=ids)
    out.loss.backward()
    hf_logits = out.logits.detach().float().cpu().numpy().reshape(B * L, -1)

    lib = C.CDLL(os.path.join(build, "libssmjit.so"))
    ctx, model = C.c_void_p(), C.c_void_p()
    check(lib, lib.ssmjit_context_create(None, C.byref(ctx)), "context")
    opts = ModelOptions()
    lib.ssmjit_model_options_init(C.byref(opts))
    if opts.struct_size != C.sizeof(opts):
        sys.exit("FAIL: ModelOptions here has %d bytes, ssmjit.h's %d" % (C.sizeof(opts), opts.struct_size))
    opts.dtype = 0  # f32
    check(lib, lib.ssmjit_model_load(ctx, ckpt.encode(), C.byref(opts), C.byref(model)), "load")
    ws_bytes = C.c_size_t()
    check(lib, lib.ssmjit_model_workspace_size(model, C.c_int64(B), C.c_int64(L), 1,
                                               C.byref(ws_bytes)), "workspace size")
    ws = torch.empty(ws_bytes.value, dtype=torch.uint8, device="cuda")
    vocab = cfg.vocab_size
    logits = torch.full((B * L * vocab,), float("nan"), device="cuda")
    host_ids = np.ascontiguousarray(ids.cpu().numpy().astype(np.int32))
    # the causal-LM targets: the next token, none after the last
    targets = np.full((B, L), -100, dtype=np.int32)
    targets[:, :-1] = host_ids[:, 1:]
    torch.cuda.synchronize()
    fa = ForwardArgs(C.sizeof(ForwardArgs), B, L, host_ids.ctypes.data, None, 1, logits.data_ptr(), 0,
                     None, None, ws.data_ptr(), ws_bytes.value)
    check(lib, lib.ssmjit_model_forward(model, C.byref(fa), None), "forward")
    torch.cuda.synchronize()
    ours = logits.cpu().numpy().reshape(B * L, vocab)
    loss = torch.full((1,), float("nan"), device="cuda")
    ba = BackwardArgs(C.sizeof(BackwardArgs), logits.data_ptr(), targets.ctypes.data, loss.data_ptr(),
                      None, None)
    check(lib, lib.ssmjit_model_backward(model, C.byref(ba), None), "backward")
    torch.cuda.synchronize()

    failed = 0
    e = rel(ours, hf_logits)
    failed += e > LOGITS_TOL
    print(f"logits [{B * L}, {vocab}]: relative error {e:.2e} (bound {LOGITS_TOL:g})")
    e = abs(loss.item() - out.loss.item()) / abs(out.loss.item())
    failed += e > LOSS_TOL
    print(f"loss: ssmjit {loss.item():.7f}, transformers {out.loss.item():.7f}, "
          f"relative error {e:.2e} (bound {LOSS_TOL:g})")
    params = dict(hf.named_parameters())
    info = TensorInfo()
    worst = (0.0, "")
    for i in range(lib.ssmjit_model_tensor_count(model)):
        check(lib, lib.ssmjit_model_tensor_at(model, C.c_int64(i), C.byref(info)), "tensor")
        name = info.name.decode()
        count = int(np.prod(info.shape[:info.ndim]))
        got = device_f32(info.grad, count)
        want = params[name].grad.detach().float().cpu().numpy().ravel()
        e = rel(got, want)
        worst = max(worst, (e, name))
        failed += e > GRAD_TOL
        if e > GRAD_TOL:
            print(f"  gradient of {name}: relative error {e:.2e}")
    print(f"gradients of {lib.ssmjit_model_tensor_count(model)} tensors: worst relative error "
          f"{worst[0]:.2e} ({worst[1]}) (bound {GRAD_TOL:g})")
    lib.ssmjit_model_destroy(model)
    lib.ssmjit_context_destroy(ctx)

    prompt = torch.tensor([PROMPT], device="cuda")
    with torch.no_grad():
        want = hf.generate(prompt, max_new_tokens=NEW, do_sample=False)[0, len(PROMPT):].tolist()
    run = subprocess.run([os.path.join(build, "ssmjit"), "run", "--model", ckpt, "--dtype", "f32",
                          "--tokens", ",".join(map(str, PROMPT)), "--steps", str(NEW)],
                         capture_output=True, text=True)
    got = [int(t) for t in run.stdout.split("tokens:")[1].split()[0].split(",")] if run.returncode == 0 else []
    same = got == want
    failed += not same
    print(f"greedy decode of {NEW} tokens: transformers {want}")
    print(f"                               ssmjit run   {got} ({'equal' if same else 'DIFFERENT'})")
    print(run.stdout.strip() if run.returncode == 0 else run.stderr.strip())
    print("PASS" if not failed else f"FAIL ({failed} over bound)")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
