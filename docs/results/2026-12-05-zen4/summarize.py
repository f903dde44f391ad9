"""Per process: oneDNN's time / ours (median, fastest, mean call) at each N; then lowest-highest, median, count >= 1."""
import glob, json, statistics, sys
files = sorted(glob.glob(sys.argv[1] + '/calls_*.json'))
rows = {}
for f in files:
    d = json.load(open(f))
    for s in d['sizes']:
        k = {x['kernel']: x for x in s['kernels']}
        b, o = k['balanced'], k['onednn']
        r = rows.setdefault(s['n'], {'median': [], 'fastest': [], 'mean': [], 'ours': [], 'theirs': []})
        r['median'].append(o['median_ms'] / b['median_ms'])
        r['fastest'].append(o['fastest_ms'] / b['fastest_ms'])
        r['mean'].append(o['mean_ms'] / b['mean_ms'])
        r['ours'].append(b['median_ms']); r['theirs'].append(o['median_ms'])
print(f'{len(files)} processes')
for n, r in sorted(rows.items()):
    print(f'N = {n}')
    for stat in ('median', 'fastest', 'mean'):
        v = r[stat]
        print(f'  {stat:8s} {min(v):.3f}-{max(v):.3f}, median {statistics.median(v):.3f}, >= 1 in {sum(x >= 1 for x in v)} of {len(v)}')
    print('  per-process median ratios:', ' '.join(f'{x:.3f}' for x in r['median']))
    print('  our median calls (ms):', ' '.join(f'{x:.2f}' for x in r['ours']))
    print('  oneDNN median calls (ms):', ' '.join(f'{x:.2f}' for x in r['theirs']))
