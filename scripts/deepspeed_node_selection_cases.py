#!/usr/bin/env python3
"""Writes tests/configs/data/deepspeed_node_selection.json: hostfiles and --include/--exclude/
--num_nodes/--num_gpus selections run through DeepSpeed's own runner functions (_parse_hostfile,
parse_inclusion_exclusion, apply_num_nodes_and_gpus), with their results or error messages, so
configs/node_selection.cpp is checked against DeepSpeed itself (tests/configs/hostfile_test.cpp).

Usage: DS_ACCELERATOR=cpu ~/.cache/shardscope/venv/bin/python scripts/deepspeed_node_selection_cases.py
"""
import json
import os
import sys

os.environ.setdefault("DS_ACCELERATOR", "cpu")
import deepspeed  # noqa: E402
from deepspeed.launcher import runner  # noqa: E402

POOL = "worker-0 slots=4\nworker-1 slots=4\n# a comment\n\n   worker-2 slots=2   # trailing words are ignored\n"
SELECTIONS = [
    {},
    {"include": "worker-0@worker-1:0,2"},
    {"include": "worker-1:3,1@worker-1:0"},
    {"include": "worker-2@worker-0:1"},
    {"exclude": "worker-1:0"},
    {"exclude": "worker-0@worker-2:1"},
    {"exclude": "worker-2"},
    {"include": "worker-9"},
    {"include": "worker-2:5"},
    {"exclude": "worker-9:0"},
    {"num_nodes": 2},
    {"num_gpus": 2},
    {"num_nodes": 1, "num_gpus": 1},
    {"include": "worker-0", "exclude": "worker-1"},
    {"include": "worker-0", "num_nodes": 1},
    {"exclude": "worker-0", "num_gpus": 1},
]
BAD_HOSTFILES = [
    "worker-0 slots=4\nworker-0 slots=2\n",
    "worker-0 slots=4\nworker-1 slot=4\n",
    "worker-0\n",
    "# only a comment\n\n",
]


def select(pool_text, selection):
    include = selection.get("include", "")
    exclude = selection.get("exclude", "")
    num_nodes = selection.get("num_nodes", -1)
    num_gpus = selection.get("num_gpus", -1)
    pool = runner._parse_hostfile(pool_text.splitlines(keepends=True))
    # The check runner.main() makes before it filters.
    if (num_nodes >= 0 or num_gpus >= 0) and (include != "" or exclude != ""):
        raise ValueError("Cannot specify num_nodes/gpus with include/exclude")
    active = runner.parse_inclusion_exclusion(pool, include, exclude)
    active = runner.apply_num_nodes_and_gpus(active, num_nodes, num_gpus)
    return [[host, list(slots)] for host, slots in active.items()]


def case(pool_text, selection):
    entry = {"hostfile": pool_text, "selection": selection}
    try:
        entry["nodes"] = select(pool_text, selection)
    except ValueError as error:
        entry["error"] = str(error)
    return entry


def main():
    cases = [case(POOL, s) for s in SELECTIONS] + [case(text, {}) for text in BAD_HOSTFILES]
    out = {"deepspeed": deepspeed.__version__, "cases": cases}
    path = os.path.join(os.path.dirname(__file__), "..", "tests", "configs", "data", "deepspeed_node_selection.json")
    with open(path, "w") as f:  # one case per line, so a regenerated file diffs by case
        f.write('{"deepspeed": %s, "cases": [\n' % json.dumps(out["deepspeed"]))
        f.write(",\n".join(json.dumps(c) for c in cases))
        f.write("\n]}\n")
    print(f"wrote {len(cases)} cases from DeepSpeed {deepspeed.__version__} to {os.path.normpath(path)}", file=sys.stderr)


if __name__ == "__main__":
    main()
