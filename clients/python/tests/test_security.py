"""mcctl.Client over TLS with a bearer token, against a real master that wants both."""

from __future__ import annotations

import hashlib
import os
import subprocess

import pytest

import mcctl

from conftest import Master

TOKEN_A = "py-token-of-tenant-a"
TOKEN_ADMIN = "py-token-of-the-admin"


def openssl(cwd: str, *args: str) -> None:
    done = subprocess.run(["openssl", *args], cwd=cwd, capture_output=True, timeout=60)
    assert done.returncode == 0, done.stderr.decode()


@pytest.fixture(scope="module")
def certs(tmp_path_factory):
    """A CA and a master certificate for 127.0.0.1, made by openssl here (P-256 keys, PKCS#8)."""
    d = str(tmp_path_factory.mktemp("certs"))
    ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"]
    openssl(d, "req", "-x509", *ec, "-keyout", "ca.key", "-out", "ca.pem", "-days", "2", "-subj", "/CN=py-test-ca",
            "-addext", "basicConstraints=critical,CA:TRUE", "-addext", "keyUsage=critical,keyCertSign,cRLSign")
    openssl(d, "req", "-x509", *ec, "-keyout", "other.key", "-out", "other.pem", "-days", "2", "-subj", "/CN=other-ca",
            "-addext", "basicConstraints=critical,CA:TRUE", "-addext", "keyUsage=critical,keyCertSign,cRLSign")
    with open(os.path.join(d, "server.ext"), "w") as f:
        f.write("subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth\n")
    openssl(d, "req", "-new", *ec, "-keyout", "server.key", "-out", "server.csr", "-subj", "/CN=master")
    openssl(d, "x509", "-req", "-in", "server.csr", "-CA", "ca.pem", "-CAkey", "ca.key", "-CAcreateserial", "-out", "server.pem",
            "-days", "2", "-extfile", "server.ext")
    return d


@pytest.fixture(scope="module")
def secured(tmp_path_factory, certs):
    d = tmp_path_factory.mktemp("secured")
    tokens = d / "tokens.yaml"
    tokens.write_text("tokens:\n"
                      f"  - name: py-a\n    sha256: {hashlib.sha256(TOKEN_A.encode()).hexdigest()}\n    tenants: [a]\n"
                      f"  - name: py-ops\n    sha256: {hashlib.sha256(TOKEN_ADMIN.encode()).hexdigest()}\n    role: admin\n"
                      f"    tenants: ['*']\n")
    m = Master(str(d / "root"), "--tls-cert", os.path.join(certs, "server.pem"), "--tls-key", os.path.join(certs, "server.key"),
               "--tokens-file", str(tokens))
    yield m
    m.close()


def test_put_and_get_over_tls_with_a_token(secured, certs):
    with mcctl.Client(master=secured.address, tenant="a", tls_ca=os.path.join(certs, "ca.pem"), token=TOKEN_A) as c:
        c.put("k1", b"over tls")
        assert c.get("k1") == b"over tls"
        assert c.list_keys() == ["k1"]


def test_another_tenant_is_refused_and_nothing_changes(secured, certs):
    ca = os.path.join(certs, "ca.pem")
    with mcctl.Client(master=secured.address, tenant="b", tls_ca=ca, token=TOKEN_A) as other:
        with pytest.raises(mcctl.AccessDenied) as refused:
            other.list_keys()
        assert "PERMISSION_DENIED" in str(refused.value) and "may not use tenant 'b'" in str(refused.value)
        with pytest.raises(mcctl.McctlError, match="PERMISSION_DENIED"):  # per-key outcome: INTERNAL_ERROR, as Mooncake has no code for it
            other.put("k2", b"not mine")
        assert other.batch_put_from(["k3"], [b"x"]) == [mcctl.errors.INTERNAL_ERROR]
    with mcctl.Client(master=secured.address, tenant="b", tls_ca=ca, token=TOKEN_ADMIN) as admin:
        assert admin.list_keys() == []  # tenant b has nothing: neither refused put allocated or committed a key


def test_no_token_or_an_unknown_one_is_unauthenticated(secured, certs):
    ca = os.path.join(certs, "ca.pem")
    for token in (None, "nobody-issued-this"):
        env = os.environ.pop("MCCTL_TOKEN", None)
        try:
            with pytest.raises(mcctl.AccessDenied) as refused:
                mcctl.Client(master=secured.address, tenant="a", tls_ca=ca, token=token)
        finally:
            if env is not None:
                os.environ["MCCTL_TOKEN"] = env
        assert "UNAUTHENTICATED" in str(refused.value)


def test_a_client_that_does_not_trust_the_master_cannot_connect(secured, certs):
    with pytest.raises(mcctl.MasterUnavailable):
        mcctl.Client(master=secured.address, tenant="a", tls_ca=os.path.join(certs, "other.pem"), token=TOKEN_A, timeout=5)


def test_bad_tls_arguments_are_one_clear_error(certs):
    with pytest.raises(mcctl.InvalidParams, match="tls_cert and tls_key go together"):
        mcctl.Client(master="127.0.0.1:1", tls_ca=os.path.join(certs, "ca.pem"), tls_cert=os.path.join(certs, "server.pem"))
    with pytest.raises(mcctl.InvalidParams, match="tls_ca .* cannot be read"):
        mcctl.Client(master="127.0.0.1:1", tls_ca="/nonexistent/ca.pem")
    with pytest.raises(mcctl.InvalidParams, match="token is empty"):
        mcctl.Client(master="127.0.0.1:1", token=" ")
