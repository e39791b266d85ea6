import csv,sys,collections
rows=list(csv.reader(open(sys.argv[1])))
h=rows[0]; data=rows[2:]
iname=h.index('Kernel Name'); it=h.index('gpu__time_duration.sum'); ib=h.index('dram__bytes_read.sum')
ig=h.index('launch__grid_size'); ibl=h.index('launch__block_size')
agg=collections.defaultdict(lambda:[0,0.0,0.0,'',''])
tot=0
for r in data:
    try: t=float(r[it].replace(",",""))
    except: continue
    k=r[iname][:110]; a=agg[(k,r[ig])]; a[0]+=1; a[1]+=t; a[2]+=float(r[ib].replace(",","") or 0); a[3]=r[ig]; a[4]=r[ibl]
    tot+=t
print(f"{len(data)} kernels; sum time {tot/1000:.1f} us")
for (k,g),a in sorted(agg.items(), key=lambda x:-x[1][1])[:45]:
    print(f"{a[1]/1000:9.1f} us {100*a[1]/tot:5.1f}% n={a[0]:5d} avg={a[1]/a[0]/1000:7.2f}us GB/s={a[2]/a[1] if a[1] else 0:7.0f} grid={a[3]:>6} blk={a[4]:>4} {k}")
