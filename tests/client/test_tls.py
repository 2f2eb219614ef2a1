"""The process's one TLS context (client/tls.py): every HTTP client fitsync makes shares it, and it follows the
certificate settings httpx's own does."""

from __future__ import annotations

import ssl
from collections.abc import Iterator
from typing import Any

import certifi
import pytest

from fitsync.client import tls
from fitsync.client.transport import Transport


@pytest.fixture
def contexts_made(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[dict[str, Any]]]:
    """Each TLS context made from here on (its arguments), with the process's context made anew."""
    made: list[dict[str, Any]] = []
    create = ssl.create_default_context

    def counted(*args: Any, **kwargs: Any) -> ssl.SSLContext:
        made.append(kwargs)
        return create(*args, **kwargs)

    monkeypatch.setattr(ssl, "create_default_context", counted)
    tls.context.cache_clear()
    yield made
    tls.context.cache_clear()


def test_clients_share_one_context_made_once(contexts_made: list[dict[str, Any]], sb: Any) -> None:
    transports = [Transport(None) for _ in range(3)]
    try:
        # a plain-HTTP request through one of them works as before (the sandbox: http on loopback)
        assert transports[0].http.get(sb.server.base_url + "/sandbox/health").status_code == 200
    finally:
        for transport in transports:
            transport.close()
    assert len(contexts_made) == 1


def test_the_context_follows_ssl_cert_file(
    contexts_made: list[dict[str, Any]], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("SSL_CERT_DIR", raising=False)
    monkeypatch.setenv("SSL_CERT_FILE", certifi.where())
    Transport(None).close()
    assert contexts_made == [{"cafile": certifi.where()}]
    monkeypatch.delenv("SSL_CERT_FILE")
    monkeypatch.setenv("SSL_CERT_DIR", "/etc/ssl/certs")
    tls.context.cache_clear()
    Transport(None).close()
    assert contexts_made[-1] == {"capath": "/etc/ssl/certs"}
