import json,statistics as st,sys,collections
def load(d):
    plans={};runs=[]
    for l in open(d+'/runs.jsonl'):
        r=json.loads(l)
        if r['kind']=='plan': plans[(r['model'],r['batch'])]=r['result']
        elif r['exit_code']==0: runs.append(r)
    rows=[]
    for r in runs:
        p=plans[(r['model'],r['batch'])]
        c=[c for c in p['candidates'] if sorted(c['nodes'])==sorted(r['nodes'])][0]
        rows.append(dict(model=r['model'],batch=r['batch'],nodes=sorted(r['nodes']),n=len(r['nodes']),pi3=any('pi3' in x for x in r['nodes']),comp=c['compute_seconds'],comm=c['communication_seconds'],pred=c['predicted_seconds'],meas=r['result']['training_seconds']))
    return rows
for d in sys.argv[1:]:
    rows=load(d)
    g=collections.defaultdict(list)
    for x in rows:
        if x['n']<2: continue
        k=(x['model'],x['batch'],'pi3' if x['pi3'] else 'gig',x['n'])
        g[k].append((x['comp']+x['comm']-x['meas'])/x['comp'])
    print(d)
    for k in sorted(g): print('  %s %3d %s n=%d overlap/comp median %.2f (%d)'%(k[0],k[1],k[2],k[3],st.median(g[k]),len(g[k])))
