"""One declaration of what each request takes: the MCP tools' inputSchema is made from it, and the
parser every front end goes through refuses exactly what it shows the client as out of bounds."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from captain_memo.base import fields
from captain_memo.errors import InputError
from captain_memo.mcpserver.tools import TOOLS, checked_arguments
from captain_memo.requests import operations, tool_arguments

PACKAGE = Path(__file__).resolve().parent.parent / "captain_memo"
# The least each tool takes; every case below changes one argument of it.
VALID = {"recall": {"query": "q"}, "remember": {"text": "t"}, "show": {"id": "1"}, "supersede": {"old": "1"}}
VALID["forget"] = {"id": "1"}
WRONG_TYPE = {"string": 7, "integer": "7", "boolean": "yes", "number": "7"}


def beyond(name: str, spec: dict) -> list[tuple[object, object]]:
    """(a value at each bound the schema shows, the value one step beyond it) for ``spec``."""
    cases: list[tuple[object, object]] = []
    if "minimum" in spec:
        cases.append((spec["minimum"], spec["minimum"] - 1))
    if "maximum" in spec:
        cases.append((spec["maximum"], spec["maximum"] + 1))
    if "maxLength" in spec:
        cases.append(("x" * spec["maxLength"], "x" * (spec["maxLength"] + 1)))
    if spec.get("minLength") == 1:
        cases.append(("x", ""))
    if "enum" in spec:
        cases += [(choice, choice + "-not") for choice in spec["enum"]]
    if "pattern" in spec:  # a memory id: 19 digits at most, "t" for a team memory, no 0 first
        cases += [("1" + "0" * 18, "1" + "0" * 19), ("t1", "t0"), ("t1", "1t")]
    return cases


SCHEMA_CASES = [
    pytest.param(tool, name, at, past, id=f"{tool}.{name}={str(past)[:12]}")
    for tool in TOOLS
    for name, spec in TOOLS[tool].input_schema["properties"].items()
    for at, past in beyond(name, spec)
]


@pytest.mark.parametrize("tool, name, at, past", SCHEMA_CASES)
def test_each_bound_the_schema_shows_is_taken_and_one_step_beyond_it_refused(tool, name, at, past):
    args = {**VALID[tool], name: at}
    if name == "line_end":
        args["line_start"] = 1
    assert checked_arguments(TOOLS[tool], args)[name] == at
    with pytest.raises(InputError, match=f"^{tool}: {name} (must|is)"):
        checked_arguments(TOOLS[tool], {**VALID[tool], name: past})


def test_every_argument_is_bounded_typed_and_defaulted_as_shown():
    assert len(SCHEMA_CASES) > 20
    for tool in TOOLS.values():
        schema = tool.input_schema
        assert schema["additionalProperties"] is False
        with pytest.raises(InputError, match=f"^{tool.name}: unknown argument 'verbose'; it takes "):
            checked_arguments(tool, {**VALID[tool.name], "verbose": True})
        for name in schema["required"]:
            with pytest.raises(InputError, match=f"^{tool.name}: {name} is required$"):
                checked_arguments(tool, {k: v for k, v in VALID[tool.name].items() if k != name})
        taken = checked_arguments(tool, VALID[tool.name])
        for name, spec in schema["properties"].items():
            assert taken.get(name, VALID[tool.name].get(name)) == spec.get("default", VALID[tool.name].get(name))
            assert spec["description"], f"{tool.name}.{name} says nothing to the model"
            if "pattern" not in spec:
                with pytest.raises(InputError, match=f"^{tool.name}: {name} must be "):
                    checked_arguments(tool, {**VALID[tool.name], name: WRONG_TYPE[spec["type"]]})
            if spec["type"] == "string" and "maxLength" not in spec and "enum" not in spec:
                assert "pattern" in spec, f"{tool.name}.{name} has no bound on its length"
            if spec["type"] == "integer":
                assert "minimum" in spec and "maximum" in spec, f"{tool.name}.{name} is unbounded"


@pytest.mark.parametrize(
    "name, at, past", [(n, a, p) for n, s in fields.RECALL_FIELDS.items() for a, p in beyond(n, s)]
)
def test_every_front_ends_recall_request_refuses_one_step_beyond_its_bounds(name, at, past):
    """The command line, the service's socket, the hook, the editor and the agents' recall all
    become an operations.RecallRequest through from_json, against fields.RECALL_FIELDS."""
    request = {"query": "q", "cwd": "/"}
    assert operations.RecallRequest.from_json({**request, name: at})._asdict()[name] == at
    with pytest.raises(InputError, match=f"^recall: {name} "):
        operations.RecallRequest.from_json({**request, name: past})


def test_what_an_agent_may_ask_fits_inside_every_recall_request():
    """A recall the tool takes is never refused when it becomes the engine's request."""
    agent, request = tool_arguments.ARGUMENTS["recall"], fields.RECALL_FIELDS
    for name in ("query", "limit"):
        assert agent[name].rule.get("maxLength", 0) <= request[name].get("maxLength", 0)
        assert agent[name].rule.get("maximum", 0) <= request[name].get("maximum", 0)
    assert agent["limit"].rule["maximum"] == tool_arguments.MAX_RECALL_LIMIT == 50
    assert request["limit"]["maximum"] == fields.MAX_HITS


# Where a front end's request is made: each goes through operations.RecallRequest.from_json (or
# operations.recall_in), never building the engine's record, or the request record, by hand.
FRONT_ENDS = ("cli", "editor", "mcpserver", "hook", "hosting", "requests")


def test_no_front_end_builds_a_recall_request_by_hand():
    built = []
    for folder in FRONT_ENDS:
        for path in sorted((PACKAGE / folder).rglob("*.py")):
            if path == PACKAGE / "requests" / "operations.py":
                continue  # the parser itself
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                if isinstance(node, ast.Call):
                    func = node.func
                    name = func.id if isinstance(func, ast.Name) else getattr(func, "attr", "")
                    if name == "RecallRequest":
                        built.append(f"{path.relative_to(PACKAGE)}:{node.lineno}")
    assert built == []


def test_a_memorys_resource_uri_takes_every_id_the_tools_take():
    """The URI's pattern took 18 digits while the tools' ids take 19: one pattern now."""
    from captain_memo.mcpserver.mcp_server import MEMORY_URI

    for memory_id in ("1", "t12", str(fields.MAX_ID), "1" + "0" * 18):
        assert MEMORY_URI.match(f"captain-memo://memory/{memory_id}")[1] == memory_id
        assert checked_arguments(TOOLS["forget"], {"id": memory_id})["id"] == memory_id
    for wrong in ("0", "1" + "0" * 19, "12:310", "t", "12a"):
        assert MEMORY_URI.match(f"captain-memo://memory/{wrong}") is None
