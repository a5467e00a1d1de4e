"""A Python worker of an mcctl chaos run: puts, overwrites, gets and removes through mcctl.Client, recording each
operation's invocation and completion as JSON lines in the history file it is given (appended: the worker is killed
and started again by the nemesis). Keys are its own ("<worker>/k<n>"), so one key's writes never overlap in time.

Usage: chaos_worker.py MASTER ROOT HISTORY WORKER SEED
"""

import json
import os
import random
import sys
import time

import crc32c

import mcctl
from mcctl import errors

UNKNOWN_CODES = {errors.RPC_FAIL, errors.INTERNAL_ERROR}


def content(tag, size):
    """The bytes a write with this tag writes: the tag, then a pattern drawn from it, cut to size."""
    seed = int.from_bytes(tag.encode(), "little") % (1 << 61)
    pattern = random.Random(seed).randbytes(min(size, 4096))
    data = (tag.encode() + b"|" + pattern * (size // max(1, len(pattern)) + 1))[:size]
    return data


def main():
    master, root, history_path, worker, seed = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4], int(sys.argv[5])
    rng = random.Random(seed * 7919 + os.getpid())
    history = open(history_path, "a", buffering=1)
    start = time.time()
    serial = [0]

    def record(line):
        history.write(json.dumps(line, separators=(",", ":")) + "\n")

    def invoke(op, tenant, key, **fields):
        serial[0] += 1
        op_id = f"{worker}.{os.getpid()}.{serial[0]}"
        record({"type": "invoke", "id": op_id, "worker": worker, "op": op, "tenant": tenant, "key": key,
                "time_ms": int(time.time() * 1000), **fields})
        return op_id

    def complete(op_id, outcome, **fields):
        record({"type": "complete", "id": op_id, "outcome": outcome, "time_ms": int(time.time() * 1000), **fields})

    clients = {}
    while True:
        tenant = "py" + str(rng.randrange(2))
        if tenant not in clients:
            try:
                clients[tenant] = mcctl.Client(master=master, tenant=tenant, root=root, timeout=3.0)
            except Exception as e:  # the master may be unreachable right now: try again later
                print(f"connect failed: {e}", flush=True)
                time.sleep(0.5)
                continue
        client = clients[tenant]
        key = f"{worker}/k{rng.randrange(60)}"
        roll = rng.random()
        if roll < 0.45:
            size = rng.choice([1, 7, 100, 4096, 5000, 65536, rng.randrange(1, 300_000)])
            tag = f"{worker}.{os.getpid()}.{serial[0] + 1}"
            data = content(tag, size)
            op_id = invoke("put", tenant, key, size=size, crc=format(crc32c.crc32c(data), "08x"), tag=tag, overwrite=True)
            try:
                code = client.batch_put_from([key], [data], overwrite=True)[0]
            except Exception as e:
                complete(op_id, "unknown", error=str(e)[:200])
                continue
            if code == 0:
                complete(op_id, "ok")
            elif code in UNKNOWN_CODES:
                complete(op_id, "unknown", code=code)
            else:
                complete(op_id, "refused", code=code)
        elif roll < 0.85:
            op_id = invoke("get", tenant, key)
            try:
                data = client.get(key)
            except Exception as e:
                complete(op_id, "unknown", error=str(e)[:200])
                continue
            if data is None:
                complete(op_id, "miss")
            else:
                complete(op_id, "ok", size=len(data), crc=format(crc32c.crc32c(data), "08x"))
        else:
            op_id = invoke("remove", tenant, key)
            try:
                code = client.batch_remove([key])[0]
            except Exception as e:
                complete(op_id, "unknown", error=str(e)[:200])
                continue
            if code == 0:
                complete(op_id, "ok")
            elif code == errors.OBJECT_NOT_FOUND:
                complete(op_id, "miss")
            elif code in UNKNOWN_CODES:
                complete(op_id, "unknown", code=code)
            else:
                complete(op_id, "refused", code=code)
        if time.time() - start > 24 * 3600:
            return


if __name__ == "__main__":
    main()
