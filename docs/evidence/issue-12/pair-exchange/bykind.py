import csv, statistics, sys
for f in sys.argv[1:]:
    rows = list(csv.DictReader(open(f)))
    kinds = {}
    for r in rows:
        n = r['nodes'].split('+')
        kind = 'one' if len(n) == 1 else ('pi3' if any(x.startswith('pi3') for x in n) else 'gig')
        e = (float(r['predicted_seconds']) - float(r['measured_seconds'])) / float(r['measured_seconds'])
        kinds.setdefault((r['model'], kind), []).append(e)
    allabs = [abs(e) for v in kinds.values() for e in v]
    print(f, 'median |err| %.1f%%' % (100 * statistics.median(allabs)))
    for k in sorted(kinds):
        v = kinds[k]
        print('  %-6s %-4s n=%2d  %.1f%% (%+.1f)' % (k[0], k[1], len(v), 100 * statistics.median(map(abs, v)), 100 * statistics.median(v)))
