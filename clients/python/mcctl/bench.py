"""python3 -m mcctl.bench --master HOST:PORT: the Python client's read path against a plain preadv, and its
batch throughput from several threads.

0. untimed: batch reads and writes of small objects for --warmup-seconds, so the master's JIT has compiled what it
   serves (a master started for the run is otherwise timed on interpreted code).
1. batch_get_into of 128 objects (64 KiB, then 2 MiB) into one torch tensor, against os.preadv of the same
   bytes of the same bucket files into the same tensor, in the same run, in turns; medians over the rounds;
   with the files in the page cache (warm), then dropped from it before each timed read (cold,
   posix_fadvise DONTNEED). The batch's lookup call, and the native batch reader over the same objects without
   the lookup, are timed alone in the same rounds, and this process's CPU time (all its threads) beside the wall
   time, to show where the time goes on a busy machine. batch_get_into reads a batch on the client's read_threads;
   the same call on one thread (read_threads=1) is timed in the same rounds too, and the same call with mappings
   from a lookup() made just before, untimed (an engine that looks its next batch up while it reads this one).
   Each round reads the same keys, so batch_get_into reads them during its lookup (read_during_lookup); the same
   call reading nothing until its lookup answers (read_during_lookup=False) is timed in the same rounds.
2. keys per second of batch_put_from and batch_get_into, batches of 128 keys, from 4 threads.
   For 64 KiB in the page cache, the Python steps of one such batch on the calling thread are timed one by one
   (python_steps): what an engine's other threads wait for while the batch holds the GIL.
3. master calls per batch (one lookup per get batch; one allocate and one notify per put batch).
4. with --memory (a node started with --memory must be running): 128 objects promoted into the nodes' DRAM,
   batch_get_into served by their MEMORY replicas against the same reads from the shared files
   (read_memory_replicas=False), in turns; medians over the rounds.
5. with --io posix, usrbio or both: only the bucket-file IO: the same batch_put_from and batch_get_into batches (64 KiB
   objects 128 to a batch, 2 MiB objects 8 to a batch) through a client of each IO asked for, in turns, the order swapped
   every round; best GiB/s of the rounds and this process's CPU seconds per GiB moved, and with both the USRBIO/POSIX
   ratios. USRBIO needs the master's root on a 3FS mount and the library (--usrbio-library).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import threading
import time
import uuid

import crc32c

from . import Client, McctlError, _crc32c, _io
from ._proto import master_pb2 as pb


def crc_speed(function) -> float:
    """GiB/s of ``function`` over 2 MiB buffers already in the cache, as a read checks what it just read."""
    data = memoryview(bytearray(os.urandom(2 << 20)))
    function(data)
    best = float("inf")
    for _ in range(20):
        start = time.perf_counter()
        function(data)
        best = min(best, time.perf_counter() - start)
    return 2 / 1024 / best


def _tensor(size: int):
    import torch
    return torch.empty(size, dtype=torch.uint8)


def _drop_cache(fds) -> None:
    for fd in fds:
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)


def warm_up(client: Client, seconds: float) -> int:
    """Batch reads (each with its lookup) and some writes of small objects for ``seconds``, untimed, so the master's
    compiler has compiled its call paths before anything is timed, as it has in a master that has been serving (a
    master started for the benchmark answers its first thousands of calls from interpreted code, several times
    slower). The reads it made."""
    keys = [f"bench/warm-up/{i}" for i in range(128)]
    data = [os.urandom(4096) for _ in keys]
    buffers = [bytearray(4096) for _ in keys]
    reads = 0
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        if reads % 50 == 0:
            client.batch_put_from(keys, data, overwrite=True)
        client.batch_get_into(keys, buffers)
        reads += 1
    return reads


def read_path(client: Client, object_size: int, count: int, rounds: int, cold: bool) -> dict:
    """Medians over ``rounds`` rounds; each round times batch_get_into and plain preadv once each, in turns
    (which goes first alternates), so both see the same machine at the same moment."""
    keys = [f"bench/read/{object_size}/{i}" for i in range(count)]
    sources = [os.urandom(object_size) for _ in range(count)]
    codes = client.batch_put_from(keys, sources, overwrite=True)
    if any(codes):
        raise SystemExit(f"bench: offload of the read set failed: {codes[:4]}")
    tensor = _tensor(object_size * count)
    slices = [tensor[i * object_size:(i + 1) * object_size] for i in range(count)]
    mappings = client._read("BatchGetDistributedPageMapping", pb.BatchGetDistributedPageMappingRequest(
        keys=keys, tenant_ids=[client.tenant] * count)).results
    request = pb.BatchGetDistributedPageMappingRequest(keys=keys, tenant_ids=[client.tenant] * count, packed=True)
    places = [(client._files.local_path(m.distributed_disk.file_path), m.distributed_disk.offset) for m in mappings]
    fds = {path: os.open(path, os.O_RDONLY) for path, _ in places}
    views = [memoryview(s.numpy()) for s in slices]

    def mcctl_read():
        got = client.batch_get_into(keys, slices)
        if got != [object_size] * count:
            raise SystemExit(f"bench: batch_get_into answered {got[:4]}")

    ahead = [None]  # the Mappings of the next "ahead" part, looked up just before it, untimed

    def mcctl_read_looked_up():  # the lookup done beforehand, untimed: an engine overlapping it with the read before
        got = client.batch_get_into(keys, slices, mappings=ahead[0])
        if got != [object_size] * count:
            raise SystemExit(f"bench: batch_get_into answered {got[:4]}")

    def mcctl_read_after_lookup():  # nothing read before the batch's own lookup answers
        during, client.read_during_lookup = client.read_during_lookup, False
        try:
            mcctl_read()
        finally:
            client.read_during_lookup = during

    def mcctl_read_one_thread():
        threads, client.read_threads = client.read_threads, 1
        try:
            mcctl_read()
        finally:
            client.read_threads = threads

    def plain_read():  # one preadv per object, as batch_get_into does (it may do more for large objects)
        for (path, offset), view in zip(places, views):
            os.preadv(fds[path], [view], offset)

    def lookup():  # the batch's one master call on its own, to show its share
        client._read("BatchGetDistributedPageMapping", request)

    def reader_alone():  # the native batch reader over the same plan, without the lookup and the Python planning
        plan = _io.ReadPlan()
        for (path, offset), s, m in zip(places, slices, mappings):
            plan.add(fds[path], offset, object_size, [(s.data_ptr(), object_size)], m.distributed_disk.crc32c)
        if plan.run(0, client.read_threads) != count or list(plan.outcomes()[0]) != [object_size] * count:
            raise SystemExit("bench: the batch reader did not read every object")

    parts = [("mcctl", mcctl_read), ("plain", plain_read)] + ([("reader", reader_alone), ("after", mcctl_read_after_lookup)] if _io.native else [])
    if client.read_threads > 1:
        parts.append(("mcctl1", mcctl_read_one_thread))
    parts.append(("ahead", mcctl_read_looked_up))
    timed = {name: [] for name, _ in parts + [("lookup", lookup)]}
    cpu = {name: [] for name in timed}
    try:
        for r in range(rounds):
            for name, part in (parts if r % 2 == 0 else parts[::-1]) + [("lookup", lookup)]:
                if cold and name != "lookup":
                    _drop_cache(fds.values())
                if name == "ahead":
                    ahead[0] = client.lookup(keys)
                start, start_cpu = time.perf_counter(), time.process_time()
                part()
                cpu[name].append(time.process_time() - start_cpu)
                timed[name].append(time.perf_counter() - start)
    finally:
        for fd in fds.values():
            os.close(fd)
    total = object_size * count
    mcctl_s, plain_s = statistics.median(timed["mcctl"]), statistics.median(timed["plain"])
    figures = {"object_size": object_size, "objects": count, "rounds": rounds, "mcctl_ms": mcctl_s * 1e3,
               "preadv_ms": plain_s * 1e3, "lookup_ms": statistics.median(timed["lookup"]) * 1e3,
               "mcctl_gib_s": total / mcctl_s / 2**30, "preadv_gib_s": total / plain_s / 2**30, "ratio": plain_s / mcctl_s,
               "cpu_ratio": statistics.median(cpu["plain"]) / statistics.median(cpu["mcctl"])}
    if "reader" in timed:
        figures["reader_ratio"] = plain_s / statistics.median(timed["reader"])
        figures["reader_cpu_ratio"] = statistics.median(cpu["plain"]) / statistics.median(cpu["reader"])
    if "mcctl1" in timed:
        figures["one_thread_ratio"] = plain_s / statistics.median(timed["mcctl1"])
        figures["one_thread_cpu_ratio"] = statistics.median(cpu["plain"]) / statistics.median(cpu["mcctl1"])
    if "after" in timed:
        figures["after_lookup_ratio"] = plain_s / statistics.median(timed["after"])
    figures["read_threads"] = client.read_threads
    figures["looked_up_ratio"] = plain_s / statistics.median(timed["ahead"])
    return figures


def python_steps(client: Client, object_size: int, count: int, calls: int) -> dict:
    """Medians over ``calls`` calls of each step of one batch_get_into of ``count`` objects into slices of one tensor
    that runs in Python on the caller's thread, holding the GIL: the keys' checks, the buffers' regions, the read's
    plan; and the batch's lookup, against the bare gRPC call it makes. In microseconds. The plan is read once and
    every object checked, so a plan that lost one fails the run."""
    from . import client as client_module  # the steps are the client's own functions, timed one by one

    keys = [f"bench/steps/{object_size}/{i}" for i in range(count)]
    codes = client.batch_put_from(keys, [os.urandom(object_size) for _ in range(count)], overwrite=True)
    if any(codes):
        raise SystemExit(f"bench: offload of the step set failed: {codes[:4]}")
    tensor = _tensor(object_size * count)
    slices = [tensor[i * object_size:(i + 1) * object_size] for i in range(count)]
    found, safe_until = client._lookup(keys)

    def regions():
        return _io.Destinations.of(slices, lambda i: client_module._BufferOf(keys, i), [])

    held = regions()

    def plan():
        return client._plan_native(0, keys, found.copy(), held, [None] * count, client_module.Counter())

    request = pb.BatchGetDistributedPageMappingRequest(keys=keys, tenant_ids=[client.tenant] * count, packed=True)
    steps = {"check_keys": lambda: client_module._check_keys(keys), "regions": regions, "lookup": lambda: client._lookup(keys),
             "bare_call": lambda: client._stub.BatchGetDistributedPageMapping(request, timeout=client.timeout,
                                                                                metadata=client._metadata)}
    if _io.native is not None:
        steps["plan"] = plan
        read_plan = plan()[0]
        if read_plan.run(time.monotonic() + 60, 1) != count or list(read_plan.outcomes()[0]) != [object_size] * count:
            raise SystemExit("bench: the plan of the step set did not read every object")
    timed = {name: [] for name in steps}
    for _ in range(calls):
        for name, step in steps.items():
            start = time.perf_counter()
            step()
            timed[name].append(time.perf_counter() - start)
    return {name: statistics.median(t) * 1e6 for name, t in timed.items()}


def memory_path(client: Client, files_only: Client, object_size: int, count: int, rounds: int, cold: bool,
                wait_s: float = 60.0) -> dict:
    """Medians over ``rounds`` rounds of batch_get_into served by MEMORY replicas and by pread, in turns; ``cold``
    drops the bucket files from the page cache before each read by pread."""
    keys = [f"bench/memory/{object_size}/{i}" for i in range(count)]
    codes = client.batch_put_from(keys, [os.urandom(object_size) for _ in range(count)], overwrite=True)
    if any(codes):
        raise SystemExit(f"bench: offload of the memory read set failed: {codes[:4]}")
    for key in keys:
        client.promote(key)
    request = pb.BatchGetDistributedPageMappingRequest(keys=keys, tenant_ids=[client.tenant] * count)
    deadline = time.monotonic() + wait_s
    while not all(m.memory for m in client._read("BatchGetDistributedPageMapping", request).results):
        if time.monotonic() > deadline:
            raise SystemExit(f"bench: the read set was not promoted within {wait_s:g} s: is a node started with --memory "
                             f"running? ({client.promotions()})")
        time.sleep(0.1)
    tensor = _tensor(object_size * count)
    slices = [tensor[i * object_size:(i + 1) * object_size] for i in range(count)]
    paths = {client._files.local_path(m.distributed_disk.file_path) for m in client._read("BatchGetDistributedPageMapping", request).results}

    def read(reader: Client, counter: str):
        if cold and reader is files_only:
            fds = [os.open(path, os.O_RDONLY) for path in paths]
            _drop_cache(fds)
            for fd in fds:
                os.close(fd)
        before = reader.stats().get(counter, 0)
        got = reader.batch_get_into(keys, slices)
        if got != [object_size] * count or reader.stats().get(counter, 0) - before != count:
            raise SystemExit(f"bench: batch_get_into answered {got[:4]}, {counter} {reader.stats().get(counter, 0) - before} of {count}")

    parts = [("memory", lambda: read(client, "memory_reads")), ("files", lambda: read(files_only, "reads"))]
    for _, part in parts:  # untimed: the node's JIT and both paths' first calls
        part()
    timed = {name: [] for name, _ in parts}
    for r in range(rounds):
        for name, part in parts if r % 2 == 0 else parts[::-1]:
            start = time.perf_counter()
            part()
            timed[name].append(time.perf_counter() - start)
    memory_s, files_s = statistics.median(timed["memory"]), statistics.median(timed["files"])
    total = object_size * count
    return {"object_size": object_size, "objects": count, "rounds": rounds, "memory_ms": memory_s * 1e3, "files_ms": files_s * 1e3,
            "memory_gib_s": total / memory_s / 2**30, "files_gib_s": total / files_s / 2**30}


def throughput(client: Client, threads: int, batches: int, batch: int, object_size: int) -> dict:
    run = uuid.uuid4().hex[:8]
    before = client.stats()["calls"]
    times = {"put": 0.0, "get": 0.0}
    failures = []

    def worker(t: int, phase: str, elapsed: list):
        tensor = _tensor(batch * object_size)
        slices = [tensor[i * object_size:(i + 1) * object_size] for i in range(batch)]
        start = time.perf_counter()
        for b in range(batches):
            keys = [f"bench/tp/{run}/{t}/{b}/{i}" for i in range(batch)]
            codes = client.batch_put_from(keys, slices) if phase == "put" else client.batch_get_into(keys, slices)
            expected = 0 if phase == "put" else object_size
            if any(c != expected for c in codes):
                failures.append((phase, codes[:4]))
        elapsed.append(time.perf_counter() - start)

    for phase in ("put", "get"):
        elapsed: list = []
        workers = [threading.Thread(target=worker, args=(t, phase, elapsed)) for t in range(threads)]
        wall = time.perf_counter()
        for w in workers:
            w.start()
        for w in workers:
            w.join()
        times[phase] = time.perf_counter() - wall
    if failures:
        raise SystemExit(f"bench: {len(failures)} batches failed, e.g. {failures[0]}")
    calls = client.stats()["calls"]
    delta = {name: calls.get(name, 0) - before.get(name, 0) for name in calls}
    n_batches = threads * batches
    keys = n_batches * batch
    return {"threads": threads, "batch": batch, "object_size": object_size, "keys": keys,
            "put_keys_s": keys / times["put"], "get_keys_s": keys / times["get"],
            "allocate_per_put_batch": delta.get("BatchAllocateDistributedPage", 0) / n_batches,
            "notify_per_put_batch": delta.get("NotifyDistributedDiskSuccess", 0) / n_batches,
            "lookup_per_get_batch": delta.get("BatchGetDistributedPageMapping", 0) / n_batches,
            "free_calls": delta.get("BatchFreeDistributedPage", 0)}


def io_paths(master: str, tenant: str, modes, library: str, total: int, rounds: int):
    """Section 5: per object size, per IO, best write and read GiB/s and CPU seconds per GiB over the timed rounds."""
    clients = {mode: Client(master=master, tenant=tenant, io=mode, usrbio_library=library) for mode in modes}
    try:
        for mode, c in clients.items():
            print(f"  {mode}: {c.io_reason}")
        figures = []
        for size, batch in ((64 << 10, 128), (2 << 20, 8)):
            n = max(batch, total // size // batch * batch)
            tensor = _tensor(size * batch)
            tensor.random_(0, 256)
            slices = [tensor[i * size:(i + 1) * size] for i in range(batch)]
            write_keys = [f"bench/io/w/{size}/{i}" for i in range(n)]  # written again and again, never read: freed at once
            read_keys = [f"bench/io/r/{size}/{i}" for i in range(n)]  # written once, read again and again
            first = next(iter(clients.values()))
            for start in range(0, n, batch):
                codes = first.batch_put_from(read_keys[start:start + batch], slices, overwrite=True)
                if any(codes):
                    raise McctlError(f"the benchmark's write failed: {codes}")
            into = _tensor(size * batch)
            into_slices = [into[i * size:(i + 1) * size] for i in range(batch)]

            def write(c):
                for start in range(0, n, batch):
                    codes = c.batch_put_from(write_keys[start:start + batch], slices, overwrite=True)
                    if any(codes):
                        raise McctlError(f"the benchmark's write through {c.io_mode} failed: {codes}")

            def read(c):
                for start in range(0, n, batch):
                    got = c.batch_get_into(read_keys[start:start + batch], into_slices)
                    if got != [size] * batch:
                        raise McctlError(f"the benchmark's read through {c.io_mode} failed: {got}")

            best = {(mode, op): float("inf") for mode in clients for op in ("write", "read")}
            cpu = {(mode, op): 0.0 for mode in clients for op in ("write", "read")}
            order = list(clients)
            for round_ in range(rounds + 1):  # the first round warms up, untimed
                for mode in order[round_ % len(order):] + order[:round_ % len(order)]:
                    for op, run in (("write", write), ("read", read)):
                        started, started_cpu = time.perf_counter(), time.process_time()
                        run(clients[mode])
                        if round_:
                            best[mode, op] = min(best[mode, op], time.perf_counter() - started)
                            cpu[mode, op] += time.process_time() - started_cpu
            gib = n * size / 2**30
            row = {"object_size": size, "objects": n, "batch": batch}
            for mode in clients:
                for op in ("write", "read"):
                    row[f"{mode}_{op}_gib_s"] = gib / best[mode, op]
                    row[f"{mode}_{op}_cpu_s_per_gib"] = cpu[mode, op] / (gib * rounds)
            if len(clients) == 2:
                for op in ("write", "read"):
                    row[f"usrbio_over_posix_{op}"] = row[f"usrbio_{op}_gib_s"] / row[f"posix_{op}_gib_s"]
                    row[f"usrbio_over_posix_{op}_cpu"] = row[f"usrbio_{op}_cpu_s_per_gib"] / row[f"posix_{op}_cpu_s_per_gib"]
            figures.append(row)
        return figures
    finally:
        for c in clients.values():
            c.close()


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python3 -m mcctl.bench", description=__doc__.split("\n")[0])
    parser.add_argument("--master", default=os.environ.get("MCCTL_MASTER", "localhost:50051"), help="host:port of the master")
    parser.add_argument("--tenant", default="bench", help="tenant the benchmark's keys go to (default: bench)")
    parser.add_argument("--rounds", type=int, default=21, help="timed rounds of each read; medians count (default: 21)")
    parser.add_argument("--batches", type=int, default=20, help="batches per thread in the throughput run (default: 20)")
    parser.add_argument("--object-size", type=int, default=64 * 1024, help="bytes per object in the throughput run")
    parser.add_argument("--memory", action="store_true",
                        help="only time reads served by nodes' MEMORY replicas against the shared files (needs a node started with --memory)")
    parser.add_argument("--warmup-seconds", type=float, default=10.0,
                        help="seconds of untimed reads and writes first, so the master's call paths are compiled (default: 10)")
    parser.add_argument("--io", choices=("posix", "usrbio", "both"),
                        help="only time batch writes and reads through this bucket-file IO, or both in turns (section 5)")
    parser.add_argument("--usrbio-library", default=os.environ.get("MOONCAKE_DISTRIBUTED_USRBIO_LIBRARY", "hf3fs_api_shared"),
                        help="with --io: the USRBIO library, by name on the library path or by path (default: hf3fs_api_shared)")
    parser.add_argument("--io-total", type=int, default=256 << 20, help="with --io: bytes of objects per object size (default: 256 MiB)")
    args = parser.parse_args(argv)
    if not 0 <= args.warmup_seconds <= 3600:
        parser.error(f"invalid --warmup-seconds {args.warmup_seconds:g}: allowed is 0 to 3600")
    if args.io:
        modes = ["posix", "usrbio"] if args.io == "both" else [args.io]
        try:
            print(f"mcctl.bench --io {args.io}: batch_put_from and batch_get_into, best of {args.rounds} rounds, CPU of this process")
            for r in io_paths(args.master, args.tenant, modes, args.usrbio_library, args.io_total, args.rounds):
                for mode in modes:
                    print(f"{r['object_size'] // 1024} KiB x {r['objects']} in batches of {r['batch']}, {mode}: write "
                          f"{r[mode + '_write_gib_s']:.3f} GiB/s ({r[mode + '_write_cpu_s_per_gib']:.3f} CPU s/GiB), read "
                          f"{r[mode + '_read_gib_s']:.3f} GiB/s ({r[mode + '_read_cpu_s_per_gib']:.3f} CPU s/GiB)")
                if len(modes) == 2:
                    print(f"{r['object_size'] // 1024} KiB usrbio/posix: write {r['usrbio_over_posix_write']:.3f}x "
                          f"(CPU {r['usrbio_over_posix_write_cpu']:.3f}x), read {r['usrbio_over_posix_read']:.3f}x "
                          f"(CPU {r['usrbio_over_posix_read_cpu']:.3f}x)")
        except (McctlError, OSError) as e:
            print(f"mcctl.bench: {e}", file=sys.stderr)
            return 1
        return 0
    try:
        with Client(master=args.master, tenant=args.tenant) as client:
            print(f"mcctl.bench: master {args.master}, root {client.root}, page size {client.layout.page_size}, "
                  f"read_threads {client.read_threads}")
            if args.memory:
                with Client(master=args.master, tenant=args.tenant, read_memory_replicas=False) as files_only:
                    for cold in (False, True):
                        for size in (64 * 1024, 2 * 1024 * 1024):
                            r = memory_path(client, files_only, size, 128, args.rounds, cold)
                            print(f"read {r['objects']} x {size // 1024} KiB into one tensor, median of {r['rounds']}: from MEMORY "
                                  f"replicas {r['memory_ms']:.2f} ms ({r['memory_gib_s']:.2f} GiB/s), from the shared files "
                                  f"{r['files_ms']:.2f} ms ({r['files_gib_s']:.2f} GiB/s, {'cold' if cold else 'warm'} page cache)")
                return 0
            if args.warmup_seconds:
                reads = warm_up(client, args.warmup_seconds)
                print(f"warm-up: {reads} batch reads of 128 x 4 KiB in {args.warmup_seconds:g} s, untimed")
            print(f"CRC32C of the client: {_crc32c.backend}, {crc_speed(lambda v: _io.crc32c([v])):.2f} GiB/s on one thread; "
                  f"crc32c package: hardware_based={crc32c.hardware_based}, {crc_speed(crc32c.crc32c):.2f} GiB/s")
            for cold in (False, True):
                for size in (64 * 1024, 2 * 1024 * 1024):
                    r = read_path(client, size, 128, args.rounds, cold)
                    print(f"read {r['objects']} x {size // 1024} KiB into one tensor, {'cold' if cold else 'warm'} page cache, "
                          f"median of {r['rounds']}: batch_get_into {r['mcctl_ms']:.2f} ms ({r['mcctl_gib_s']:.2f} GiB/s), "
                          f"plain preadv {r['preadv_ms']:.2f} ms ({r['preadv_gib_s']:.2f} GiB/s), ratio {r['ratio']:.2f}x; "
                          f"the lookup alone {r['lookup_ms']:.2f} ms; in process CPU time {r['cpu_ratio']:.2f}x")
                    print(f"    batch_get_into of keys looked up beforehand (lookup(), mappings=): {r['looked_up_ratio']:.2f}x "
                          f"of plain preadv")
                    if "after_lookup_ratio" in r:
                        print(f"    batch_get_into reading nothing until its lookup answers (read_during_lookup=False): "
                              f"{r['after_lookup_ratio']:.2f}x of plain preadv")
                    if "one_thread_ratio" in r:
                        print(f"    batch_get_into on one thread (read_threads=1): {r['one_thread_ratio']:.2f}x of plain preadv, "
                              f"{r['one_thread_cpu_ratio']:.2f}x in process CPU time")
                    if "reader_ratio" in r:
                        print(f"    the batch reader alone (no lookup, no planning, {r['read_threads']} threads): {r['reader_ratio']:.2f}x "
                              f"of plain preadv, {r['reader_cpu_ratio']:.2f}x in process CPU time")
                    if size == 64 * 1024 and not cold:
                        p = python_steps(client, size, 128, 200)
                        plan = f", the plan {p['plan']:.0f} µs" if "plan" in p else ""
                        print(f"    Python on the calling thread, medians of 200 batches of 128: the keys' checks {p['check_keys']:.0f} µs, "
                              f"the buffers' regions {p['regions']:.0f} µs{plan}; the lookup {p['lookup']:.0f} µs, of which "
                              f"the bare gRPC call {p['bare_call']:.0f} µs")
            t = throughput(client, 4, args.batches, 128, args.object_size)
            print(f"{t['threads']} threads, batches of {t['batch']} x {t['object_size'] // 1024} KiB, {t['keys']} keys: "
                  f"batch_put_from {t['put_keys_s']:.0f} keys/s, batch_get_into {t['get_keys_s']:.0f} keys/s")
            print(f"master calls per batch: put {t['allocate_per_put_batch']:.2f} allocate + {t['notify_per_put_batch']:.2f} notify "
                  f"({t['free_calls']} frees), get {t['lookup_per_get_batch']:.2f} lookup")
    except McctlError as e:
        print(f"mcctl.bench: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
