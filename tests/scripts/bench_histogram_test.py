#!/usr/bin/env python3
"""bench/latency.py's reading of the relay's histograms (ctest
bench_histogram_test): the delta between two scrapes of /metrics and its
percentiles, interpolated inside the bucket as Prometheus's
histogram_quantile does; no scrape, or nothing counted, is None. And the
decomposition table: each system's record timestamp in its own column
(the relays' and the poller's produce call under produced, Debezium's
change event ts_ms under received).

Usage: bench_histogram_test.py REPO_ROOT
"""
import os
import sys
import unittest

sys.path.insert(0, os.path.join(sys.argv[1], "bench"))
import latency  # noqa: E402
from harness import report_latency  # noqa: E402

INF = float("inf")


class HistogramQuantileTest(unittest.TestCase):
    def test_interpolates_inside_the_bucket_of_the_delta(self):
        before = {0.001: 5, 0.0025: 5, 0.005: 5, 0.01: 5, INF: 5}
        # 100 new observations: 50 in (1, 2.5] ms, 49 in (2.5, 5], 1 in (5, 10].
        after = {0.001: 5, 0.0025: 55, 0.005: 104, 0.01: 105, INF: 105}
        self.assertAlmostEqual(latency.histogram_quantile(before, after, 50), 2.5)
        self.assertAlmostEqual(latency.histogram_quantile(before, after, 99), 5.0)
        # 25 of 50 into the second bucket: 1 + 1.5 * 0.5 ms.
        self.assertAlmostEqual(latency.histogram_quantile(before, after, 25), 1.75)

    def test_above_the_last_bound_is_the_last_bound(self):
        after = {0.001: 0, 0.0025: 0, INF: 10}
        self.assertEqual(latency.histogram_quantile({}, after, 50), None)  # no before
        self.assertAlmostEqual(latency.histogram_quantile({0.001: 0, 0.0025: 0, INF: 0},
                                                          after, 50), 2.5)

    def test_nothing_counted_is_none(self):
        h = {0.001: 3, INF: 3}
        self.assertIsNone(latency.histogram_quantile(h, h, 99))
        self.assertIsNone(latency.histogram_quantile(None, h, 99))

    def test_scrape_without_a_url_is_empty(self):
        self.assertEqual(latency.scrape_histograms(None), {})


class DecompositionTest(unittest.TestCase):
    def row(self, system):
        r = dict(system=system, rate=100, c_p50=9.0, c_p99=19.0,
                 produce_p50=1.0, produce_p99=2.0, arrive_p50=8.0, arrive_p99=17.0)
        if system.startswith("relay"):
            r.update(received_p50=0.5, received_p99=0.9, reported_p50=3.0, reported_p99=4.0)
        return r

    def cells(self, system):
        latency.register_debezium([system])
        lines = report_latency.decomposition([100], [system], [self.row(system)])
        row = [l for l in lines if l.startswith("| 100 |")]
        self.assertEqual(len(row), 1, lines)
        return [c.strip() for c in row[0].strip("|").split("|")][2:]

    def test_the_relay_stamps_at_produce(self):
        self.assertEqual(self.cells("relay"),
                         ["0.5 / 0.9", "1.0 / 2.0", "3.0 / 4.0", "9.0 / 19.0", "8.0 / 17.0"])

    def test_the_poller_stamps_at_produce(self):
        self.assertEqual(self.cells("poller-tuned"),
                         ["– / –", "1.0 / 2.0", "– / –", "9.0 / 19.0", "8.0 / 17.0"])

    def test_debezium_stamps_when_it_received_the_event(self):
        self.assertEqual(self.cells("debezium-3.7.0"),
                         ["1.0 / 2.0", "– / –", "– / –", "9.0 / 19.0", "8.0 / 17.0"])


if __name__ == "__main__":
    unittest.main(argv=sys.argv[:1])
