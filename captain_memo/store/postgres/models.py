"""The embedding model a team store's vectors belong to: recorded once, refused otherwise."""

from __future__ import annotations

from typing import TYPE_CHECKING

from captain_memo.errors import StoreError, TeamModelMismatchError


class ModelBinding:
    """The model checks of a team store (mixed into ``TeamStore``, which supplies the queries).

    The first vectors record the model and its dimension (``captain_memo_bind_model``, which runs
    as the store's owner because it sets the vector column's type and builds the HNSW index). A
    client with another model is refused for the vector leg and for new vectors only: the team's
    keywords still answer, and its text is stored for keyword search, to get vectors from a client
    with the team's model.
    """

    path: str
    _bound: tuple[str, int] | None

    if TYPE_CHECKING:

        def one(self, sql: str, params=()): ...

    def bound_model(self) -> tuple[str, int] | None:
        """(model, dimension) recorded in the store, None before its first vector. Cached once
        known: a team store's model is never changed in place."""
        if self._bound is None:
            row = self.one(
                "SELECT max(value) FILTER (WHERE key = 'embed_model'), max(value) FILTER (WHERE key = 'embed_dim')"
                " FROM team_meta"
            )
            if row and row[0] is not None:
                self._bound = (row[0], int(row[1]))
        return self._bound

    def has_vectors(self) -> bool:
        return self.bound_model() is not None

    def check_model(self, model_id: str) -> None:
        bound = self.bound_model()
        if bound is not None and bound[0] != model_id:
            raise self._mismatch(f"holds vectors of {bound[0]} but this client's embedder is {model_id}", bound[0])

    def _mismatch(self, what: str, model: str) -> TeamModelMismatchError:
        return TeamModelMismatchError(
            f"the team store {self.path} {what}: its meaning search is off for this client and recall "
            f"uses its keywords; set CAPTAIN_MEMO_EMBED_PROVIDER / CAPTAIN_MEMO_EMBED_MODEL to {model}, the "
            "team's model, to search it by meaning"
        )

    def bind_model(self, model_id: str, dim: int) -> None:
        """Record the model with the first vectors; refuse another model or dimension afterwards."""
        self.check_model(model_id)
        bound = self.bound_model()
        if bound is None:
            stored = self.one("SELECT captain_memo_bind_model(%s, %s)", (model_id, dim))[0]
            model, _, dims = stored.rpartition("/")
            self._bound = bound = (model, int(dims))
            self.check_model(model_id)
        if bound[1] != dim:
            raise self._mismatch(f"holds {bound[1]}-d vectors but {model_id} now answers {dim}-d ones", model_id)

    def require_bound(self) -> None:
        """Vectors are written only once the model is recorded (the column has its dimension)."""
        if self.bound_model() is None:
            raise StoreError(
                f"the team store {self.path} has no embedding model recorded yet; vectors must come with bind_model"
            )
