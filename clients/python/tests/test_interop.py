"""Objects cross between the Python client and the mcctl CLI byte for byte, and tenants stay walls."""

import os

import numpy as np

import mcctl

from conftest import run_cli


def test_python_put_reads_back_with_mcctl_get(master, client, tmp_path):
    data = np.random.default_rng(7).integers(0, 256, 300_001, dtype=np.uint8).tobytes()
    client.put("py/obj", data)
    out = tmp_path / "out.bin"
    done = run_cli("get", "py/obj", "--out", str(out), "--master", master.address, "--tenant", client.tenant)
    assert done.returncode == 0, done.stderr
    assert out.read_bytes() == data
    other = run_cli("get", "py/obj", "--out", str(tmp_path / "x"), "--master", master.address, "--tenant", client.tenant + "x")
    assert other.returncode != 0 and not (tmp_path / "x").exists()


def test_mcctl_offload_reads_back_from_python(master, tenant, tmp_path):
    data = os.urandom(150_000)
    source = tmp_path / "in.bin"
    source.write_bytes(data)
    done = run_cli("offload", "cli/obj", str(source), "--master", master.address, "--tenant", tenant)
    assert done.returncode == 0, done.stderr
    with mcctl.Client(master=master.address, tenant=tenant) as c:
        assert c.get("cli/obj") == data
        dest = bytearray(len(data))
        assert c.batch_get_into(["cli/obj"], [dest]) == [len(data)]
        assert bytes(dest) == data
    with mcctl.Client(master=master.address, tenant=tenant + "-other") as other:
        assert other.get("cli/obj") is None
