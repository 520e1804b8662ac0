"""The embedding model a team store's vectors belong to: recorded once, refused otherwise."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

from captain_memo.errors import StoreError, TeamModelMismatchError
from captain_memo.store.postgres.schema import MIGRATION_LOCK


class ModelBinding:
    """The model checks of a team store (mixed into ``TeamStore``, which supplies the queries).

    The first vectors record the model and its dimension (the store's definer functions, which run
    as its owner because they set the vector column's type and build the HNSW index). The owner
    records them directly; a member only with the vectors it saves, in the same transaction, whose
    dimension is the one recorded (``captain_memo_bind_saved_model``): ``bind_model`` then only
    notes the model, and ``vectors_written`` records it around the first write of vectors. A client
    with another model is refused for the vector leg and for new vectors only: the team's keywords
    still answer, and its text is stored for keyword search, to get vectors from a client with the
    team's model.
    """

    path: str
    _bound: tuple[str, int] | None
    _unbound_model: tuple[str, int] | None = None  # what this member's first vectors will record

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
        """Record the model with the first vectors (the owner at once; a member with the vectors it
        saves next); refuse another model or dimension afterwards."""
        self.check_model(model_id)
        bound = self.bound_model()
        if bound is None:
            if not self.one("SELECT has_function_privilege('captain_memo_bind_model(text, integer)', 'EXECUTE')")[0]:
                self._unbound_model = (model_id, dim)
                return
            bound = self._recorded(self.one("SELECT captain_memo_bind_model(%s, %s)", (model_id, dim))[0])
            self.check_model(model_id)
        self._check_dim(bound, model_id, dim)

    def _recorded(self, stored: str) -> tuple[str, int]:
        model, _, dims = stored.rpartition("/")
        self._bound = (model, int(dims))
        return self._bound

    def _check_dim(self, bound: tuple[str, int], model_id: str, dim: int) -> None:
        if bound[1] != dim:
            raise self._mismatch(f"holds {bound[1]}-d vectors but {model_id} now answers {dim}-d ones", model_id)

    def require_bound(self) -> None:
        """Vectors are written only once the model is recorded, or with it (``bind_model`` first)."""
        if self.bound_model() is None and self._unbound_model is None:
            raise StoreError(
                f"the team store {self.path} has no embedding model recorded yet; vectors must come with bind_model"
            )

    @contextmanager
    def vectors_written(self, conn) -> Iterator[None]:
        """Around the writing of vectors in the caller's transaction: when no model is recorded yet,
        record this client's with them, before the transaction commits. The binding's lock is taken
        first, so two members saving their first vectors at once wait in turn instead of each holding
        the table the other's binding must alter."""
        if self.bound_model() is not None:
            yield
            return
        if self._unbound_model is None:
            self.require_bound()
        model_id, dim = self._unbound_model  # type: ignore[misc]
        conn.execute("SELECT pg_advisory_xact_lock(%s)", (MIGRATION_LOCK,))
        if (bound := self.bound_model()) is not None:  # recorded by another client meanwhile
            self.check_model(model_id)
            self._check_dim(bound, model_id, dim)
            yield
            return
        yield
        bound = self._recorded(conn.execute("SELECT captain_memo_bind_saved_model(%s)", (model_id,)).fetchone()[0])
        self.check_model(model_id)
        self._check_dim(bound, model_id, dim)
        self._unbound_model = None
