import json,sys,glob
keys=['step_fixed_seconds','step_seconds_per_sample','update_seconds','eval_seconds_per_sample','rtt_seconds','up_bytes_per_second','down_bytes_per_second','exchange_seconds_per_byte']
short=['fix ms','ms/smp','upd ms','ev us/s','rtt ms','up MB/s','dn MB/s','xch ns/B']
scale=[1e3,1e3,1e3,1e6,1e3,1e-6,1e-6,1e9]
for d in sys.argv[1:]:
    print(d)
    rows={}
    for f in sorted(glob.glob(d+'/plan*.json')):
        j=json.loads(open(f).read().strip().splitlines()[-1])
        for dv in j['devices']:
            rows.setdefault(dv['name'],[]).append([dv[k]*s for k,s in zip(keys,scale)])
    print('%-12s'%'', ' '.join('%16s'%s for s in short))
    for n,v in rows.items():
        print('%-12s'%n, ' '.join('%16s'%('/'.join('%.2f'%r[i] for r in v)) for i in range(len(keys))))
