"""Epoch seconds (60000 / samples per second) of ab.sh output: median, best, and each."""
import statistics, sys
d={}
for l in open(sys.argv[1]):
    k,*v=l.split(); d.setdefault(k, []).extend(60000/float(x) for x in v)
for k,v in d.items(): print(k, 'median %.3f s, best %.3f, n=%d' % (statistics.median(v), min(v), len(v)), ' '.join('%.3f'%x for x in v))
