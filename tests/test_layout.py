"""The package's layout, as the measure-family issue set it: a measure is defined in its family's
module, no other module dispatches on a family's name, modules and functions stay small, no
import cycle, and no module reaches for another module's private names."""
from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from ndcg_plugin.measures import families, measures
from tests.conftest import ROOT

PACKAGE = ROOT / "ndcg_plugin"
MODULES = sorted(PACKAGE.rglob("*.py"))
FAMILY_MODULES = {PACKAGE / "measures" / f"{f.name}.py" for f in families()}


def _name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _tree(path: Path) -> ast.Module:
    return ast.parse(path.read_text(), str(path))


@pytest.mark.parametrize("measure", [m.NAME for m in measures()])
def test_each_measure_name_appears_in_at_most_three_modules(measure):
    # its family's module, the package's exports, and at most one more
    found = [p.relative_to(PACKAGE).as_posix() for p in MODULES if re.search(rf"\b{measure}\b", p.read_text())]
    assert len(found) <= 3, found
    assert any(PACKAGE / f in FAMILY_MODULES for f in found), found


def _dispatches(tree: ast.Module, family_names: set[str]) -> list[tuple[int, str]]:
    """Comparisons of a ``.family`` or ``.variant`` with a string, and family names compared or used
    as dict keys (a dispatch table)."""
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Compare):
            operands = [node.left, *node.comparators]
            elements = [e for op in operands
                        for e in (op.elts if isinstance(op, (ast.Tuple, ast.List, ast.Set)) else [op])]
            strings = [e for e in elements if isinstance(e, ast.Constant) and isinstance(e.value, str)]
            on_spec = any(isinstance(op, ast.Attribute) and op.attr in ("family", "variant") for op in operands)
            out += [(e.lineno, e.value) for e in strings if on_spec or e.value in family_names]
        elif isinstance(node, ast.Dict):
            out += [(k.lineno, k.value) for k in node.keys
                    if isinstance(k, ast.Constant) and k.value in family_names]
    return out


def test_no_module_outside_a_family_module_dispatches_on_a_family_or_variant_name():
    names = {f.name for f in families()}
    offending = []
    for path in MODULES:
        if path not in FAMILY_MODULES:
            found = _dispatches(_tree(path), names)
            offending += [f"{path.relative_to(PACKAGE)}:{line} {value!r}" for line, value in found]
    assert not offending, offending


def test_the_dispatch_check_can_fail():
    code = 'if spec.family == "ndcg":\n    pass\nx = m.variant in ("exp", "linear")\nTABLE = {"mrr": 1, "query": 2}\n'
    assert [v for _, v in _dispatches(ast.parse(code), {"ndcg", "mrr"})] == ["ndcg", "exp", "linear", "mrr"]


@pytest.mark.parametrize("path", MODULES, ids=lambda p: p.relative_to(PACKAGE).as_posix())
def test_modules_and_functions_are_small(path):
    text = path.read_text()
    assert text.count("\n") <= 450
    long = [f"{node.name} ({node.end_lineno - node.lineno + 1} lines)" for node in ast.walk(_tree(path))
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.end_lineno - node.lineno + 1 > 60]
    assert not long


def _imports(path: Path) -> set[str]:
    """The package modules ``path`` imports (at module level or inside functions)."""
    here = _name(path).split(".")
    package = here if path.name == "__init__.py" else here[:-1]
    known = {_name(p) for p in MODULES}
    out = set()
    for node in ast.walk(_tree(path)):
        if isinstance(node, ast.ImportFrom):
            base = node.module.split(".") if node.module else []
            if node.level:
                base = package[: len(package) - node.level + 1] + base
            prefix = ".".join(base)
            for alias in node.names:
                target = f"{prefix}.{alias.name}"
                out.add(target if target in known else prefix)
        elif isinstance(node, ast.Import):
            out.update(a.name for a in node.names)
    return {m for m in out if m in known and m != _name(path)}


def test_no_import_cycle():
    graph = {_name(p): _imports(p) for p in MODULES}
    state: dict[str, int] = {}
    cycles = []

    def visit(node, trail):
        state[node] = 1
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == 1:
                cycles.append(trail[trail.index(nxt):] + [nxt])
            elif nxt not in state:
                visit(nxt, trail + [nxt])
        state[node] = 2

    for node in sorted(graph):
        if node not in state:
            visit(node, [node])
    assert not cycles, cycles


#: names that begin with an underscore and are documented, public functions of the standard library
PUBLIC_UNDERSCORED = {"os._exit"}


def _private_uses(path: Path) -> list[str]:
    """``from x import _y`` and ``module._y`` where ``module`` is an imported module's name (but not
    :data:`PUBLIC_UNDERSCORED`)."""
    tree = _tree(path)
    modules, out = set(), []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            out += [f"{path.name}:{node.lineno} {a.name}" for a in node.names
                    if a.name.startswith("_") and not a.name.startswith("__")]
            modules.update(a.asname or a.name for a in node.names)
        elif isinstance(node, ast.Import):
            modules.update((a.asname or a.name).split(".")[0] for a in node.names)
    for node in ast.walk(tree):
        if (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in modules
                and node.attr.startswith("_") and not node.attr.startswith("__")
                and f"{node.value.id}.{node.attr}" not in PUBLIC_UNDERSCORED):
            out.append(f"{path.name}:{node.lineno} {node.value.id}.{node.attr}")
    return out


def test_no_module_or_test_uses_another_modules_private_names():
    tests = sorted((ROOT / "tests").glob("*.py"))
    found = [use for p in [*MODULES, *tests] for use in _private_uses(p)]
    assert not found, found


# The package's layers, lowest first: a module may import modules of its own folder (or itself, at
# the root) and of any lower layer, never of its own layer's other members or of a higher one. A
# folder is one node; a module at the package root is one node.
LAYERS = [
    {"errors", "version", "formatting", "sizes", "interrupts"},  # names every module shares, how a number prints,
                                                                # block sizes, Ctrl-C while the command starts
    {"arrays"},                                # column helpers, a block of rows and its codes, exact sums, the C loops
    {"reading", "ranking"},                    # every input to columns; a run ranked as trec_eval ranks it
    {"measures"},                              # specifications, the families, values and aggregators
    {"engine", "datasets", "docs", "routing"},  # blocks evaluated, streamed; ir-datasets; the docs page; who
                                                 # computes each measure
    {"evaluation", "spark"},                   # the one evaluation path; the same measures on Spark
    {"provider", "compare", "reproduce", "trec_eval"},  # what is built on an Evaluation
    {"__init__", "cli"},                       # the public API; the command line (the only exit codes)
    {"__main__"},
]
ROOT_MODULE_LIMIT = 10  # modules at the package root besides __init__ and __main__


def _node(module: str) -> str:
    parts = module.split(".")
    return "__init__" if len(parts) == 1 else parts[1]


def _upward_imports(graph: dict[str, set[str]]) -> list[str]:
    level = {name: i for i, layer in enumerate(LAYERS) for name in layer}
    out = []
    for module, targets in sorted(graph.items()):
        here = _node(module)
        for target in sorted(targets):
            there = _node(target)
            if there != here and not level[there] < level[here]:
                out.append(f"{module} -> {target} ({here} is layer {level[here]}, {there} layer {level[there]})")
    return out


def test_every_module_belongs_to_a_layer():
    level = {name for layer in LAYERS for name in layer}
    assert sorted({_node(_name(p)) for p in MODULES} - level) == []


def test_no_import_runs_upward_or_sideways():
    assert _upward_imports({_name(p): _imports(p) for p in MODULES}) == []


def test_the_layer_check_can_fail():
    graph = {"ndcg_plugin.arrays.columns": {"ndcg_plugin.reading.lines"},  # upward
             "ndcg_plugin.reading.lines": {"ndcg_plugin.ranking.ranked"},  # sideways, one layer
             "ndcg_plugin.engine.block": {"ndcg_plugin.engine.stream", "ndcg_plugin.errors"}}  # allowed
    assert [line.split(" (")[0] for line in _upward_imports(graph)] == [
        "ndcg_plugin.arrays.columns -> ndcg_plugin.reading.lines",
        "ndcg_plugin.reading.lines -> ndcg_plugin.ranking.ranked"]


def test_few_modules_at_the_package_root():
    root = sorted(p.name for p in PACKAGE.glob("*.py") if p.name not in ("__init__.py", "__main__.py"))
    assert len(root) <= ROOT_MODULE_LIMIT, root


def _namespace_uses(tree: ast.Module) -> list[str]:
    """Imports of argparse, and parameters that take an argparse Namespace: annotated with a
    ``Namespace`` (a name, an attribute or a string), or left unannotated under the names the
    command line gives one (``args``, ``namespace``)."""
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out += [f"{node.lineno} import {a.name}" for a in node.names if a.name.split(".")[0] == "argparse"]
        elif isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] == "argparse":
            out.append(f"{node.lineno} from argparse import {', '.join(a.name for a in node.names)}")
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            a = node.args
            for arg in [*a.posonlyargs, *a.args, *a.kwonlyargs]:
                shown = ast.unparse(arg.annotation) if arg.annotation is not None else ""
                if "Namespace" in shown or (not shown and arg.arg in ("args", "namespace")):
                    out.append(f"{node.lineno} parameter {arg.arg}{': ' + shown if shown else ''}")
    return out


def test_the_argparse_namespace_stops_in_the_cli_layer():
    # below ndcg_plugin/cli/ every command's code takes typed options (frozen dataclasses), never
    # argparse or its Namespace
    found = [f"{p.relative_to(PACKAGE)}:{use}" for p in MODULES if p.relative_to(PACKAGE).parts[0] != "cli"
             for use in _namespace_uses(_tree(p))]
    assert not found, found


def test_the_namespace_check_can_fail():
    code = ("import argparse\nfrom argparse import Namespace\n"
            "def files(args, measures):\n    pass\n"
            "def check(opts: argparse.Namespace) -> None:\n    pass\n"
            "def later(opts: 'Namespace', namespace, args: list) -> None:\n    pass\n")
    assert _namespace_uses(ast.parse(code)) == [
        "1 import argparse", "2 from argparse import Namespace", "3 parameter args",
        "5 parameter opts: argparse.Namespace", "7 parameter opts: 'Namespace'", "7 parameter namespace"]


def _shadowed(init: ast.Module, submodules: set[str]) -> list[str]:
    """Names a package's ``__init__`` defines (functions, classes, assignments) that are also the
    names of its submodules: importing the submodule replaces the package's attribute."""
    defined = {node.name for node in init.body if isinstance(node, (ast.FunctionDef, ast.ClassDef))}
    defined |= {t.id for node in init.body if isinstance(node, ast.Assign) for t in node.targets
                if isinstance(t, ast.Name)}
    return sorted(defined & submodules)


def test_no_package_defines_a_name_its_submodule_has():
    # reproduce/table.py once replaced reproduce.table(), the documented function, when imported
    found = []
    for init in PACKAGE.rglob("__init__.py"):
        subs = {p.stem for p in init.parent.glob("*.py") if p.name != "__init__.py"}
        subs |= {p.name for p in init.parent.iterdir() if (p / "__init__.py").exists()}
        found += [f"{init.parent.relative_to(PACKAGE)}.{n}" for n in _shadowed(_tree(init), subs)]
    assert not found, found


def test_the_shadow_check_can_fail():
    init = ast.parse("def table():\n    pass\nclass runs:\n    pass\nlists = 1\nother = 2\n")
    assert _shadowed(init, {"table", "runs", "lists", "scores"}) == ["lists", "runs", "table"]


def _documented_layers(text: str) -> list[set[str]]:
    """The layers table of docs/architecture.md: per row, the folders and root modules it names."""
    rows = re.findall(r"^\| (\d+) \| ([^|]+) \|", text, flags=re.M)
    return [{name.rstrip("/").removesuffix(".py") for name in re.findall(r"`([^`]+)`", names)} for _, names in rows]


def test_the_architecture_page_lists_the_layers_the_test_checks():
    page = (ROOT / "docs" / "architecture.md").read_text()
    assert _documented_layers(page) == LAYERS


def test_the_layers_table_reader_can_fail():
    table = "| 0 | `errors.py`, `arrays/` | x |\n| 1 | `cli/` | y |\n"
    assert _documented_layers(table) == [{"errors", "arrays"}, {"cli"}]


# Values computed once for a block of rows travel with it (ndcg_plugin.arrays.block.Block), not as
# loose parameters handed from function to function: at most this many functions take each.
CARRIED = ("groups", "doc_fp", "docs_fp", "q_codes", "q_map", "counts")
CARRIED_LIMIT = 3


def _takers(trees: dict[str, ast.Module], names: tuple[str, ...]) -> dict[str, list[str]]:
    """{name: the functions (``module:line function``) with a parameter of that name}."""
    out: dict[str, list[str]] = {name: [] for name in names}
    for module, tree in trees.items():
        for node in ast.walk(tree):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
                a = node.args
                for arg in [*a.posonlyargs, *a.args, *a.kwonlyargs, *filter(None, (a.vararg, a.kwarg))]:
                    if arg.arg in out:
                        out[arg.arg].append(f"{module}:{node.lineno} {getattr(node, 'name', 'lambda')}")
    return out


def test_few_functions_take_a_precomputed_value_of_a_block_as_a_parameter():
    found = _takers({_name(p): _tree(p) for p in MODULES}, CARRIED)
    assert {name: places for name, places in found.items() if len(places) > CARRIED_LIMIT} == {}


def test_the_parameter_count_can_fail():
    code = ("def a(groups, doc_fp=None): pass\ndef b(x, *, groups): pass\nf = lambda groups: groups\n"
            "class C:\n    def m(self, groups, counts): pass\n")
    found = _takers({"m": ast.parse(code)}, ("groups", "doc_fp", "counts", "q_map"))
    assert {name: len(places) for name, places in found.items()} == {"groups": 4, "doc_fp": 1, "counts": 1,
                                                                       "q_map": 0}
    assert found["groups"] == ["m:1 a", "m:2 b", "m:3 lambda", "m:5 m"]
