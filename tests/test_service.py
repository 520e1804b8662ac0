"""The warm service behind `recall` and `remember` (captain_memo/hosting/, captain_memo/hosting/warm_memo.py).

Real child processes throughout: `captain-memo` commands, the service they start, and the local
model behind a real HTTP server on 127.0.0.1 (service_support.py).
"""

from __future__ import annotations

import json
import os
import signal
import socket
import stat
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from embed_support import MODEL, REPO, cli, provider_env, stop_server
from reliability_support import agreement, assert_consistent
from service_support import alive, status, wait_for

from captain_memo.base import runtime_folder
from captain_memo.embeddings.http_server import EmbeddingServer, serve_in_thread

HEAVY = ("numpy", "onnxruntime", "sqlite3", "sqlean", "sqlite_vec", "git", "httpx", "tokenizers")


def socket_of(env: dict):
    return runtime_folder.socket_path(env["CAPTAIN_MEMO_DB"], {**os.environ, **env})


def run_in_child(code: str, env: dict) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-c", code], env={**os.environ, **env}, capture_output=True, text=True, timeout=120, cwd=REPO
    )


def test_recall_and_remember_through_the_service_import_nothing_heavy(service_env):
    assert cli("remember", "The zanzibar cache key includes the tenant id.", env=service_env).returncode == 0
    for argv in (["recall", "zanzibar tenant"], ["remember", "a second note on the zanzibar cache"]):
        probe = (
            f"import sys\nfrom captain_memo.cli.main import main\ncode = main({argv!r})\n"
            f"print('HEAVY', [m for m in {HEAVY!r} if m in sys.modules])\nsys.exit(code)"
        )
        done = run_in_child(probe, service_env)
        assert done.returncode == 0, done.stderr
        assert "HEAVY []" in done.stdout, done.stdout
        assert "zanzibar" in done.stdout or "remembered #2" in done.stdout
    assert status(service_env)["requests"] >= 3


def test_the_service_starts_on_first_use_and_exits_when_idle(service_env, gate):
    """Given a second to live, the service is held busy by the gate while it is looked at (on a busy
    machine a command can take longer than a second to start), then left idle: it exits."""
    env = {
        **service_env,
        **provider_env("openai", f"http://127.0.0.1:{gate.server.server_address[1]}", MODEL),
        "CAPTAIN_MEMO_SERVICE_IDLE": "1",
    }
    path = socket_of(env)
    saved = cli(
        "remember",
        "--title",
        "Invoices",
        "The invoice builder rounds once, on the total.",
        env={**env, "CAPTAIN_MEMO_SERVICE": "0"},
    )
    assert saved.returncode == 0 and "remembered #1" in saved.stdout, saved.stderr
    assert not path.exists()
    gate.arm(0)
    with ThreadPoolExecutor(2) as shell:
        try:
            finding = shell.submit(cli, "recall", "invoice rounding", env=env)  # the first use starts it
            assert gate.reached.wait(60), "the service embeds the query"
            assert stat.S_IMODE(path.stat().st_mode) == 0o600 and stat.S_IMODE(path.parent.stat().st_mode) == 0o700
            pid = status(env)["pid"]
            saving = shell.submit(cli, "remember", "the invoice total is rounded half-even", env=env)
            assert wait_for(lambda: status(env)["clients"].get("cli") == 2, 60), "the same service takes both"
        finally:
            gate.release()
        found, saved = finding.result(), saving.result()
    assert "#1 [memory] Invoices" in found.stdout and "legs: vector + keyword" in found.stdout, found.stderr
    assert saved.returncode == 0 and "remembered #2" in saved.stdout, saved.stderr
    assert wait_for(lambda: not alive(pid) and not path.exists()), "the service did not exit when idle"


def test_stop_and_opting_out(service_env):
    assert cli("remember", "the nightly export runs at two", env=service_env).returncode == 0
    pid = status(service_env)["pid"]
    stopped = cli("service", "stop", env=service_env)
    assert f"stopped the service (pid {pid})" in stopped.stdout
    assert wait_for(lambda: not alive(pid))
    for how in ({"CAPTAIN_MEMO_SERVICE": "0"}, {}):
        argv = ("recall", "nightly export") if how else ("--no-service", "recall", "nightly export")
        done = cli(*argv, env={**service_env, **how})
        assert "the nightly export runs at two" in done.stdout
    assert status(service_env) == {"running": False}


def test_a_socket_folder_open_to_others_is_refused(service_env):
    folder = runtime_folder.runtime_dir({**os.environ, **service_env})
    folder.mkdir(mode=0o755)
    os.chmod(folder, 0o755)
    done = cli("remember", "kept even without the service", env=service_env)
    assert done.returncode == 0 and "remembered #1" in done.stdout
    assert "open to others" in done.stderr and "running without the service" in done.stderr
    assert not list(folder.iterdir())


@pytest.mark.skipif(os.getuid() != 0, reason="giving a file to another user needs root")
def test_another_users_socket_is_refused(service_env):
    path = socket_of(service_env)
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        listener.bind(str(path))
        listener.listen(1)
        os.chown(path, 65534, 65534)
        done = cli("remember", "never sent to a stranger's socket", env=service_env)
        assert done.returncode == 0 and "remembered #1" in done.stdout
        assert "belongs to user id 65534" in done.stderr
        listener.setblocking(False)
        with pytest.raises(BlockingIOError):
            listener.accept()  # nobody connected to it
    finally:
        listener.close()
        path.unlink()


def test_a_killed_service_is_replaced_by_the_next_command(service_env):
    assert cli("remember", "The webhook retries three times.", env=service_env).returncode == 0
    first = status(service_env)["pid"]
    os.kill(first, signal.SIGKILL)
    assert wait_for(lambda: not alive(first))
    assert socket_of(service_env).exists()  # left behind by the killed process
    found = cli("recall", "webhook retries", env=service_env)
    assert found.returncode == 0 and "The webhook retries three times." in found.stdout
    assert "running without" not in found.stderr
    second = status(service_env)["pid"]
    assert second != first and alive(second)


def test_the_service_never_answers_with_a_model_other_than_the_stores(service_env, local_embedder):
    other = EmbeddingServer(local_embedder, "other-model", "127.0.0.1", 0, None)
    serve_in_thread(other)
    try:
        old = service_env
        new = {**service_env, **provider_env("openai", other.url, "other-model")}
        assert cli("remember", "parse_config reads settings.yaml once.", env=old).returncode == 0
        assert "legs: vector + keyword" in cli("recall", "parse_config", env=old).stdout
        assert status(old)["model"].endswith(":all-MiniLM-L6-v2-int8")

        reindexed = cli("reindex", env=new)
        assert reindexed.returncode == 0, reindexed.stderr
        # The running service was opened on the old model: it must refuse, as a cold run does.
        warm, cold = cli("recall", "parse_config", env=old), cli("--no-service", "recall", "parse_config", env=old)
        assert warm.returncode == cold.returncode == 1
        assert warm.stderr == cold.stderr and "other-model" in warm.stderr and "reindex" in warm.stderr
        assert status(old)["model"] is None  # it holds no engine on the old model any more
        # With the store's model configured, that configuration's service answers.
        found = cli("recall", "parse_config", env=new)
        assert "legs: vector + keyword" in found.stdout and "parse_config reads" in found.stdout
        assert status(new)["model"] == "openai:other-model"
    finally:
        stop_server(other)


@pytest.mark.slow
def test_writers_through_the_service_cold_and_in_an_editor_host_lose_nothing(service_env, monkeypatch):
    """Two commands using the service, one without, and an editor-host engine write at once."""
    from captain_memo.memo import Memo

    writer = (
        "import sys\nfrom captain_memo.cli.main import main\n"
        "for i in range(5):\n    assert main(sys.argv[1:-1] + ['remember', f'{sys.argv[-1]} note {i}']) == 0"
    )
    children = [
        subprocess.Popen(
            [sys.executable, "-c", writer, *flags, name],
            env={**os.environ, **service_env},
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
            cwd=REPO,
        )
        for flags, name in (([], "warmone"), ([], "warmtwo"), (["--no-service"], "coldone"))
    ]
    for name, value in service_env.items():
        monkeypatch.setenv(name, value)
    from captain_memo.records import NewMemory, RecallRequest

    editor = Memo.open(service_env["CAPTAIN_MEMO_DB"], warm=True)
    try:
        for i in range(5):
            editor.remember(NewMemory(body=f"editorhost note {i}"))
        for child in children:
            assert child.wait(timeout=180) == 0, child.stderr.read()
        # Every write is there once; the service sees the cold and editor writes, vectors included.
        for name in ("warmone", "warmtwo", "coldone", "editorhost"):
            found = json.loads(cli("recall", "--json", "-n", "20", f"{name} note", env=service_env).stdout)
            assert found["legs"] == ["vector", "keyword"]
            assert sum(h["text"].startswith(f"{name} note") for h in found["hits"]) == 5, name
        for name in ("warmtwo", "coldone"):  # the editor host's in-memory index sees the others' writes
            seen = editor.recall(RecallRequest(f"{name} note", limit=20, all_projects=True, record=False))
            assert seen.legs == ("vector", "keyword")
            assert sum(h.text.startswith(f"{name} note") and h.vector is not None for h in seen.hits) == 5
    finally:
        editor.close()
    report = agreement(service_env["CAPTAIN_MEMO_DB"])
    assert_consistent(report)
    assert report["memories"] == report["distinct_hashes"] == 20 and report["pending"] == 0


def test_a_checkout_in_the_working_folder_is_not_what_the_service_runs(service_env, tmp_path):
    """`python -m` puts the working folder first on sys.path; the service must not import from it."""
    script = Path(sys.executable).with_name("captain-memo")
    if not script.exists():
        pytest.skip("needs the installed captain-memo script")
    decoy = tmp_path / "checkout" / "captain_memo"
    decoy.mkdir(parents=True)
    (decoy / "__init__.py").write_text("raise ImportError('the checkout in the working folder was imported')\n")
    run = subprocess.run(
        [str(script), "remember", "saved from inside another checkout"],
        cwd=decoy.parent,
        env={**os.environ, **service_env},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert run.returncode == 0 and "remembered #1" in run.stdout, run.stderr
    assert status(service_env)["requests"] >= 1


def test_a_relative_database_path_is_the_callers(service_env, tmp_path):
    env = {**os.environ, **{k: v for k, v in service_env.items() if k != "CAPTAIN_MEMO_DB"}}
    env.pop("CAPTAIN_MEMO_DB", None)
    work = tmp_path / "work"
    work.mkdir()
    outputs = []
    for argv in (["remember", "kept beside the caller"], ["recall", "kept beside the caller"]):
        done = subprocess.run(
            [sys.executable, "-m", "captain_memo.cli.main", "--db", "mine.db", *argv],
            cwd=work,
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert done.returncode == 0, done.stderr
        outputs.append(done.stdout)
    assert "remembered #1" in outputs[0]
    assert "#1 [memory] kept beside the caller" in outputs[1] and "legs: vector + keyword" in outputs[1]
    assert (work / "mine.db").exists()


def test_credentials_are_checked_the_same_through_the_service(service_env):
    token = "ghp_" + "a1B2c3D4e5" * 4
    text = f"deploy with {token} on friday"
    warm, cold = cli("remember", text, env=service_env), cli("--no-service", "remember", text, env=service_env)
    assert warm.returncode == cold.returncode == 1
    assert warm.stderr == cold.stderr and "GitHub token" in warm.stderr and "--allow-secrets" in warm.stderr
    allowed = cli("remember", "--allow-secrets", text, env=service_env)
    assert allowed.returncode == 0 and "remembered #1" in allowed.stdout
    assert "warning: storing a credential as it is" in allowed.stderr
    assert status(service_env)["requests"] >= 2


def installed_copy(tmp_path) -> Path:
    """A second installation of the package: a copy of it in its own folder."""
    import shutil

    root = tmp_path / "site"
    shutil.copytree(REPO / "captain_memo", root / "captain_memo", ignore=shutil.ignore_patterns("__pycache__"))
    return root


def command_in(cwd: Path, env: dict):
    """`captain-memo ARGV` run from ``cwd``: `-m` imports the package found there first."""

    def run(*argv: str) -> subprocess.CompletedProcess:
        return subprocess.run(
            [sys.executable, "-m", "captain_memo.cli.main", *argv],
            env={**os.environ, **env},
            cwd=cwd,
            capture_output=True,
            text=True,
            timeout=120,
        )

    return run


def test_after_an_upgrade_in_place_the_old_service_steps_down(service_env, tmp_path):
    """An installation of the package in its own folder starts the service; then its code changes
    in place, as `pip install -U` replaces files. The next command is answered by a new service of
    the new code, and the old one exits instead of answering until it idles out."""
    install = installed_copy(tmp_path)
    command = command_in(tmp_path, {**service_env, "PYTHONPATH": str(install)})
    assert command("remember", "The ledger closes at midnight UTC.").returncode == 0
    old = json.loads(command("service", "status", "--json").stdout)
    assert old["package"] == str(install / "captain_memo")

    upgraded = install / "captain_memo" / "base" / "units.py"
    upgraded.write_text(upgraded.read_text(encoding="utf-8") + "\n# 2.0\n", encoding="utf-8")
    later = os.stat(upgraded).st_mtime_ns + 10**9
    os.utime(upgraded, ns=(later, later))
    found = command("recall", "ledger closes")
    assert found.returncode == 0 and "ledger closes at midnight" in found.stdout, found.stderr
    assert "running without" not in found.stderr
    assert wait_for(lambda: not alive(old["pid"]))
    new = json.loads(command("service", "status", "--json").stdout)
    assert new["pid"] != old["pid"] and new["requests"] >= 1


def test_two_installations_of_the_same_code_share_one_service(service_env, tmp_path):
    """The installed package and another installation of the same code (the editor plugin's own
    environment, say; here a copy run from its folder so `-m` imports it) use the same store in
    turn: one service, started once, answers both, and neither makes it step down."""
    copy = installed_copy(tmp_path)
    installed, from_copy = command_in(tmp_path, service_env), command_in(copy, service_env)
    assert installed("remember", "The ledger closes at midnight UTC.").returncode == 0
    for _ in range(2):
        for command in (from_copy, installed):
            done = command("recall", "ledger closes")
            assert done.returncode == 0 and "ledger closes at midnight" in done.stdout, done.stderr
            assert "running" not in done.stderr, done.stderr
    mine = json.loads(installed("service", "status", "--json").stdout)
    theirs = json.loads(from_copy("service", "status", "--json").stdout)
    assert mine["pid"] == theirs["pid"] and mine["package"] == str(REPO / "captain_memo")
    # Never restarted: every request so far (a remember, four recalls, two statuses) went to it.
    assert theirs["requests"] == 7


def test_an_installation_of_other_code_makes_the_service_step_down(service_env, tmp_path):
    """A copy whose code differs (another release): its command is answered by a service of its
    own code, and the old one exits rather than answer with code the command does not run."""
    copy = installed_copy(tmp_path)
    changed = copy / "captain_memo" / "base" / "units.py"
    changed.write_text(changed.read_text(encoding="utf-8") + "\n# another release\n", encoding="utf-8")
    installed, from_copy = command_in(tmp_path, service_env), command_in(copy, service_env)
    assert installed("remember", "The ledger closes at midnight UTC.").returncode == 0
    old = json.loads(installed("service", "status", "--json").stdout)
    done = from_copy("recall", "ledger closes")
    assert done.returncode == 0 and "ledger closes at midnight" in done.stdout, done.stderr
    assert wait_for(lambda: not alive(old["pid"]))
    new = json.loads(from_copy("service", "status", "--json").stdout)
    assert new["package"] == str(copy / "captain_memo") and new["pid"] != old["pid"]


def test_the_wait_for_the_service_to_take_a_request_is_a_setting_that_picks_no_other_service(tmp_path):
    assert runtime_folder.accept_seconds({}) == runtime_folder.DEFAULT_ACCEPT == 5.0
    assert runtime_folder.accept_seconds({"CAPTAIN_MEMO_SERVICE_ACCEPT": "1.5"}) == 1.5
    for bad in ("soon", "0", "-2"):
        assert runtime_folder.accept_seconds({"CAPTAIN_MEMO_SERVICE_ACCEPT": bad}) == 5.0
    db = tmp_path / "memo.db"
    assert runtime_folder.service_key(db, {"CAPTAIN_MEMO_SERVICE_ACCEPT": "1"}) == runtime_folder.service_key(db, {})


def serve_until_it_ends(tmp_path, monkeypatch, embedder, request: bytes) -> list[dict]:
    """A service in this process whose idle check is an hour away, sent ``request``: the lines it
    answered; AssertionError if its accept loop is still running a minute later."""
    import threading

    from captain_memo.hosting import socket_server
    from captain_memo.memo import Memo

    monkeypatch.setattr(socket_server, "ACCEPT_POLL", 3600.0)
    path = tmp_path / "memo.sock"
    with Memo(tmp_path / "memo.db", embedder) as memo:
        service = socket_server.Service(path, tmp_path / "memo.db", idle=float("inf"), memo=memo)
        loop = threading.Thread(target=service.serve, args=(socket_server.listen(path),), daemon=True)
        loop.start()
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
            sock.settimeout(30)
            sock.connect(str(path))
            sock.sendall(request)
            answers = [json.loads(line) for line in sock.makefile("rb")]
        loop.join(timeout=60)
        assert not loop.is_alive(), "the service still waits for its idle check"
    return answers


def test_a_stop_request_ends_the_service_at_once_not_at_its_next_idle_check(tmp_path, monkeypatch, hash_embedder):
    """The accept loop checks for idleness every ACCEPT_POLL seconds; a stop wakes it, so the service
    exits (and its socket and lock are free) without waiting out the check, here an hour away."""
    stopped = serve_until_it_ends(tmp_path, monkeypatch, hash_embedder, b'{"op": "stop"}\n')[-1]
    assert stopped["ok"] and stopped["result"]["pid"] == os.getpid()
    assert not (tmp_path / "memo.sock").exists()


def test_a_service_asked_by_other_code_steps_down_at_once(tmp_path, monkeypatch, hash_embedder):
    """As a stop does: the accept loop is woken, not left to its idle check (here an hour away)."""
    request = b'{"op": "status", "build": "another release", "code": "other code"}\n'
    refused = serve_until_it_ends(tmp_path, monkeypatch, hash_embedder, request)[0]
    assert refused["stale"] and not refused["accepted"] and not (tmp_path / "memo.sock").exists()
