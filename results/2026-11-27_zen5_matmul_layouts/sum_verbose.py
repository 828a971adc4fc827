import sys, collections
t = collections.defaultdict(float); c = collections.Counter(); desc = {}
for line in open(sys.argv[1]):
    if not line.startswith("onednn_verbose,exec,cpu,matmul"): continue
    f = line.strip().split(",")
    impl, mds, dims, ms = f[4], f[6], f[-2], float(f[-1])
    key = (impl, dims, " ".join(x.split("::")[0] + ":" + x.split(":")[3] for x in mds.split() if "::" in x))
    t[key] += ms; c[key] += 1
steps = int(sys.argv[2]) if len(sys.argv) > 2 else 1
tot = sum(t.values())
for k, v in sorted(t.items(), key=lambda kv: -kv[1]):
    # flops from dims like 32x512x64:32x64x512 or 4096x256:256x768
    a, b = k[1].split(":")[:2]
    ad = [int(x) for x in a.split("x")]; bd = [int(x) for x in b.split("x")]
    import math
    # the batch of the result: an operand with batch extent 1 broadcasts over the other's
    batch = math.prod(max(x, y) for x, y in zip(ad[:-2], bd[:-2])) if len(ad) > 2 else 1
    fl = 2 * batch * ad[-2] * ad[-1] * bd[-1]
    print(f"{v/steps:8.2f} ms/step {100*v/tot:5.1f}% {c[k]//steps:3d}x {fl*c[k]/v/1e6:7.1f} GFLOP/s  {k[0]:28s} {k[1]:28s} {k[2]}")
print(f"total {tot/steps:.1f} ms/step")
