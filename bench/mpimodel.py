#!/usr/bin/env python3
"""The scaling model of gptg train --distributed (docs/performance.md,
"Several nodes (MPI)"): step time and scaling efficiency on 2-64 nodes at
10 and 100 Gbit/s, from the measured compute per shard (bench/mpistep) and
the exchange's bytes (train/distributed.go). Usage:

    python3 bench/mpimodel.py T10 T124

T10, T124: one thread's CPU seconds for one shard (forward and backward)
at the 10.8M shape (16 x 256 tokens) and the 124M shape (1 x 1024 tokens),
as bench/mpistep prints them.
"""
import sys

NODE_SPEEDUP = 16.0   # a node computes a shard 16x faster than one thread (assumed; see the doc)
LINK_EFFICIENCY = 0.9  # share of the line rate a large TCP/MPI transfer gets (assumed)
MEM_BW = 10e9          # bytes/s of the chain's adds on one node (assumed)
CHUNK = 4 << 20        # bytes per message of the chain (train.chainChunk)
BACKWARD = 2 / 3       # share of a shard's compute in the backward pass


def exchange(params, nodes, link, shards_per_node):
    """gptg's chain (float32 sums, pipelined) plus the float32 broadcast."""
    if nodes == 1:
        return 0.0
    b = link * LINK_EFFICIENCY
    chain = 4 * params / b + max(0, nodes - 2) * CHUNK / b
    bcast = 2 * 4 * params / b * (nodes - 1) / nodes  # scatter + allgather
    adds = shards_per_node * params * 12 / MEM_BW  # read sum and gradient, write sum: 4 bytes each
    return chain + bcast + adds


def ring(params, nodes, link):
    """Horovod's ring allreduce of float32 gradients, for comparison."""
    return 2 * (nodes - 1) / nodes * 4 * params / (link * LINK_EFFICIENCY)


def main():
    t10, t124 = float(sys.argv[1]), float(sys.argv[2])
    shapes = [("10.8M", 10_795_073, t10), ("124M", 124_439_808, t124)]
    links = [("10 Gbit/s", 10e9 / 8), ("100 Gbit/s", 100e9 / 8)]
    for name, params, t1 in shapes:
        ts = t1 / NODE_SPEEDUP
        for k in (1, 4):
            print(f"\n{name}: shard {ts:.3f} s on a node, {k} shard(s) per node per step (grad_accum = {k} x nodes)")
            print("| nodes | " + " | ".join(f"{l}: exchange, efficiency, with overlap" for l, _ in links) + " | ring allreduce at 10 Gbit/s (Horovod) |")
            print("|---|" + "---|" * (len(links) + 1))
            for n in (2, 4, 8, 16, 32, 64):
                cells = []
                for _, link in links:
                    x = exchange(params, n, link, k)
                    compute = k * ts
                    eff = compute / (compute + x)
                    hidden = min(x, BACKWARD * ts)
                    eff_o = compute / (compute + x - hidden)
                    cells.append(f"{x:.3f} s, **{eff:.0%}**, {eff_o:.0%}")
                r = ring(params, n, links[0][1])
                cells.append(f"{r:.3f} s, {k * ts / (k * ts + r):.0%}")
                print(f"| {n} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
