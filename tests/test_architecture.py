"""The shape of the code: no import cycle among privmap's modules, no arrow from a lower stage to a
higher one, and every package shipped in the wheel.

The stages follow a build's data flow (docs: README "Layout", /work/shared/DESIGN.md):

    device < base < data < solvers < bundle < measures < commandline < mechanisms < evaluation < api < cli

- ``device`` (``privmap.device``) is the leaf every offline stage may read the format from; it
  imports nothing of ``privmap.offline``, and is itself a strict stack of layers
  (:data:`DEVICE_LAYERS`).
- ``base`` is the stage-neutral modules at the root of ``privmap.offline`` (errors, information
  measures, the logistic-regression attacker, prior-mismatch bounds).
- ``data`` reads and quantizes rows and estimates the prior; ``solvers`` solve program (19) on a
  prior; ``bundle`` encodes, signs and reads back a payload; ``measures`` are what any release is
  measured by (attackers, a recommender's utility, drift, plots); ``commandline`` is the kit every
  command is written with (one-line failures, JSON output, the options every build shares, the
  help renderer).
- ``mechanisms`` holds one vertical slice per mechanism (its options, build, evaluation view and
  command) and seed 000's table engine the table mechanisms build on (``mechanisms.table``, which
  imports none of them); ``evaluation`` measures any bundle by dispatching to its mechanism's view; ``api`` is
  the notebook API over all of them, and ``cli`` the command line that mounts the commands.

A module may import from its own stage or a lower one, never a higher one. Imports inside
functions count as much as those at the top of a module: a lazy import hides a cycle from Python
at import time but not from a reader. ``privmap.offline``'s own ``__init__`` (the curated API)
stands above every stage.
"""
from __future__ import annotations

import ast
import pathlib
import re
import sys
from importlib import metadata

ROOT = pathlib.Path(__file__).resolve().parents[1]
#: The src layout: a module's dotted name is its path under src/.
SOURCE = ROOT / "src"
#: Stage order, lowest first (module docstring).
STAGES = ("device", "base", "data", "solvers", "bundle", "measures", "commandline", "mechanisms", "evaluation", "api",
          "cli")


def _modules() -> dict[str, pathlib.Path]:
    """Dotted name -> source file of every privmap module (packages by their ``__init__``)."""
    found = {}
    for path in (SOURCE / "privmap").rglob("*.py"):
        parts = path.relative_to(SOURCE).with_suffix("").parts
        if parts[-1] == "__init__":
            parts = parts[:-1]
        found[".".join(parts)] = path
    return found


def _imports(name: str, path: pathlib.Path, modules) -> set[str]:
    """The privmap modules ``name`` imports, anywhere in its source (function bodies included)."""
    package = name if path.name == "__init__.py" else name.rsplit(".", 1)[0]
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                module = ".".join(base + ([node.module] if node.module else []))
            else:
                module = node.module
            targets = [f"{module}.{alias.name}" if f"{module}.{alias.name}" in modules else module
                       for alias in node.names]
        else:
            continue
        found.update(t for t in targets if t in modules and t != name)
    return found


def _graph() -> dict[str, set[str]]:
    modules = _modules()
    return {name: _imports(name, path, modules) for name, path in modules.items()}


def _stage(name: str) -> str | None:
    if name.startswith("privmap.device"):
        return "device"
    if not name.startswith("privmap.offline."):
        return None  # privmap itself and privmap.offline's curated __init__ stand above every stage
    first = name.split(".")[2]
    return "base" if first.startswith("_") else first


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan), each sorted."""
    index, low, on_stack, stack, found = {}, {}, set(), [], []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def test_the_graph_sees_lazy_and_relative_imports():
    """The checks below can fail: the graph holds the arrows it must (a relative import inside a
    function, an absolute one at the top, an import of a sub-module by name), a cycle is found,
    and so is an arrow to a higher layer."""
    graph = _graph()
    assert "privmap.offline._strongest" in graph["privmap.offline.mechanisms.table._holdout"]
    assert "privmap.device.format" in graph["privmap.offline.bundle._write"]
    assert "privmap.device.kinds.funnel" in graph["privmap.device.kinds._registry"]
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    layers = {"p.low": 0, "p.high": 1}
    assert _upward({"p.low": {"p.high"}, "p.high": {"p.low"}}, layers.get) == ["p.low (0) -> p.high (1)"]


def _upward(graph: dict[str, set[str]], layer) -> list[str]:
    """Arrows from a module to one of a higher layer (``layer(name)``: an int, None for a module
    outside the layering)."""
    found = []
    for source, targets in sorted(graph.items()):
        for target in sorted(targets):
            low, high = layer(source), layer(target)
            if low is not None and high is not None and high > low:
                found.append(f"{source} ({low}) -> {target} ({high})")
    return found


#: The device runtime's layers, lowest first (``privmap.device``'s docstring): each holds the
#: modules named and those under them. The package's own ``__init__``, its face, stands above all.
DEVICE_LAYERS = {
    "errors, constants, files": ("privmap.device.errors", "privmap.device.constants", "privmap.device.files"),
    "wire format": ("privmap.device.format",),
    "trust": ("privmap.device.trust",),
    "randomness": ("privmap.device.randomness",),
    "kinds": ("privmap.device.kinds",),
    "load workflow": ("privmap.device.load",),
    "state": ("privmap.device.state",),
}


def _device_layer(name: str) -> int | None:
    """Index in :data:`DEVICE_LAYERS` of the layer holding ``name`` (the face: above them all)."""
    if name == "privmap.device":
        return len(DEVICE_LAYERS)
    for index, prefixes in enumerate(DEVICE_LAYERS.values()):
        if any(name == p or name.startswith(p + ".") for p in prefixes):
            return index
    return None


def test_the_device_is_a_strict_stack():
    """Every device module sits in one layer and imports only from its own layer or lower ones
    (a loader that needs a kind finds it in the kinds' registry below it), with no cycle."""
    graph = {n: t for n, t in _graph().items() if n.startswith("privmap.device")}
    assert sorted(n for n in graph if _device_layer(n) is None) == []
    assert _upward(graph, _device_layer) == []
    assert _cycles(graph) == []


def _reaches_into(importer: str, module: str, name: str | None, modules) -> str | None:
    """What ``from module import name`` (or ``import module`` when ``name`` is None) in ``importer``
    reaches that is private to a package ``importer`` is not inside, or None. A module or name
    whose last dotted part starts with an underscore is private to the package holding it: a
    module inside that package (at any depth) may import it, nobody else."""
    target = f"{module}.{name}" if name and f"{module}.{name}" in modules else module
    parts = target.split(".")
    for i, part in enumerate(parts):
        if part.startswith("_"):
            owner = ".".join(parts[:i])
            return None if importer.startswith(owner + ".") or importer == owner else target
    if name and name.startswith("_") and name != "*" and not (importer == module or importer.startswith(module + ".")):
        return f"{module}:{name}"
    return None


def _private_reaches() -> list[str]:
    modules = _modules()
    found = []
    for importer, path in sorted(modules.items()):
        package = importer if path.name == "__init__.py" else importer.rsplit(".", 1)[0]
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                pairs = [(alias.name, None) for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                if node.level:
                    base = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                    module = ".".join(base + ([node.module] if node.module else []))
                else:
                    module = node.module or ""
                pairs = [(module, alias.name) for alias in node.names]
            else:
                continue
            for module, name in pairs:
                if module.split(".")[0] == "privmap":
                    reached = _reaches_into(importer, module, name, modules)
                    if reached:
                        found.append(f"{importer} -> {reached}")
    return found


def test_the_private_rule_sees_what_it_must():
    """The check below can fail: a sibling reaching a private module or name is seen, a module
    inside the package (or under it) is not."""
    modules = {"p.data._rows", "p.data", "p.mech.q", "p.mech"}
    assert _reaches_into("p.mech.q", "p.data._rows", None, modules) == "p.data._rows"
    assert _reaches_into("p.mech.q", "p.data", "_rows", modules) == "p.data._rows"
    assert _reaches_into("p.mech.q", "p.data", "_helper", modules) == "p.data:_helper"
    assert _reaches_into("p.data.sub.x", "p.data._rows", None, modules) is None
    assert _reaches_into("p.mech.q", "p._errors", None, modules) is None          # p's own: everyone in p
    assert _reaches_into("p.mech.q", "p.data", "rows", modules) is None


def test_no_module_outside_a_package_imports_its_private_modules_or_names():
    """Each package's face (its ``__init__``) is the only way in from outside: ``privmap.offline.data``,
    never ``privmap.offline.data._dataset``; a module may use the private modules of its own package
    and of the packages enclosing it (``privmap.offline._errors`` from anywhere in the builder)."""
    assert _private_reaches() == []


#: The user's API: each of their names is what README.md and docs/ tell a user to import, used in
#: this repository or not. Every face below them exports only what is used outside its package.
USER_FACES = ("privmap.device", "privmap.offline")
#: The folders beside src/ whose code uses the faces (each of their modules is outside every package).
USER_FOLDERS = ("tests", "benchmarks", "scripts", "examples", "tables")
#: The calls that read a module's attribute by its name: ``monkeypatch.setattr(fast, "solve_fast", ...)``.
BY_NAME = ("setattr", "getattr", "hasattr", "delattr")


def _face_names(path: pathlib.Path) -> list[str] | None:
    """The ``__all__`` of a module's source, or None where it has none."""
    for node in ast.parse(path.read_text()).body:
        if isinstance(node, ast.Assign) and any(getattr(t, "id", None) == "__all__" for t in node.targets):
            return list(ast.literal_eval(node.value))
    return None


def _taken(text: str, package: str | None, modules, faces) -> tuple[set[tuple[str, str]], set[str], set[str]]:
    """What a source takes from the faces of ``faces`` (package names): ``(face, name)`` pairs, the
    faces it passes on as values, and every attribute name it reads. ``package`` is the package a
    relative import starts from (None outside src/). A name is taken by ``from face import name``
    (relative or not), by ``alias.name`` where ``alias`` is the face (``import privmap.x as alias``,
    ``from privmap import x``, ``privmap.x.name``), or by name (``setattr(alias, "name", ...)``); a
    face used as a value (a registry's ``report=gaussian``, a tuple of modes) is read by attribute
    by whoever receives it."""
    tree = ast.parse(text)
    aliases: dict[str, str] = {}
    taken: set[tuple[str, str]] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                root = alias.name.split(".")[0]
                if root in modules:
                    aliases[alias.asname or root] = alias.name if alias.asname else root
        elif isinstance(node, ast.ImportFrom):
            module = node.module or ""
            if node.level:
                base = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                module = ".".join(base + ([node.module] if node.module else []))
            for alias in node.names:
                if f"{module}.{alias.name}" in modules:
                    aliases[alias.asname or alias.name] = f"{module}.{alias.name}"
                elif module in faces:
                    taken.add((module, alias.name))
    read = {id(n.value) for n in ast.walk(tree) if isinstance(n, ast.Attribute)}
    read |= {id(n.args[0]) for n in ast.walk(tree) if isinstance(n, ast.Call) and n.args
             and (getattr(n.func, "attr", None) or getattr(n.func, "id", None)) in BY_NAME}
    passed = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute):
            chain, root = [], node
            while isinstance(root, ast.Attribute):
                chain.append(root.attr)
                root = root.value
            target = aliases.get(root.id) if isinstance(root, ast.Name) else None
            for attr in reversed(chain if target else []):
                if f"{target}.{attr}" not in modules:         # the first part that is not a module
                    if target in faces:
                        taken.add((target, attr))
                    break
                target = f"{target}.{attr}"
        elif (isinstance(node, ast.Call) and len(node.args) >= 2 and isinstance(node.args[0], ast.Name)
              and (getattr(node.func, "attr", None) or getattr(node.func, "id", None)) in BY_NAME):
            face, name = aliases.get(node.args[0].id), node.args[1]
            if face in faces and isinstance(name, ast.Constant) and isinstance(name.value, str):
                taken.add((face, name.value))
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load) and id(node) not in read \
                and aliases.get(node.id) in faces:
            passed.add(aliases[node.id])
    return taken, passed, {n.attr for n in ast.walk(tree) if isinstance(n, ast.Attribute)}


def _unused_face_names(sources, faces: dict[str, list[str]], modules) -> list[str]:
    """``face: name`` for each name of a face's ``__all__`` (``faces``: face -> names) that no source
    outside the face's package uses. ``sources`` holds ``(module, path, text)``: a module's dotted
    name and file (module None for code outside src/). A face passed on as a value (:func:`_taken`)
    uses each of its names read as an attribute anywhere outside its package."""
    used: dict[str, set[str]] = {face: set() for face in faces}
    passed: set[str] = set()
    reads = []
    for module, path, text in sources:
        package = None if module is None else module if path.name == "__init__.py" else module.rsplit(".", 1)[0]
        taken, values, attributes = _taken(text, package, modules, faces)
        outside = {face for face in faces if module is None or not (module == face or module.startswith(face + "."))}
        for face, name in taken:
            if face in outside:
                used[face].add(name)
        passed |= values & outside
        reads.append((outside, attributes))
    for outside, attributes in reads:
        for face in passed & outside:
            used[face] |= attributes
    return [f"{face}: {name}" for face, names in sorted(faces.items()) for name in names if name not in used[face]]


def test_the_face_rule_sees_what_it_must():
    """The check below can fail: a name no one outside its package takes is seen, and so is one
    taken only from inside the package; a name imported (relative or not), read as an attribute
    of the face, patched by name, re-exported by an enclosing face, or read off a face passed on
    as a value is used."""
    modules = {"p", "p.a", "p.a._x", "p.a.sub", "p.b", "p.c", "p.d", "p.e"}
    faces = {"p.a": ["imported", "relative", "read", "patched", "on_value", "inside", "unused"],
             "p.a.sub": ["imported"]}
    here, face = pathlib.Path("m.py"), pathlib.Path("__init__.py")
    sources = [("p.b", here, "from p.a import imported"),
               ("p.c", here, "from .a import relative"),
               (None, here, "import p.a as face\nface.read()\nsetattr(face, 'patched', None)"),
               ("p.d", here, "from p import a\nMODES = (a,)"),
               ("p.e", here, "def f(mode):\n    return mode.on_value"),
               ("p.a._x", here, "from p.a import inside"),
               ("p.a", face, "from .sub import imported")]
    assert _unused_face_names(sources, faces, modules) == ["p.a: inside", "p.a: unused"]
    assert _unused_face_names(sources[:-1], faces, modules) == ["p.a: inside", "p.a: unused", "p.a.sub: imported"]


def test_every_name_a_package_exports_is_used_outside_it():
    """A package's face is what the rest of the code uses of it: each name of its ``__all__`` (below
    :data:`USER_FACES`, the user's API) is used by a module outside the package, or by the tests,
    benchmarks, scripts, examples or tables (:data:`USER_FOLDERS`). A name used only inside the
    package is imported there from its private module; a test of such an internal (a solver's
    phase, a proof's step) imports it from there too, so the face lists only what its users need."""
    modules = _modules()
    faces = {name: names for name, path in modules.items() if path.name == "__init__.py"
             and name not in (*USER_FACES, "privmap") and (names := _face_names(path)) is not None}
    sources = [(name, path, path.read_text()) for name, path in modules.items()]
    sources += [(None, path, path.read_text()) for folder in USER_FOLDERS for path in sorted((ROOT / folder).rglob("*.py"))]
    assert _unused_face_names(sources, faces, modules) == []


def test_no_import_cycle_among_privmap_modules():
    assert _cycles(_graph()) == []


def test_every_offline_module_belongs_to_a_known_stage():
    unknown = sorted(n for n in _modules() if _stage(n) is not None and _stage(n) not in STAGES)
    assert unknown == []


def test_no_arrow_from_a_lower_stage_to_a_higher_one():
    upward = []
    for source, targets in sorted(_graph().items()):
        low = _stage(source)
        for target in sorted(targets):
            high = _stage(target)
            if low is not None and high is not None and STAGES.index(high) > STAGES.index(low):
                upward.append(f"{source} ({low}) -> {target} ({high})")
    assert upward == []


#: Seed 000's table engine: the stages every table mechanism builds with, below them all.
ENGINE = "privmap.offline.mechanisms.table"


def _engine_reaches(graph: dict[str, set[str]], engine: str = ENGINE) -> list[str]:
    """Arrows from a module of ``engine`` to a mechanism's package: a sibling package of ``engine``
    (``privmap.offline.mechanisms.quantized``, ...). The shared modules beside them (``_seed000``,
    ``_header``: private to the mechanisms' stage, no package) are not a mechanism."""
    stage = engine.rsplit(".", 1)[0] + "."
    found = []
    for source, targets in sorted(graph.items()):
        if source == engine or source.startswith(engine + "."):
            for target in sorted(targets):
                first = target[len(stage):].split(".")[0] if target.startswith(stage) else ""
                if first and not first.startswith("_") and first != engine.rsplit(".", 1)[1]:
                    found.append(f"{source} -> {target}")
    return found


def test_the_engine_rule_sees_what_it_must():
    """The check below can fail: an engine module importing a mechanism's package or one of its
    modules is seen; one importing the engine's own modules or a shared module beside the
    mechanisms is not."""
    graph = {"p.mech.table._view": {"p.mech.exact._options", "p.mech.table._rows", "p.mech._seed000"},
             "p.mech.table": {"p.mech.quantized"}, "p.mech.quantized": {"p.mech.table"}}
    assert _engine_reaches(graph, "p.mech.table") == ["p.mech.table -> p.mech.quantized",
                                                      "p.mech.table._view -> p.mech.exact._options"]


def test_the_table_engine_imports_no_mechanism():
    """The table engine names no mechanism: what differs between the mechanisms that build on it is
    asked of the options they pass in (``quantizes``, ``metric``, ...), never imported from them,
    so a mechanism depends on the engine and not the other way round."""
    assert _engine_reaches(_graph()) == []


def test_every_folder_of_modules_is_a_package_the_wheel_finds():
    """pyproject finds packages under src/ by their ``__init__``: a folder of modules without one
    would import in an editable install (as a namespace package) and be absent from the wheel."""
    folders = {p.parent for p in (SOURCE / "privmap").rglob("*.py")}
    assert sorted(str(f.relative_to(ROOT)) for f in folders if not (f / "__init__.py").exists()) == []


def _third_party_imports() -> set[str]:
    """Top-level names of the modules privmap's code imports (function bodies included) that are
    neither the standard library nor privmap."""
    names = set()
    for path in _modules().values():
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                names.update(alias.name.split(".")[0] for alias in node.names)
            elif isinstance(node, ast.ImportFrom) and not node.level:
                names.add(node.module.split(".")[0])
    return {n for n in names if n not in sys.stdlib_module_names and n not in ("privmap", "__future__")}


def _normal(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _providers() -> dict[str, set[str]]:
    """Top-level module name -> the installed distributions whose files hold it (normalised names).
    Read from each distribution's file list: ``metadata.packages_distributions`` reads only
    top_level.txt on Python 3.10, which numpy's wheels, for one, do not have."""
    found: dict[str, set[str]] = {}
    for dist in metadata.distributions():
        name = _normal(dist.metadata["Name"])          # parsed once a distribution (it was once a file: 28 s)
        for file in dist.files or ():
            top = file.parts[0]
            if top.endswith(".dist-info") or top == "..":
                continue
            found.setdefault(top.split(".")[0], set()).add(name)
    return found


def test_every_third_party_module_the_code_imports_is_a_declared_dependency():
    """An import served only through another package's dependencies (highspy through cvxpy) breaks
    where that package stops depending on it: on Python 3.10 cvxpy did not bring highspy, and
    every offline import failed. Each distribution must be in pyproject's dependencies or extras
    (read from the installed metadata)."""
    declared = {_normal(re.match(r"[A-Za-z0-9_.-]+", req).group()) for req in metadata.requires("privmap") or ()}
    providers = _providers()
    missing = {name: providers.get(name) for name in _third_party_imports() if not providers.get(name, set()) & declared}
    assert missing == {}


#: Most lines a function of src/ may span, from its ``def`` to its last line (decorators aside).
MAX_FUNCTION_LINES = 100


def _long_functions(tree: ast.AST, where: str, limit: int = MAX_FUNCTION_LINES) -> list[str]:
    """``where:line name (lines)`` of each function in ``tree`` (methods and nested functions
    included) longer than ``limit`` lines, counted as ast counts them (``lineno`` to
    ``end_lineno``), in line order."""
    functions = sorted((node for node in ast.walk(tree) if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))),
                       key=lambda node: node.lineno)
    return [f"{where}:{node.lineno} {node.name} ({node.end_lineno - node.lineno + 1} lines)"
            for node in functions if node.end_lineno - node.lineno + 1 > limit]


def test_the_length_rule_sees_what_it_must():
    """The check below can fail: a function one line over the limit is named with its file and
    line, a method and a nested function count as well, one at the limit does not."""
    def source(name: str, lines: int, indent: str = "") -> str:
        return f"{indent}def {name}():\n" + "".join(f"{indent}    x = {i}\n" for i in range(lines - 1))
    module = source("at_limit", 5) + source("over", 6) + "class C:\n" + source("method", 6, "    ")
    module += "def outer():\n" + source("inner", 6, "    ")
    found = _long_functions(ast.parse(module), "p/m.py", limit=5)
    assert found == ["p/m.py:6 over (6 lines)", "p/m.py:13 method (6 lines)", "p/m.py:19 outer (7 lines)",
                     "p/m.py:20 inner (6 lines)"]


def test_no_function_in_src_is_over_100_lines():
    """A function longer than :data:`MAX_FUNCTION_LINES` is split into named phases (private helpers
    over one explicit state), so each step of it can be read, and tested, on its own."""
    found = []
    for path in sorted(SOURCE.rglob("*.py")):
        found += _long_functions(ast.parse(path.read_text()), str(path.relative_to(ROOT)))
    assert found == []


#: The modules where mechanisms are named, one record each: the mechanisms' registry offline and
#: the kinds' registry on the device. Everywhere else a caller asks a record for what it branches on.
REGISTRIES = ("privmap.offline.mechanisms._registry", "privmap.device.kinds._registry")


def _mechanism_names() -> set[str]:
    """Every mechanism's name as a payload spells it, and as a Python identifier
    (``max-correlation``, ``max_correlation``)."""
    from privmap.device.kinds import KINDS
    from privmap.offline.mechanisms import MECHANISMS
    return {spelling for name in (*MECHANISMS, *KINDS) for spelling in (name, name.replace("-", "_"))}


def _name_comparisons(tree: ast.AST, where: str, names: set[str]) -> list[str]:
    """``where:line`` and the source of each comparison in ``tree`` on a string literal in ``names``:
    ``==`` or ``!=`` with one on either side, ``in`` or ``not in`` a literal tuple, list or set
    holding one (a name on the left of ``in``, ``"recommender" in summary``, asks for a key)."""
    def named(node: ast.AST) -> bool:
        if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
            return any(named(e) for e in node.elts)
        return isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value in names

    found = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Compare):
            continue
        sides = [node.left, *node.comparators]
        for i, op in enumerate(node.ops):
            if (isinstance(op, (ast.Eq, ast.NotEq)) and (named(sides[i]) or named(sides[i + 1]))
                    or isinstance(op, (ast.In, ast.NotIn)) and named(sides[i + 1])):
                found.append(f"{where}:{node.lineno} {ast.unparse(node)}")
                break
    return found


def test_the_name_rule_sees_what_it_must():
    """The check below can fail: each of ==, !=, in and not in on a mechanism's name is seen, on
    either side, alone or in a literal tuple; a name in an assignment, a dict, a loop or a message
    is not, nor a key asked for by name, nor a comparison on another string."""
    names = {"quantized", "exact", "max-correlation"}
    module = "\n".join([
        'if mechanism == "exact": pass',                       # 1
        'if "quantized" != options.mechanism: pass',           # 2
        'ok = m in ("funnel", "max-correlation")',             # 3
        'ok = m not in ["exact"]',                             # 4
        'x = 0 < y == "quantized"',                            # 5
        'payload["mechanism"] = "exact"',
        'TABLE = {"quantized": 1}',
        'message = f"not {mechanism}: expected quantized"',
        'ok = metric == "erasures"',
        'for name in ("quantized", "exact"): pass',
        'ok = "exact" in summary',
    ])
    found = _name_comparisons(ast.parse(module), "m.py", names)
    assert [f.split(" ")[0] for f in found] == ["m.py:1", "m.py:2", "m.py:3", "m.py:4", "m.py:5"]


def test_no_module_outside_the_registries_compares_a_mechanism_name():
    """Which-mechanism dispatch reads the registries (:data:`REGISTRIES`): a command, a call or a
    stage asks the mechanism's record (:data:`privmap.offline.mechanisms.MECHANISMS`), its kind
    (:data:`privmap.device.kinds.KINDS`) or its build's options for a capability, and never tests
    the mechanism's name, so a new mechanism touches its two homes and one record in each registry
    (docs/adding-a-mechanism.md)."""
    names = _mechanism_names()
    found = []
    for name, path in sorted(_modules().items()):
        if name not in REGISTRIES:
            found += _name_comparisons(ast.parse(path.read_text()), str(path.relative_to(ROOT)), names)
    assert found == []


def test_every_mechanism_has_both_homes():
    """Each mechanism of the offline registry has its kind on the device, and each kind its
    record offline, in the same order: one is never added without the other."""
    from privmap.device.kinds import KINDS
    from privmap.offline.mechanisms import MECHANISMS
    assert sorted(MECHANISMS) == sorted(KINDS)


#: Where the tests live: one folder per package of src/privmap, at the same path below it.
TESTS = ROOT / "tests"


def _packages(source: pathlib.Path = SOURCE) -> list[str]:
    """Dotted name of every package under ``source`` (each folder holding an ``__init__.py``)."""
    return sorted(".".join(p.parent.relative_to(source).parts) for p in source.rglob("__init__.py"))


def _unmirrored(packages: list[str], tests: pathlib.Path = TESTS) -> list[str]:
    """The packages whose mirror folder in ``tests`` (``privmap.offline.data`` -> ``tests/offline/data``,
    ``privmap`` itself -> ``tests``) is missing or holds no test module (``test_*.py``) of its own."""
    return [name for name in packages
            if not any(tests.joinpath(*name.split(".")[1:]).glob("test_*.py"))]


def test_the_mirror_rule_sees_what_it_must(tmp_path):
    """The check below can fail: a package without a folder, and one whose folder holds only
    helpers or only subfolders' tests, are named; one whose folder holds a test module is not."""
    for path in ("test_top.py", "a/test_a.py", "b/helpers.py", "c/d/test_d.py"):
        tmp_path.joinpath(path).parent.mkdir(parents=True, exist_ok=True)
        tmp_path.joinpath(path).write_text("")
    packages = ["p", "p.a", "p.b", "p.c", "p.c.d", "p.e"]
    assert _unmirrored(packages, tmp_path) == ["p.b", "p.c", "p.e"]


def test_every_package_has_its_mirror_folder_of_tests():
    """The tests mirror the packages (README "Layout"): the tests of ``privmap.offline.data`` are in
    ``tests/offline/data``, those of the device's trust layer in ``tests/device/trust``, so a
    package's tests are found where it is, and a package without any is seen."""
    assert "privmap.device.trust" in _packages() and "privmap.offline.mechanisms.table" in _packages()
    assert _unmirrored(_packages()) == []


#: The mechanisms' package: one folder (a slice) per mechanism, named as its payload names it
#: with ``-`` as ``_`` (``max-correlation``: ``max_correlation/``).
MECHANISMS_PACKAGE = "privmap.offline.mechanisms"
#: The parts every slice has, a private module each (docs/adding-a-mechanism.md); its view is its
#: own ``_view`` or, for a table mechanism, the table engine's.
SLICE_PARTS = ("_options", "_build", "_command")


def _slice(name: str) -> str:
    return f"{MECHANISMS_PACKAGE}.{name.replace('-', '_')}"


def test_every_mechanism_is_a_folder_with_the_parts_of_a_slice():
    from privmap.offline.mechanisms import MECHANISMS
    modules = _modules()
    assert [f"{_slice(n)}.{part}" for n in MECHANISMS for part in SLICE_PARTS if f"{_slice(n)}.{part}" not in modules] == []


def test_each_command_the_registry_mounts_is_written_in_its_slices_command_module():
    """``privmap build NAME``'s body (what it reads, runs and reports) is its mechanism's own
    ``_command``, never a module shared above the slices; what several commands share is the
    table engine's kit or :mod:`privmap.offline.commandline`, which name no mechanism."""
    from privmap.offline.mechanisms import MECHANISMS
    found = {name: r.command.callback.__module__ for name, r in MECHANISMS.items() if r.command is not None}
    assert found == {name: f"{_slice(name)}._command" for name in found}


def test_each_view_the_registry_names_is_its_slices_or_the_table_engines():
    from privmap.offline.mechanisms import MECHANISMS
    found = {name: r.view.__module__ for name, r in MECHANISMS.items() if r.view is not None}
    assert {n: m for n, m in found.items() if m not in (f"{_slice(n)}._view", f"{ENGINE}._view")} == {}


def test_every_mechanism_without_a_command_is_a_utility_mode_of_one_that_has():
    """A record without a command (a model mode) is a ``--utility`` choice of a mounted command:
    the registry handed that command the mode's ``MODE``, so nothing else builds it."""
    import click

    from privmap.offline.mechanisms import MECHANISMS
    utilities = {choice for r in MECHANISMS.values() if r.command is not None for p in r.command.params
                 if p.name == "utility" and isinstance(p.type, click.Choice) for choice in p.type.choices}
    assert {name for name, r in MECHANISMS.items() if r.command is None} - utilities == set()


def test_the_quantized_slice_imports_no_mechanism_it_is_handed():
    """The recommender and ranking modes stand on the quantized mechanism (their mapping is its
    options), and its command builds them and the exact mechanism: it is handed them by the
    registry (``quantized.command_with``) instead of importing them, which would be a cycle."""
    reaches = _engine_reaches(_graph(), f"{MECHANISMS_PACKAGE}.quantized")
    assert [r for r in reaches if not r.split(" -> ")[1].startswith(ENGINE)] == []
