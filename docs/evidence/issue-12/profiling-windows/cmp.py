import json,glob,sys,statistics as st
for d in sys.argv[1:]:
    print("==",d)
    for job in ['lenet5-128','mlp-32']:
        prof=[];chosen=[];dev={}
        preds={}
        for f in sorted(glob.glob(f'{d}/plan-{job}-*.json')):
            try: j=json.load(open(f))
            except Exception as e: print(f,e); continue
            prof.append(round(j['profiling_seconds'],2))
            chosen.append('+'.join(j['chosen']['nodes']))
            for c in j['candidates']:
                preds.setdefault('+'.join(c['nodes']),[]).append(c['predicted_seconds'])
            for x in j['devices']:
                for k in ['step_seconds_per_sample','step_fixed_seconds','update_seconds','exchange_seconds_per_byte']:
                    dev.setdefault((x['name'],k),[]).append(x.get(k,0))
        print(job,'profiling',prof,'chosen',chosen)
        for k,v in sorted(dev.items()):
            if k[0].endswith('-2'): continue
            m=st.mean(v); print('  ',k[0],k[1],' '.join('%.3g'%x for x in v),' cv %.0f%%'%(100*st.pstdev(v)/m if m else 0))
        for k in ['pi5-8gb-1','pi4b-4gb-1+pi5-8gb-1','pi4b-4gb-1+pi4b-4gb-2+pi5-8gb-1','pi3b-1','pi4b-4gb-1']:
            if k in preds: print('  pred',k,' '.join('%.3f'%x for x in preds[k]))
