#!/usr/bin/env python3
"""The seed model's spread over seeds (docs/results.md, "Why the seeds
spread"): how much two columns of test losses differ in spread, and which
trained models are stuck with block 1 looking away from the current position.

  spread.py away RUN...          per run folder: the share of block 1's query
                                 positions whose strongest attention weight is
                                 not on themselves, over 200 test windows
  spread.py stats A B            two files of losses (one a line): mean, sd,
                                 F-test of the variances (two-sided), the
                                 Brown-Forsythe test by permutation, and the
                                 seeds per column an F-test needs to see an sd
                                 ratio of 1.5, 2, 2.3 and 5 (alpha 0.05, power 0.8)
  spread.py need RATIO           the last, for one ratio

Needs /usr/bin/python3; `away` needs python3-torch and reads the corpus at
--data (default corpus/builtin/tinyshakespeare.txt). No scipy: the F
distribution is the regularised incomplete beta, computed here.
"""
import math, os, random, sys


def betacf(a, b, x):
    """The continued fraction of the incomplete beta (Numerical Recipes 6.4)."""
    tiny = 1e-300
    qab, qap, qam = a + b, a + 1, a - 1
    c, d = 1.0, 1 - qab * x / qap
    d = 1 / (d if abs(d) > tiny else tiny)
    h = d
    for m in range(1, 500):
        m2 = 2 * m
        for aa in (m * (b - m) * x / ((qam + m2) * (a + m2)),
                   -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2))):
            d = 1 + aa * d
            d = 1 / (d if abs(d) > tiny else tiny)
            c = 1 + aa / c
            c = c if abs(c) > tiny else tiny
            h *= d * c
        if abs(d * c - 1) < 3e-16:
            break
    return h


def ibeta(a, b, x):
    """The regularised incomplete beta I_x(a, b)."""
    if x <= 0 or x >= 1:
        return 0.0 if x <= 0 else 1.0
    front = math.exp(math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b) + a * math.log(x) + b * math.log(1 - x))
    if x < (a + 1) / (a + b + 2):
        return front * betacf(a, b, x) / a
    return 1 - front * betacf(b, a, 1 - x) / b


def f_sf(f, d1, d2):
    """P(F > f) for F with (d1, d2) degrees of freedom."""
    return ibeta(d2 / 2, d1 / 2, d2 / (d2 + d1 * f))


def f_upper(alpha, d1, d2):
    """The f with P(F > f) = alpha, by bisection."""
    lo, hi = 0.0, 1e6
    for _ in range(200):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if f_sf(mid, d1, d2) > alpha else (lo, mid)
    return lo


def mean(x):
    return sum(x) / len(x)


def sd(x):
    m = mean(x)
    return math.sqrt(sum((v - m) ** 2 for v in x) / (len(x) - 1))


def median(x):
    s, n = sorted(x), len(x)
    return s[n // 2] if n % 2 else (s[n // 2 - 1] + s[n // 2]) / 2


def f_test(a, b):
    """var(a) / var(b) and its two-sided p under normal losses."""
    f = sd(a) ** 2 / sd(b) ** 2
    p = f_sf(f, len(a) - 1, len(b) - 1)
    return f, min(1.0, 2 * min(p, 1 - p))


def brown_forsythe(a, b, rounds=20000):
    """Two-sided p of the difference of the mean |loss - median| of a and b,
    by permuting which column each deviation belongs to: unlike the F-test
    it does not assume normal losses, and one outlier weighs less."""
    da = [abs(v - median(a)) for v in a]
    db = [abs(v - median(b)) for v in b]
    seen = abs(mean(da) - mean(db))
    pool, k, rng, hits = da + db, len(da), random.Random(1), 0
    for _ in range(rounds):
        rng.shuffle(pool)
        hits += abs(mean(pool[:k]) - mean(pool[k:])) >= seen - 1e-15
    return (hits + 1) / (rounds + 1)


def seeds_needed(ratio, alpha=0.05, power=0.8):
    """Seeds per column for a two-sided F-test at alpha to see an sd ratio
    with the given power: var(a)/var(b) is ratio² times an F(n-1, n-1)."""
    for n in range(3, 5000):
        crit = f_upper(alpha / 2, n - 1, n - 1)
        if f_sf(crit / ratio ** 2, n - 1, n - 1) >= power:
            return n
    return None


def read_losses(path):
    return [float(line.split()[0]) for line in open(path) if line.strip()]


def cmd_stats(pa, pb):
    a, b = read_losses(pa), read_losses(pb)
    for name, x in ((pa, a), (pb, b)):
        print(f"{name}: n = {len(x)}, {mean(x):.4f} ± {sd(x):.4f} (min {min(x):.4f}, max {max(x):.4f})")
    f, p = f_test(a, b)
    print(f"sd ratio {sd(a) / sd(b):.2f}, F = {f:.2f}, two-sided F-test p = {p:.4f}; "
          f"Brown-Forsythe (permutation) p = {brown_forsythe(a, b):.4f}")
    print("seeds per column to see an sd ratio (F-test, alpha 0.05, power 0.8): " +
          ", ".join(f"{r}: {seeds_needed(r)}" for r in (1.5, 2, 2.3, 5)))


def cmd_away(runs, data):
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    os.environ.setdefault("GPTREF_MALLOC", "glibc")  # a short run: no re-exec for jemalloc
    import gptref, torch
    text = open(data, encoding="utf-8").read()
    for run in runs:
        model, _ = gptref.load_model(os.path.join(run, "model.safetensors"))
        T = model.context
        _, _, (xte, _) = gptref.split_data(text, T)
        x = xte[::max(1, len(xte) // 200)][:200]
        with torch.no_grad():
            h = model.blocks[0](model.tok(x) + model.pos(torch.arange(T)))
            _, w = model.blocks[1].att(h, want_weights=True)
        away = (w[:, 0].argmax(-1) != torch.arange(T)).float().mean().item()
        print(f"{run} {away:.3f}")


def main():
    args = sys.argv[1:]
    data = "corpus/builtin/tinyshakespeare.txt"
    if "--data" in args:
        i = args.index("--data")
        data = args[i + 1]
        del args[i:i + 2]
    if len(args) == 3 and args[0] == "stats":
        cmd_stats(args[1], args[2])
    elif len(args) == 2 and args[0] == "need":
        print(seeds_needed(float(args[1])))
    elif len(args) >= 2 and args[0] == "away":
        cmd_away(args[1:], data)
    else:
        sys.exit(__doc__.strip())


if __name__ == "__main__":
    main()
