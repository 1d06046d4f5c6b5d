"""Every file gptg reads as a model or
imports — gptg and translation model.safetensors (header, metadata, word
lists, dtypes, shapes, offsets), run folders' checkpoints, nanoGPT's ckpt.pt
(zip, pickle) and meta.pkl, --init MODEL, and every command that opens a
model. Loaded by probe.py (probes(h), h = probe.py's module).

The four classes first: hangs (each probe's time limit), memory (peak RSS
by /usr/bin/time; sparse files make a 2 GB model cost no disk), writes
outside the named output (probe.py's snapshot), silent wrong results (exit 0
on a model whose tensors or metadata lie).
"""

import collections
import io
import json
import os
import pickle
import struct
import sys
import zipfile

# ------------------------------------------------------------- safetensors


def _tensors(h):
    return sorted((k for k in h if k != "__metadata__"), key=lambda k: h[k]["data_offsets"][0])


def _replace(h, data, name, dtype, shape, payload):
    """Tensor name (new or existing) set to dtype/shape/payload; the others
    keep their bytes, moved so that the data still tiles."""
    out, parts, at = {}, [], 0
    if "__metadata__" in h:
        out["__metadata__"] = h["__metadata__"]
    for k in _tensors(h):
        if k == name:
            continue
        b, e = h[k]["data_offsets"]
        out[k] = dict(h[k], data_offsets=[at, at + e - b])
        parts.append(data[b:e])
        at += e - b
    out[name] = {"dtype": dtype, "shape": shape, "data_offsets": [at, at + len(payload)]}
    parts.append(payload)
    return out, b"".join(parts)


def _as_f64(name, fn=None):
    """An edit turning tensor name into F64, its values mapped by fn(i, v)."""
    def edit(h, data):
        b, e = h[name]["data_offsets"]
        vals = list(struct.unpack("<%df" % ((e - b) // 4), data[b:e]))
        if fn:
            vals = [fn(i, v) for i, v in enumerate(vals)]
        return _replace(h, data, name, "F64", h[name]["shape"], struct.pack("<%dd" % len(vals), *vals))
    return edit


def _sparse_model(h_mod, src, dst, name, shape, keep=True):
    """dst: src with tensor name (an extra one, or one of the model's) given
    shape in F32; its bytes are a hole, so the file costs no disk."""
    def setup(d):
        h, data = h_mod.st_read(os.path.join(d, src))
        n = 4
        for x in shape:
            n *= x
        out, at, parts = {"__metadata__": h["__metadata__"]}, 0, []
        for k in _tensors(h):
            if k == name:
                continue
            b, e = h[k]["data_offsets"]
            out[k] = dict(h[k], data_offsets=[at, at + e - b])
            parts.append(data[b:e])
            at += e - b
        out[name] = {"dtype": "F32", "shape": shape, "data_offsets": [at, at + n]}
        hb = json.dumps(out, separators=(",", ":")).encode()
        hb += b" " * ((8 - len(hb) % 8) % 8)
        with open(os.path.join(d, dst), "wb") as f:
            f.write(struct.pack("<Q", len(hb)) + hb + b"".join(parts))
            f.truncate(8 + len(hb) + at + n)
    return setup


def _meta_json_edit(h_mod, src, dst, key, text_fn):
    """The metadata value key (a JSON text) replaced by text_fn(old text)."""
    return h_mod.meta_edit(src, dst, key, text_fn)


def _copy_run(src, dst):
    def setup(d):
        import shutil
        shutil.copytree(os.path.join(d, src), os.path.join(d, dst), symlinks=True)
        lock = os.path.join(d, dst, ".gptg.lock")
        if os.path.lexists(lock):
            os.remove(lock)
    return setup


# ------------------------------------------------------ torch.save pickles
# A checkpoint's data.pkl read into plain Python objects and written back
# byte-identically, so probes can edit the object tree (model_args, the
# state_dict, storages) rather than bytes.


class _Storage:
    def __init__(self, typ, key, dev, numel):
        self.typ, self.key, self.dev, self.numel = typ, key, dev, numel


class _Tensor:
    def __init__(self, storage, offset, size, stride, *rest):
        self.storage, self.offset, self.size, self.stride, self.rest = storage, offset, size, stride, list(rest)


class _Global:
    def __init__(self, name):
        self.name = name

    def __call__(self, *args):  # pickle's save_reduce wants a callable
        raise TypeError("a stand-in for " + self.name)


class _Unpickler(pickle.Unpickler):
    def find_class(self, mod, name):
        if (mod, name) == ("collections", "OrderedDict"):
            return collections.OrderedDict
        if name == "_rebuild_tensor_v2":
            return _Tensor
        return _Global(mod + "." + name)

    def persistent_load(self, pid):
        return _Storage(*pid[1:])


class _Pickler(pickle._Pickler):
    dispatch = dict(pickle._Pickler.dispatch)

    def persistent_id(self, obj):
        if isinstance(obj, _Storage):
            return ("storage", obj.typ, obj.key, obj.dev, obj.numel)
        return None

    def reducer_override(self, obj):
        if isinstance(obj, _Tensor):
            return (_Global("torch._utils._rebuild_tensor_v2"),
                    (obj.storage, obj.offset, obj.size, obj.stride) + tuple(obj.rest))
        return NotImplemented

    def save_global(self, obj, name=None):
        if isinstance(obj, _Global):
            mod, n = obj.name.rsplit(".", 1)
            self.write(b"c" + mod.encode() + b"\n" + n.encode() + b"\n")
            return
        return super().save_global(obj, name)

    dispatch[_Global] = save_global


def _pkl_load(b):
    return _Unpickler(io.BytesIO(b)).load()


def _pkl_dump(obj, protocol=2):
    f = io.BytesIO()
    _Pickler(f, protocol=protocol).dump(obj)
    return f.getvalue()


def ckpt_obj(fn):
    """ckpt.pt rewritten after fn(root object, entries dict) edits its
    data.pkl's objects (and, if it likes, the entries)."""
    def setup(d):
        p = os.path.join(d, "ckpt.pt")
        with zipfile.ZipFile(p) as z:
            es = collections.OrderedDict((i.filename, z.read(i.filename)) for i in z.infolist())
        name = [n for n in es if n.endswith("data.pkl")][0]
        root = _pkl_load(es[name])
        root = fn(root, es) or root
        es[name] = _pkl_dump(root)
        os.remove(p)
        with zipfile.ZipFile(p, "w") as z:
            for n, b in es.items():
                z.writestr(n, b)
    return setup


def _storage_of(root, key):
    return root["model"][key].storage


def _set_storage_bytes(es, st, payload):
    es["ckpt/data/" + st.key] = payload


def _raw_zip(fn):
    """ckpt.pt's raw bytes replaced by fn(bytes)."""
    def setup(d):
        p = os.path.join(d, "ckpt.pt")
        with open(p, "rb") as f:
            b = f.read()
        with open(p, "wb") as f:
            f.write(fn(b))
    return setup


def _meta_pkl(obj_fn, protocol=2, raw=None):
    def setup(d):
        p = os.path.join(d, "meta.pkl")
        with open(p, "rb") as f:
            m = pickle.load(f)
        with open(p, "wb") as f:
            f.write(raw(m) if raw else pickle.dumps(obj_fn(m), protocol=protocol))
    return setup


def _laughs(depth):
    """A pickle of depth nested pairs, each of the one below twice (a DAG
    through the memo): 2^depth leaves, a few hundred bytes."""
    out = bytearray(b"\x80\x02K\x01")
    for i in range(depth):
        slot = struct.pack("<I", 900000 + i)  # far from the memo slots the real pickle uses
        out += b"r" + slot + b"0j" + slot + b"j" + slot + b"\x86"
    return bytes(out)


def _meta_with_vocab_size(raw_value):
    """meta.pkl bytes whose vocab_size is the pickled program raw_value
    (without PROTO), the rest as the real file."""
    def raw(m):
        rest = pickle.dumps({"itos": m["itos"], "stoi": m["stoi"]}, protocol=2)
        # rest: PROTO 2, EMPTY_DICT, BINPUT 0, MARK ... SETITEMS STOP
        assert rest.endswith(b"u.")
        return rest[:-2] + b"u" + b"X" + struct.pack("<I", 10) + b"vocab_size" + raw_value[2:] + b"s."
    return raw


# ------------------------------------------------------------------ probes


def probes(h):
    P = h.Probe
    GPT, GPTM, TR, TRM, WRD = h.GPT, h.GPTM, h.TR, h.TRM, h.WRD
    M = "m.safetensors"
    T = "t.safetensors"
    IMP = ["import", "nanogpt", "ckpt.pt", "--out", "x.safetensors"]
    OUT = ("x.safetensors",)
    N = "hfiles: "
    big = 480_000_000  # F32 values: 1.8 GiB of holes, under the 2 GiB file limit
    ps = []

    # --- memory: a model file whose tensors are far larger than its metadata's model
    for cmd, extra in (("sample", ["--tokens", "2", "--prompt", "F"]), ("inspect", []), ("eval", ["--data", "tiny.txt"]),
                       ("attention", ["--text", "Fi"])):
        ps.append(P(N + "a 1.8 GB extra tensor (sparse), %s" % cmd, [cmd, M] + extra, 1, None, max_mb=300, timeout=60,
                    setup=_sparse_model(h, GPTM, M, "junk", [big])))
    ps += [
        P(N + "tok.weight of 1.8 GB (sparse), sample", ["sample", M, "--tokens", "2"], 1, None, max_mb=300,
          setup=_sparse_model(h, GPTM, M, "tok.weight", [big // 8, 8])),
        P(N + "a 1.8 GB extra tensor (sparse), train --init", ["train", "c.toml", "--set", "train.out=runs/new", "--init", M], (1, 2), None,
          max_mb=300, setup=_sparse_model(h, GPTM, M, "junk", [big])),
        P(N + "a translation model with a 1.8 GB extra tensor (sparse), translate", ["translate", T, "--text", "a1"], 1, None, max_mb=300,
          setup=_sparse_model(h, TRM, T, "junk", [big])),
        P(N + "a translation model with a 1.8 GB extra tensor (sparse), inspect", ["inspect", T], 1, None, max_mb=300,
          setup=_sparse_model(h, TRM, T, "junk", [big])),
        P(N + "a translation model with a 1.8 GB extra tensor (sparse), eval", ["eval", "runs/toy/t.safetensors"], 1, None, max_mb=300,
          setup=_sparse_model(h, TRM, "runs/toy/t.safetensors", "junk", [big])),
        P(N + "a translation model with src_tok.weight of 1.8 GB (sparse)", ["translate", T, "--text", "a1"], 1, None, max_mb=300,
          setup=_sparse_model(h, TRM, T, "src_tok.weight", [big // 8, 8])),
        P(N + "a run's model.safetensors with a 1.8 GB extra tensor, train --resume", ["train", "--resume", GPT, "--set", "train.max_steps=4"],
          None, None, max_mb=300, allow=(GPT,), setup=_sparse_model(h, GPTM, GPTM, "junk", [big])),
        P(N + "a run's checkpoint with a 1.8 GB extra tensor, train --resume", ["train", "--resume", GPT, "--set", "train.max_steps=4"],
          1, None, max_mb=300, setup=_sparse_model(h, "runs/c/checkpoint.safetensors", "runs/c/checkpoint.safetensors", "junk", [big])),
        P(N + "a header padded with 90 MB of spaces, inspect", ["inspect", M], (0, 1), None, max_mb=800, timeout=60,
          setup=h.raw_meta_edit(GPTM, M, lambda b: b + b" " * 90_000_000)),
        P(N + "a vocabulary of 5 million words (60 MB of metadata), sample", ["sample", M, "--tokens", "2"], 1, None, max_mb=1500, timeout=60,
          setup=h.vocab_edit(GPTM, M, "vocab", lambda w: w + ["w%d" % i for i in range(5_000_000)])),
        P(N + "60,000 metadata keys, sample", ["sample", M, "--tokens", "2", "--prompt", "F"], (0, 1), None, max_mb=600,
          setup=h.st_edit(GPTM, M, lambda hd, data: (dict(hd, __metadata__=dict(hd["__metadata__"], **{"k%d" % i: "v" for i in range(60000)})), data))),
    ]

    # --- silent results: values that change on the way in
    ps += [
        P(N + "an F64 tensor holding 1e300 in a float32 model (Inf once narrowed), only in an unused position row",
          ["sample", M, "--tokens", "2", "--prompt", "F"], 1, None,
          setup=h.st_edit(GPTM, M, _as_f64("pos.weight", lambda i, v: 1e300 if i >= 56 else v))),
        P(N + "an F64 tensor holding 1e300 in a float32 model, inspect", ["inspect", M], 1, None,
          setup=h.st_edit(GPTM, M, _as_f64("pos.weight", lambda i, v: 1e300 if i >= 56 else v))),
        P(N + "an F64 tensor holding 1e300 in a float32 model, --init", ["train", "c.toml", "--set", "train.out=runs/new", "--init", M], 1, None,
          setup=h.st_edit(GPTM, M, _as_f64("pos.weight", lambda i, v: 1e300 if i >= 56 else v))),
        P(N + "an F64 tensor holding 1e-320 (0 once narrowed) is a value like any", ["sample", M, "--tokens", "2", "--prompt", "F"], 0, None,
          setup=h.st_edit(GPTM, M, _as_f64("pos.weight", lambda i, v: 1e-320 if i >= 56 else v))),
        P(N + "a translation model with an F64 tensor of 1e300 in its last position row", ["translate", T, "--text", "a1"], 1, None,
          setup=h.st_edit(TRM, T, _as_f64("tgt_pos.weight", lambda i, v: 1e300 if i >= 32 else v))),
        P(N + "one tensor F64 of the same values in a float32 model (mixed dtypes read as the model's)", ["sample", M, "--tokens", "2", "--prompt", "F"], 0, None,
          setup=h.st_edit(GPTM, M, _as_f64("out.weight"))),
        P(N + "a vocabulary with a lone surrogate escape (\\ud800 would decode to U+FFFD)", ["sample", M, "--tokens", "2", "--prompt", "F"], 1, None,
          setup=h.raw_meta_edit(GPTM, M, lambda b: b.replace(b'\\"z\\"', b'\\"\\\\ud800\\"', 1))),
        P(N + "a translation vocabulary with a lone surrogate escape", ["translate", T, "--text", "a1"], 1, None,
          setup=h.raw_meta_edit(TRM, T, lambda b: b.replace(b'\\"b6\\"', b'\\"b\\\\udfff\\"', 1))),
        P(N + "a metadata key with a lone surrogate escape", ["inspect", M], 1, None,
          setup=h.raw_meta_edit(GPTM, M, lambda b: b.replace(b'"format"', b'"form\\udc00at"', 1))),
        P(N + "model metadata followed by a second JSON value", ["sample", M, "--tokens", "2"], 1, None,
          setup=h.meta_edit(GPTM, M, "model", lambda v: v + ' {"heads":1}')),
        P(N + "model metadata null", ["sample", M, "--tokens", "2"], 1, None, setup=h.meta_edit(GPTM, M, "model", lambda v: "null")),
        P(N + "model metadata {} (every setting a default)", ["sample", M, "--tokens", "2"], 1, None, setup=h.meta_edit(GPTM, M, "model", lambda v: "{}")),
        P(N + "model metadata with vocab 55.0", ["sample", M, "--tokens", "2"], 1, None,
          setup=h.meta_edit(GPTM, M, "model", lambda v: v.replace('"vocab":55', '"vocab":55.0'))),
        P(N + "model metadata with dtype float16", ["sample", M, "--tokens", "2"], 1, None,
          setup=h.meta_edit(GPTM, M, "model", lambda v: v.replace('"float32"', '"float16"'))),
        P(N + "model metadata with dtype float64 over F32 tensors (widened)", ["sample", M, "--tokens", "2", "--prompt", "F"], 0, None,
          setup=h.meta_edit(GPTM, M, "model", lambda v: v.replace('"float32"', '"float64"'))),
        P(N + "model metadata with positions sinusoidal over a learned table", ["sample", M, "--tokens", "2"], 1, None,
          setup=h.meta_edit(GPTM, M, "model", lambda v: v.replace('"positions":"learned"', '"positions":"sinusoidal"'))),
        P(N + "model metadata with arch encoder-decoder in a GPT file", ["sample", M, "--tokens", "2"], (1, 2), None,
          setup=h.meta_edit(GPTM, M, "model", lambda v: v.replace('"decoder-only"', '"encoder-decoder"'))),
        P(N + "a GPT file whose metadata says arch encoder-decoder, translate", ["translate", M, "--text", "a1"], (1, 2), None,
          setup=h.meta_edit(GPTM, M, "arch", lambda v: "encoder-decoder")),
        P(N + "a translation model's model JSON with a key twice (heads 2, then 4)", ["translate", T, "--text", "a1"], 1, "twice",
          setup=h.meta_edit(TRM, T, "model", lambda v: v[:-1] + ',"heads":4}')),
        P(N + "a translation model's model JSON with an unknown key", ["translate", T, "--text", "a1"], 1, "turbo",
          setup=h.meta_edit(TRM, T, "model", lambda v: v[:-1] + ',"turbo":true}')),
        P(N + "a translation model's model JSON followed by a second value", ["translate", T, "--text", "a1"], 1, None,
          setup=h.meta_edit(TRM, T, "model", lambda v: v + " []")),
        P(N + "a translation model's model JSON null", ["translate", T, "--text", "a1"], 1, None,
          setup=h.meta_edit(TRM, T, "model", lambda v: "null")),
        P(N + "a translation model's src_vocab JSON followed by a second value", ["translate", T, "--text", "a1"], 1, None,
          setup=h.meta_edit(TRM, T, "src_vocab", lambda v: v + " []")),
        P(N + "a GPT model's vocab JSON followed by a second value", ["sample", M, "--tokens", "2"], 1, None,
          setup=h.meta_edit(GPTM, M, "vocab", lambda v: v + " []")),
        P(N + "a translation model's max_source ' 4' (not a plain number)", ["translate", T, "--text", "a1"], 1, None,
          setup=h.meta_edit(TRM, T, "max_source", lambda v: " 4")),
        P(N + "a translation model's max_source '+4' (read as 4, as Python's int() would)", ["translate", T, "--text", "a1"], 0, None,
          setup=h.meta_edit(TRM, T, "max_source", lambda v: "+4")),
        P(N + "a translation model whose arch key is missing but model JSON says encoder-decoder, sample", ["sample", T, "--tokens", "2"], (1, 2), None,
          setup=h.meta_edit(TRM, T, "arch", lambda v: None)),
        P(N + "the training checkpoint given to sample", ["sample", "runs/c/checkpoint.safetensors", "--tokens", "2"], (1, 2), "checkpoint"),
        P(N + "the training checkpoint given to --init", ["train", "c.toml", "--set", "train.out=runs/new", "--init", "runs/c/checkpoint.safetensors"], (1, 2), "checkpoint"),
        P(N + "the translation checkpoint given to translate", ["translate", "runs/toy/checkpoint.safetensors", "--text", "a1"], (1, 2), "checkpoint"),
        P(N + "a model file named .safetensors that is a hard link of the checkpoint, inspect", ["inspect", M], (1, 2), "checkpoint",
          setup=lambda d: os.link(os.path.join(d, "runs/c/checkpoint.safetensors"), os.path.join(d, M))),
        P(N + "an extra tensor whose name holds an escape sequence: quoted in the message", ["sample", M, "--tokens", "2"], 1, None,
          setup=h.st_edit(GPTM, M, lambda hd, data: _replace(hd, data, "\x1b[2Jx", "F32", [1], b"\0\0\0\0")),
          check=lambda d, c, o, e: "raw escape in stderr" if "\x1b" in e else None),
        P(N + "an extra tensor whose name is 100 KB: the line stays short", ["sample", M, "--tokens", "2"], 1, None,
          setup=h.st_edit(GPTM, M, lambda hd, data: _replace(hd, data, "x" * 100000, "F32", [1], b"\0\0\0\0")),
          check=lambda d, c, o, e: "stderr line of %d bytes" % len(e) if len(e) > 2100 else None),
        P(N + "20,000 extra empty tensors: the line stays short", ["sample", M, "--tokens", "2"], 1, None,
          setup=h.st_edit(GPTM, M, lambda hd, data: (dict(hd, **{"extra%05d" % i: {"dtype": "F32", "shape": [0], "data_offsets": [len(data), len(data)]} for i in range(20000)}), data)),
          check=lambda d, c, o, e: "stderr line of %d bytes" % len(e) if len(e) > 2100 else None),
        P(N + "a translation model with 20,000 extra empty tensors: the line stays short", ["translate", T, "--text", "a1"], 1, None,
          setup=h.st_edit(TRM, T, lambda hd, data: (dict(hd, **{"extra%05d" % i: {"dtype": "F32", "shape": [0], "data_offsets": [len(data), len(data)]} for i in range(20000)}), data)),
          check=lambda d, c, o, e: "stderr line of %d bytes" % len(e) if len(e) > 2100 else None),
        P(N + "a tensor missing from a GPT model and 5,000 extra: the line stays short", ["eval", M, "--data", "tiny.txt"], 1, None,
          setup=h.st_edit(GPTM, M, lambda hd, data: ({**{k: v for k, v in hd.items() if k != "out.bias"}, **{"extra%05d" % i: {"dtype": "F32", "shape": [0], "data_offsets": [0, 0]} for i in range(5000)}}, data)),
          check=lambda d, c, o, e: "stderr line of %d bytes" % len(e) if len(e) > 2100 else None),
        P(N + "data_offsets in exponent notation (8e0)", ["inspect", M], 1, None,
          setup=h.raw_meta_edit(GPTM, M, lambda b: b.replace(b'"data_offsets":[0,1760]', b'"data_offsets":[0e0,1760]', 1))),
        P(N + "a shape of 55.0", ["inspect", M], 1, None,
          setup=h.raw_meta_edit(GPTM, M, lambda b: b.replace(b'"shape":[55,8]', b'"shape":[55.0,8]', 1))),
        P(N + "dtype in lower case", ["inspect", M], 1, None,
          setup=h.raw_meta_edit(GPTM, M, lambda b: b.replace(b'"F32"', b'"f32"', 1))),
        P(N + "__metadata__ after the tensors (order is free)", ["sample", M, "--tokens", "2", "--prompt", "F"], 0, None,
          setup=h.st_edit(GPTM, M, lambda hd, data: ({**{k: v for k, v in hd.items() if k != "__metadata__"}, "__metadata__": hd["__metadata__"]}, data))),
        P(N + "all weights subnormal (a silent but valid model)", ["sample", M, "--tokens", "2", "--prompt", "F"], 0, None,
          setup=h.st_edit(GPTM, M, lambda hd, data: (hd, struct.pack("<%df" % (len(data) // 4), *([1e-40] * (len(data) // 4)))))),
        P(N + "weights of 1e19: logits overflow, eval", ["eval", M, "--data", "tiny.txt"], 1, "NaN or infinite",
          setup=h.st_edit(GPTM, M, lambda hd, data: (hd, struct.pack("<%df" % (len(data) // 4), *([1e19] * (len(data) // 4)))))),
        P(N + "weights of 1e19, inspect (reads, no forward pass)", ["inspect", M], 0, None,
          setup=h.st_edit(GPTM, M, lambda hd, data: (hd, struct.pack("<%df" % (len(data) // 4), *([1e19] * (len(data) // 4)))))),
        P(N + "a translation model's weights of 1e19, eval", ["eval", TR], 1, "NaN or infinite",
          setup=h.st_edit(TRM, TRM, lambda hd, data: (hd, struct.pack("<%df" % (len(data) // 4), *([1e19] * (len(data) // 4)))))),
        P(N + "a translation model's weights of 1e19, attention", ["attention", TR, "--text", "a1 a2"], 1, "finite",
          setup=h.st_edit(TRM, TRM, lambda hd, data: (hd, struct.pack("<%df" % (len(data) // 4), *([1e19] * (len(data) // 4)))))),
        P(N + "a translation model's weights of 1e19, translate --beam 4", ["translate", TR, "--text", "a1 a2", "--beam", "4"], 1, "NaN or infinite",
          setup=h.st_edit(TRM, TRM, lambda hd, data: (hd, struct.pack("<%df" % (len(data) // 4), *([1e19] * (len(data) // 4)))))),
    ]

    # --- paths: links, devices, races of the model argument
    ps += [
        P(N + "model.safetensors a link to /proc/self/fd/0 with a model on stdin", ["sample", GPT, "--tokens", "2"], 2, None,
          stdin=b"x" * 100, setup=lambda d: (os.remove(os.path.join(d, GPTM)), os.symlink("/proc/self/fd/0", os.path.join(d, GPTM)))),
        P(N + "model.safetensors a link to /proc/self/environ", ["sample", GPT, "--tokens", "2"], (1, 2), None,
          setup=lambda d: (os.remove(os.path.join(d, GPTM)), os.symlink("/proc/self/environ", os.path.join(d, GPTM)))),
        P(N + "model.safetensors a link to /dev/urandom", ["inspect", GPT], 2, None,
          setup=lambda d: (os.remove(os.path.join(d, GPTM)), os.symlink("/dev/urandom", os.path.join(d, GPTM)))),
        P(N + "model.safetensors a socket", ["inspect", GPT], 2, None,
          setup=lambda d: (os.remove(os.path.join(d, GPTM)), __import__("socket").socket(__import__("socket").AF_UNIX).bind(os.path.join(d, GPTM)))),
        P(N + "train --force --init its own run's model (read before the run is replaced)", ["train", "c.toml", "--force", "--init", GPT, "--quiet"], (0, 1, 2), None,
          allow=(GPT,), check=h.unchanged(GPTM, "runs/c/config.toml")),
        P(N + "train --init a model over the same characters in another order", ["train", "c.toml", "--set", "train.out=runs/new", "--init", M], 2, "order",
          setup=h.vocab_edit(GPTM, M, "vocab", lambda w: [w[1], w[0]] + w[2:])),
        P(N + "train --init a word run into a char config", ["train", "c.toml", "--set", "train.out=runs/new", "--init", WRD], 2, None),
        P(N + "train --init a model file whose context differs", ["train", "c.toml", "--set", "train.out=runs/new", "--set", "model.context=4", "--init", GPT], 2, "context"),
        P(N + "train --init a model with dropout 0.5 in its metadata (dropout is the run's own)", ["train", "c.toml", "--set", "train.out=runs/new", "--init", M, "--quiet"], 0, None,
          allow=("runs/new",), setup=h.meta_edit(GPTM, M, "model", lambda v: v.replace('"dropout":0', '"dropout":0.5'))),
        P(N + "inspect --vocab of a model whose tokens are control characters: quoted", ["inspect", M, "--vocab"], 0, None,
          setup=h.vocab_edit(GPTM, M, "vocab", lambda w: ["\x1b", "\x07"] + w[2:]),
          check=lambda d, c, o, e: "raw control characters on stdout" if "\x1b" in o or "\x07" in o else None),
    ]

    # --- more model-file variants
    ps += [
        P(N + "a translation model with a tensor its model does not have (silently ignored before)", ["translate", T, "--text", "a1"], 1, "does not have",
          setup=h.st_edit(TRM, T, lambda hd, data: _replace(hd, data, "encoder.0.att.extra.weight", "F32", [1], b"\0\0\0\0"))),
        P(N + "a translation model with a decoder cross-attention tensor duplicated under a new name", ["eval", "runs/toy/t.safetensors"], 1, "does not have",
          setup=h.st_edit(TRM, "runs/toy/t.safetensors", lambda hd, data: _replace(hd, data, "decoder.0.cross2.q.weight", "F32", [8, 8], b"\0" * 256))),
        P(N + "a run folder's model.safetensors of 0 bytes", ["sample", GPT, "--tokens", "2"], 1, "empty",
          setup=h.write(GPTM, "")),
        P(N + "a run folder's model.safetensors a link to its checkpoint", ["sample", GPT, "--tokens", "2"], (1, 2), "checkpoint",
          setup=lambda d: (os.remove(os.path.join(d, GPTM)), os.symlink("checkpoint.safetensors", os.path.join(d, GPTM)))),
        P(N + "a tensor entry with an unknown field", ["inspect", M], 1, "unknown field",
          setup=h.raw_meta_edit(GPTM, M, lambda b: b.replace(b'"dtype":"F32"', b'"dtype":"F32","dtyp":"F64"', 1).rstrip() + b" " * 0)),
        P(N + "65,537 tensors (one past the limit)", ["inspect", M], 1, "65536",
          setup=h.st_edit(GPTM, M, lambda hd, data: (dict(hd, **{"e%05d" % i: {"dtype": "F32", "shape": [0], "data_offsets": [len(data), len(data)]} for i in range(65537 - 16)}), data))),
        P(N + "a model of one token (vocab 1)", ["sample", M, "--tokens", "2"], 1, None,
          setup=h.meta_edit(GPTM, M, "vocab", lambda v: '["a"]')),
        P(N + "train --init a translation model whose source words are swapped", ["train", "toy.toml", "--set", "train.out=runs/new", "--init", T], 2, None,
          setup=h.vocab_edit(TRM, T, "src_vocab", lambda w: w[:4] + [w[5], w[4]] + w[6:])),
        P(N + "import --out a run folder", ["import", "nanogpt", "ckpt.pt", "--out", GPT], 2, None),
        P(N + "import --meta a folder", ["import", "nanogpt", "ckpt.pt", "--meta", "runs", "--out", "x.safetensors"], 2, None),
        P(N + "import: data.pkl under another folder than its storages", IMP, 2, None,
          setup=h.ckpt_edit(lambda es: [(n.replace("ckpt/data.pkl", "other/data.pkl"), b) for n, b in es])),
        P(N + "import: a storage entry of 0 bytes", IMP, 2, None,
          setup=h.ckpt_edit(lambda es: [(n, b"" if n.endswith("data/0") else b) for n, b in es])),
    ]

    # --- nanoGPT import: zip
    ps += [
        P(N + "a storage entry twice in the zip", IMP, 2, "twice", setup=h.ckpt_edit(lambda es: es + [es[1]])),
        P(N + "data.pkl twice in the zip", IMP, 2, None, setup=h.ckpt_edit(lambda es: [es[0]] + es)),
        P(N + "an empty ckpt.pt", IMP, 2, None, setup=h.write("ckpt.pt", "")),
        P(N + "a zip with junk prepended (a self-extracting archive)", IMP, (0, 2), None, allow=OUT,
          setup=_raw_zip(lambda b: b"#!/bin/sh\nexit 0\n" + b)),
        P(N + "two archives concatenated", IMP, (0, 2), None, allow=OUT, setup=_raw_zip(lambda b: b + b)),
        P(N + "a zip comment of 65,535 bytes", IMP, 0, None, allow=OUT,
          setup=_raw_zip(lambda b: b[:-2] + struct.pack("<H", 65535) + b"c" * 65535)),
        P(N + "the central directory's count says 2^16-1 entries (the records are read, as Python's zipfile does)", IMP, (0, 2), None, allow=OUT,
          setup=_raw_zip(lambda b: b[:-12] + struct.pack("<HH", 65535, 65535) + b[-8:])),
        P(N + "the central directory's offset points past the end", IMP, 2, None,
          setup=_raw_zip(lambda b: b[:-6] + struct.pack("<I", len(b) + 1000) + b[-2:])),
        P(N + "a storage entry deflated, declaring 1/4 of its real size", IMP, 2, None, setup=_lying_deflate(0.25)),
        P(N + "a storage entry deflated, declaring 4 times its real size", IMP, 2, None, setup=_lying_deflate(4)),
        P(N + "a storage whose CRC is wrong", IMP, 2, None, setup=_bad_crc),
        P(N + "a storage entry that is a folder name", IMP, 2, None,
          setup=h.ckpt_edit(lambda es: [(n + "/" if n.endswith("data/0") else n, b) for n, b in es])),
    ]

    # --- nanoGPT import: the pickle's objects
    def model_args(**kw):
        return ckpt_obj(lambda r, es: r["model_args"].update(kw))
    L = _laughs(60)
    ps += [
        P(N + "model_args.n_embd True (a bool is an int in Python)", IMP, 2, "n_embd", setup=model_args(n_embd=True)),
        P(N + "model_args.n_head not dividing n_embd", IMP, 2, None, setup=model_args(n_head=3)),
        P(N + "model_args.vocab_size not meta.pkl's", IMP, 2, None, setup=model_args(vocab_size=54)),
        P(N + "model_args.block_size 2^40", IMP, 2, None, setup=model_args(block_size=1 << 40)),
        P(N + "model_args.n_layer 1000", IMP, 2, None, setup=model_args(n_layer=1000)),
        P(N + "model_args.dropout 1e308", IMP, 2, None, setup=model_args(dropout=1e308)),
        P(N + "model_args.bias False over a state_dict with biases", IMP, 2, None, setup=model_args(bias=False)),
        P(N + "model_args a list that holds itself", IMP, 2, None,
          setup=ckpt_obj(lambda r, es: (lambda l: (l.append(l), r.__setitem__("model_args", l)))([]))),
        P(N + "model_args.n_embd a list that holds itself", IMP, 2, None,
          setup=ckpt_obj(lambda r, es: (lambda l: (l.append(l), r["model_args"].__setitem__("n_embd", l)))([]))),
        P(N + "the checkpoint's root dict holds itself as model", IMP, 2, None,
          setup=ckpt_obj(lambda r, es: r.__setitem__("model", r))),
        P(N + "a tensor's size a 2^60-leaf DAG through the memo (billion laughs)", IMP, 2, None, timeout=30,
          setup=h.pkl_edit(lambda b: b.replace(b"K\x00K\x37K\x10\x86", b"K\x00" + L[2:] + b"K\x10\x86", 1))),
        P(N + "meta.pkl whose vocab_size is a 2^60-leaf DAG (printed in the message?)", IMP, 2, None, timeout=30,
          setup=_meta_pkl(None, raw=_meta_with_vocab_size(L))),
        P(N + "meta.pkl whose vocab_size is a list holding itself", IMP, 2, None, timeout=30,
          setup=_meta_pkl(None, raw=_meta_with_vocab_size(b"\x80\x02]q\x00h\x00a"))),
        P(N + "a tensor with stride 0 over a dimension of 16", IMP, 2, "stride",
          setup=ckpt_obj(lambda r, es: setattr(r["model"]["transformer.wpe.weight"], "stride", (0, 1)))),
        P(N + "a tensor with negative strides", IMP, 2, None,
          setup=ckpt_obj(lambda r, es: setattr(r["model"]["transformer.wpe.weight"], "stride", (-16, -1)))),
        P(N + "a tensor of size (16, 16) as a list, not a tuple", IMP, 2, None,
          setup=ckpt_obj(lambda r, es: setattr(r["model"]["transformer.wpe.weight"], "size", [16, 16]))),
        P(N + "a tensor at a negative offset", IMP, 2, None,
          setup=ckpt_obj(lambda r, es: setattr(r["model"]["transformer.wpe.weight"], "offset", -1))),
        P(N + "a tensor at offset 2^63 (overflows offset + n)", IMP, 2, None,
          setup=ckpt_obj(lambda r, es: setattr(r["model"]["transformer.wpe.weight"], "offset", (1 << 63) - 1))),
        P(N + "a storage numel 2^31 over a small entry", IMP, 2, None,
          setup=ckpt_obj(lambda r, es: setattr(r["model"]["transformer.wpe.weight"].storage, "numel", 1 << 31))),
        P(N + "a storage of HalfStorage holding +Inf", IMP, 2, None, setup=_storage_retype("torch.HalfStorage", 2, struct.pack("<H", 0x7c00))),
        P(N + "a storage of BFloat16Storage holding NaN", IMP, 2, None, setup=_storage_retype("torch.BFloat16Storage", 2, struct.pack("<H", 0x7fc1))),
        P(N + "a storage of HalfStorage (finite) imports, widened", IMP, 0, None, allow=OUT, setup=_storage_retype("torch.HalfStorage", 2, struct.pack("<H", 0x3c00))),
        P(N + "a storage of DoubleStorage holding 1e300 (the model becomes float64: kept exactly)", IMP, 0, None, allow=OUT, setup=_storage_retype("torch.DoubleStorage", 8, struct.pack("<d", 1e300))),
        P(N + "a storage of FloatStorage holding NaN", IMP, 2, None, setup=_storage_retype("torch.FloatStorage", 4, struct.pack("<f", float("nan")))),
        P(N + "a storage of LongStorage", IMP, 2, None, setup=_storage_retype("torch.LongStorage", 8, struct.pack("<q", 1))),
        P(N + "a storage on device cuda:0 (read as CPU data, as torch.load map_location does)", IMP, (0, 2), None, allow=OUT,
          setup=ckpt_obj(lambda r, es: setattr(r["model"]["transformer.wpe.weight"].storage, "dev", "cuda:0"))),
        P(N + "a storage key with ../ (never a path on disk)", IMP, 2, None,
          setup=ckpt_obj(lambda r, es: setattr(r["model"]["transformer.wpe.weight"].storage, "key", "../../../../etc/passwd"))),
        P(N + "two tensors over the same storage bytes (tied, as nanoGPT's wte and lm_head)", IMP, (0, 2), None, allow=OUT,
          setup=ckpt_obj(lambda r, es: r["model"].__setitem__("transformer.wpe.weight", _Tensor(r["model"]["transformer.wte.weight"].storage, 0, (16, 16), (16, 1), False, collections.OrderedDict())))),
        P(N + "a state_dict with an extra key", IMP, 2, "extra_thing",
          setup=ckpt_obj(lambda r, es: r["model"].__setitem__("extra_thing", r["model"]["transformer.wpe.weight"]))),
        P(N + "a state_dict key with a newline: quoted", IMP, 2, None,
          setup=ckpt_obj(lambda r, es: r["model"].__setitem__("a\nb\x1b[2J", r["model"]["transformer.wpe.weight"])),
          check=lambda d, c, o, e: "raw control characters on stderr" if "\x1b" in e or e.count("\n") > 1 else None),
        P(N + "the state_dict a plain dict (not an OrderedDict)", IMP, 0, None, allow=OUT,
          setup=ckpt_obj(lambda r, es: r.__setitem__("model", dict(r["model"])))),
        P(N + "the whole checkpoint pickled with protocol 4 (FRAME, MEMOIZE)", IMP, (0, 2), None, allow=OUT,
          setup=_ckpt_protocol(4)),
        P(N + "the whole checkpoint pickled with protocol 0 (text opcodes)", IMP, (0, 2), None, allow=OUT,
          setup=_ckpt_protocol(0)),
        P(N + "a GLOBAL of os.system in the config dict", IMP, 2, "os.system",
          setup=ckpt_obj(lambda r, es: r.__setitem__("config", _Global("os.system")))),
        P(N + "a REDUCE of OrderedDict with a list of 1M pairs", IMP, (0, 2), None, allow=OUT,
          setup=ckpt_obj(lambda r, es: r.__setitem__("config", collections.OrderedDict(("k%d" % i, i) for i in range(1000000)))), timeout=60),
    ]

    # --- nanoGPT import: meta.pkl
    ps += [
        P(N + "meta.pkl whose itos holds a lone surrogate (invalid UTF-8 once decoded)", IMP, 2, None,
          setup=_meta_pkl(lambda m: dict(m, itos={**m["itos"], 54: "\ud800"}, stoi={**{k: v for k, v in m["stoi"].items() if v != 54}, "\ud800": 54}))),
        P(N + "meta.pkl with protocol 4", IMP, 0, None, allow=OUT, setup=_meta_pkl(lambda m: m, protocol=4)),
        P(N + "meta.pkl with protocol 5", IMP, 0, None, allow=OUT, setup=_meta_pkl(lambda m: m, protocol=5)),
        P(N + "meta.pkl with protocol 1", IMP, 0, None, allow=OUT, setup=_meta_pkl(lambda m: m, protocol=1)),
        P(N + "meta.pkl whose itos values are bytes", IMP, 2, None, setup=_meta_pkl(lambda m: dict(m, itos={k: v.encode() for k, v in m["itos"].items()}, stoi=None))),
        P(N + "meta.pkl whose itos keys are strings", IMP, 2, None, setup=_meta_pkl(lambda m: dict(m, itos={str(k): v for k, v in m["itos"].items()}))),
        P(N + "meta.pkl whose itos holds a NUL character", IMP, (0, 2), None, allow=OUT,
          setup=_meta_pkl(lambda m: dict(m, itos={**m["itos"], 54: "\x00"}, stoi={**{k: v for k, v in m["stoi"].items() if v != 54}, "\x00": 54}))),
        P(N + "meta.pkl whose itos holds CR LF as one character", IMP, 2, None,
          setup=_meta_pkl(lambda m: dict(m, itos={**m["itos"], 54: "\r\n"}, stoi=None))),
        P(N + "meta.pkl that is the checkpoint (a zip)", ["import", "nanogpt", "ckpt.pt", "--meta", "ckpt.pt", "--out", "x.safetensors"], 2, None),
        P(N + "meta.pkl a link to /proc/self/fd/0", ["import", "nanogpt", "ckpt.pt", "--meta", "m.pkl", "--out", "x.safetensors"], 2, None,
          stdin=b"x", setup=h.symlink("/proc/self/fd/0", "m.pkl")),
        P(N + "--out the meta.pkl (an input)", ["import", "nanogpt", "ckpt.pt", "--meta", "meta.pkl", "--out", "meta.pkl"], 2, None),
        P(N + "--out a hard link of ckpt.pt (an input under another name)", ["import", "nanogpt", "ckpt.pt", "--out", "hl.safetensors"], 2, None,
          setup=lambda d: os.link(os.path.join(d, "ckpt.pt"), os.path.join(d, "hl.safetensors"))),
        P(N + "--init an imported model, then the model is fine-tuned", ["train", "c.toml", "--set", "train.out=runs/new", "--init", "ckpt.pt"], 2, None),
    ]
    return ps


def _ckpt_protocol(protocol):
    def setup(d):
        p = os.path.join(d, "ckpt.pt")
        with zipfile.ZipFile(p) as z:
            es = collections.OrderedDict((i.filename, z.read(i.filename)) for i in z.infolist())
        name = [n for n in es if n.endswith("data.pkl")][0]
        es[name] = _pkl_dump(_pkl_load(es[name]), protocol=protocol)
        os.remove(p)
        with zipfile.ZipFile(p, "w") as z:
            for n, b in es.items():
                z.writestr(n, b)
    return setup


def _storage_retype(typ, size, value):
    """transformer.wpe.weight's storage retyped to typ, filled with value
    (size bytes each)."""
    def fn(r, es):
        t = r["model"]["transformer.wpe.weight"]
        st = t.storage
        st.typ = _Global(typ)
        es["ckpt/data/" + st.key] = value * st.numel
    def setup(d):
        ckpt_obj(fn)(d)
    return setup


def _rewrite_zip(d, fn):
    p = os.path.join(d, "ckpt.pt")
    with zipfile.ZipFile(p) as z:
        es = [(i, z.read(i.filename)) for i in z.infolist()]
    os.remove(p)
    with open(p, "wb") as f:
        fn(f, es)


def _lying_deflate(factor):
    """One storage deflated, its declared uncompressed size times factor
    (in the local header and the central directory)."""
    def setup(d):
        p = os.path.join(d, "ckpt.pt")
        with zipfile.ZipFile(p) as z:
            es = [(i.filename, z.read(i.filename)) for i in z.infolist()]
        os.remove(p)
        with zipfile.ZipFile(p, "w") as z:
            for n, b in es:
                z.writestr(n, b, compress_type=zipfile.ZIP_DEFLATED if n.endswith("data/0") else zipfile.ZIP_STORED)
        with open(p, "rb") as f:
            raw = bytearray(f.read())
        real = len([b for n, b in es if n.endswith("data/0")][0])
        lie = int(real * factor)
        # every header of ckpt/data/0: local (PK\3\4, size at 22) and central (PK\1\2, size at 24)
        name = b"ckpt/data/0"
        i = 0
        while True:
            i = raw.find(name, i)
            if i < 0:
                break
            for sig, off, nameoff in ((b"PK\x03\x04", 22, 30), (b"PK\x01\x02", 24, 46)):
                s = i - nameoff
                if s >= 0 and raw[s:s + 4] == sig and raw[i + len(name):i + len(name) + 1] != b"0"[0:1] and raw[i + len(name)] not in b"0123456789":
                    struct.pack_into("<I", raw, s + off, lie)
            i += len(name)
        with open(p, "wb") as f:
            f.write(bytes(raw))
    return setup


def _bad_crc(d):
    p = os.path.join(d, "ckpt.pt")
    with open(p, "rb") as f:
        raw = bytearray(f.read())
    name = b"ckpt/data/0"
    i = raw.find(b"PK\x03\x04" + raw[4:4])  # first local header
    # flip one byte of data/0's content: its data follows its local header
    at = raw.find(name + b"")
    while at >= 0 and raw[at - 30:at - 26] != b"PK\x03\x04":
        at = raw.find(name, at + 1)
    n = struct.unpack_from("<H", raw, at - 30 + 26)[0]
    x = struct.unpack_from("<H", raw, at - 30 + 28)[0]
    raw[at + n + x] ^= 0x01
    with open(p, "wb") as f:
        f.write(bytes(raw))
