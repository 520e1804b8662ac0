"""The machinery that holds one engine per store and serves it: the socket server and its client,
the agents' relay, the hand-over between the shell's service and the editor's host, and the warm
memo they share. See doc/service.md."""
