# 100k-point cloud replaced repeatedly: wall per replace, pa-netgw CPU, pa-sim CPU.
import socket,sys,json,time,random,os,base64,struct
s=socket.create_connection(("127.0.0.1",int(sys.argv[1])))
f=s.makefile()
def cpu(pid):
    st=open("/proc/%s/stat"%pid).read().split(")")[1].split()
    return (int(st[11])+int(st[12]))/os.sysconf("SC_CLK_TCK")
def send(line):
    s.sendall(line); r=json.loads(f.readline()); assert r["success"], r
send(b'{"type":"command","action":"add_visual","data":{"name":"c","type":"point_cloud"}}\n')
def run(lines, label, N=20):
    c0=cpu(sys.argv[2]); s0=cpu(sys.argv[3]); t0=time.perf_counter()
    for rep in range(N):
        for l in lines: send(l)
    dt=time.perf_counter()-t0
    print("%s: %d lines of <= %d bytes; %.1f ms wall per 100k replace; pa-netgw CPU %.1f ms per replace; pa-sim CPU %.2f s over %.1f s"%(label,len(lines),max(map(len,lines)),dt/N*1e3,(cpu(sys.argv[2])-c0)/N*1e3,cpu(sys.argv[3])-s0,dt))
pts=[(random.uniform(-5,5),random.uniform(-5,5),random.uniform(0,2)) for i in range(100000)]
J=[]
for k in range(4):
    J.append((json.dumps({"type":"command","action":"update_visual","data":{"name":"c","points":[[round(c,3) for c in p] for p in pts[k*25000:(k+1)*25000]],"append":k>0}},separators=(',',':'))+"\n").encode())
run(J,"JSON arrays")
B=[]
for k in range(2):
    raw=b"".join(struct.pack("<3f",*p) for p in pts[k*50000:(k+1)*50000])
    B.append((json.dumps({"type":"command","action":"update_visual","data":{"name":"c","points_b64":base64.b64encode(raw).decode(),"append":k>0}},separators=(',',':'))+"\n").encode())
run(B,"points_b64 xyz")

# With a 4th argument (pa-render's pid, a stack run with --viewer): the cost
# of a 100k cloud replaced at 10 Hz, against the same seconds with no update.
if len(sys.argv) > 4:
    rpid, secs = sys.argv[4], 5.0
    def rates(paced):
        r0, n0, s0, t0 = cpu(rpid), cpu(sys.argv[2]), cpu(sys.argv[3]), time.perf_counter()
        k = 0
        while time.perf_counter() - t0 < secs:
            if paced:
                for l in B: send(l)
            k += 1
            time.sleep(max(0.0, t0 + k * 0.1 - time.perf_counter()))
        dt = time.perf_counter() - t0
        return [(cpu(p) - c) / dt * 100 for p, c in ((rpid, r0), (sys.argv[2], n0), (sys.argv[3], s0))]
    idle = rates(False)
    busy = rates(True)
    print("100k cloud at 10 Hz, %% of a core over %.0f s: pa-render (viewer) %.1f -> %.1f, "
          "pa-netgw %.1f -> %.1f, pa-sim %.1f -> %.1f (no update -> 10 Hz)"
          % (secs, idle[0], busy[0], idle[1], busy[1], idle[2], busy[2]))
