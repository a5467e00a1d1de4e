"""Stand-in for vLLM's back-pressure detector as tiering/base.py at commit cda0f324 takes it (written for these tests,
not vLLM's code): store latencies in, a pressure verdict out."""

import time


class BackpressureDetector:
    def __init__(self, high_water_s: float = 1.0):
        self.high_water_s = high_water_s
        self.latencies = []

    def update(self, submit_time: float, num_bytes: int = 0) -> None:
        self.latencies.append(time.monotonic() - submit_time)

    def is_under_pressure(self) -> bool:
        return bool(self.latencies) and self.latencies[-1] > self.high_water_s

    def reset(self) -> None:
        self.latencies.clear()
