"""Per SimpleNet GEMM shape and thread count: median time of ours (medium) and of each peer; best peer / ours."""
import json, statistics, sys, re, collections
d = json.load(open(sys.argv[1]))
t = collections.defaultdict(list)
for b in d['benchmarks']:
    if b.get('run_type') != 'iteration': continue
    m = re.match(r'gemm/(\w+)/(\w+)/([0-9x]+)/threads:(\d+)', b['run_name'])
    t[(m[2] + ' ' + m[3], int(m[4]), m[1])].append(b['real_time'])
rows = sorted({(k[0], k[1]) for k in t})
worst = None
for shape, th in rows:
    ours = statistics.median(t[(shape, th, 'medium')])
    peers = {p: statistics.median(t[(shape, th, p)]) for p in ('openblas', 'onednn', 'eigen') if (shape, th, p) in t}
    best = min(peers, key=peers.get)
    r = peers[best] / ours
    worst = min(worst or r, r)
    print(f'{shape:34s} {th} threads: ours {ours:9.2f} us, best peer {best:8s} {peers[best]:9.2f} us, ratio {r:.2f}')
print('lowest ratio', round(worst, 2))
