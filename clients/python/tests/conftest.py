"""Fixtures: a real master process started from the built jar over a temp root, and the mcctl CLI."""

from __future__ import annotations

import atexit
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import uuid

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))  # the package under test, not an installed copy

REPO = os.path.abspath(os.path.join(HERE, "..", "..", ".."))
JAR = os.environ.get("MCCTL_JAR", os.path.join(REPO, "bench", "target", "mcctl-all.jar"))
JAVA = os.environ.get("MCCTL_JAVA", "/usr/bin/java")
SERVING = re.compile(r"serving gRPC on [^:]+:(\d+)")
# The USRBIO stand-in the storage module's build compiles from its test sources (it is not 3FS: it runs the IOs with
# pread and pwrite on a directory that holds a 3fs-virt directory, which it takes for the top of a 3FS mount).
STANDIN = os.environ.get("MCCTL_USRBIO_STANDIN", os.path.join(REPO, "storage", "target", "native", "libhf3fs_api_shared.so"))
NODE_SERVING = re.compile(r"mcctl node (\S+) serving on (\S+)")


_java_options = None


def java_command(*args: str) -> list:
    """The command that runs mcctl from the jar with ``args``: a small heap, and the start the launcher gives short commands
    (the client compiler alone, the serial collector, the classes mapped from a class-data archive), since each test
    starts masters and commands that live for seconds and on two cores their start-up is most of the tests' CPU."""
    global _java_options
    if _java_options is None:
        _java_options = ["-Xmx256m", "-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC", *class_data_options()]
    return [JAVA, *_java_options, "-jar", JAR, *args]


def class_data_options() -> list:
    """A class-data archive of the jar, recorded once per test run as the launcher records one (the everyday commands and
    a master run in-process); none when it cannot be made, which only costs speed. The JVM's messages about it are off:
    the tests read what the processes print."""
    folder = tempfile.mkdtemp(prefix="mcctl-test-classes")
    atexit.register(shutil.rmtree, folder, True)
    archive = os.path.join(folder, "classes.jsa")
    try:
        subprocess.run([JAVA, "-Xlog:disable", f"-XX:ArchiveClassesAtExit={archive}", "-cp", JAR, "io.mcctl.cli.StartupTraining"],
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=120, check=True)
    except (OSError, subprocess.SubprocessError):
        return []
    if not os.path.isfile(archive) or os.path.getsize(archive) == 0:
        return []
    return [f"-XX:SharedArchiveFile={archive}", "-Xlog:cds=off", "-Xlog:cds+dynamic=off"]


def clean_env() -> dict:
    """This process's environment without mcctl settings, so only the arguments given count."""
    return {k: v for k, v in os.environ.items() if not k.startswith("MOONCAKE_") and k not in ("MCCTL_MASTER", "MCCTL_CONFIG")}


class ServingProcess:
    """An mcctl command as a real process that prints a line saying where it serves once it does."""

    def __init__(self, what: str, args, serving: "re.Pattern"):
        if not os.path.isfile(JAR):
            raise RuntimeError(f"{JAR} is missing: build it with 'mvn -B package -DskipTests'")
        self.out = tempfile.NamedTemporaryFile(prefix=f"mcctl-{what}-out", delete=False)
        self.err = tempfile.NamedTemporaryFile(prefix=f"mcctl-{what}-err", delete=False)
        self.process = subprocess.Popen(java_command(*args), stdout=self.out, stderr=self.err, env=clean_env())
        deadline = time.monotonic() + 60
        while True:
            with open(self.out.name) as f:
                self.serving = serving.search(f.read())
            if self.serving:
                return
            if self.process.poll() is not None or time.monotonic() > deadline:
                with open(self.err.name) as f:
                    log = f.read().strip()
                self.close()
                raise ProcessDidNotServe(f"the {what} did not serve: {log}", log)
            time.sleep(0.05)

    def kill(self) -> None:
        """kill -9."""
        self.process.kill()
        self.process.wait(10)

    def close(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(20)
            except subprocess.TimeoutExpired:
                self.kill()
        for f in (self.out, self.err):
            if not f.closed:
                f.close()
                os.unlink(f.name)


class ProcessDidNotServe(RuntimeError):
    def __init__(self, message: str, log: str):
        super().__init__(message)
        self.log = log


class Master(ServingProcess):
    """``mcctl master start`` as a real process on 127.0.0.1 and a free port, over its own root."""

    def __init__(self, root: str, *args: str):
        """``args``: flags of mcctl master start; a flag given here replaces the default below. The root is the top of a 3FS
        mount to the USRBIO stand-in (a 3fs-virt directory in it) and fs_type is hf3fs, so that a client may read and
        write it through either IO (io auto falls back to POSIX: the stand-in is not on the library path)."""
        self.root = root
        os.makedirs(os.path.join(root, "3fs-virt"), exist_ok=True)
        flags = {"--root": root, "--bind": "127.0.0.1", "--port": "0", "--metrics-port": "0", "--bucket-count": "4",
                 "--bucket-size": "256MiB", "--fs-type": "hf3fs"}
        flags.update(zip(args[::2], args[1::2]))
        super().__init__("master", ["master", "start", *[x for pair in flags.items() for x in pair]], SERVING)
        self.port = int(self.serving.group(1))
        self.address = f"127.0.0.1:{self.port}"


class Node(ServingProcess):
    """``mcctl node start`` of ``master`` as a real process on 127.0.0.1 and a free port."""

    def __init__(self, master: Master, *args: str):
        super().__init__("node", ["node", "start", "--master", master.address, "--listen", "127.0.0.1:0", *args], NODE_SERVING)
        self.client_id, self.endpoint = self.serving.group(1), self.serving.group(2)


@pytest.fixture(scope="session")
def master(tmp_path_factory):
    m = Master(str(tmp_path_factory.mktemp("root")))
    yield m
    m.close()


@pytest.fixture
def fresh_master(tmp_path):
    """A master of the test's own, for tests that look at its counters or stop it."""
    m = Master(str(tmp_path / "root"))
    yield m
    m.close()


@pytest.fixture
def tenant():
    """A tenant of the test's own on the shared master, so tests never see each other's keys."""
    return "t-" + uuid.uuid4().hex[:12]


@pytest.fixture
def client(master, tenant):
    import mcctl
    with mcctl.Client(master=master.address, tenant=tenant) as c:
        yield c


def standin() -> str:
    if not os.path.isfile(STANDIN):
        pytest.fail(f"the USRBIO stand-in {STANDIN} is missing: the storage module's build compiles it (mvn -B verify, or "
                    f"mvn -pl storage generate-test-resources)")
    return STANDIN


@pytest.fixture(params=["posix", "usrbio"])
def io(request) -> str:
    """The IO a test's client moves bytes through: tests that take it run over POSIX and over USRBIO (the stand-in)."""
    return request.param


def io_options(io: str) -> dict:
    """The Client arguments for ``io``."""
    return {"io": io, "usrbio_library": standin()} if io == "usrbio" else {"io": io}


@pytest.fixture
def io_client(master, tenant, io):
    """A client of the shared master whose bucket-file bytes move through ``io``."""
    import mcctl
    with mcctl.Client(master=master.address, tenant=tenant, **io_options(io)) as c:
        assert c.io_mode == io, c.io_reason
        yield c


def run_cli(*args: str, timeout: float = 60) -> subprocess.CompletedProcess:
    """Runs the mcctl CLI from the jar to completion."""
    return subprocess.run(java_command(*args), capture_output=True, timeout=timeout, env=clean_env())


def free_port() -> int:
    """A loopback port nothing listens on (bound, then released)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]
