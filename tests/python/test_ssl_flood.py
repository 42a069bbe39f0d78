"""Issue 32 #9: an SSL UDP flood shares pa-sim's command queue fairly. The
blue team's port is flooded with RobotControl datagrams (6 robots each, as
fast as one thread sends them, responses never read) while a JSON client
sends set_velocity 181 times: every one is answered ok (the datagrams may
hold at most half of the queue; the rest of theirs is dropped and counted
in /metrics, playarea_netgw_limit_events_total{reason="queue_quota"})."""

import socket
import threading
import time
import unittest

from playarea import Sim
from playarea.errors import Error

from stack import StackTestCase
from test_ssl_proto import compile_protos, pb


class SslFlood(StackTestCase):
    stack_args = ("--world", "ssl-b", "--no-render", "--ssl_control_port", "0",
                  "--ssl_blue_port", "0", "--ssl_yellow_port", "0")

    @classmethod
    def setUpClass(cls):
        import tempfile, shutil
        cls.tmp = tempfile.mkdtemp(prefix="pa-ssl-flood-")
        cls.addClassCleanup(shutil.rmtree, cls.tmp, True)
        if not pb:
            compile_protos(cls.tmp)
        super().setUpClass()

    def test_flood_leaves_clients_room(self):
        sim = Sim(self.host, self.port, timeout=20)
        self.addCleanup(sim.close)
        info = sim.request("get_ssl_info")
        names = {r["name"]: r["robot"] for r in sim.list_robots()["robots"]}
        rc = pb["ssl_simulation_robot_control"].RobotControl()
        for i in range(6):
            c = rc.robot_commands.add(id=i)
            v = c.move_command.local_velocity
            v.forward, v.left, v.angular = 0.1, 0.0, 0.0
        dgram = rc.SerializeToString()
        stop = threading.Event()
        sent = [0]

        def flood():
            s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
            s.setblocking(False)
            to = ("127.0.0.1", info["blue_port"])
            while not stop.is_set():
                for _ in range(256):
                    try:
                        s.sendto(dgram, to)
                        sent[0] += 1
                    except BlockingIOError:
                        time.sleep(0.0005)
                        break
            s.close()

        threads = [threading.Thread(target=flood) for _ in range(2)]
        for t in threads:
            t.start()
        busy = 0
        try:
            time.sleep(0.5)
            for k in range(181):
                try:
                    sim.request("set_velocity", {"robot": names["y0"], "vx": 0.1,
                                                 "vy": 0.0, "w": 0.0})
                except Error:
                    busy += 1
        finally:
            stop.set()
            for t in threads:
                t.join()
        print("flood: %d datagrams sent, %d busy of 181" % (sent[0], busy))
        self.assertEqual(busy, 0)
        self.assertGreater(sent[0], 1000)


if __name__ == "__main__":
    unittest.main()
