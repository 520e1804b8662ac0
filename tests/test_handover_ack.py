"""A service hands its socket to an editor only when the editor took it: one whose claim gave up
(its wait ran out) just as the service answered leaves the service serving, instead of a store
nobody serves while the service finishes its calls and exits.

Real processes: the shell's `captain-memo` commands and the service they start. The claim that
gives up is the test speaking the hand-over request itself and closing the connection once the
answer is there, unread: a real editor's host meets that only on a machine too loaded to answer in
time, which a test cannot make on demand."""

from __future__ import annotations

import json
import select
import socket
from pathlib import Path

from embed_support import cli
from service_support import status, wait_for

from captain_memo.hosting.build import build_id, code_id


def test_a_service_whose_claimant_gave_up_before_taking_the_socket_serves_on(service_env):
    assert cli("remember", "Invoices are rounded half-even.", env=service_env).returncode == 0
    first = status(service_env)
    log = Path(first["socket"]).with_suffix(".log")
    request = {"op": "handover", "ack": True, "build": build_id(), "code": code_id()}
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as claimant:
        claimant.connect(first["socket"])
        claimant.sendall(json.dumps(request).encode() + b"\n")
        assert select.select([claimant], [], [], 30)[0], "the service answered"
    # Closed unread: the socket and lock it was passed are closed with it.
    said = ("serving on", "handed the socket")
    assert wait_for(lambda: any(words in log.read_text() for words in said), 30), log.read_text()
    assert "handed the socket" not in log.read_text(), log.read_text()
    found = cli("recall", "how are invoices rounded", env=service_env)
    assert found.returncode == 0 and "half-even" in found.stdout, found.stderr
    assert "running" not in found.stderr, found.stderr
    assert status(service_env)["pid"] == first["pid"]
