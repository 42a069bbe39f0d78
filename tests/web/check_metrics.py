"""Parses a /metrics text with prometheus_client's parser (Debian's
python3-prometheus-client) and checks the families the web issue names:
exit 0 and one line per family, or a message naming what is wrong."""
import sys

from prometheus_client.parser import text_string_to_metric_families

WANT = {
    "playarea_process_up": "gauge",
    "playarea_process_restarts": "counter",
    "playarea_process_cpu_seconds": "counter",
    "playarea_process_resident_memory_bytes": "gauge",
    "playarea_process_overruns": "counter",
    "playarea_sim_ticks": "counter",
    "playarea_sim_real_time_factor": "gauge",
    "playarea_sim_loop_period_seconds": "histogram",
    "playarea_netgw_clients": "gauge",
    "playarea_netgw_frames_sent": "counter",
    "playarea_netgw_sent_bytes": "counter",
    "playarea_netgw_frames_dropped": "counter",
    "playarea_netgw_request_duration_seconds": "histogram",
}


def main():
    text = open(sys.argv[1], encoding="utf-8").read()
    fams = {f.name: f for f in text_string_to_metric_families(text)}
    for name, kind in WANT.items():
        f = fams.get(name)
        if f is None:
            sys.exit("missing family %s" % name)
        if f.type != kind:
            sys.exit("%s is a %s, want %s" % (name, f.type, kind))
    up = {s.labels["process"]: s.value for s in fams["playarea_process_up"].samples}
    if up != {"launcher": 1, "sim": 1, "render": 1, "netgw": 1}:
        sys.exit("process up: %r" % up)
    ticks = fams["playarea_sim_ticks"].samples[0].value
    if ticks < 10:
        sys.exit("sim ticks %g" % ticks)
    rtf = fams["playarea_sim_real_time_factor"].samples[0].value
    if not 0.2 < rtf < 5:
        sys.exit("real-time factor %g" % rtf)
    lp = {s.name: s.value for s in fams["playarea_sim_loop_period_seconds"].samples
          if s.name.endswith("_count") or s.name.endswith("_sum")}
    if lp["playarea_sim_loop_period_seconds_count"] < 5:
        sys.exit("loop period histogram has %r" % lp)
    mean = lp["playarea_sim_loop_period_seconds_sum"] / lp["playarea_sim_loop_period_seconds_count"]
    if not 0.001 < mean < 0.05:  # 200 Hz control: 5 ms
        sys.exit("mean sim loop period %g s" % mean)
    lat = {s.labels.get("action"): s.value for s in fams["playarea_netgw_request_duration_seconds"].samples
           if s.name.endswith("_count")}
    for action in sys.argv[2:]:
        if lat.get(action, 0) < 1:
            sys.exit("no latency for action %s: %r" % (action, lat))
    sent = {s.labels["channel"]: s.value for s in fams["playarea_netgw_frames_sent"].samples}
    if sent.get("ws_state", 0) < 1:
        sys.exit("no ws_state frames counted: %r" % sent)
    for f in fams.values():
        print("%s %s %d samples" % (f.name, f.type, len(f.samples)))


main()
