"""The benchmark's step timing runs the client's own steps on a real batch and checks the plan it times."""

import pytest

from mcctl import _io, bench


@pytest.mark.timeout(120)
def test_python_steps_time_each_step_of_a_batch_that_reads_back(client):
    steps = bench.python_steps(client, 4096, 16, 3)
    expected = {"check_keys", "regions", "lookup", "bare_call"} | ({"plan"} if _io.native is not None else set())
    assert set(steps) == expected
    assert all(micros > 0 for micros in steps.values())
    assert client.list_keys("bench/steps/4096/") == sorted(f"bench/steps/4096/{i}" for i in range(16))
