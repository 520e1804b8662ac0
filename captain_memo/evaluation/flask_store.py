"""The whole-store set: Flask's documentation and its whole git history in one store.

The public sets each hold one kind of text; a user's store holds all of them at once. This set is
made, not copied: Flask's repository is rebuilt from ``../shared/histories/flask.jsonl``
(bench/histories.py), the documentation of ``../shared/histories/flask-docs/`` is put in its
``docs/``, and both go through the normal indexing paths (``index_paths`` for the docs, one memory
per section; ``index_history`` for every commit, one observation each). The questions below were
written by hand; each names what answers it by file and heading path (``docs/quickstart.rst#Quickstart >
Routing``, the section memory's source path and title) or by commit (``commit:`` and the first 10
characters of its sha), never by copied text.

Four kinds of question (``category``):

- ``how-to``: what a Flask user asks, in a user's words; answered by the doc sections that explain it.
- ``name``: a name from the API reference; answered by the section documenting it and the guide
  section that explains it.
- ``change``: what changed when; answered by the commit (found in the history by its subject).
- ``no answer``: no text of the store answers it. Right is to say so: the answer says no memory
  names the asked name, or its best hit is farther in meaning than ``NO_MATCH_COSINE``.

``flask_docs`` is the same store without the history, asked the how-to and name questions only:
the figure the whole store is held against.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from captain_memo.errors import InputError
from captain_memo.evaluation.data import Dataset, Query

SET_NAMES = ("flask_store", "flask_docs")
HISTORY = "histories/flask.jsonl"
DOCS = "histories/flask-docs"
# A best hit whose cosine to the question is under this is no answer (all-MiniLM-L6-v2: unrelated
# texts sit at 0-0.15, the answers of this set's how-to questions at 0.45-0.75).
NO_MATCH_COSINE = 0.3

D = "docs/"


def _doc(path: str, *headings: str) -> tuple[str, ...]:
    return tuple(f"{D}{path}#{heading}" for heading in headings)


@dataclass(frozen=True)
class Question:
    id: str
    text: str
    category: str  # how-to | name | change | no answer
    answers: tuple[str, ...] = ()


QS = "Quickstart > "
CFG = "Configuration Handling > "
ERR = "Handling Application Errors > "
BP = "Modular Applications with Blueprints > "
TEST = "Testing Flask Applications > "
CTX = "The App and Request Context > "
CLI = "Command Line Interface > "
SEC = "Security Considerations > "
API = "API > "

HOW_TO = (
    (
        "how do I let users upload a file",
        _doc("patterns/fileuploads.rst", "Uploading Files", "Uploading Files > A Gentle Introduction"),
    ),
    (
        "limit how big an uploaded file can be",
        _doc("patterns/fileuploads.rst", "Uploading Files > Improving Uploads")
        + _doc("web-security.rst", SEC + "Resource Use"),
    ),
    (
        "reload the server automatically when I edit code",
        _doc("quickstart.rst", QS + "Debug Mode")
        + _doc("server.rst", "Development Server > Command Line")
        + _doc("cli.rst", CLI + "Run the Development Server")
        + _doc("config.rst", CFG + "Debug Mode"),
    ),
    (
        "show my own page when a URL is not found (404)",
        _doc("errorhandling.rst", ERR + "Custom Error Pages", ERR + "Error Handlers")
        + _doc("quickstart.rst", QS + "Redirects and Errors"),
    ),
    (
        "my API should return errors as JSON instead of HTML",
        _doc("errorhandling.rst", ERR + "Returning API Errors as JSON"),
    ),
    (
        "how do I split a big app into several modules",
        _doc(
            "blueprints.rst", BP + "Why Blueprints?", BP + "My First Blueprint", "Modular Applications with Blueprints"
        )
        + _doc(
            "patterns/packages.rst",
            "Large Applications as Packages",
            "Large Applications as Packages > Simple Packages",
        ),
    ),
    (
        "remember which user is logged in between requests",
        _doc("quickstart.rst", QS + "Sessions") + _doc("tutorial/views.rst", "Blueprints and Views > Login"),
    ),
    ("read settings from environment variables", _doc("config.rst", CFG + "Configuring from Environment Variables")),
    ("run my app with gunicorn in production", _doc("deploying/gunicorn.rst", "Gunicorn", "Gunicorn > Running")),
    (
        "behind nginx my app sees the wrong client IP and builds http links instead of https",
        _doc("deploying/proxy_fix.rst", "Tell Flask it is Behind a Proxy"),
    ),
    (
        "how do I send a fake request to a view in a unit test",
        _doc("testing.rst", TEST + "Sending Requests with the Test Client", "Testing Flask Applications"),
    ),
    (
        "close the database connection when the request is over",
        _doc("patterns/sqlite3.rst", "Using SQLite 3 with Flask")
        + _doc(
            "tutorial/database.rst",
            "Define and Access the Database > Connect to the Database",
            "Define and Access the Database > Register with the Application",
        ),
    ),
    (
        "show the user a one-time message after they submit a form",
        _doc("patterns/flashing.rst", "Message Flashing", "Message Flashing > Simple Flashing")
        + _doc("quickstart.rst", QS + "Message Flashing"),
    ),
    ("add my own subcommand to the flask command", _doc("cli.rst", CLI + "Custom Commands")),
    ("load variables from a .env file automatically", _doc("cli.rst", CLI + "Environment Variables From dotenv")),
    (
        "send a large response piece by piece without holding it all in memory",
        _doc("patterns/streaming.rst", "Streaming Contents", "Streaming Contents > Basic Usage"),
    ),
    (
        "run slow jobs in the background with a task queue",
        _doc(
            "patterns/celery.rst",
            "Background Tasks with Celery",
            "Background Tasks with Celery > Integrate Celery with Flask",
        ),
    ),
    (
        "protect my forms from cross-site request forgery",
        _doc("web-security.rst", SEC + "Cross-Site Request Forgery (CSRF)"),
    ),
    (
        "write one view class and reuse it for several database models",
        _doc("views.rst", "Class-based Views > Basic Reusable View", "Class-based Views"),
    ),
    ("get the values of the query string in a view", _doc("quickstart.rst", QS + "Accessing Request Data")),
    (
        "create the app inside a function so tests can pass their own config",
        _doc("patterns/appfactories.rst", "Application Factories", "Application Factories > Basic Factories")
        + _doc("tutorial/factory.rst", "Application Setup > The Application Factory"),
    ),
    (
        "error: working outside of application context, what does it mean",
        _doc(
            "appcontext.rst",
            CTX + "Purpose of the Context",
            CTX + "Context During Setup",
            CTX + "Context During Testing",
            "The App and Request Context",
        ),
    ),
    ("can my view functions be async def", _doc("async-await.rst", "Using ``async`` and ``await``")),
    ("put an icon in the browser tab for my site", _doc("patterns/favicon.rst", "Adding a favicon")),
    (
        "add a custom filter to use in jinja templates",
        _doc("templating.rst", "Templates > Registering Filters, Tests, and Globals"),
    ),
    (
        "where do css and javascript files go",
        _doc("quickstart.rst", QS + "Static Files") + _doc("tutorial/static.rst", "Static Files"),
    ),
    (
        "email me when the app throws an exception in production",
        _doc("logging.rst", "Logging > Email Errors to Admins")
        + _doc("errorhandling.rst", ERR + "Error Logging Tools"),
    ),
    (
        "only let logged in users see some pages",
        _doc("patterns/viewdecorators.rst", "View Decorators > Login Required Decorator")
        + _doc("tutorial/views.rst", "Blueprints and Views > Require Authentication in Other Views"),
    ),
    (
        "validate the fields of a submitted form",
        _doc(
            "patterns/wtforms.rst",
            "Form Validation with WTForms",
            "Form Validation with WTForms > In the View",
            "Form Validation with WTForms > The Forms",
        ),
    ),
    (
        "set HttpOnly and SameSite on the session cookie",
        _doc("web-security.rst", SEC + "Security Headers") + _doc("config.rst", CFG + "Builtin Configuration Values"),
    ),
)

NAMES = (
    (
        "send_from_directory",
        _doc("api.rst", API + "Useful Functions and Classes")
        + _doc("patterns/fileuploads.rst", "Uploading Files > A Gentle Introduction")
        + _doc("patterns/favicon.rst", "Adding a favicon"),
    ),
    (
        "app_context",
        _doc("appcontext.rst", CTX + "Context During Setup")
        + _doc("testing.rst", TEST + "Tests that depend on an Active Context")
        + _doc("api.rst", API + "Useful Internals"),
    ),
    (
        "url_for",
        _doc("api.rst", API + "Useful Functions and Classes")
        + _doc("quickstart.rst", QS + "Routing")
        + _doc("blueprints.rst", BP + "Building URLs"),
    ),
    (
        "test_request_context",
        _doc("testing.rst", TEST + "Tests that depend on an Active Context")
        + _doc("shell.rst", "Working with the Shell > Creating a Request Context")
        + _doc("appcontext.rst", CTX + "Context During Testing"),
    ),
    (
        "after_this_request",
        _doc("api.rst", API + "Useful Functions and Classes")
        + _doc("patterns/deferredcallbacks.rst", "Deferred Request Callbacks"),
    ),
    (
        "stream_with_context",
        _doc("api.rst", API + "Stream Helpers")
        + _doc("patterns/streaming.rst", "Streaming Contents > Streaming with Context"),
    ),
    (
        "get_flashed_messages",
        _doc("api.rst", API + "Message Flashing")
        + _doc(
            "patterns/flashing.rst", "Message Flashing > Simple Flashing", "Message Flashing > Flashing With Categories"
        ),
    ),
    (
        "render_template_string",
        _doc("api.rst", API + "Template Rendering") + _doc("templating.rst", "Templates > Jinja Setup"),
    ),
    (
        "copy_current_request_context",
        _doc("api.rst", API + "Useful Functions and Classes")
        + _doc("gevent.rst", "Async with Gevent > Enabling gevent"),
    ),
    (
        "MAX_CONTENT_LENGTH",
        _doc("config.rst", CFG + "Builtin Configuration Values")
        + _doc("patterns/fileuploads.rst", "Uploading Files > Improving Uploads")
        + _doc("web-security.rst", SEC + "Resource Use"),
    ),
    (
        "SESSION_COOKIE_SAMESITE",
        _doc("config.rst", CFG + "Builtin Configuration Values") + _doc("web-security.rst", SEC + "Security Headers"),
    ),
    (
        "teardown_appcontext",
        _doc("appcontext.rst", CTX + "Lifecycle of the Context")
        + _doc("tutorial/database.rst", "Define and Access the Database > Register with the Application")
        + _doc("patterns/sqlite3.rst", "Using SQLite 3 with Flask"),
    ),
    ("from_prefixed_env", _doc("config.rst", CFG + "Configuring from Environment Variables")),
    (
        "has_request_context",
        _doc("api.rst", API + "Useful Functions and Classes")
        + _doc("logging.rst", "Logging > Injecting Request Information"),
    ),
    (
        "TRUSTED_HOSTS",
        _doc("config.rst", CFG + "Builtin Configuration Values")
        + _doc("web-security.rst", SEC + "Host Header Validation"),
    ),
    ("test_cli_runner", _doc("testing.rst", TEST + "Running Commands with the CLI Runner", TEST + "Fixtures")),
)

CHANGES = (
    ("which commit deprecated before_first_request", ("commit:96c97dec09",)),
    ("when did the project switch to pyproject.toml", ("commit:6d6d986fc5",)),
    ("the change that dropped support for Python 2.7", ("commit:a0a61acdec",)),
    ("when was the JSON provider interface added", ("commit:69f9845ef2",)),
    ("which commit added the --app and --debug options to the flask command", ("commit:99fa3c36ab",)),
    ("when was FLASK_ENV deprecated", ("commit:ef95998d79",)),
    ("commit that introduced nested blueprints", ("commit:f92e820b4b",)),
    ("when did the project start using ruff for linting and formatting", ("commit:54ff9b2972", "commit:54e05a2824")),
    ("which change deprecated the __version__ attribute", ("commit:293041a290",)),
    ("when was the aborter object added to the app", ("commit:eb5dd9f5ef",)),
    ("commit that added a redirect method to the app", ("commit:fdab801fbb",)),
    ("when did the build backend change to flit", ("commit:f38f3a745a",)),
    ("which commit added support for the SameSite cookie attribute", ("commit:a1d9ebe4ab",)),
    ("the fix for url_prefix of nested blueprints", ("commit:6fbdeb80c7",)),
    ("when were type hints first added to the code", ("commit:77237093da",)),
    ("which commit made trusted_hosts configurable and checked", ("commit:4f7156f2c3",)),
)

NO_ANSWER = (
    "_get_multicapture",
    "register_websocket_route",
    "FLASK_GRAPHQL_SCHEMA",
    "app.run_forever",
    "get_db_pool_size",
    "configure horizontal pod autoscaling in kubernetes",
    "train a convolutional neural network on a gpu",
    "knitting patterns for a wool scarf",
)


def questions() -> tuple[Question, ...]:
    out = [Question(f"howto-{i}", text, "how-to", answers) for i, (text, answers) in enumerate(HOW_TO, 1)]
    out += [Question(f"name-{i}", text, "name", answers) for i, (text, answers) in enumerate(NAMES, 1)]
    out += [Question(f"change-{i}", text, "change", answers) for i, (text, answers) in enumerate(CHANGES, 1)]
    out += [Question(f"none-{i}", text, "no answer") for i, text in enumerate(NO_ANSWER, 1)]
    return tuple(out)


class SetUnavailable(InputError):
    """The data a built-in set is made from is not there."""


def shared_folder(shared: Path) -> Path:
    """``shared`` when it holds Flask's history and docs; SetUnavailable naming what is missing."""
    missing = [part for part in (HISTORY, DOCS) if not (shared / part).exists()]
    if missing:
        names = " and ".join(str(shared / m) for m in missing)
        raise SetUnavailable(
            f"the whole-store sets are made from {names}, {'which are' if len(missing) > 1 else 'which is'} "
            "missing: skipped (pass --shared DIR to name the folder holding histories/)"
        )
    return shared


def label_of(memory, original: dict[str, str]) -> str | None:
    """What a memory is called in the labels: a doc section by path and title, a commit by the sha
    it has in the recorded history (``original``: rebuilt sha -> recorded sha)."""
    if memory.source.commit:
        return f"commit:{original.get(memory.source.commit, memory.source.commit)}"
    if memory.source.path:
        return f"{memory.source.path}#{memory.title}"
    return None


def _resolved(answer: str, labels: set[str]) -> list[str]:
    """A commit label names a sha's start; a doc label must be a section of the store as written."""
    if answer.startswith("commit:"):
        return [label for label in labels if label.startswith(answer)]
    return [answer] if answer in labels else []


@dataclass(frozen=True)
class StoreSet:
    """A set whose store is built by indexing a repository (``build``), not from a corpus file."""

    name: str
    with_history: bool

    def dataset(self, labels: set[str]) -> Dataset:
        """The questions with their answers resolved against the store's labels. A label that names
        nothing in the store is an error: the docs or the history changed under the set."""
        asked = [q for q in questions() if self.with_history or q.category in ("how-to", "name")]
        qrels: dict[str, dict[str, int]] = {}
        for q in asked:
            for answer in q.answers:
                found = _resolved(answer, labels)
                if not found:
                    raise InputError(f"{self.name}: question {q.id} names {answer!r}, which no memory of the store is")
                qrels.setdefault(q.id, {}).update(dict.fromkeys(found, 1))
        queries = tuple(Query(q.id, q.text, None, q.category) for q in asked)
        return Dataset(self.name, (), queries, qrels, grouped=True)

    def build(self, shared: Path, embedder, folder: Path, progress: bool = True):
        """(engine, memory id -> label, dataset) over a new store in ``folder``."""
        from captain_memo.bench.histories import rebuild_mapped
        from captain_memo.evaluation.runner import local_engine
        from captain_memo.sources.git_history import index_history
        from captain_memo.sources.indexer import index_paths

        root = folder / "flask"
        rebuilt = rebuild_mapped(shared / HISTORY, root, folder)
        docs = root / "docs"
        shutil.rmtree(docs, ignore_errors=True)  # the history's placeholder files
        shutil.copytree(shared / DOCS, docs, ignore=shutil.ignore_patterns("LICENSE.txt"))
        engine = local_engine(folder, embedder)
        index_paths(engine, [docs], show_progress=progress)
        if self.with_history:
            index_history(engine, root, show_progress=progress, max_commits=len(rebuilt))
        original = {new: old for old, new in rebuilt.items()}  # labels name the recorded shas
        doc_of = {}
        for memory in engine.store.list_memories(limit=1_000_000):
            label = label_of(memory, original)
            if label is not None:
                doc_of[memory.id] = label
        return engine, doc_of, self.dataset(set(doc_of.values()))


STORE_SETS: dict[str, StoreSet] = {
    "flask_store": StoreSet("flask_store", with_history=True),
    "flask_docs": StoreSet("flask_docs", with_history=False),
}


def builder(name: str, shared: Path) -> Callable:
    """The build function of a built-in set, with its data folder checked first."""
    store_set = STORE_SETS[name]
    folder = shared_folder(shared)
    return lambda embedder, workdir, progress=True: store_set.build(folder, embedder, workdir, progress)
