"""playarea.env.dask on a 2-worker LocalCluster: one stack per worker, rollouts there."""

import os
import unittest


try:
    from distributed import Client, LocalCluster
except ImportError:  # pragma: no cover
    Client = None


def rollout(env, seed):
    obs, info = env.reset(seed=seed)
    total = 0.0
    env.action_space.seed(seed)
    for _ in range(10):
        obs, r, te, tr, _ = env.step(env.action_space.sample())
        total += r
        if te or tr:
            break
    return seed, info["goal"], total, env.world.stack.instance


@unittest.skipIf(Client is None, "python3-distributed is not installed")
class DaskRollouts(unittest.TestCase):
    def test_two_workers(self):
        from playarea.env.dask import close_stacks, rollouts
        cluster = LocalCluster(n_workers=2, threads_per_worker=1, processes=False,
                               dashboard_address=None)
        client = Client(cluster)
        try:
            kw = {"instance": "t%d-dask" % os.getpid()}
            res = rollouts(client, rollout, seeds=range(8), env_kwargs=kw)
            self.assertEqual([r[0] for r in res], list(range(8)))
            instances = {r[3] for r in res}
            self.assertLessEqual(len(instances), 2)
            self.assertTrue(all(i.startswith("t%d-dask-w" % os.getpid()) for i in instances))
            # the same seed gives the same episode whichever worker ran it
            again = rollouts(client, rollout, seeds=[3, 3], env_kwargs=kw)
            self.assertEqual(again[0][1:3], res[3][1:3])
            self.assertEqual(again[1][1:3], res[3][1:3])
            stopped = close_stacks(client)
            self.assertEqual(sum(stopped.values()), len(instances))
            for inst in instances:
                self.assertFalse([n for n in os.listdir("/dev/shm")
                                  if n.startswith("playarea.%s." % inst)])
        finally:
            client.close()
            cluster.close()


if __name__ == "__main__":
    unittest.main()
