"""The checked-in stubs are what regen-stubs makes from master/protocol/src/main/proto now."""

import filecmp
import os
import subprocess

HERE = os.path.dirname(os.path.abspath(__file__))
PACKAGE = os.path.join(HERE, "..")


def test_checked_in_stubs_match_the_proto(tmp_path):
    subprocess.run([os.path.join(PACKAGE, "regen-stubs"), str(tmp_path)], check=True, timeout=60)
    checked_in = os.path.join(PACKAGE, "mcctl", "_proto")
    for name in ("__init__.py", "master_pb2.py", "master_pb2_grpc.py"):
        assert filecmp.cmp(tmp_path / name, os.path.join(checked_in, name), shallow=False), (
            f"mcctl/_proto/{name} is stale against master/protocol/src/main/proto: run clients/python/regen-stubs and commit")


def test_stubs_never_import_a_top_level_mooncake_package():
    for name in ("master_pb2.py", "master_pb2_grpc.py"):
        with open(os.path.join(PACKAGE, "mcctl", "_proto", name)) as f:
            imports = [line for line in f if line.startswith(("import ", "from "))]
        assert not [line for line in imports if line.split()[1].startswith("mooncake")], imports
