#!/usr/bin/env python3
# gguf-compare.py A.gguf B.gguf - tensor infos, data (sha1 per tensor) and metadata keys of two GGUF
# files, compared without numpy: "N tensors identical, M differ", then the keys that differ.
import struct, sys, hashlib
def read_gguf(path):
    f = open(path, 'rb')
    def u32(): return struct.unpack('<I', f.read(4))[0]
    def u64(): return struct.unpack('<Q', f.read(8))[0]
    def s(): n = u64(); return f.read(n).decode('utf-8', 'replace')
    sizes = {0:1,1:1,2:2,3:2,4:4,5:4,6:4,7:1,10:8,11:8,12:8}
    def val(t):
        if t == 8: return s()
        if t == 9:
            et = u32(); n = u64(); return [val(et) for _ in range(n)]
        return f.read(sizes[t])
    assert f.read(4) == b'GGUF'; ver = u32(); nt = u64(); nkv = u64()
    kv = {}
    for _ in range(nkv):
        k = s(); t = u32(); kv[k] = val(t)
    align = 32
    if 'general.alignment' in kv: align = struct.unpack('<I', kv['general.alignment'])[0]
    infos = []
    for _ in range(nt):
        name = s(); nd = u32(); ne = [u64() for _ in range(nd)]; typ = u32(); off = u64()
        infos.append((name, ne, typ, off))
    pos = f.tell(); base = (pos + align - 1) // align * align
    return f, kv, infos, base
fa, kva, ia, ba = read_gguf(sys.argv[1]); fb, kvb, ib, bb = read_gguf(sys.argv[2])
da = {n: (ne, t, o) for n, ne, t, o in ia}; db = {n: (ne, t, o) for n, ne, t, o in ib}
order = [n for n, *_ in ia]
def data(f, base, infos, name):
    i = [k for k, x in enumerate(infos) if x[0] == name][0]
    start = base + infos[i][3]
    offs = sorted(x[3] for x in infos)
    nxt = [o for o in offs if o > infos[i][3]]
    f.seek(0, 2); end = base + nxt[0] if nxt else f.tell()
    f.seek(start); return f.read(end - start)
same = diff = 0
for n in order:
    if n not in db: print('only in a:', n); diff += 1; continue
    (nea, ta, _), (neb, tb, _) = da[n], db[n]
    if nea != neb or ta != tb: print(f'{n}: shape/type {nea}/{ta} vs {neb}/{tb}'); diff += 1; continue
    ha = hashlib.sha1(data(fa, ba, ia, n)).hexdigest(); hb = hashlib.sha1(data(fb, bb, ib, n)).hexdigest()
    if ha != hb: print(f'{n}: data differ (type {ta})'); diff += 1
    else: same += 1
for n in db:
    if n not in da: print('only in b:', n); diff += 1
print(f'{same} tensors identical, {diff} differ')
ka, kb = set(kva), set(kvb)
print('keys only in a:', sorted(ka - kb)); print('keys only in b:', sorted(kb - ka))
for k in sorted(ka & kb):
    if kva[k] != kvb[k] and not k.startswith('tokenizer'): print('key differs:', k, str(kva[k])[:60], '|', str(kvb[k])[:60])
