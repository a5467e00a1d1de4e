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


@pytest.mark.timeout(120)
def test_the_io_section_times_both_ios_on_the_same_batches(master, tenant, capsys):
    from conftest import standin
    assert bench.main(["--master", master.address, "--tenant", tenant, "--io", "both", "--usrbio-library", standin(),
                       "--io-total", str(4 << 20), "--rounds", "1"]) == 0
    out = capsys.readouterr().out
    assert f"usrbio: usrbio: root {master.root} is on 3FS mount" in out, out
    assert "64 KiB usrbio/posix: write " in out and "2048 KiB usrbio/posix: write " in out, out
