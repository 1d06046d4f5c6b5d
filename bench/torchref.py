"""What the PyTorch references (gptref.py, transref.py) share: how they run
and how they read gptg's model files.

A reference must run as a tuned CPU deployment runs PyTorch, or the ratios
measured against it flatter gptg. Import this module and call tune() before
torch is imported:

    import torchref
    torchref.tune("GPTREF")
    import torch

tune() pins every thread pool to the script's --threads N (default 1):
OpenBLAS starts its own pool when torch is imported, before
torch.set_num_threads can run, so the sizes go into the environment first
(PREFIX_BLAS_THREADS sizes OpenBLAS's pool alone, when it should differ).
Then it runs the script again, once, with jemalloc preloaded where Debian's
libjemalloc2 is installed (PREFIX_MALLOC=glibc keeps the default
allocator): PyTorch's CPU performance guides advise jemalloc or tcmalloc.
With glibc's malloc every large activation is handed back to the kernel
after each step and faulted in again; on these VMs a first touch of a page
costs ~11 us, which slowed the 10.8M shape by ~19 %
(../shared/docs/pytorch-notes.md).
"""
import json, os, struct, sys

POOLS = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")
JEMALLOC = "/usr/lib/x86_64-linux-gnu/libjemalloc.so.2"


def threads_arg(argv):
    """The value of the last --threads N or --threads=N in argv, "1" if none."""
    threads = "1"
    for i, a in enumerate(argv):
        if a.startswith("--threads="):
            threads = a.split("=", 1)[1]
        elif a == "--threads" and i + 1 < len(argv):
            threads = argv[i + 1]
    return threads


def tune(prefix):
    """Pins the thread pools and preloads jemalloc (re-executing the script);
    prefix names the script's environment switches (PREFIX_MALLOC,
    PREFIX_BLAS_THREADS)."""
    threads = threads_arg(sys.argv)
    for v in POOLS:
        os.environ[v] = threads
    if os.environ.get(prefix + "_BLAS_THREADS"):
        os.environ["OPENBLAS_NUM_THREADS"] = os.environ[prefix + "_BLAS_THREADS"]
    if os.environ.get(prefix + "_MALLOC", "jemalloc") == "jemalloc" and os.path.exists(JEMALLOC) \
            and JEMALLOC not in os.environ.get("LD_PRELOAD", ""):
        os.environ["LD_PRELOAD"] = (JEMALLOC + " " + os.environ.get("LD_PRELOAD", "")).strip()
        os.environ.setdefault("MALLOC_CONF", "retain:true,dirty_decay_ms:-1,muzzy_decay_ms:-1")
        os.execv(sys.executable, [sys.executable] + sys.argv)


def load_safetensors(path):
    """A gptg model file's tensors by name (float32, float64 or, from gptg
    export --dtype bfloat16, bfloat16) and its metadata."""
    import torch  # after tune()
    with open(path, "rb") as f:
        raw = f.read()
    n = struct.unpack("<Q", raw[:8])[0]
    header = json.loads(raw[8:8 + n])
    meta = header.pop("__metadata__", {})
    out = {}
    for name, d in header.items():
        a, b = d["data_offsets"]
        dt = {"F32": torch.float32, "F64": torch.float64, "BF16": torch.bfloat16}[d["dtype"]]
        out[name] = torch.frombuffer(bytearray(raw[8 + n + a:8 + n + b]), dtype=dt).reshape(d["shape"])
    return out, meta
