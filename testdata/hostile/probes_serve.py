"""gptg serve — its flags (probes(h),
run as probe.py runs every probe) and hostile requests and runs folders
(serve_probes(h, fixtures, work): one server over a runs folder planted
with FIFOs, devices, links out, huge and endless files, a second over
thousands of runs; each request its own probe, with a time limit; the
server's peak memory read from /proc at the end; nothing outside the
served folder may show in an answer, and nothing inside may change).

Only ever run inside /work/sandbox (or another throwaway machine).
"""

import concurrent.futures
import http.client
import json
import os
import shutil
import signal
import socket
import subprocess
import threading
import time

SECRET = "SECRET-OUTSIDE-THE-SERVED-FOLDER"


# ------------------------------------------------------------ flag probes

def until_listening_then_sigint(d, proc):
    """During a probe of a server that starts: wait until it prints its
    address (at most 10 s), then SIGINT."""
    time.sleep(1.5)
    try:
        os.killpg(proc.pid, signal.SIGINT)
    except OSError:
        pass


def stderr_has(fragment, absent=None):
    def check(d, code, out, err):
        if fragment and fragment not in err:
            return "stderr lacks %r: %r" % (fragment, err[:200])
        if absent and absent in err:
            return "stderr has %r: %r" % (absent, err[:200])
    return check


def probes(h):
    P = h.Probe
    run = lambda name, args, fragment=None, absent=None: P(
        "serve flags: " + name, ["serve", "runs"] + args, (0, 130), None,
        during=until_listening_then_sigint, check=stderr_has(fragment, absent), timeout=30)

    def fifo(name):
        return lambda d: os.mkfifo(os.path.join(d, name))

    def loop(d):
        os.symlink("l2", os.path.join(d, "l1"))
        os.symlink("l1", os.path.join(d, "l2"))

    def port_in_use(d):
        s = socket.socket()
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        s.bind(("127.0.0.1", 0))
        s.listen(1)
        h._hserve_busy = s  # kept open for the probe
        with open(os.path.join(d, "port"), "w") as f:
            f.write(str(s.getsockname()[1]))

    return [
        P("serve flags: --addr port 65536", ["serve", "runs", "--addr", "127.0.0.1:65536"], 2, "not a number from 0 to 65535"),
        P("serve flags: --addr port -1", ["serve", "runs", "--addr", "127.0.0.1:-1"], 2, "not a number from 0 to 65535"),
        P("serve flags: --addr port in hex", ["serve", "runs", "--addr", "127.0.0.1:0x50"], 2, "not a number"),
        P("serve flags: --addr an unclosed [", ["serve", "runs", "--addr", "[::1:80"], 2, "not HOST:PORT"),
        P("serve flags: --addr empty", ["serve", "runs", "--addr", ""], 2, "--addr"),
        P("serve flags: --addr with a newline", ["serve", "runs", "--addr", "127.0.0.1:80\nInjected: yes"], 2, "\\n"),
        P("serve flags: --addr of 100 KB", ["serve", "runs", "--addr", "1" * 100000 + ":80"], 2, "longer than 253 bytes"),
        P("serve flags: --addr a host that is not this machine", ["serve", "runs", "--addr", "192.0.2.1:0"], 1, "192.0.2.1"),
        P("serve flags: --addr a port in use", lambda d: ["serve", "runs", "--addr", "127.0.0.1:" + open(os.path.join(d, "port")).read()],
          1, "address already in use", setup=port_in_use),
        run("--addr 0.0.0.0:0 warns", ["--addr", "0.0.0.0:0"], "warning"),
        run("--addr :0 (every interface) warns", ["--addr", ":0"], "warning"),
        run("--addr localhost:0 does not warn", ["--addr", "localhost:0"], None, "warning"),
        run("--addr 127.0.0.2:0 (loopback) does not warn", ["--addr", "127.0.0.2:0"], None, "warning"),
        P("serve flags: --model-memory 1e-12 (rounds to no bytes)", ["serve", "runs", "--model-memory", "1e-12"], 2, "less than 1 MiB"),
        P("serve flags: --model-memory 1e300", ["serve", "runs", "--model-memory", "1e300"], 2, "--model-memory"),
        P("serve flags: --model-memory -0", ["serve", "runs", "--model-memory", "-0"], 2, "--model-memory"),
        P("serve flags: --model-memory Inf", ["serve", "runs", "--model-memory", "Inf"], 2, "--model-memory"),
        P("serve flags: --model-memory 0x10", ["serve", "runs", "--model-memory", "0x1p-40"], 2, "--model-memory"),
        P("serve flags: --threads 100000", ["serve", "runs", "--threads", "100000"], 2, "up to 4096"),
        P("serve flags: --threads 1.5", ["serve", "runs", "--threads", "1.5"], 2, "flag --threads"),
        run("--threads 0 (every core) starts", ["--addr", "127.0.0.1:0", "--threads", "0"]),
        P("serve flags: --max-tokens 1000001", ["serve", "runs", "--max-tokens", "1000001"], 2, "between 1 and 1000000"),
        P("serve flags: --max-tokens 2^63", ["serve", "runs", "--max-tokens", "9223372036854775808"], 2, "flag --max-tokens"),
        P("serve flags: --generations 65", ["serve", "runs", "--generations", "65"], 2, "between 1 and 64"),
        P("serve flags: --time-limit 5 (no unit)", ["serve", "runs", "--time-limit", "5"], 2, "flag --time-limit"),
        P("serve flags: --time-limit 0s", ["serve", "runs", "--time-limit", "0s"], 2, "must be positive"),
        run("--time-limit 1ns starts", ["--addr", "127.0.0.1:0", "--time-limit", "1ns"]),
        P("serve flags: an unknown flag --port", ["serve", "runs", "--port", "80"], 2, "-port"),
        P("serve flags: a FIFO as the folder (no hang)", ["serve", "f"], 2, "not a folder", setup=fifo("f"), timeout=10),
        P("serve flags: /dev/null as the folder", ["serve", "/dev/null"], 2, "not a folder"),
        P("serve flags: a symlink loop as the folder", ["serve", "l1"], 2, "l1", setup=loop),
        P("serve flags: a folder name with an ESC sequence", ["serve", "no\x1b[31mpe"], 2, "\\x1b"),
        P("serve flags: a model file as the folder", ["serve", "runs/c/model.safetensors"], 2, "not a folder"),
        run("the same folder twice", ["runs", "--addr", "127.0.0.1:0"]),
    ]


# ---------------------------------------------------------- HTTP helpers

def req(port, method, path, body=None, headers=None, timeout=20):
    """(status or None, body bytes (at most 4 MB), seconds)."""
    t = time.time()
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    try:
        hs = {"Host": "127.0.0.1:%d" % port}
        hs.update(headers or {})
        c.request(method, path, body=body, headers=hs)
        r = c.getresponse()
        return r.status, r.read(4 << 20), time.time() - t
    except Exception as e:
        return None, repr(e).encode(), time.time() - t
    finally:
        c.close()


def raw(port, data, timeout=10, read=1 << 16):
    """Sends raw bytes; returns the status of the answer (None if none) and its bytes."""
    s = socket.create_connection(("127.0.0.1", port), timeout=timeout)
    try:
        s.sendall(data)
        got = b""
        while len(got) < read:
            try:
                b = s.recv(read)
            except socket.timeout:
                break
            if not b:
                break
            got += b
            if b"\r\n\r\n" in got and not got.startswith(b"HTTP/1.1 200"):
                break
    except OSError as e:
        return None, repr(e).encode()
    finally:
        s.close()
    try:
        return int(got.split(b" ", 2)[1]), got
    except (IndexError, ValueError):
        return None, got


def hwm_mb(pid):
    try:
        with open("/proc/%d/status" % pid) as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    return 0


def start(h, d, dirs, *flags):
    port = h.free_port()
    proc = subprocess.Popen([h.BIN, "serve"] + dirs + ["--addr", "127.0.0.1:%d" % port] + list(flags), cwd=d,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True)
    for _ in range(600):
        if req(port, "GET", "/api/runs", timeout=5)[0] == 200:
            break
        if proc.poll() is not None:
            break
        time.sleep(0.05)
    return port, proc


def stop(proc):
    """SIGINT; the reason it did not stop cleanly, or None."""
    proc.send_signal(signal.SIGINT)
    try:
        out, err = proc.communicate(timeout=20)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate()
        return "hang: still running 20 s after SIGINT"
    errs = err.decode("utf-8", "replace")
    if "panic" in errs or "goroutine " in errs or "fatal error" in errs:
        return "a trace: " + errs[:300]
    if proc.returncode not in (0, 130):
        return "exit %s after SIGINT: %s" % (proc.returncode, errs[:200])
    return None


def copy_run(src, dst):
    os.makedirs(dst, exist_ok=True)
    for n in os.listdir(src):
        p = os.path.join(src, n)
        if os.path.isfile(p) and not n.startswith("."):
            shutil.copy(p, os.path.join(dst, n))


def replace_with(path, make):
    if os.path.lexists(path):
        os.remove(path)
    make(path)


def device(major, minor):
    return lambda p: os.mknod(p, 0o666 | 0o020000, os.makedev(major, minor))


# ------------------------------------------------- the hostile runs folder

def plant(d):
    """The runs folder's hostile runs, next to the fixtures' c, words, toy."""
    R = os.path.join(d, "runs")
    out = os.path.join(d, "outside")  # beside the served folder, never to be read
    os.makedirs(out)
    copy_run(os.path.join(R, "c"), os.path.join(out, "c"))
    with open(os.path.join(out, "secret.txt"), "w") as f:
        f.write(SECRET + "\n")
    with open(os.path.join(out, "c", "config.toml"), "a") as f:
        f.write("# " + SECRET + "\n")
    c = os.path.join(R, "c")

    def run(name):
        p = os.path.join(R, name)
        copy_run(c, p)
        return p
    # Links out of the served folder.
    p = run("lnk_model")
    replace_with(os.path.join(p, "model.safetensors"), lambda q: os.symlink(os.path.join(out, "c", "model.safetensors"), q))
    p = run("lnk_config")
    replace_with(os.path.join(p, "config.toml"), lambda q: os.symlink(os.path.join(out, "c", "config.toml"), q))
    p = run("lnk_metrics")
    replace_with(os.path.join(p, "metrics.jsonl"), lambda q: os.symlink("../../outside/secret.txt", q))
    p = run("lnk_ckpt")
    replace_with(os.path.join(p, "checkpoint.safetensors"), lambda q: os.symlink("/proc/self/environ", q))
    os.symlink(os.path.join(out, "c"), os.path.join(R, "lnk_folder"))
    os.symlink("/", os.path.join(R, "lnk_root"))
    p = run("lnk_lock")
    replace_with(os.path.join(p, ".gptg.lock"), lambda q: os.symlink("/dev/zero", q))
    # FIFOs and devices named like the run's files.
    for name, f in (("fifo_config", "config.toml"), ("fifo_metrics", "metrics.jsonl"), ("fifo_model", "model.safetensors"),
                    ("fifo_ckpt", "checkpoint.safetensors")):
        p = run(name)
        replace_with(os.path.join(p, f), os.mkfifo)
    for name, f, dev in (("zero_metrics", "metrics.jsonl", (1, 5)), ("zero_model", "model.safetensors", (1, 5)),
                         ("zero_ckpt", "checkpoint.safetensors", (1, 5)), ("urandom_config", "config.toml", (1, 9)),
                         ("null_model", "model.safetensors", (1, 3))):
        p = run(name)
        replace_with(os.path.join(p, f), device(*dev))
    # Huge or endless metrics.
    p = run("tiny_lines")  # 30 MB of "{}" lines: 10 million rows
    with open(os.path.join(p, "metrics.jsonl"), "wb") as f:
        f.write(b"{}\n" * (10 << 20))
    p = run("one_long_line")  # 64 MB without a newline
    with open(os.path.join(p, "metrics.jsonl"), "wb") as f:
        f.write(b"x" * (64 << 20))
    p = run("empty_lines")  # 20 MB of newlines
    with open(os.path.join(p, "metrics.jsonl"), "wb") as f:
        f.write(b"\n" * (20 << 20))
    p = run("sparse_metrics")  # 1 TB apparent size, all holes
    with open(os.path.join(p, "metrics.jsonl"), "wb") as f:
        f.truncate(1 << 40)
    p = run("odd_rows")
    with open(os.path.join(p, "metrics.jsonl"), "w") as f:
        f.write('{"step":1e300,"loss":1}\n{"step":2,"loss":"x"}\n{"step":3,"loss":1e400}\n' + "[" * 100000 + "\n"
                + '{"step":4,"loss":2,"test_loss":null}\n{"step":-9223372036854775808,"loss":-0}\n'
                + '{"step":5,"loss":1.5,"tokens_per_s":1.7976931348623157e308}\n')
    # Damaged models and configs.
    p = run("garbage_model")
    with open(os.path.join(p, "model.safetensors"), "wb") as f:
        f.write(b"\xff" * 8 + b"{" * 1000)
    p = run("huge_header_model")  # a header length of 2^63
    with open(os.path.join(p, "model.safetensors"), "wb") as f:
        f.write(b"\xff" * 7 + b"\x7f" + b"{}")
    p = run("sparse_model")  # 100 GB of holes
    with open(os.path.join(p, "model.safetensors"), "wb") as f:
        f.truncate(100 << 30)
    p = run("empty_model")
    open(os.path.join(p, "model.safetensors"), "wb").close()
    p = run("nested_config")
    with open(os.path.join(p, "config.toml"), "w") as f:
        f.write("a = " + "[" * 200000 + "]" * 200000 + "\n")
    p = run("huge_config")
    with open(os.path.join(p, "config.toml"), "w") as f:
        f.write("# " + "x" * (40 << 20) + "\n")
    p = run("ctl_config")
    with open(os.path.join(p, "config.toml"), "a") as f:
        f.write('\n[sample]\nprompt = "\\u001b[2J\\u0000\\r\\n</script><script>alert(1)</script>"\n')
    p = run("extends_config")
    with open(os.path.join(p, "config.toml"), "w") as f:
        f.write('extends = "/etc/passwd"\n')
    # Names: not UTF-8, control characters, a very long one.
    os.makedirs(os.path.join(R.encode(), b"bad\xffname"))
    shutil.copy(os.path.join(c, "config.toml"), os.path.join(R.encode(), b"bad\xffname", b"config.toml"))
    copy_run(c, os.path.join(R, "esc\x1b[31mname\nline"))
    copy_run(c, os.path.join(R, "n" * 250))
    deep = R
    for i in range(40):
        deep = os.path.join(deep, "d%d" % i)
    copy_run(c, deep)
    # Comparisons.
    ab = os.path.join(R, "ab")
    copy_run(c, os.path.join(ab, "v", "seed-1"))
    with open(os.path.join(ab, "summary.csv"), "w") as f:
        f.write("name,n\nv,1\n")
    with open(os.path.join(ab, "runs.csv"), "w") as f:
        f.write("name,seed,dir,status\n" + "v,1,x,finished\n" * 1000 + "..,0,x,x\n../..,0,x,x\n/etc,0,x,x\n../../outside/c,0,x,x\n")
    sw = os.path.join(R, "sw_fifo")
    os.makedirs(sw)
    os.mkfifo(os.path.join(sw, "manifest.jsonl"))
    sw = os.path.join(R, "sw_out")
    os.makedirs(sw)
    with open(os.path.join(sw, "manifest.jsonl"), "w") as f:
        for i, dd in enumerate(["../../outside/c", "/etc", "../..", "runs/%2e%2e"]):
            f.write(json.dumps({"index": i, "variant": "v%d" % i, "config": "c.toml", "sets": [], "dir": dd}) + "\n")
    sw = os.path.join(R, "sw_huge")
    os.makedirs(sw)
    with open(os.path.join(sw, "manifest.jsonl"), "wb") as f:
        f.write(b"x" * (80 << 20))
    ab2 = os.path.join(R, "ab_csv")
    os.makedirs(ab2)
    with open(os.path.join(ab2, "summary.csv"), "w") as f:
        f.write('"' * 1000 + "\n" + "a," * 100000 + "\n")
    os.mkfifo(os.path.join(ab2, "runs.csv"))
    # A copy of c to delete and replace while requests run.
    run("doomed")
    run("swapped")
    run("replaced")


def serve_probes(h, fixtures, work):
    """Requests to a server over a hostile runs folder; each its own probe.
    Returns [(name, why-or-None)]."""
    d = os.path.join(work, "hserve")
    if os.path.exists(d):
        shutil.rmtree(d)
    shutil.copytree(fixtures, d, symlinks=True)
    try:
        plant(d)
    except Exception as e:
        return [("serve hostile: planting the runs folder", "probe error: %r" % (e,))]
    before = h.snapshot(os.path.join(d, "runs"))
    outside_before = h.snapshot(os.path.join(d, "outside"))
    port, proc = start(h, d, ["runs"])
    results = []

    def add(name, why):
        results.append(("serve hostile: " + name, why))

    def no_secret(b):
        return SECRET.encode() not in b and b"root:x:0:0" not in b

    gen = lambda **kw: json.dumps(kw).encode()
    G = {"Content-Type": "application/json"}
    # 1. The table of runs: answered in time despite everything planted.
    st, b, t = req(port, "GET", "/api/runs", timeout=60)
    t_table = t
    add("the runs table over the hostile folder", None if st == 200 and t < 30 and no_secret(b) else "HTTP %s after %.1f s: %.200s" % (st, t, b))
    try:
        table = json.loads(b)
        states = {r["id"]: (r["state"], r.get("problem", "")) for r in table["runs"]}
    except Exception:
        table, states = {}, {}
    for run_id, want in (("runs/tiny_lines", "damaged"), ("runs/fifo_ckpt", "damaged"), ("runs/zero_ckpt", "damaged"),
                         ("runs/lnk_ckpt", "damaged"), ("runs/nested_config", "damaged"), ("runs/huge_config", "damaged"),
                         ("runs/extends_config", "damaged"), ("runs/urandom_config", "damaged"), ("runs/fifo_config", "damaged"),
                         ("runs/fifo_metrics", "damaged"), ("runs/zero_metrics", "damaged"), ("runs/lnk_metrics", "damaged")):
        got = states.get(run_id)
        add("the table shows %s as %s" % (run_id, want), None if got and got[0] == want else "state %s" % (got,))
    add("a run through a symlinked folder is not listed", None if "runs/lnk_folder" not in states and "runs/lnk_root" not in states else "listed")
    add("a run 40 folders deep is not looked for (maxDepth)", None if not any(k.startswith("runs/d0/") for k in states) else "listed")
    add("a name with ESC and a newline is listed as valid JSON", None if any("esc" in k for k in states) else "not listed: %s" % table.get("problems"))

    # 2. Requests, each with the statuses it may get.
    ok4 = tuple(range(400, 500))
    cases = [
        # paths and ids
        ("id double-encoded ..", "GET", "/api/run?id=runs%252F..%252F..%252Fetc", None, None, (400, 404)),
        ("id with a trailing slash", "GET", "/api/run?id=runs/c/", None, None, (400, 404)),
        ("id with ./", "GET", "/api/run?id=runs/./c", None, None, (200, 400, 404)),
        ("id with a fullwidth solidus", "GET", "/api/run?id=runs%EF%BC%8F..%EF%BC%8F..", None, None, (400, 404)),
        ("id with a newline", "GET", "/api/run?id=runs/c%0a", None, None, (400, 404)),
        ("id of 1,025 bytes", "GET", "/api/run?id=" + "r" * 1025, None, None, (400,)),
        ("id with a bad escape", "GET", "/api/run?id=runs/%zz", None, None, (400,)),
        ("id of a symlinked folder leading out", "GET", "/api/run?id=runs/lnk_folder", None, None, (400, 404)),
        ("id through a symlink to /", "GET", "/api/run?id=runs/lnk_root/etc", None, None, (400, 404)),
        ("assets with encoded ..", "GET", "/assets/..%2f..%2f..%2fetc%2fpasswd", None, None, (400, 404)),
        ("assets with %2e%2e segments", "GET", "/assets/%2e%2e/%2e%2e/etc/passwd", None, None, (301, 307, 400, 404)),
        ("a path starting //", "GET", "//etc/passwd", None, None, (301, 307, 400, 404)),
        ("a path with a NUL", "GET", "/api/runs%00", None, None, (400, 404)),
        ("assets directory listing", "GET", "/assets/", None, None, (200, 403, 404)),
        # files of the hostile runs
        ("config through a link out", "GET", "/api/run?id=runs/lnk_config", None, None, (200, 403, 422)),
        ("metrics through a link out", "GET", "/api/metrics?id=runs/lnk_metrics", None, None, (403,)),
        ("attention on a model linked out", "GET", "/api/attention?id=runs/lnk_model&text=F", None, None, ok4),
        ("summary of a model linked out", "GET", "/api/summary?id=runs/lnk_model", None, None, ok4),
        ("generate from a model linked out", "POST", "/api/generate", gen(id="runs/lnk_model", prompt="F", tokens=2), G, ok4),
        ("metrics that are a FIFO", "GET", "/api/metrics?id=runs/fifo_metrics", None, None, (403,)),
        ("live stream of metrics that are a FIFO", "GET", "/api/live?id=runs/fifo_metrics", None, None, "stream"),
        ("attention on a model that is a FIFO", "GET", "/api/attention?id=runs/fifo_model&text=F", None, None, ok4),
        ("summary of a model that is a FIFO", "GET", "/api/summary?id=runs/fifo_model", None, None, ok4),
        ("metrics that are /dev/zero", "GET", "/api/metrics?id=runs/zero_metrics", None, None, (403,)),
        ("attention on a model that is /dev/zero", "GET", "/api/attention?id=runs/zero_model&text=F", None, None, ok4),
        ("generate from a model that is /dev/null", "POST", "/api/generate", gen(id="runs/null_model", prompt="F", tokens=2), G, ok4),
        ("metrics of 10 million \"{}\" lines", "GET", "/api/metrics?id=runs/tiny_lines", None, None, (422,)),
        ("live stream of 10 million \"{}\" lines", "GET", "/api/live?id=runs/tiny_lines", None, None, "stream"),
        ("metrics of one 64 MB line", "GET", "/api/metrics?id=runs/one_long_line", None, None, (200, 422)),
        ("metrics of 20 MB of newlines", "GET", "/api/metrics?id=runs/empty_lines", None, None, (200, 422)),
        ("metrics of 1 TB of holes", "GET", "/api/metrics?id=runs/sparse_metrics", None, None, (200, 422)),
        ("metrics with odd rows", "GET", "/api/metrics?id=runs/odd_rows", None, None, (200,)),
        ("attention on a garbage model", "GET", "/api/attention?id=runs/garbage_model&text=F", None, None, (422,)),
        ("attention on a model claiming a 2^63-byte header", "GET", "/api/attention?id=runs/huge_header_model&text=F", None, None, (422,)),
        ("attention on a 100 GB sparse model", "GET", "/api/attention?id=runs/sparse_model&text=F", None, None, (422,)),
        ("generate from an empty model", "POST", "/api/generate", gen(id="runs/empty_model", prompt="F", tokens=2), G, (422,)),
        ("summary of a garbage model", "GET", "/api/summary?id=runs/garbage_model", None, None, (422,)),
        ("the page of a config with control characters", "GET", "/api/run?id=runs/ctl_config", None, None, (200,)),
        ("a run whose name is not UTF-8, by its shown id", "GET", "/api/run?id=runs/bad%EF%BF%BDname", None, None, (200, 404)),
        # comparisons
        ("compare naming one run 1,000 times and paths out", "GET", "/api/compare?id=runs/ab", None, None, (200,)),
        ("compare of a sweep whose manifest is a FIFO", "GET", "/api/compare?id=runs/sw_fifo", None, None, (200, 422)),
        ("compare of a sweep whose entries lead out", "GET", "/api/compare?id=runs/sw_out", None, None, (200, 422)),
        ("compare of a sweep with an 80 MB manifest", "GET", "/api/compare?id=runs/sw_huge", None, None, (200, 422)),
        ("compare of a broken summary.csv and a FIFO runs.csv", "GET", "/api/compare?id=runs/ab_csv", None, None, (200, 422)),
        # generation requests: kinds and boundaries
        ("generate tokens as a string", "POST", "/api/generate", b'{"id":"runs/c","prompt":"F","tokens":"5"}', G, (400,)),
        ("generate tokens 2.5", "POST", "/api/generate", b'{"id":"runs/c","prompt":"F","tokens":2.5}', G, (400,)),
        ("generate tokens 1e3 (a float form of an int)", "POST", "/api/generate", b'{"id":"runs/c","prompt":"F","tokens":1e3}', G, (400,)),
        ("generate tokens at the limit (2000)", "POST", "/api/generate", gen(id="runs/c", prompt="F", tokens=2000), G, (200,)),
        ("generate tokens one past the limit", "POST", "/api/generate", gen(id="runs/c", prompt="F", tokens=2001), G, (400,)),
        ("generate the id as an array", "POST", "/api/generate", b'{"id":["runs/c"],"prompt":"F","tokens":2}', G, (400,)),
        ("generate the prompt as a number", "POST", "/api/generate", b'{"id":"runs/c","prompt":7,"tokens":2}', G, (400,)),
        ("generate a null body", "POST", "/api/generate", b"null", G, (400,)),
        ("generate an empty body", "POST", "/api/generate", b"", G, (400,)),
        ("generate an array body", "POST", "/api/generate", b"[]", G, (400,)),
        ("generate 50,000 nested arrays", "POST", "/api/generate", b'{"id":' + b"[" * 50000 + b"]" * 50000 + b"}", G, (400, 413)),
        ("generate a UTF-8 BOM before the JSON", "POST", "/api/generate", b"\xef\xbb\xbf" + gen(id="runs/c", prompt="F", tokens=2), G, (400,)),
        ("generate temperature 100 (the bound)", "POST", "/api/generate", gen(id="runs/c", prompt="F", tokens=3, temperature=100), G, (200,)),
        ("generate temperature just past 100", "POST", "/api/generate", gen(id="runs/c", prompt="F", tokens=3, temperature=100.00000001), G, (400,)),
        ("generate temperature 5e-324", "POST", "/api/generate", gen(id="runs/c", prompt="F", tokens=3, temperature=5e-324), G, (200,)),
        ("generate top_p 1e-300", "POST", "/api/generate", gen(id="runs/c", prompt="F", tokens=3, top_p=1e-300), G, (200,)),
        ("generate top_k -1", "POST", "/api/generate", gen(id="runs/c", prompt="F", tokens=3, top_k=-1), G, (400,)),
        ("generate seed 2^64-1", "POST", "/api/generate", gen(id="runs/c", prompt="F", tokens=3, seed=(1 << 64) - 1), G, (200,)),
        ("generate seed 1.5", "POST", "/api/generate", b'{"id":"runs/c","prompt":"F","tokens":2,"seed":1.5}', G, (400,)),
        ("generate a prompt of 4,096 bytes", "POST", "/api/generate", gen(id="runs/c", prompt="F" * 4096, tokens=2), G, (200,)),
        ("generate a prompt of 4,097 bytes", "POST", "/api/generate", gen(id="runs/c", prompt="F" * 4097, tokens=2), G, (400,)),
        ("generate a prompt with a NUL and ESC", "POST", "/api/generate", gen(id="runs/c", prompt="F\u0000\u001b[2J", tokens=2), G, (200, 400)),
        ("generate on a word run, unknown words", "POST", "/api/generate", gen(id="runs/words", prompt="zebra quantum", tokens=3), G, (200, 400)),
        ("generate on a translation run, beam 8 and 300 words", "POST", "/api/generate", gen(id="runs/toy", prompt="a1 " * 300, tokens=3, beam=8), G, (200, 400)),
        ("generate on a translation run, beam 9", "POST", "/api/generate", gen(id="runs/toy", prompt="a1", tokens=3, beam=9), G, (400,)),
        ("generate on a comparison folder", "POST", "/api/generate", gen(id="runs/ab", prompt="F", tokens=2), G, (400,)),
        ("generate as form data", "POST", "/api/generate", b"id=runs/c&tokens=2", {"Content-Type": "application/x-www-form-urlencoded"}, (400,)),
        # attention boundaries
        ("attention, a text of 4,096 bytes", "GET", "/api/attention?id=runs/c&text=" + "F" * 4096, None, None, (200,)),
        ("attention, a text of 4,097 bytes", "GET", "/api/attention?id=runs/c&text=" + "F" * 4097, None, None, (400,)),
        ("attention on a translation run, target of 4,097 bytes", "GET", "/api/attention?id=runs/toy&text=a1&target=" + "b" * 4097, None, None, (400,)),
        ("attention on a translation run, 1,000 source words", "GET", "/api/attention?id=runs/toy&text=" + "a1+" * 1000, None, None, (400,)),
        ("attention, the text given twice", "GET", "/api/attention?id=runs/c&text=F&text=" + "F" * 5000, None, None, (200, 400)),
        # methods, Host and Origin
        ("PUT on the runs table", "PUT", "/api/runs", b"x", None, (405,)),
        ("DELETE a run", "DELETE", "/api/run?id=runs/c", None, None, (405,)),
        ("OPTIONS preflight of generate", "OPTIONS", "/api/generate", None, {"Origin": "http://evil.example", "Access-Control-Request-Method": "POST"}, (403, 405)),
        ("PATCH generate", "PATCH", "/api/generate", b"{}", G, (405,)),
        ("HEAD generate", "HEAD", "/api/generate", None, None, (405,)),
        ("TRACE", "TRACE", "/api/runs", None, None, (405,)),
        ("Host localhost. (trailing dot)", "GET", "/api/runs", None, {"Host": "localhost."}, (403,)),
        ("Host 127.0.0.1.nip.io", "GET", "/api/runs", None, {"Host": "127.0.0.1.nip.io"}, (403,)),
        ("Host 0.0.0.0", "GET", "/api/runs", None, {"Host": "0.0.0.0:8080"}, (403,)),
        ("Host of 60 KB", "GET", "/api/runs", None, {"Host": "a" * 60000}, (403, 431)),
        ("Host [::ffff:127.0.0.1]", "GET", "/api/runs", None, {"Host": "[::ffff:127.0.0.1]:1"}, (200, 403)),
        ("a cross-site POST (Origin of another site)", "POST", "/api/generate", gen(id="runs/c", prompt="F", tokens=2), {"Origin": "http://evil.example", "Content-Type": "text/plain"}, (403,)),
        ("a POST from a sandboxed page (Origin null)", "POST", "/api/generate", gen(id="runs/c", prompt="F", tokens=2), {"Origin": "null"}, (403,)),
        ("an attention GET marked cross-site", "GET", "/api/attention?id=runs/c&text=F", None, {"Sec-Fetch-Site": "cross-site"}, (403,)),
        ("a live GET marked same-site (another port)", "GET", "/api/live?id=runs/c", None, {"Sec-Fetch-Site": "same-site"}, (403,)),
        ("the runs page opened from another site (allowed)", "GET", "/", None, {"Sec-Fetch-Site": "cross-site"}, (200,)),
        ("a POST from this server's own page", "POST", "/api/generate", gen(id="runs/c", prompt="F", tokens=2), {"Origin": "http://127.0.0.1:%d" % port}, (200,)),
    ]
    for name, method, path, body, headers, want in cases:
        if want == "stream":  # a stream must start, or refuse, within the time
            st, b, t = req(port, method, path, body, headers, timeout=5)
            why = None
            if st is None and b"timed out" in b:
                why = None  # a live stream that stays open is fine
            elif st is not None and st >= 500:
                why = "HTTP %s: %.200s" % (st, b)
            add(name, why)
            continue
        st, b, t = req(port, method, path, body, headers, timeout=60)
        why = None
        if st not in want:
            why = "HTTP %s, want %s: %.200s" % (st, want, b)
        elif t > 30:
            why = "took %.1f s" % t
        elif not no_secret(b):
            why = "the answer shows a file outside the served folder"
        elif st >= 400 and method != "HEAD":
            try:
                msg = json.loads(b)["error"]
                if not msg or "\n" in msg:
                    why = "an unclear error: %r" % msg
            except Exception:
                if st not in (301, 307, 404, 405, 431) or (st == 404 and path.startswith("/api/") and "id=" in path):
                    why = "the error is not {\"error\": …}: %.200s" % b
        add(name, why)

    # 3. Raw HTTP: smuggling, endless or slow inputs.
    host = b"Host: 127.0.0.1\r\n"
    raws = [
        ("Content-Length and Transfer-Encoding together", b"POST /api/generate HTTP/1.1\r\n" + host + b"Content-Length: 4\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n", (400,)),
        ("two different Content-Lengths", b"POST /api/generate HTTP/1.1\r\n" + host + b"Content-Length: 4\r\nContent-Length: 5\r\n\r\nabcde", (400,)),
        ("a request target of another host (absolute form)", b"GET http://evil.example/api/runs HTTP/1.1\r\n" + host + b"\r\n", (403,)),
        ("a header line of 1 MB", b"GET /api/runs HTTP/1.1\r\n" + host + b"X: " + b"a" * (1 << 20) + b"\r\n\r\n", (431, None)),
        ("5,000 small headers", b"GET /api/runs HTTP/1.1\r\n" + host + b"".join(b"X%d: y\r\n" % i for i in range(5000)) + b"\r\n", (200, 431)),
        ("a path of 1 MB", b"GET /" + b"a" * (1 << 20) + b" HTTP/1.1\r\n" + host + b"\r\n", (414, 431, None)),
        ("HTTP/2 preface on HTTP/1", b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n", (400, 403, 505, None)),
        ("HTTP/0.9", b"GET /api/runs\r\n", (400, None)),
        ("HTTP/1.0 without Host", b"GET /api/runs HTTP/1.0\r\n\r\n", (403,)),
        ("a chunked body of 100 MB", b"POST /api/generate HTTP/1.1\r\n" + host + b"Transfer-Encoding: chunked\r\n\r\n"
         + (b"100000\r\n" + b"a" * 0x100000 + b"\r\n") * 100 + b"0\r\n\r\n", (413, None)),
        ("Content-Length 10^18 with a short body", b"POST /api/generate HTTP/1.1\r\n" + host + b"Content-Length: 1000000000000000000\r\n\r\n{}", (413, 400, None)),
        ("a negative Content-Length", b"POST /api/generate HTTP/1.1\r\n" + host + b"Content-Length: -1\r\n\r\n", (400,)),
        ("a header with a bare CR", b"GET /api/runs HTTP/1.1\r\n" + host + b"X: a\rb\r\n\r\n", (400, 200)),
    ]
    for name, data, want in raws:
        st, b = raw(port, data, timeout=15)
        add(name, None if st in want else "HTTP %s, want %s: %.200s" % (st, want, b))

    alive = lambda: req(port, "GET", "/api/run?id=runs/c", timeout=10)
    # Slow clients: 300 connections that send their headers a byte a second.
    socks = []
    for _ in range(300):
        try:
            s = socket.create_connection(("127.0.0.1", port), timeout=5)
            s.sendall(b"GET /api/runs HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ")
            socks.append(s)
        except OSError:
            break
    t0 = time.time()
    for _ in range(3):
        for s in socks:
            try:
                s.sendall(b"a")
            except OSError:
                pass
        time.sleep(1)
    st, _, t = alive()
    add("answers while 300 slow clients hold connections", None if st == 200 and t < 5 else "HTTP %s after %.1f s" % (st, t))
    # A body sent a byte at a time is cut by the read timeout, not waited for.
    for s in socks:
        s.close()
    # 70 live streams never read: the 65th and after are refused, the server answers.
    socks = []
    for _ in range(70):
        s = socket.create_connection(("127.0.0.1", port), timeout=5)
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        s.sendall(b"GET /api/live?id=runs/c HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
        socks.append(s)
    time.sleep(1)
    refused = 0
    for s in socks[-6:]:
        try:
            s.settimeout(3)
            if b" 429 " in s.recv(200):
                refused += 1
        except OSError:
            pass
    st, _, t = alive()
    add("70 live streams never read: the extra ones refused, the server answers", None if refused >= 5 and st == 200 else "%d of the last 6 refused; HTTP %s after %.1f s" % (refused, st, t))
    for s in socks:
        s.close()
    time.sleep(1)
    st, _, _ = req(port, "GET", "/api/live?id=runs/c", timeout=3)
    add("a live stream opens again once those closed", None if st is None or st == 200 else "HTTP %s" % st)

    # Many model runs at once, of every kind.
    with concurrent.futures.ThreadPoolExecutor(48) as ex:
        jobs = []
        for i in range(48):
            k = i % 4
            if k == 0:
                jobs.append(ex.submit(req, port, "POST", "/api/generate", gen(id="runs/toy", prompt="a1 a2 a3", tokens=5, beam=8), G, 60))
            elif k == 1:
                jobs.append(ex.submit(req, port, "GET", "/api/attention?id=runs/words&text=the+cat+sees", None, None, 60))
            elif k == 2:
                jobs.append(ex.submit(req, port, "GET", "/api/summary?id=runs/toy", None, None, 60))
            else:
                jobs.append(ex.submit(req, port, "GET", "/api/compare?id=runs/ab", None, None, 60))
        sts = [j.result()[0] for j in jobs]
    bad = [s for s in sts if s not in (200, 429, 503)]
    add("48 translations, attention maps, summaries and comparisons at once", None if not bad else "statuses %s" % sorted(set(map(str, sts))))

    # A generation whose run is deleted while it streams; a folder swapped for a link out.
    R = os.path.join(d, "runs")
    box = {}

    def long_gen():
        box["r"] = req(port, "POST", "/api/generate", gen(id="runs/doomed", prompt="F", tokens=2000), G, 60)
    th = threading.Thread(target=long_gen)
    th.start()
    time.sleep(0.05)
    shutil.rmtree(os.path.join(R, "doomed"))
    th.join(70)
    st = box.get("r", (None,))[0]
    add("a run deleted while it generates", None if st in (200, 404, 409) else "HTTP %s" % st)
    time.sleep(1.2)
    st, _, _ = req(port, "GET", "/api/run?id=runs/doomed")
    add("the deleted run is gone from the server", None if st == 404 else "HTTP %s" % st)
    req(port, "GET", "/api/attention?id=runs/swapped&text=F")  # loaded and cached
    shutil.rmtree(os.path.join(R, "swapped"))
    os.symlink(os.path.join(d, "outside", "c"), os.path.join(R, "swapped"))
    st, b, _ = req(port, "GET", "/api/attention?id=runs/swapped&text=F")
    add("a run folder swapped for a link out after it was loaded", None if st in (400, 403, 404, 409) else "HTTP %s: %.200s" % (st, b))
    st, b, _ = req(port, "GET", "/api/run?id=runs/swapped")
    add("the swapped folder's page", None if (st in (400, 403, 404) or (st == 200 and b'"damaged"' in b)) and no_secret(b) else "HTTP %s: %.200s" % (st, b))
    # The model file replaced by another kind of model between two requests.
    req(port, "GET", "/api/attention?id=runs/replaced&text=F")
    shutil.copy(os.path.join(R, "toy", "model.safetensors"), os.path.join(R, "replaced", "model.safetensors.tmp"))
    os.replace(os.path.join(R, "replaced", "model.safetensors.tmp"), os.path.join(R, "replaced", "model.safetensors"))
    st, b, _ = req(port, "GET", "/api/attention?id=runs/replaced&text=F")
    add("a GPT model replaced by a translation model between requests", None if st in (200, 400, 422) else "HTTP %s: %.200s" % (st, b))
    # A metrics file rewritten shorter under a live stream, then appended to.
    st, _, _ = alive()
    add("still answering after all of the above", None if st == 200 else "HTTP %s" % st)
    mb = hwm_mb(proc.pid)
    print("    (hserve: the runs table over the hostile folder took %.1f s; the server's peak RSS %.0f MB)" % (t_table, mb), flush=True)
    add("peak memory over the hostile folder ≤ 600 MB", None if mb <= 600 else "VmHWM %.0f MB" % mb)
    add("SIGINT stops it cleanly", stop(proc))
    after = h.snapshot(os.path.join(d, "runs"))
    changed = [r for r in sorted(set(before) | set(after)) if before.get(r) != after.get(r)
               and not r.startswith(("doomed", "swapped", "replaced"))]
    add("writes nothing into the runs folder", "changed: %s" % changed[:10] if changed else None)
    add("writes nothing outside it", None if h.snapshot(os.path.join(d, "outside")) == outside_before else "outside changed")

    results += many_runs_probes(h, fixtures, work)
    results += read_only_probes(h, fixtures, work)
    return results


def many_runs_probes(h, fixtures, work):
    """4,000 run folders, and folders that come and go while requests run."""
    d = os.path.join(work, "hserve-many")
    if os.path.exists(d):
        shutil.rmtree(d)
    os.makedirs(os.path.join(d, "runs"))
    src = os.path.join(fixtures, "runs", "c")
    cfg = open(os.path.join(src, "config.toml")).read()
    met = open(os.path.join(src, "metrics.jsonl")).read()
    for i in range(4000):
        p = os.path.join(d, "runs", "g%02d" % (i % 40), "r%d" % i)
        os.makedirs(p)
        with open(os.path.join(p, "config.toml"), "w") as f:
            f.write(cfg.replace("max_steps = 3", "max_steps = %d" % (3 + i % 7)))
        with open(os.path.join(p, "metrics.jsonl"), "w") as f:
            f.write(met)
    port, proc = start(h, d, ["runs"])
    results = []

    def add(name, why):
        results.append(("serve many runs: " + name, why))
    st, b, t = req(port, "GET", "/api/runs", timeout=60)
    n = len(json.loads(b)["runs"]) if st == 200 else 0
    t_many = t
    add("the table of 4,000 runs", None if st == 200 and n == 4000 and t < 20 else "HTTP %s, %d runs, %.1f s" % (st, n, t))
    # Unknown ids force rescans: 200 of them at once must not stall the server.
    with concurrent.futures.ThreadPoolExecutor(50) as ex:
        sts = list(ex.map(lambda i: req(port, "GET", "/api/run?id=runs/nope%d" % i, timeout=60)[0], range(200)))
    st, _, t = req(port, "GET", "/api/run?id=runs/g00/r0", timeout=30)
    add("200 unknown ids at once, then a known one", None if set(sts) == {404} and st == 200 and t < 10 else "statuses %s; then HTTP %s after %.1f s" % (sorted(set(map(str, sts))), st, t))
    # Folders appearing and vanishing while the table is asked for.
    stop_flag = []

    def churn():
        i = 0
        while not stop_flag:
            p = os.path.join(d, "runs", "churn%d" % (i % 20))
            if os.path.exists(p):
                shutil.rmtree(p, ignore_errors=True)
            else:
                copy_run(src, p)
            i += 1
    th = threading.Thread(target=churn)
    th.start()
    sts = []
    for _ in range(20):
        sts.append(req(port, "GET", "/api/runs", timeout=30)[0])
        sts.append(req(port, "GET", "/api/metrics?id=runs/churn%d" % (len(sts) % 20), timeout=30)[0])
        time.sleep(0.1)
    stop_flag.append(1)
    th.join()
    bad = [s for s in sts if s not in (200, 404)]
    add("folders appearing and vanishing under requests", None if not bad else "statuses %s" % sorted(set(map(str, sts))))
    mb = hwm_mb(proc.pid)
    print("    (hserve: the table of 4,000 runs took %.1f s; the server's peak RSS %.0f MB)" % (t_many, mb), flush=True)
    add("peak memory with 4,000 runs ≤ 400 MB", None if mb <= 400 else "VmHWM %.0f MB" % mb)
    add("SIGINT stops it cleanly", stop(proc))
    return results


def read_only_probes(h, fixtures, work):
    """The runs folder mounted read-only (root inside the sandbox can
    mount): every request must still work, and none may try to write."""
    d = os.path.join(work, "hserve-ro")
    if os.path.exists(d):
        subprocess.run(["umount", os.path.join(d, "runs")], capture_output=True)
        shutil.rmtree(d)
    shutil.copytree(fixtures, d, symlinks=True)
    r = subprocess.run(["mount", "--bind", "-o", "ro", os.path.join(d, "runs"), os.path.join(d, "runs")], capture_output=True)
    if r.returncode != 0:
        r = subprocess.run(["mount", "-o", "remount,ro,bind", os.path.join(d, "runs")], capture_output=True)
    results = []
    if r.returncode != 0:
        return [("serve read-only: mounting the runs folder read-only", "probe error: %s" % r.stderr.decode()[:200])]
    port, proc = start(h, d, ["runs"])
    gen = lambda **kw: json.dumps(kw).encode()
    sts = [req(port, "GET", p)[0] for p in ("/api/runs", "/api/run?id=runs/c", "/api/metrics?id=runs/c", "/api/summary?id=runs/c",
                                            "/api/attention?id=runs/c&text=F", "/api/attention?id=runs/toy&text=a1")]
    sts.append(req(port, "POST", "/api/generate", gen(id="runs/c", prompt="F", tokens=20))[0])
    sts.append(req(port, "POST", "/api/generate", gen(id="runs/toy", prompt="a1 a2", tokens=3, beam=4))[0])
    st, b, _ = req(port, "GET", "/api/runs")
    why = stop(proc)
    subprocess.run(["umount", os.path.join(d, "runs")], capture_output=True)
    bad = [s for s in sts if s != 200]
    results.append(("serve read-only: every endpoint on a read-only runs folder", None if not bad else "statuses %s" % sts))
    results.append(("serve read-only: no answer mentions a read-only file system", None if b"read-only" not in b else "%.200s" % b))
    results.append(("serve read-only: SIGINT stops it cleanly", why))
    return results
