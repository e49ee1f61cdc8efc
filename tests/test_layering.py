"""One pipeline, one direction: a stage of generator/ imports from model/ and from stages below it.

Imports are read with ast (module-level and the lazy ones inside functions). A stage never imports
a stage of the same rank (sideways) or above it, nor a private (_name) from another stage. Within
the package no modules import one another in a circle, no module is over MAX_LINES lines, and no
workload recipe imports another recipe. `python tests/test_layering.py` prints which stage imports which.
"""

from __future__ import annotations

import ast
import shutil
import sys
from collections import defaultdict
from pathlib import Path
from typing import Iterator, NamedTuple

GENERATOR = Path(__file__).resolve().parents[1] / "generator"

# Rank of each subpackage: it may import ranks below its own. Equal ranks are unrelated stages.
RANK = {
    "model": 0,  # the contract, shared by every stage
    "formats": 1, "einsum": 1,  # foreign dialects; the cascade format
    "load": 2,
    "validate": 3, "workloadgen": 3, "definitions": 3,  # definitions: sibling families rendered from tables
    "bench": 4,
    "analyse": 5, "contenders": 5,  # contenders: the generated solutions (probe traces with the bench's inputs)
    "site": 6, "export": 6,
    "kit": 7,  # the GPU kit runs before any wheel is installed: it imports no stage (test_the_kit_needs_only_the_standard_library)
}
TOP = 7  # cli.py, __main__.py and the package root: they call every stage
# The bench's rooms, its trust boundary (generator/bench/__init__.py): shared/ imports neither of the others, and
# sandboxed/ (inside the sandbox, open to the solution) and trusted/ never import each other.
BENCH_RANK = {"shared": 0, "sandboxed": 1, "trusted": 1}


class Import(NamedTuple):
    where: str  # path:line
    source: str  # stage of the importing module
    target: str  # stage imported ("" for the package root)
    names: tuple[str, ...]  # names imported from it


def _stage(parts: tuple[str, ...], root: Path) -> str:
    """The stage of module path `parts` (below the package): its first part if that is a subpackage."""
    if not parts:
        return ""
    return parts[0] if (root / parts[0]).is_dir() else ""


def imports(root: Path = GENERATOR) -> Iterator[Import]:
    """Every import of one stage of the package at `root` by another."""
    package = root.name
    for path in sorted(root.rglob("*.py")):
        rel = path.relative_to(root)
        own_package = rel.parts[:-1]
        source = _stage(rel.parts, root) if len(rel.parts) > 1 else ""
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            modules: list[tuple[tuple[str, ...], tuple[str, ...]]] = []
            if isinstance(node, ast.ImportFrom):
                names = tuple(a.name for a in node.names)
                if node.level:
                    # The package the relative import starts from (a module's own package for level 1).
                    base = own_package[:len(own_package) - (node.level - 1)]
                    if node.module:
                        modules.append((base + tuple(node.module.split(".")), names))
                    else:  # from .. import x: x may be a module of that package
                        modules += [(base + (n,), ()) if _stage(base + (n,), root) else (base, (n,)) for n in names]
                elif node.module and node.module.split(".")[0] == package:
                    modules.append((tuple(node.module.split("."))[1:], names))
            elif isinstance(node, ast.Import):
                modules += [(tuple(a.name.split("."))[1:], ()) for a in node.names
                            if a.name.split(".")[0] == package]
            for module, names in modules:
                target = _stage(module, root)
                if target != source:
                    yield Import(f"{rel.as_posix()}:{node.lineno}", source, target, names)


# -- modules: circles, size, recipes --------------------------------------------------------------

MAX_LINES = 500
LONG_MODULES_EXEMPT: tuple[str, ...] = ()  # none: every module of generator/ keeps to MAX_LINES
MAX_FUNCTION_LINES = 80
# "module::function" names over MAX_FUNCTION_LINES, each on its way out (say where in a comment)
LONG_FUNCTIONS_EXEMPT: tuple[str, ...] = ()  # none


def _runtime_nodes(tree: ast.AST) -> Iterator[ast.AST]:
    """Every node of `tree` but those under `if TYPE_CHECKING:` (imports for type hints only: never run)."""
    todo = [tree]
    while todo:
        node = todo.pop()
        yield node
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            todo.extend(node.orelse)
            continue
        todo.extend(ast.iter_child_nodes(node))


def _is_module(root: Path, parts: tuple[str, ...]) -> bool:
    where = root.joinpath(*parts)
    return bool(parts) and (where.with_suffix(".py").is_file() or (where / "__init__.py").is_file())


def module_imports(root: Path = GENERATOR, type_only: bool = False) -> dict[str, dict[str, str]]:
    """Module (dotted, below the package; a package is its __init__) -> {module it imports: where}, for the
    imports that run, module-level or lazy, and with `type_only` those under `if TYPE_CHECKING:` too.
    `from .x import y` imports x.y when that is a module, else x."""
    graph: dict[str, dict[str, str]] = {}
    for path in sorted(root.rglob("*.py")):
        rel = path.relative_to(root)
        parts = rel.with_suffix("").parts
        name = parts[:-1] if parts[-1] == "__init__" else parts
        own_package = rel.parts[:-1]
        edges = graph.setdefault(".".join(name), {})
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in (ast.walk(tree) if type_only else _runtime_nodes(tree)):
            targets: list[tuple[str, ...]] = []
            if isinstance(node, ast.ImportFrom):
                module = tuple(node.module.split(".")) if node.module else ()
                if node.level:
                    module = own_package[:len(own_package) - (node.level - 1)] + module
                elif module[:1] == (root.name,):
                    module = module[1:]
                else:
                    continue
                targets += [module + (a.name,) if _is_module(root, module + (a.name,)) else module for a in node.names]
            elif isinstance(node, ast.Import):
                targets += [tuple(a.name.split("."))[1:] for a in node.names if a.name.split(".")[0] == root.name]
            for target in targets:
                if _is_module(root, target) and target != name:
                    edges.setdefault(".".join(target), f"{rel.as_posix()}:{node.lineno}")
    return graph


def import_circles(root: Path = GENERATOR) -> list[str]:
    """Each set of modules that import one another in a circle (a strongly connected component), with
    where each of its imports is. Imports for type hints only count: a circle that only `TYPE_CHECKING` hides is
    still two modules that cannot be read apart (the bench's Options once lived in the runner that pair.py's
    and remote.py's type hints named)."""
    graph = module_imports(root, type_only=True)
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    circles = []

    def visit(module: str) -> None:  # Tarjan's algorithm
        index[module] = low[module] = len(index)
        stack.append(module)
        for target in graph.get(module, {}):
            if target not in index:
                visit(target)
                low[module] = min(low[module], low[target])
            elif target in stack:
                low[module] = min(low[module], index[target])
        if low[module] == index[module]:
            members = []
            while not members or members[-1] != module:
                members.append(stack.pop())
            if len(members) > 1:
                where = [w for m in sorted(members) for t, w in sorted(graph[m].items()) if t in members]
                circles.append(" <-> ".join(sorted(members)) + " (" + ", ".join(where) + ")")

    for module in sorted(graph):
        if module not in index:
            visit(module)
    return circles


def long_modules(root: Path = GENERATOR) -> list[str]:
    out = []
    for path in sorted(root.rglob("*.py")):
        rel = path.relative_to(root).as_posix()
        lines = len(path.read_text(encoding="utf-8").splitlines())
        if lines > MAX_LINES and not rel.startswith(LONG_MODULES_EXEMPT):
            out.append(f"{rel}: {lines} lines, over {MAX_LINES}: split it by what its parts do")
    return out


def long_functions(root: Path = GENERATOR) -> list[str]:
    out = []
    for path in sorted(root.rglob("*.py")):
        rel = path.relative_to(root).as_posix()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                lines = node.end_lineno - node.lineno + 1
                if lines > MAX_FUNCTION_LINES and f"{rel}::{node.name}" not in LONG_FUNCTIONS_EXEMPT:
                    out.append(f"{rel}:{node.lineno}: {node.name}() is {lines} lines, over {MAX_FUNCTION_LINES}: "
                               "split it into the steps it takes")
    return out


def recipe_imports(root: Path = GENERATOR) -> list[str]:
    """Recipe modules (those of workloadgen/ that define `workloads()`, as workloadgen/write.py finds them)
    that import another recipe module."""
    folder = root / "workloadgen"
    recipes = {f"workloadgen.{p.stem}" for p in sorted(folder.glob("*.py"))
               if any(isinstance(n, ast.FunctionDef) and n.name == "workloads"
                      for n in ast.parse(p.read_text(encoding="utf-8")).body)}
    graph = module_imports(root)
    return [f"{where}: recipe {module} imports recipe {target}; share through the engine, not another recipe"
            for module in sorted(recipes) for target, where in sorted(graph.get(module, {}).items())
            if target in recipes]


def violations(root: Path = GENERATOR) -> list[str]:
    out = []
    for imp in imports(root):
        src_rank = RANK.get(imp.source, TOP)
        dst_rank = RANK.get(imp.target, -1) if imp.target else -1  # the package root holds only __version__
        if imp.target and imp.target not in RANK:
            out.append(f"{imp.where}: {imp.target}/ has no rank; add it to RANK in tests/test_layering.py")
        elif dst_rank >= src_rank and imp.source:
            way = "sideways" if dst_rank == src_rank else "upwards"
            out.append(f"{imp.where}: {imp.source}/ imports {imp.target}/ ({way}); a stage imports only model/ "
                       f"and stages below it")
        private = [n for n in imp.names if n.startswith("_") and not n.startswith("__")]
        if private and imp.target:
            out.append(f"{imp.where}: {imp.source or 'the top level'} imports {', '.join(private)} from "
                       f"{imp.target}/, a private name; make it public or pass the data through a record")
    return out


def bench_room_violations(root: Path = GENERATOR) -> list[str]:
    """Imports between the bench's rooms that cross its trust boundary (lazy and type-only ones included), and
    bench modules in no room."""
    out = []
    room_of = {}
    for module in module_imports(root, type_only=True):
        parts = module.split(".")
        if parts[0] == "bench" and len(parts) > 1:
            room_of[module] = parts[1]
            if parts[1] not in BENCH_RANK:
                out.append(f"bench/{parts[1]}: in no room of the bench; add it to BENCH_RANK in tests/test_layering.py")
    for module, targets in module_imports(root, type_only=True).items():
        source = room_of.get(module)
        for target, where in sorted(targets.items()):
            dest = room_of.get(target)
            if source in BENCH_RANK and dest in BENCH_RANK and dest != source \
                    and BENCH_RANK[dest] >= BENCH_RANK[source]:
                out.append(f"{where}: bench/{source}/ imports bench/{dest}/, across the trust boundary")
    return out


def test_every_stage_has_a_rank():
    stages = {p.name for p in GENERATOR.iterdir() if p.is_dir() and (p / "__init__.py").is_file()}
    assert stages == set(RANK), f"stages without a rank: {stages - set(RANK)}; ranks of no stage: {set(RANK) - stages}"


def test_imports_go_one_way():
    assert violations() == []


def test_the_bench_rooms_keep_the_trust_boundary():
    assert bench_room_violations() == []
    rooms = {p.name for p in (GENERATOR / "bench").iterdir() if (p / "__init__.py").is_file()}
    assert rooms == set(BENCH_RANK)


def test_a_sandboxed_module_importing_the_trusted_side_fails(tmp_path):
    copy = _plant(tmp_path, "bench/sandboxed/planted.py", "def f():\n    from ..trusted import plan\n",
                  ("bench/shared/planted.py", "from ..sandboxed import clock\n"))
    found = bench_room_violations(copy)
    assert "bench/sandboxed/planted.py:2: bench/sandboxed/ imports bench/trusted/, across the trust boundary" in found
    assert "bench/shared/planted.py:1: bench/shared/ imports bench/sandboxed/, across the trust boundary" in found


def test_the_imports_are_seen():
    found = {(i.source, i.target) for i in imports()}
    # Known edges: if these are not found, the parser misses imports and the check above proves nothing.
    assert {("load", "formats"), ("validate", "load"), ("export", "validate"), ("site", "analyse"),
            ("load", "model"), ("", "load")} <= found


def test_the_kit_needs_only_the_standard_library():
    # run.py imports the kit on a bare GPU machine, before the kit's own wheels are installed.
    outside = []
    for path in sorted((GENERATOR / "kit").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.level:
                continue
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else (
                [node.module] if isinstance(node, ast.ImportFrom) else [])
            outside += [f"kit/{path.name}:{node.lineno}: {n}" for n in names
                        if n.split(".")[0] not in sys.stdlib_module_names]
    assert outside == []


def test_no_import_circle():
    assert import_circles() == []


def test_no_module_is_too_long():
    assert long_modules() == []


def test_no_function_is_too_long():
    assert long_functions() == []


def test_recipes_do_not_import_each_other():
    assert recipe_imports() == []


def _plant(tmp_path: Path, rel: str, text: str, *more: tuple[str, str]) -> Path:
    copy = tmp_path / "generator"
    shutil.copytree(GENERATOR, copy, ignore=shutil.ignore_patterns("__pycache__", "*.json", "*.j2", "*.js", "*.css"))
    for where, what in ((rel, text), *more):
        (copy / where).write_text(what, encoding="utf-8")
    return copy


def test_a_sideways_import_fails(tmp_path):
    copy = _plant(tmp_path, "export/planted.py", "from ..site.build import build_site\n")
    assert any("export/planted.py:1: export/ imports site/ (sideways)" in v for v in violations(copy))


def test_an_upward_lazy_import_fails(tmp_path):
    copy = _plant(tmp_path, "load/planted.py", "def f():\n    import generator.validate\n")
    assert any("load/planted.py:2: load/ imports validate/ (upwards)" in v for v in violations(copy))


def test_a_private_name_from_another_stage_fails(tmp_path):
    copy = _plant(tmp_path, "site/planted.py", "from ..analyse.leaderboard import _author\n")
    assert any("imports _author from analyse/" in v for v in violations(copy))


def test_a_circle_fails_even_through_a_lazy_import(tmp_path):
    copy = _plant(tmp_path, "site/planted_a.py", "from .planted_b import x\n",
                  ("site/planted_b.py", "x = 1\ndef f():\n    from . import planted_a\n"))
    assert any(c.startswith("site.planted_a <-> site.planted_b (site/planted_a.py:1, site/planted_b.py:3)")
               for c in import_circles(copy))
    # An import for type hints only is still part of a circle.
    copy = _plant(tmp_path / "typed", "site/planted_a.py", "from .planted_b import x\n",
                  ("site/planted_b.py", "from typing import TYPE_CHECKING\nx = 1\nif TYPE_CHECKING:\n"
                                        "    from .planted_a import y\n"))
    assert any(c.startswith("site.planted_a <-> site.planted_b") for c in import_circles(copy))


def test_a_long_module_and_a_recipe_importing_a_recipe_fail(tmp_path):
    copy = _plant(tmp_path, "load/planted.py", "x = 1\n" * (MAX_LINES + 1),
                  ("workloadgen/planted_a.py", "def workloads():\n    return []\n"),
                  ("workloadgen/planted_b.py", "from .planted_a import workloads as theirs\n\n\n"
                                               "def workloads():\n    return theirs()\n"))
    assert f"load/planted.py: {MAX_LINES + 1} lines, over {MAX_LINES}: split it by what its parts do" in long_modules(copy)
    assert ("workloadgen/planted_b.py:1: recipe workloadgen.planted_b imports recipe workloadgen.planted_a; share "
            "through the engine, not another recipe") in recipe_imports(copy)
    copy = _plant(tmp_path / "fn", "load/planted.py", "def f():\n" + "    x = 1\n" * MAX_FUNCTION_LINES)
    assert long_functions(copy) == [f"load/planted.py:1: f() is {MAX_FUNCTION_LINES + 1} lines, over "
                                    f"{MAX_FUNCTION_LINES}: split it into the steps it takes"]


if __name__ == "__main__":
    edges: dict[str, dict[str, list[str]]] = defaultdict(lambda: defaultdict(list))
    for imp in imports(Path(sys.argv[1]) if len(sys.argv) > 1 else GENERATOR):
        edges[imp.source or "(top)"][imp.target or "(root)"].append(imp.where)
    for source in sorted(edges, key=lambda s: (RANK.get(s, TOP), s)):
        print(f"{source} -> " + ", ".join(f"{t} ({len(w)})" for t, w in sorted(edges[source].items())))
    for v in violations() + import_circles() + long_modules() + long_functions() + recipe_imports():
        print("VIOLATION", v)
