#!/usr/bin/env python3
"""cmp.py OUT...: per group, the plans' predicted training seconds (each plan) against the
trainings' measured ones, and each device's exchange figure (ns a byte) in each plan."""
import glob, json, statistics, sys

def last_json(path):
    return json.loads(open(path).read().strip().splitlines()[-1])

for out in sys.argv[1:]:
    plans = [last_json(p) for p in sorted(glob.glob(out + '/plan*.json'))]
    print('==', out)
    for d in plans[0]['devices']:
        figs = []
        for p in plans:
            x = next(e for e in p['devices'] if e['name'] == d['name'])
            figs.append('%.1f%s' % (x['exchange_seconds_per_byte'] * 1e9,
                                    '' if x.get('exchange_over', 'loopback') == 'loopback' else 'L'))
        print('  %-10s exchange ns/B: %s' % (d['name'], ' '.join(figs)))
    print('  profiling s: ' + ' '.join('%.2f' % p['profiling_seconds'] for p in plans))
    rows = {}
    for f in sorted(glob.glob(out + '/train-*.json')):
        try:
            t = last_json(f)
        except Exception:
            continue
        names = tuple(sorted(n['node'].split(' ')[0] for n in t['nodes']))
        rows.setdefault(names, []).append(t['training_seconds'])
    errs = []
    for names, measured in sorted(rows.items(), key=lambda kv: len(kv[0])):
        pred = []
        for p in plans:
            for c in p['candidates']:
                if c.get('mode', 'sync') == 'sync' and tuple(sorted(c['nodes'])) == names:
                    pred.append(c['predicted_seconds'])
        m = statistics.mean(measured)
        pm = statistics.median(pred) if pred else float('nan')
        errs.append(abs(pm - m) / m)
        print('  %-40s predicted %-22s measured %-14s median error %+.0f%%' % (
            '+'.join(names), ' '.join('%.2f' % x for x in pred),
            ' '.join('%.2f' % x for x in measured), 100 * (pm - m) / m))
    print('  median |error| over groups: %.1f%%' % (100 * statistics.median(errs)))
