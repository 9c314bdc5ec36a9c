"""The openai engine's default HTTP client (``http_client="auto"``): httptools unless a
proxy from the environment applies, and every client over TLS to a local https server."""

from __future__ import annotations

import asyncio
import datetime
import ipaddress
import ssl

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from helpers import RawServer, reply
from treeagent.llm import http_clients, make_engine
from treeagent.llm.http_clients import TRANSPORTS, default_client

PROXY_VARS = ("http_proxy", "https_proxy", "all_proxy", "no_proxy")


@pytest.fixture
def no_proxy_env(monkeypatch):
    for name in PROXY_VARS:
        monkeypatch.delenv(name, raising=False)
        monkeypatch.delenv(name.upper(), raising=False)
    return monkeypatch


def test_default_is_httptools_without_a_proxy(no_proxy_env) -> None:
    eng = make_engine("openai", "m", base_urls=["https://api.example.com/v1"])
    assert eng.http_client == "httptools"
    assert default_client(["http://127.0.0.1:8000/v1"]) == "httptools"


@pytest.mark.parametrize(("var", "url", "expected"), [
    ("HTTPS_PROXY", "https://api.example.com/v1", "httpx"),
    ("HTTPS_PROXY", "http://127.0.0.1:8000/v1", "httptools"),  # the proxy is for https only
    ("HTTP_PROXY", "http://gpu1:8000/v1", "httpx"),
    ("ALL_PROXY", "https://api.example.com/v1", "httpx"),
])  # fmt: skip
def test_a_proxy_that_applies_selects_httpx(no_proxy_env, var, url, expected) -> None:
    no_proxy_env.setenv(var, "http://proxy.internal:3128")
    assert default_client([url]) == expected
    assert make_engine("openai", "m", base_urls=[url]).http_client == expected


def test_no_proxy_hosts_keep_httptools(no_proxy_env) -> None:
    no_proxy_env.setenv("HTTPS_PROXY", "http://proxy.internal:3128")
    no_proxy_env.setenv("NO_PROXY", "localhost,127.0.0.1,.internal")
    assert default_client(["https://127.0.0.1:8443/v1", "https://gpu.internal/v1"]) == "httptools"
    assert default_client(["https://127.0.0.1:8443/v1", "https://api.example.com/v1"]) == "httpx"


def test_an_explicit_client_is_kept(no_proxy_env) -> None:
    no_proxy_env.setenv("HTTPS_PROXY", "http://proxy.internal:3128")
    eng = make_engine("openai", "m", base_urls=["https://a.example/v1"], http_client="httptools")
    assert eng.http_client == "httptools"
    with pytest.raises(ValueError, match="http_client must be auto or one of"):
        make_engine("openai", "m", http_client="curl")


def _certificate() -> tuple[bytes, bytes]:
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "127.0.0.1")])
    now = datetime.datetime.now(datetime.UTC)
    cert = (
        x509.CertificateBuilder().subject_name(name).issuer_name(name)
        .public_key(key.public_key()).serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]),
                       critical=False)
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )  # fmt: skip
    key_pem = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                serialization.NoEncryption())  # fmt: skip
    return cert.public_bytes(serialization.Encoding.PEM), key_pem


def tls_server(cert: bytes, key: bytes, tmp_path) -> RawServer:
    """TEST DOUBLE: an https server on 127.0.0.1 answering every POST with one completion
    on a kept-alive connection; records the request heads it decrypted."""
    (tmp_path / "c.pem").write_bytes(cert)
    (tmp_path / "k.pem").write_bytes(key)
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(tmp_path / "c.pem", tmp_path / "k.pem")
    body = b'{"choices": [{"message": {"content": "over tls"}}]}'
    answer = reply(body, "Content-Type: application/json", f"Content-Length: {len(body)}")
    return RawServer(lambda n, on_conn: (answer, False), ssl_context=ctx)


@pytest.mark.parametrize("client", sorted(TRANSPORTS))
def test_every_client_speaks_tls_and_verifies_the_certificate(tmp_path, monkeypatch,
                                                               no_proxy_env, client) -> None:
    cert, key = _certificate()
    server = tls_server(cert, key, tmp_path)
    url = server.endpoint

    async def post() -> tuple:
        t = TRANSPORTS[client](2, 5.0, 5.0)
        try:
            return await t.post(url, {"model": "m"}, {"Authorization": "Bearer k"})
        except t.retry_errors as exc:  # a transport failure the engine would retry
            return (exc,)
        finally:
            await t.aclose()

    try:
        # the system store does not know this certificate: the connection is refused
        refused = asyncio.run(post())
        assert len(refused) == 1 and "CERTIFICATE_VERIFY_FAILED" in repr(refused[0]).upper()
        trusting = ssl.create_default_context(cadata=cert.decode())
        monkeypatch.setattr(http_clients, "_ssl_context", lambda: trusting)
        status, _, text = asyncio.run(post())
    finally:
        server.stop()
    assert status == 200 and "over tls" in text
    assert server.heads and server.heads[-1].startswith("POST /v1/chat/completions HTTP/1.1")
