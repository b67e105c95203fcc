import json,sys,glob,os,statistics as st
names={'1':'pi3b-1','2':'pi3b-2','3':'pi4b-4gb-1','4':'pi4b-4gb-2','5':'pi5-8gb-1'}
for v in sys.argv[1:]:
    p=json.load(open(f'{v}/plan.json'))
    print(v,'profiling %.2f probe %.2f'%(p['profiling_seconds'],p['link_probe_seconds']))
    pred={ '+'.join(sorted(c['nodes'])):c for c in p['candidates']}
    runs={}
    for f in glob.glob(f'{v}/train-*.json'):
        sub=os.path.basename(f)[6:].rsplit('-',1)[0]
        try: t=json.load(open(f))['training_seconds']
        except Exception: continue
        runs.setdefault(sub,[]).append(t)
    for sub,ts in sorted(runs.items()):
        key='+'.join(sorted(names[i] for i in sub.split('_')))
        c=pred[key]
        m=st.median(ts)
        print('  %-8s pred %.3f (comp %.3f comm %.3f) meas %s err %+.0f%%'%(sub,c['predicted_seconds'],c['compute_seconds'],c['communication_seconds'],' '.join('%.2f'%t for t in ts),100*(c['predicted_seconds']-m)/m))
