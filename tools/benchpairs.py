#!/usr/bin/env python3
"""benchpairs.py N DIR REGEX BENCHTIME label=test-binary ... -- EXPR ...

Side-by-side benchmark pairs for a noisy machine (BENCHMARKS.md). Runs each
compiled test binary (go test -c) in turn, N rounds, in DIR, with
-test.bench REGEX -test.cpu 2 -test.benchtime BENCHTIME, so the sides of a
comparison are seconds apart, not minutes. Prints, per label, the median
ns/op of each benchmark and, for each EXPR, the median over the rounds of
EXPR evaluated on one run's figures, with every round's value. EXPR is
Python over b, a dict of ns/op keyed by the benchmark's name after its first
slash, e.g. "b['goroutines=2']/b['goroutines=128']" (the throughput at 128
relative to 2); a benchmark's other metrics are under "name:unit", e.g.
b['lock=point:lock-ns/txn']. Each run's figures go to stderr as they come."""
import sys, subprocess, statistics as st, re
args=sys.argv[1:]
n=int(args[0]); d=args[1]; rx=args[2]; bt=args[3]; rest=args[4:]
i=rest.index('--'); specs=rest[:i]; exprs=rest[i+1:]
res={}
for it in range(n):
    for s in specs:
        label,binp=s.split('=',1)
        out=subprocess.run([binp,'-test.run','^$','-test.bench',rx,'-test.cpu','2','-test.benchtime',bt],cwd=d,capture_output=True,text=True).stdout
        b={}
        for l in out.splitlines():
            m=re.match(r'^(Benchmark\S+?)(-2)?\s+\d+\s+([\d.]+) ns/op(.*)',l)
            if m:
                b[m.group(1)]=float(m.group(3))
                for v,u in re.findall(r'([\d.e+-]+) (\S+)',m.group(4)):
                    b[m.group(1)+':'+u]=float(v)
        res.setdefault(label,[]).append(b)
        print(label, it, ' '.join('%s=%.1f'%(k.split('/',1)[-1],v) for k,v in b.items()), file=sys.stderr, flush=True)
for label,runs in res.items():
    print('==',label)
    keys=runs[0].keys()
    for k in keys:
        print('  %-60s median %.1f ns'%(k, st.median([r[k] for r in runs if k in r])))
    for e in exprs:
        vals=[]
        for r in runs:
            b={k.split('/',1)[-1]:v for k,v in r.items()}
            try: vals.append(eval(e,{'b':b}))
            except Exception as ex: print('skipped a round for %r: %s' % (e, ex), file=sys.stderr)
        if vals: print('  %s: median %.3f  [%s]'%(e, st.median(vals), ' '.join('%.2f'%v for v in vals)))
