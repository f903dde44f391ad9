"""mem1_sum.py DIR (folders named BINARY-RUN, each with a claims.json of MEM-1): per binary (base, new) and kernel, MEM-1's % of triad and % of twin in each run, and medians."""
import json, statistics, sys
from pathlib import Path
runs = {}
for f in sorted(Path(sys.argv[1]).glob('*/claims.json')):
    which = f.parent.name.split('-')[0]
    c = json.loads(f.read_text())['claims'][0]
    runs.setdefault(which, []).append((f.parent.name, c['data']['stream_triad_gbs'], c['verdict'], {k['name']: (k['pct_stream'], k['pct_twin']) for k in c['data']['elementwise']}))
for which, rs in runs.items():
    print(f'== {which}: {len(rs)} runs')
    for name, triad, verdict, ks in rs:
        print(f'  {name}: triad {triad:.1f} GB/s counted, {verdict}; ' + ', '.join(f'{k} {v[0]:.0f}/{v[1]:.0f}' for k, v in ks.items()))
    names = rs[0][3].keys()
    print('  median % of triad / % of twin: ' + ', '.join(
        f'{k} {statistics.median(r[3][k][0] for r in rs):.0f}/{statistics.median(r[3][k][1] for r in rs):.0f}' for k in names))
