"""The warm service: one process per store that keeps the engine (model, in-memory index) loaded
so the command line answers in milliseconds; see doc/service.md."""
