"""One TLS context per process for every HTTP client fitsync makes.

httpx builds a new context for each client it creates, loading certifi's whole CA bundle each time: about 45 ms on
two slow cores, paid by every command, every OAuth exchange and every token refresh's client. One context serves them
all (OpenSSL shares a context between connections and threads); it follows SSL_CERT_FILE / SSL_CERT_DIR as httpx's
own does.
"""

from __future__ import annotations

import functools
import ssl

import httpx


@functools.cache
def context() -> ssl.SSLContext:
    """The process's TLS context: certifi's bundle, or the one SSL_CERT_FILE / SSL_CERT_DIR names (read once)."""
    return httpx.create_ssl_context()
