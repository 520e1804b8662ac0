"""Neovim remote plugin for Captain Memo: hands each request to ``captain_memo.editor`` and sends the
answer back to the Lua side (``lua/captain_memo/bridge.lua``).

Nothing from captain_memo is imported until the first request, so starting the host stays cheap.
"""

import pynvim

RECEIVE = "require('captain_memo.bridge').receive(...)"
_plugins = []  # this host's plugin objects, for loop_ended


def loop_ended():
    """Neovim is gone: its host's loop returned when its stdin closed (lua/captain_memo/host.lua
    calls this then). Only an explicit shutdown request runs the shutdown hook, and atexit comes
    after the interpreter has shut every thread pool: the stores' engines stop serving here, while
    the calls they took can still finish, so agents' relays carry the rest to the next engine."""
    for plugin in _plugins:
        plugin.shutdown()


@pynvim.plugin
class CaptainMemoPlugin:
    def __init__(self, nvim):
        self.nvim = nvim
        self._service = None
        _plugins.append(self)

    # Async: Neovim must not wait for a search or a save. The request only enters the service's
    # queue; its answer comes back through _deliver from the worker thread.
    @pynvim.function("CaptainMemoRequest", sync=False)
    def request(self, args):
        try:
            service = self._get_service()
        except ImportError as exc:  # the host's Python lacks the package: say so, not a traceback
            self._push(
                {
                    "id": args[0].get("id"),
                    "op": args[0].get("op"),
                    "ok": False,
                    "error": f"the host's Python cannot import the captain_memo package ({exc}); run :CaptainMemo build",
                }
            )
            return
        service.submit(args[0])

    @pynvim.shutdown_hook
    def shutdown(self):
        service, self._service = self._service, None
        if service is not None:
            service.close()

    def _get_service(self):
        if self._service is None:
            from captain_memo.editor import EditorService

            # The editor's host serves each store's engine to the command line and agents.
            self._service = EditorService(self._deliver, serve=True)
        return self._service

    def _deliver(self, reply):
        # Called from the worker thread: the API may only be used from the host's loop.
        self.nvim.async_call(self._push, reply)

    def _push(self, reply):
        self.nvim.exec_lua(RECEIVE, reply, async_=True)
