"""The few failures Captain Memo expects; each becomes one readable message at the edge."""


class CaptainMemoError(Exception):
    """Base class: an expected failure with a message meant for the user."""


class ConfigError(CaptainMemoError):
    """A setting is missing or cannot be used."""


class InputError(CaptainMemoError):
    """Input the user gave cannot be stored or searched as it is."""


class RequestCancelledError(CaptainMemoError):
    """The client withdrew a call before its write was made: nothing was stored."""


class StoreError(CaptainMemoError):
    """The database cannot be opened, read or written."""


class DatabaseDamagedError(StoreError):
    """The database file is not a usable Captain Memo database."""


class ReadOnlyStoreError(StoreError):
    """The database can be read but not written by this user (file or folder permissions, a
    read-only mount): a permission to change, not damage."""


class ForeignDatabaseError(StoreError):
    """The file is another application's database; it is left untouched."""


class DuplicateKeyError(StoreError):
    """A memory with the same source key is stored already (another writer saved it meanwhile)."""


class ModelMismatchError(StoreError):
    """The store was embedded with another model than the one configured now."""


class NotFoundError(CaptainMemoError):
    """No memory has the id that was asked for."""


class EmbeddingError(CaptainMemoError):
    """The embedding provider failed or answered with something unusable."""


class RecallError(CaptainMemoError):
    """Both search legs failed, so no honest result can be given."""


class TeamModelMismatchError(ModelMismatchError, EmbeddingError):
    """The team store's vectors come from another model: its vector leg and new vectors are
    refused, its keywords still answer and new text is stored for keyword search."""


class UnknownRequestError(CaptainMemoError):
    """A process serving the store was sent a request it does not answer (the editor's, sent to a
    service started from the shell)."""
