"""Embedding over HTTP: Ollama (``/api/embed``) and OpenAI-compatible servers (``/v1/embeddings``).

Each embedder owns one ``httpx.Client``, so connections stay open between calls (a cached-miss
query costs one round trip, not a TCP handshake plus one). Texts go out in batches of
``batch_size``. Connection failures, dropped connections, 5xx and 429 answers are retried with
exponential backoff; other 4xx answers are not (asking again gets the same "no"), and neither is a
read timeout (it already cost the whole timeout once; retrying would multiply the user's wait).

Every answer is checked (right count, right dimension, finite) and unit-normalised before anyone
sees it, and every failure is one EmbeddingError naming the endpoint, the model and what went
wrong, never the API key nor a password in the URL (``masked_url``). httpx is imported on first
use only.

The text goes to the named server only: a redirect to another origin (scheme, host, port) is
refused, never followed. Each request has a total deadline (the configured timeout, for all of
its connect, write and reads together: embeddings/deadline.py), and an answer larger than
MAX_ANSWER_BYTES is refused while it is read, never read whole.
"""

from __future__ import annotations

import base64
import json
import logging
import random
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from captain_memo.base.urls import masked_url, url_secrets
from captain_memo.config import EmbedConfig
from captain_memo.embeddings.base import checked_unit_vectors
from captain_memo.errors import ConfigError, EmbeddingError

log = logging.getLogger("captain_memo")

DEFAULT_OLLAMA_URL = "http://127.0.0.1:11434"
DEFAULT_OLLAMA_MODEL = "nomic-embed-text"
# Opening a connection on a LAN takes milliseconds; a server that needs seconds is not there.
CONNECT_TIMEOUT = 5.0
RETRIES = 2
BACKOFF = 0.25  # seconds before the first retry, doubled for each further one
ENCODINGS = ("float", "base64")
SNIPPET = 200  # characters of a bad answer quoted in an error
MAX_RETRY_AFTER = 10.0  # seconds: the longest Retry-After honoured as it is
# The largest answer read: 32 texts of 8,192 dimensions (sqlite-vec's largest) as JSON text take
# about 6 MB; 32 MiB leaves room for large batches and stops a 1 GiB body after 3% of it.
MAX_ANSWER_BYTES = 32 * 1024 * 1024
MAX_REDIRECTS = 3  # within the same origin
REDIRECTS = (301, 302, 303, 307, 308)


def _origin(url) -> tuple:
    return (url.scheme, url.host, url.port)


@dataclass(frozen=True)
class Answer:
    """A response read whole under the size cap."""

    status_code: int
    headers: object  # httpx.Headers: case-insensitive
    content: bytes
    reason_phrase: str

    @property
    def text(self) -> str:
        return self.content.decode("utf-8", "replace")

    def json(self):
        return json.loads(self.content)


class HttpEmbedder:
    """What both providers share: the client, batching, retries, checks and error wording."""

    provider = ""

    def __init__(
        self,
        url: str,
        model: str,
        *,
        api_key: str | None = None,
        batch_size: int = 32,
        timeout: float = 30.0,
        retries: int = RETRIES,
        backoff: float = BACKOFF,
    ):
        url = url.strip().rstrip("/")
        if not url.startswith(("http://", "https://")):
            raise ConfigError(f"embedding URL {masked_url(url)!r} must start with http:// or https://")
        self.shown_url = masked_url(url)  # the only form of the URL ever printed
        if not model or not model.strip():
            raise ConfigError(f"no embedding model named for {self.shown_url}; set CAPTAIN_MEMO_EMBED_MODEL")
        self.url = url
        self._url_secrets = url_secrets(url)
        self.model = model.strip()
        self.model_id = f"{self.provider}:{self.model}"
        self.batch_size = max(1, int(batch_size))
        self.timeout = float(timeout)
        self.retries = max(0, int(retries))
        self.backoff = float(backoff)
        self._api_key = api_key or None
        self._dim: int | None = None
        self._client = None
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return f"{type(self).__name__}(url={self.shown_url!r}, model={self.model!r})"

    # -- the Embedder interface -------------------------------------------------------------

    @property
    def dim(self) -> int:
        """The model's dimension; asks the server once when no vector was seen yet."""
        if self._dim is None:
            self.embed(["dimension"])  # sets _dim, or raises EmbeddingError
        return int(self._dim or 0)

    def expect_dim(self, dim: int) -> None:
        """The dimension the caller's store holds: an answer of another size is then an error."""
        self._dim = int(dim)

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        # Lone surrogates cannot be sent as UTF-8 JSON; they carry no meaning anyway.
        clean = [t.encode("utf-8", "replace").decode("utf-8") for t in texts]
        if not clean:
            return np.zeros((0, self._dim or 0), dtype=np.float32)
        parts = [self._embed_batch(clean[i : i + self.batch_size]) for i in range(0, len(clean), self.batch_size)]
        return np.concatenate(parts)

    # The server sees the text as given; prefixes, where the model wants them, are added before
    # (embeddings/prefixes.py).
    embed_queries = embed

    def close(self) -> None:
        with self._lock:
            if self._client is not None:
                self._client.close()
                self._client = None

    # -- provider hooks ---------------------------------------------------------------------

    def _embed_batch(self, texts: list[str]) -> np.ndarray:
        raise NotImplementedError

    # -- HTTP -------------------------------------------------------------------------------

    @property
    def where(self) -> str:
        return f"{self.shown_url} (model '{self.model}')"

    def _fail(self, what: str) -> EmbeddingError:
        return EmbeddingError(f"{self.where}: {self._scrub(what)}")

    def _scrub(self, text: str) -> str:
        """``text`` without the API key or the URL's credentials, whoever quoted them."""
        text = text.replace(self.url, self.shown_url) if self.url != self.shown_url else text
        for secret in (self._api_key, *self._url_secrets):
            if secret:
                text = text.replace(secret, "***")
        return text

    def _http(self):
        with self._lock:
            if self._client is None:
                import httpx

                # httpx logs every request's full URL at INFO (shown with -v): with a password in it.
                quiet = logging.getLogger("httpx")
                quiet.setLevel(max(quiet.getEffectiveLevel(), logging.WARNING))

                headers = {"User-Agent": "captain-memo"}
                if self._api_key:
                    headers["Authorization"] = f"Bearer {self._api_key}"
                self._client = httpx.Client(
                    timeout=httpx.Timeout(self.timeout, connect=min(CONNECT_TIMEOUT, self.timeout)),
                    headers=headers,
                    follow_redirects=False,
                )
                from captain_memo.embeddings.deadline import install

                if not install(self._client):
                    log.warning("this httpx cannot bound a whole request; each read waits up to %g s", self.timeout)
            return self._client

    def _post(self, path: str, payload: dict):
        """POST with retries; returns the response of any status below 500 (bar 429)."""
        import httpx

        from captain_memo.embeddings.deadline import deadline

        client = self._http()
        body = json.dumps(payload).encode()
        for attempt in range(self.retries + 1):
            last = attempt == self.retries
            asked_wait = None
            try:
                with deadline(self.timeout):
                    response = self._exchange(client, path, body)
            except httpx.ConnectTimeout:
                problem = f"no connection within {min(CONNECT_TIMEOUT, self.timeout):g} s; is the server up?"
            except httpx.ConnectError as exc:
                problem = f"cannot connect ({_reason(exc)}); is the server running?"
            except (httpx.RemoteProtocolError, httpx.ReadError, httpx.WriteError) as exc:
                problem = f"the server dropped the connection ({_reason(exc)})"
            except httpx.TimeoutException:
                raise self._fail(
                    f"no answer from {path} within {self.timeout:g} s (CAPTAIN_MEMO_EMBED_TIMEOUT sets the limit)"
                ) from None
            except httpx.HTTPError as exc:
                raise self._fail(f"request to {path} failed: {_reason(exc)}") from None
            else:
                if response.status_code < 500 and response.status_code != 429:
                    return response
                problem = f"{path} answered {response.status_code}: {_snippet(response.text)}"
                asked_wait = _retry_after(response)
            if last:
                raise self._fail(problem + (f" (after {self.retries + 1} attempts)" if self.retries else ""))
            delay = asked_wait
            if delay is None:
                delay = self.backoff * (2**attempt) * (1 + random.random() / 4)
            log.debug("%s: %s; retrying in %.2f s", self.where, self._scrub(problem), delay)
            time.sleep(delay)
        raise AssertionError("unreachable")

    def _exchange(self, client, path: str, body: bytes) -> Answer:
        """One POST, following redirects within the named origin only, its answer read under the cap."""
        import httpx

        url = httpx.URL(self.url + path)
        for _ in range(MAX_REDIRECTS + 1):
            with client.stream("POST", url, content=body, headers={"Content-Type": "application/json"}) as response:
                if response.status_code not in REDIRECTS or "location" not in response.headers:
                    return Answer(
                        response.status_code,
                        response.headers,
                        self._read_capped(response, path),
                        response.reason_phrase,
                    )
                target = url.join(response.headers["location"])
            if _origin(target) != _origin(url):
                raise self._fail(
                    f"{path} redirected to another server ({masked_url(str(target))}); the text is sent "
                    "only to the server named in CAPTAIN_MEMO_EMBED_URL: name that one if you trust it"
                )
            url = target
        raise self._fail(f"{path} redirected more than {MAX_REDIRECTS} times")

    def _read_capped(self, response, path: str) -> bytes:
        declared = response.headers.get("content-length", "")
        if declared.isdigit() and int(declared) > MAX_ANSWER_BYTES:
            raise self._fail(f"{path} answered with {int(declared):,} bytes; at most {MAX_ANSWER_BYTES:,} are read")
        parts, size = [], 0
        for part in response.iter_bytes():
            size += len(part)
            if size > MAX_ANSWER_BYTES:
                raise self._fail(f"{path} answered with more than {MAX_ANSWER_BYTES:,} bytes; the rest was not read")
            parts.append(part)
        return b"".join(parts)

    def _answer(self, response, path: str) -> dict:
        """The JSON body of a successful answer; a 4xx becomes an error saying what the server said."""
        if response.status_code >= 400:
            raise self._refusal(response, path)
        try:
            data = response.json()
        except ValueError:
            raise self._fail(f"{path} answered with something that is not JSON: {_snippet(response.text)!r}") from None
        if not isinstance(data, dict):
            raise self._fail(f"{path} answered with unexpected JSON: {_snippet(response.text)!r}")
        return data

    def _refusal(self, response, path: str) -> EmbeddingError:
        said = _server_message(response)
        status = response.status_code
        if status in (401, 403):
            hint = "check CAPTAIN_MEMO_EMBED_API_KEY" if self._api_key else "set CAPTAIN_MEMO_EMBED_API_KEY"
            return self._fail(f"the server refused the request ({status}: {said}); {hint}")
        if status == 404 and "model" in said.lower():
            return self._model_missing(said)
        return self._fail(f"{path} refused the request ({status}: {said})")

    def _model_missing(self, said: str) -> EmbeddingError:
        return EmbeddingError(f"model '{self.model}' not found on {self.shown_url} ({self._scrub(said)})")

    def _checked(self, rows, count: int, path: str) -> np.ndarray:
        if not isinstance(rows, list):
            raise self._fail(f"{path} answered without vectors: {_snippet(repr(rows))}")
        if len(rows) != count:
            raise self._fail(f"{path} returned {len(rows)} vectors for {count} texts")
        if self._dim is not None and rows and isinstance(rows[0], (list, np.ndarray)) and len(rows[0]) != self._dim:
            raise self._fail(
                f"vectors have dimension {len(rows[0])} but this store holds {self._dim}-d ones; "
                "if the model changed, run `captain-memo reindex`"
            )
        vectors = checked_unit_vectors(rows, self._dim, self.where)
        if self._dim is None:
            self._dim = int(vectors.shape[1])
        return vectors


class OllamaEmbedder(HttpEmbedder):
    """Ollama's ``/api/embed`` (a batch per call), or ``/api/embeddings`` (one text per call) on
    servers older than the batch endpoint."""

    provider = "ollama"

    def __init__(self, url: str = DEFAULT_OLLAMA_URL, model: str = DEFAULT_OLLAMA_MODEL, **kwargs):
        super().__init__(url, model, **kwargs)
        self._legacy = False

    def _model_missing(self, said: str) -> EmbeddingError:
        return EmbeddingError(
            f"model '{self.model}' not found on {self.shown_url}: run `ollama pull {self.model}`"
            f" (the server said: {self._scrub(said)})"
        )

    def _embed_batch(self, texts: list[str]) -> np.ndarray:
        if not self._legacy:
            response = self._post("/api/embed", {"model": self.model, "input": texts})
            # A missing model is a 404 with a JSON error; a server without the route answers a
            # plain-text 404 ("404 page not found"), and then the older endpoint is used.
            if response.status_code == 404 and not _json_error(response):
                log.info("%s has no /api/embed; using the older /api/embeddings", self.shown_url)
                self._legacy = True
            else:
                return self._checked(self._answer(response, "/api/embed").get("embeddings"), len(texts), "/api/embed")
        rows = []
        for text in texts:
            response = self._post("/api/embeddings", {"model": self.model, "prompt": text})
            rows.append(self._answer(response, "/api/embeddings").get("embedding"))
        return self._checked(rows, len(texts), "/api/embeddings")


class OpenAIEmbedder(HttpEmbedder):
    """Any server with OpenAI's ``POST /v1/embeddings``: llama.cpp, vLLM, LM Studio, LocalAI, a hosted API."""

    provider = "openai"

    def __init__(self, url: str, model: str, *, encoding: str = "float", **kwargs):
        url = url.strip().rstrip("/")
        # Accept the base URL with or without /v1, as OpenAI clients write it.
        super().__init__(url[:-3] if url.endswith("/v1") else url, model, **kwargs)
        if encoding not in ENCODINGS:
            raise ConfigError(f"unknown embedding encoding {encoding!r}; use float or base64")
        self.encoding = encoding

    def _embed_batch(self, texts: list[str]) -> np.ndarray:
        path = "/v1/embeddings"
        response = self._post(path, {"model": self.model, "input": texts, "encoding_format": self.encoding})
        if response.status_code == 404 and not _json_error(response):
            raise self._fail(
                f"no {path} here (404); is this an OpenAI-compatible server? "
                "Give the URL without the path, e.g. http://127.0.0.1:8080"
            )
        items = self._answer(response, path).get("data")
        if not isinstance(items, list) or not all(isinstance(i, dict) for i in items):
            raise self._fail(f"{path} answered without a data list: {_snippet(response.text)!r}")
        # Servers may answer out of order; "index" says which input each vector belongs to.
        if all(isinstance(i.get("index"), int) for i in items):
            items = sorted(items, key=lambda i: i["index"])
        return self._checked([self._decode(i.get("embedding"), path) for i in items], len(texts), path)

    def _decode(self, value, path: str):
        # Decide by what came back, not by what was asked: some servers ignore encoding_format.
        if isinstance(value, str):
            try:
                raw = base64.b64decode(value, validate=True)
            except ValueError:
                raise self._fail(f"{path} sent an embedding that is neither numbers nor base64") from None
            if len(raw) % 4:
                raise self._fail(f"{path} sent {len(raw)} base64 bytes, not a whole number of float32 values")
            return np.frombuffer(raw, dtype="<f4")
        return value


def make_http_embedder(cfg: EmbedConfig) -> HttpEmbedder:
    """The HTTP provider the configuration names; nothing is contacted until the first embed."""
    common = dict(api_key=cfg.api_key, batch_size=cfg.batch_size, timeout=cfg.timeout)
    if cfg.provider == "ollama":
        return OllamaEmbedder(cfg.url or DEFAULT_OLLAMA_URL, cfg.model or DEFAULT_OLLAMA_MODEL, **common)
    if cfg.provider == "openai":
        # No default URL: text leaves the machine only for a server the user named.
        if not cfg.url:
            raise ConfigError(
                "the openai provider needs CAPTAIN_MEMO_EMBED_URL, e.g. http://127.0.0.1:8080 "
                "(llama.cpp) or https://api.openai.com"
            )
        if not cfg.model:
            raise ConfigError(
                f"the openai provider needs CAPTAIN_MEMO_EMBED_MODEL (the model {masked_url(cfg.url)} serves)"
            )
        return OpenAIEmbedder(cfg.url, cfg.model, encoding=cfg.encoding, **common)
    raise ConfigError(f"{cfg.provider!r} is not an HTTP embedding provider; use ollama or openai")


def _reason(exc: Exception) -> str:
    text = str(exc) or type(exc).__name__
    # "[Errno 111] Connection refused" reads better as "connection refused".
    if text.startswith("[Errno"):
        text = text.split("]", 1)[-1].strip()
    return text[:1].lower() + text[1:]


def _retry_after(response) -> float | None:
    """The wait a 429 or 503 asks for in Retry-After (seconds form only), capped at MAX_RETRY_AFTER."""
    try:
        seconds = float(response.headers.get("Retry-After", ""))
    except ValueError:
        return None
    return min(max(seconds, 0.0), MAX_RETRY_AFTER)


def _snippet(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= SNIPPET else text[:SNIPPET] + "..."


def _json_error(response) -> str | None:
    """The error message of a JSON error body, else None."""
    try:
        data = response.json()
    except ValueError:
        return None
    if not isinstance(data, dict):
        return None
    error = data.get("error", data.get("detail", data.get("message")))
    if isinstance(error, dict):
        error = error.get("message")
    return str(error) if error else None


def _server_message(response) -> str:
    return _json_error(response) or _snippet(response.text) or response.reason_phrase or "no details"
