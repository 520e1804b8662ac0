"""Shared leaf modules: paths, git, secrets, checks, terminal text. They import nothing of the
project above them (only base/, records, config, errors), and this file imports nothing, so the
thin command line pays for only what it uses."""
