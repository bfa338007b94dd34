"""Python's own ``ast`` as the yardstick for the code graph's call edges.

Two independent parts:

* :func:`ast_facts`, a stand-in extractor: one Python file -> its
  :class:`~gitmem.graph.facts.FileFacts` (definitions, imports, calls as
  ``receiver.name``, inheritance) *without resolving anything*, as the
  tree-sitter extractor does. The accuracy check takes the extractor as a
  parameter; this one serves until the tree-sitter one is merged.
* :func:`oracle`, the ground truth: every call site of a corpus judged by a
  strict, scope-aware reading of the same source.

**What "ast-resolved" means.** A call site is *resolved* to a definition of
the corpus when ``ast`` alone settles its target:

* ``f(...)`` where ``f`` is bound, in the innermost function scope that
  binds it (else the module), only by ``def``/``class`` statements (a nested
  or top-level definition) or only by imports that lead to one: ``from m
  import f`` (followed through re-exports), ``import m`` then ``m.f``;
* ``m.a.f(...)`` where ``m`` is a module bound as above and ``a``, ``f`` are
  submodules, definitions, or members defined in a class body;
* ``self.f(...)``/``cls.f(...)`` in a method (first parameter, not a
  ``staticmethod``), where ``f`` is defined in the class body or in a base
  class resolved the same way (depth-first), and no method assigns
  ``self.f``; ``super().f(...)`` likewise, skipping the class itself.

A call site is *negative* when ``ast`` settles that no definition of the
corpus is the target: the name is bound by an assignment, a parameter, a loop
or ``with`` target, or it is a built-in (and the module has no star import),
or the call goes through a module outside the corpus. Every other call site
(a method of a variable, a call of a call's result, a name conflicting
bindings give) is *unknown*.

Precision counts the graph's call edges to definitions at resolved or
negative sites: right when the site is resolved to that target, wrong
otherwise; edges at unknown sites are not judged (reported separately).
Recall counts resolved sites that have their edge.
"""

from __future__ import annotations

import ast
import builtins
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from gitmem.graph.facts import Call, Definition, FileFacts, Import, Inherit, Reference

Extractor = Callable[[str, bytes], FileFacts]

BUILTINS = frozenset(dir(builtins))


# -- the stand-in extractor --------------------------------------------------------------------
def ast_facts(path: str, data: bytes) -> FileFacts:
    """One Python file's facts, from ``ast`` (no resolution)."""
    text = data.decode("utf-8", "replace")
    lines = text.count("\n") + (0 if text.endswith("\n") or not text else 1)
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError) as exc:
        return FileFacts(language="python", lines=lines, error=f"{type(exc).__name__}")
    facts = FileFacts(language="python", lines=lines)
    _Facts(facts).visit_body(tree.body, "", None)
    return facts


def dotted(node: ast.AST) -> str | None:
    """``a.b.c`` for a chain of names, ``super`` for ``super()``, else None."""
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        inner = dotted(node.value)
        return None if inner is None else f"{inner}.{node.attr}"
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "super":
        return "super"
    return None


class _Facts:
    def __init__(self, facts: FileFacts) -> None:
        self.facts = facts

    def visit_body(self, body: Iterable[ast.stmt], scope: str, kind: str | None) -> None:
        for stmt in body:
            self.visit_stmt(stmt, scope, kind)

    def visit_stmt(self, node: ast.stmt, scope: str, kind: str | None) -> None:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            self.define(node, scope, kind)
            return
        if isinstance(node, ast.Import):
            for alias in node.names:
                self.facts.imports.append(
                    Import(alias.name, alias=alias.asname or "", line=node.lineno, scope=scope)
                )
        elif isinstance(node, ast.ImportFrom):
            names = tuple(f"{a.name} as {a.asname}" if a.asname else a.name for a in node.names)
            module = "." * node.level + (node.module or "")
            self.facts.imports.append(Import(module, names=names, line=node.lineno, scope=scope))
        elif isinstance(node, ast.Assign | ast.AnnAssign) and kind in (None, "class"):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for target in targets:
                if isinstance(target, ast.Name) and target.id.isupper() and len(target.id) > 1:
                    qual = f"{scope}.{target.id}" if scope else target.id
                    self.facts.definitions.append(
                        Definition(
                            target.id,
                            qual,
                            "constant",
                            node.lineno,
                            node.end_lineno or node.lineno,
                            0,
                            0,
                            parent=scope,
                        )
                    )
        for child in _children(node):
            if isinstance(child, ast.stmt):
                self.visit_stmt(child, scope, kind)
            else:
                self.visit_expr(child, scope)

    def define(
        self,
        node: ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef,
        scope: str,
        kind: str | None,
    ) -> None:
        qual = f"{scope}.{node.name}" if scope else node.name
        if isinstance(node, ast.ClassDef):
            own = "class"
        else:
            own = "method" if kind == "class" else "function"
        self.facts.definitions.append(
            Definition(
                node.name,
                qual,
                own,  # type: ignore[arg-type]
                node.lineno,
                node.end_lineno or node.lineno,
                0,
                0,
                signature=f"{'class' if own == 'class' else 'def'} {node.name}(…)",
                doc=ast.get_docstring(node) or "",
                parent=scope,
            )
        )
        for decorator in node.decorator_list:
            self.visit_expr(decorator, scope)
        if isinstance(node, ast.ClassDef):
            for base in node.bases:
                text = dotted(base)
                if text is not None:
                    self.facts.inherits.append(Inherit(qual, text, line=node.lineno))
                self.visit_expr(base, scope)
            for keyword in node.keywords:
                self.visit_expr(keyword.value, scope)
        else:
            for default in [*node.args.defaults, *node.args.kw_defaults]:
                if default is not None:
                    self.visit_expr(default, scope)
            for arg in [*node.args.args, *node.args.kwonlyargs, *node.args.posonlyargs]:
                if arg.annotation is not None:
                    self.annotation(arg.annotation, qual)
            if node.returns is not None:
                self.annotation(node.returns, qual)
        self.visit_body(node.body, qual, own)

    def annotation(self, node: ast.expr, scope: str) -> None:
        for sub in ast.walk(node):
            text = dotted(sub) if isinstance(sub, ast.Name | ast.Attribute) else None
            if text is not None and text != "super":
                self.facts.references.append(Reference(text, line=sub.lineno, scope=scope))

    def visit_expr(self, node: ast.AST, scope: str) -> None:
        for sub in _walk_expr(node):
            if isinstance(sub, ast.Call):
                func = sub.func
                if isinstance(func, ast.Name):
                    self.facts.calls.append(Call(func.id, line=sub.lineno, scope=scope))
                elif isinstance(func, ast.Attribute):
                    receiver = dotted(func.value) or "<expr>"
                    self.facts.calls.append(Call(func.attr, receiver, line=sub.lineno, scope=scope))


def _children(node: ast.AST) -> Iterator[ast.AST]:
    """A statement's statements and expressions, those of its except and case
    clauses lifted (their bodies are statements of the same scope)."""
    for child in ast.iter_child_nodes(node):
        if isinstance(child, ast.excepthandler | ast.match_case):
            yield from _children(child)
        else:
            yield child


def _walk_expr(node: ast.AST) -> Iterator[ast.AST]:
    """Every node of an expression, lambdas and comprehensions included (their
    calls belong to the enclosing definition)."""
    yield from ast.walk(node)


# -- the oracle ----------------------------------------------------------------------------------
@dataclass(frozen=True)
class Target:
    """A definition of the corpus (path, qualname) or a module (path, "")."""

    path: str
    qualname: str


NEGATIVE = "negative"  # a variable, a parameter: no definition is certain
EXTERNAL = "external"  # a built-in, or through a module outside the corpus
UNKNOWN = "unknown"
Verdict = Target | str


@dataclass
class _Module:
    path: str
    tree: ast.Module
    star: bool = False
    # name -> what module-level statements bind it to (several: a conflict)
    names: dict[str, set[Any]] = field(default_factory=dict)


@dataclass
class _Scope:
    """A function's or a class body's own bindings."""

    qual: str
    kind: str  # "function" | "class"
    names: dict[str, set[Any]] = field(default_factory=dict)
    node: ast.AST | None = None


def module_name(path: str) -> str:
    stem = path[: -len(".py")] if path.endswith(".py") else path
    if stem.endswith("/__init__") or stem == "__init__":
        stem = stem[: -len("__init__")].rstrip("/")
    return stem.replace("/", ".")


class Oracle:
    """Every call site of a corpus of Python files, judged (see the module doc)."""

    def __init__(self, sources: Mapping[str, bytes]) -> None:
        self.modules: dict[str, _Module] = {}
        self.by_name: dict[str, str] = {}
        self.packages: set[str] = set()
        self.prefixes: set[str] = set()  # dotted names with modules below them
        for path in sorted(sources):
            try:
                tree = ast.parse(sources[path].decode("utf-8", "replace"))
            except (SyntaxError, ValueError):
                continue
            self.modules[path] = _Module(path, tree)
            self.by_name[module_name(path)] = path
            parts = module_name(path).split(".")
            self.prefixes.update(".".join(parts[:i]) for i in range(1, len(parts)))
            if path.endswith("__init__.py"):
                self.packages.add(module_name(path))
        self.classes: dict[Target, ast.ClassDef] = {}
        self.class_scope: dict[Target, str] = {}  # class -> qualname of its enclosing scope
        for module in self.modules.values():
            self._bind_module(module)
        self._memo: dict[tuple[str, str], Verdict] = {}
        self._busy: set[tuple[str, str]] = set()

    # -- bindings ---------------------------------------------------------------------------
    def _bind_module(self, module: _Module) -> None:
        for name, value in _bindings(module.tree.body, module.path, "", self):
            module.names.setdefault(name, set()).add(value)
        if any(
            isinstance(n, ast.ImportFrom) and any(a.name == "*" for a in n.names)
            for n in ast.walk(module.tree)
        ):
            module.star = True

    def module_target(self, dotted_name: str) -> Verdict:
        """A module of the corpus, else negative (outside it)."""
        path = self.by_name.get(dotted_name)
        if path is not None:
            return Target(path, "")
        if dotted_name in self.prefixes:
            return Target("<namespace>", dotted_name)
        return EXTERNAL

    def relative(self, path: str, level: int, module: str | None) -> str:
        package = (
            module_name(path).split(".")
            if path.endswith("__init__.py")
            else module_name(path).split(".")[:-1]
        )
        if level > 1:
            package = package[: len(package) - (level - 1)]
        return ".".join([*package, module] if module else package)

    # -- following names -----------------------------------------------------------------------
    def member(self, target: Verdict, name: str) -> Verdict:
        """``target.name``."""
        if target == NEGATIVE:
            return UNKNOWN  # an attribute of a variable
        if not isinstance(target, Target):
            return target
        if target.path == "<namespace>":
            return self.module_target(f"{target.qualname}.{name}")
        if target.qualname == "":
            return self.in_module(target.path, name)
        node = self.classes.get(target)
        if node is None:
            return UNKNOWN  # a function's attribute
        own = _class_body_defs(node)
        if name in own:
            return Target(target.path, f"{target.qualname}.{name}")
        return UNKNOWN

    def in_module(self, path: str, name: str) -> Verdict:
        key = (path, name)
        if key in self._memo:
            return self._memo[key]
        if key in self._busy:
            return UNKNOWN
        self._busy.add(key)
        try:
            module = self.modules[path]
            values = module.names.get(name)
            if values is None:
                sub = f"{module_name(path)}.{name}"
                if path.endswith("__init__.py") and sub in self.by_name:
                    verdict: Verdict = Target(self.by_name[sub], "")
                elif path.endswith("__init__.py") and sub in self.prefixes:
                    verdict = Target("<namespace>", sub)
                else:
                    verdict = UNKNOWN
            else:
                verdict = self._settle(values)
        finally:
            self._busy.discard(key)
        self._memo[key] = verdict
        return verdict

    def _settle(self, values: set[Any]) -> Verdict:
        """One binding's meaning; several different meanings: unknown."""
        found = {self._value(v) for v in values}
        if len(found) != 1:
            return UNKNOWN
        return found.pop()

    def _value(self, value: Any) -> Verdict:
        kind = value[0]
        if kind == "def":
            return Target(value[1], value[2])
        if kind == "local":
            return NEGATIVE
        if kind == "module":
            return self.module_target(value[1])
        if kind == "from":
            _, module, name = value
            base = self.module_target(module)
            if not isinstance(base, Target):
                return base
            sub = self.module_target(f"{module}.{name}")
            found = self.member(base, name)
            if found == UNKNOWN and isinstance(sub, Target):
                return sub
            return found
        return UNKNOWN

    # -- judging call sites ---------------------------------------------------------------------
    def sites(self) -> Iterator[tuple[str, str, int, str, Verdict]]:
        """``(path, caller qualname, line, called name, verdict)`` per call."""
        for module in self.modules.values():
            yield from _Judge(self, module).run()


_BODY_DEFS: dict[int, tuple[ast.ClassDef, set[str]]] = {}
_ASSIGNED: dict[int, tuple[ast.ClassDef, set[str]]] = {}


def _class_body_defs(node: ast.ClassDef) -> set[str]:
    cached = _BODY_DEFS.get(id(node))
    if cached is None or cached[0] is not node:
        cached = _BODY_DEFS[id(node)] = (node, _body_defs(node))
    return cached[1]


def _body_defs(node: ast.ClassDef) -> set[str]:
    """Names a class body binds by def/class only (an assignment too: conflict)."""
    defs: set[str] = set()
    assigned: set[str] = set()
    for stmt in _flat(node.body):
        if isinstance(stmt, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            defs.add(stmt.name)
        else:
            assigned.update(_stored_names(stmt))
    return defs - assigned


def _flat(body: Iterable[ast.stmt]) -> Iterator[ast.stmt]:
    """Statements of a block and of the if/try/with/for/while blocks in it (not
    of nested definitions)."""
    for stmt in body:
        yield stmt
        if isinstance(stmt, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            continue
        for name in ("body", "orelse", "finalbody"):
            yield from _flat(getattr(stmt, name, []) or [])
        for handler in getattr(stmt, "handlers", []) or []:
            yield from _flat(handler.body)
        for case in getattr(stmt, "cases", []) or []:
            yield from _flat(case.body)


def _stored_names(stmt: ast.stmt) -> set[str]:
    """Names a simple statement binds other than by def/class/import."""
    out: set[str] = set()
    if isinstance(stmt, ast.Import | ast.ImportFrom):
        return out
    todo: list[ast.AST] = list(ast.iter_child_nodes(stmt))
    while todo:
        sub = todo.pop()
        if isinstance(sub, _OWN_SCOPES):
            continue  # their names are their own
        if isinstance(sub, ast.Name) and isinstance(sub.ctx, ast.Store | ast.Del):
            out.add(sub.id)
        elif isinstance(sub, ast.ExceptHandler | ast.MatchAs | ast.MatchStar) and sub.name:
            out.add(sub.name)
        todo.extend(ast.iter_child_nodes(sub))
    return out


_OWN_SCOPES = (
    ast.FunctionDef,
    ast.AsyncFunctionDef,
    ast.ClassDef,
    ast.Lambda,
    ast.ListComp,
    ast.SetComp,
    ast.DictComp,
    ast.GeneratorExp,
)


def _bindings(
    body: Iterable[ast.stmt], path: str, scope: str, oracle: Oracle
) -> Iterator[tuple[str, Any]]:
    """What a block's statements bind: ("def", path, qual), ("module", dotted),
    ("from", module, name), ("local",)."""
    for stmt in _flat(body):
        if isinstance(stmt, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            qual = f"{scope}.{stmt.name}" if scope else stmt.name
            yield stmt.name, ("def", path, qual)
            if isinstance(stmt, ast.ClassDef):
                oracle.classes[Target(path, qual)] = stmt
                oracle.class_scope[Target(path, qual)] = scope
        elif isinstance(stmt, ast.Import):
            for alias in stmt.names:
                if alias.asname:
                    yield alias.asname, ("module", alias.name)
                else:
                    yield alias.name.split(".")[0], ("module", alias.name.split(".")[0])
        elif isinstance(stmt, ast.ImportFrom):
            module = (
                oracle.relative(path, stmt.level, stmt.module)
                if stmt.level
                else (stmt.module or "")
            )
            for alias in stmt.names:
                if alias.name != "*":
                    yield alias.asname or alias.name, ("from", module, alias.name)
        else:
            for name in _stored_names(stmt):
                yield name, ("local",)


class _Judge:
    """Walks one module, judging each call site in its scope chain."""

    def __init__(self, oracle: Oracle, module: _Module) -> None:
        self.oracle = oracle
        self.module = module
        self.path = module.path

    def run(self) -> Iterator[tuple[str, str, int, str, Verdict]]:
        yield from self._block(self.module.tree.body, [], "")

    def _block(
        self, body: Iterable[ast.stmt], chain: list[_Scope], qual: str
    ) -> Iterator[tuple[str, str, int, str, Verdict]]:
        for stmt in body:
            yield from self._stmt(stmt, chain, qual)

    def _stmt(
        self, stmt: ast.stmt, chain: list[_Scope], qual: str
    ) -> Iterator[tuple[str, str, int, str, Verdict]]:
        if isinstance(stmt, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            inner = f"{qual}.{stmt.name}" if qual else stmt.name
            for decorator in stmt.decorator_list:
                yield from self._expr(decorator, chain, qual)
            if isinstance(stmt, ast.ClassDef):
                for expr in [*stmt.bases, *(k.value for k in stmt.keywords)]:
                    yield from self._expr(expr, chain, qual)
                scope = _Scope(inner, "class", node=stmt)
                for name, value in _bindings(stmt.body, self.path, inner, self.oracle):
                    scope.names.setdefault(name, set()).add(value)
            else:
                for default in [*stmt.args.defaults, *stmt.args.kw_defaults]:
                    if default is not None:
                        yield from self._expr(default, chain, qual)
                scope = _Scope(inner, "function", node=stmt)
                for name, value in _bindings(stmt.body, self.path, inner, self.oracle):
                    scope.names.setdefault(name, set()).add(value)
                args = stmt.args
                for arg in [*args.posonlyargs, *args.args, *args.kwonlyargs]:
                    scope.names.setdefault(arg.arg, set()).add(("local",))
                for arg in (args.vararg, args.kwarg):
                    if arg is not None:
                        scope.names.setdefault(arg.arg, set()).add(("local",))
                for sub in _flat(stmt.body):
                    if isinstance(sub, ast.Global | ast.Nonlocal):
                        for name in sub.names:
                            scope.names.pop(name, None)
            yield from self._block(stmt.body, [*chain, scope], inner)
            return
        for child in _children(stmt):
            if isinstance(child, ast.stmt):
                yield from self._stmt(child, chain, qual)
            else:
                yield from self._expr(child, chain, qual)

    def _expr(
        self, node: ast.AST, chain: list[_Scope], qual: str
    ) -> Iterator[tuple[str, str, int, str, Verdict]]:
        calls = [sub for sub in ast.walk(node) if isinstance(sub, (ast.Call, *_BINDING_EXPRS))]
        inner = set()
        if any(isinstance(sub, _BINDING_EXPRS) for sub in calls):
            inner = _expression_bound(node)  # lambda parameters, comprehension targets
        for sub in calls:
            if not isinstance(sub, ast.Call):
                continue
            func = sub.func
            head = dotted(func)
            if head is not None and head.split(".")[0] in inner:
                yield self.path, qual, sub.lineno, head.rsplit(".", 1)[-1], UNKNOWN
            elif isinstance(func, ast.Name):
                yield self.path, qual, sub.lineno, func.id, self._name(func.id, chain)
            elif isinstance(func, ast.Attribute):
                yield self.path, qual, sub.lineno, func.attr, self._attribute(func, chain)

    # -- names ---------------------------------------------------------------------------------
    def _name(self, name: str, chain: list[_Scope]) -> Verdict:
        """A bare name: innermost function scope binding it, then the module."""
        innermost = chain[-1] if chain else None
        if innermost is not None and innermost.kind == "class" and name in innermost.names:
            return self._callable(self.oracle._settle(innermost.names[name]))
        for scope in reversed(chain):
            if scope.kind == "function" and name in scope.names:
                return self._callable(self.oracle._settle(scope.names[name]))
        values = self.module.names.get(name)
        if values is not None:
            return self._callable(self.oracle._settle(values))
        if self.module.star:
            return UNKNOWN
        return EXTERNAL if name in BUILTINS else UNKNOWN

    def _callable(self, verdict: Verdict) -> Verdict:
        if isinstance(verdict, Target) and (
            verdict.qualname == "" or verdict.path == "<namespace>"
        ):
            return UNKNOWN  # calling a module
        return verdict

    def _attribute(self, func: ast.Attribute, chain: list[_Scope]) -> Verdict:
        value = func.value
        if (
            isinstance(value, ast.Call)
            and isinstance(value.func, ast.Name)
            and value.func.id == "super"
        ):
            cls = self._method_class(chain, require_self=False)
            if cls is None:
                return UNKNOWN
            return self._callable(self._in_bases(cls, func.attr, set()))
        if isinstance(value, ast.Name):
            cls = self._method_class(chain, receiver=value.id)
            if cls is not None:
                if _assigns_attribute(self.oracle.classes[cls], func.attr):
                    return UNKNOWN
                if func.attr in _class_body_defs(self.oracle.classes[cls]):
                    return Target(cls.path, f"{cls.qualname}.{func.attr}")
                return self._callable(self._in_bases(cls, func.attr, set()))
        base = dotted(value)
        if base is None or base == "super":
            return UNKNOWN
        parts = base.split(".")
        at: Verdict = self._raw(parts[0], chain)
        for part in [*parts[1:], func.attr]:
            at = self.oracle.member(at, part)
            if not isinstance(at, Target):
                return at
        return self._callable(at)

    def _raw(self, name: str, chain: list[_Scope]) -> Verdict:
        """A name's binding without the "is it callable" check."""
        for scope in reversed(chain):
            if scope.kind == "function" and name in scope.names:
                return self.oracle._settle(scope.names[name])
        values = self.module.names.get(name)
        if values is not None:
            return self.oracle._settle(values)
        if self.module.star:
            return UNKNOWN
        return EXTERNAL if name in BUILTINS else UNKNOWN

    def _method_class(
        self, chain: list[_Scope], receiver: str | None = None, require_self: bool = True
    ) -> Target | None:
        """The class of the method whose first parameter is ``receiver``."""
        if len(chain) < 2 or chain[-1].kind != "function" or chain[-2].kind != "class":
            return None
        func = chain[-1].node
        assert isinstance(func, ast.FunctionDef | ast.AsyncFunctionDef)
        if any(isinstance(d, ast.Name) and d.id == "staticmethod" for d in func.decorator_list):
            return None
        params = [*func.args.posonlyargs, *func.args.args]
        if require_self and (not params or params[0].arg != receiver):
            return None
        return Target(self.path, chain[-2].qual)

    def _in_bases(self, cls: Target, name: str, seen: set[Target]) -> Verdict:
        """``name`` in the bases of ``cls``, depth first; unknown when a base is
        not a class of the corpus."""
        seen.add(cls)
        node = self.oracle.classes[cls]
        for base in node.bases:
            text = dotted(base)
            if text is None:
                return UNKNOWN
            found = self._class_of(text, cls)
            if not isinstance(found, Target) or found not in self.oracle.classes or found in seen:
                return UNKNOWN
            if name in _class_body_defs(self.oracle.classes[found]):
                if _assigns_attribute(self.oracle.classes[found], name):
                    return UNKNOWN
                return Target(found.path, f"{found.qualname}.{name}")
            deeper = self._in_bases(found, name, seen)
            if deeper != NEGATIVE:
                return deeper
        return NEGATIVE if node.bases else UNKNOWN

    def _class_of(self, text: str, cls: Target) -> Verdict:
        """A base class expression, read in the module of ``cls`` (top-level
        names only: good enough for bases)."""
        parts = text.split(".")
        values = self.oracle.modules[cls.path].names.get(parts[0])
        if values is None:
            return UNKNOWN
        at = self.oracle._settle(values)
        for part in parts[1:]:
            at = self.oracle.member(at, part)
        return at


_BINDING_EXPRS = (ast.Lambda, ast.comprehension, ast.NamedExpr)


def _expression_bound(node: ast.AST) -> set[str]:
    """Names bound inside an expression (lambda parameters, comprehension targets)."""
    out: set[str] = set()
    for sub in ast.walk(node):
        if isinstance(sub, ast.Lambda):
            a = sub.args
            out.update(x.arg for x in [*a.posonlyargs, *a.args, *a.kwonlyargs])
            out.update(x.arg for x in (a.vararg, a.kwarg) if x is not None)
        elif isinstance(sub, ast.comprehension):
            out.update(n.id for n in ast.walk(sub.target) if isinstance(n, ast.Name))
        elif isinstance(sub, ast.NamedExpr) and isinstance(sub.target, ast.Name):
            out.add(sub.target.id)
    return out


def _assigns_attribute(node: ast.ClassDef, name: str) -> bool:
    """Whether a method of the class assigns ``self.<name>`` (or any ``x.<name>``)."""
    cached = _ASSIGNED.get(id(node))
    if cached is None or cached[0] is not node:
        names = {
            sub.attr
            for sub in ast.walk(node)
            if isinstance(sub, ast.Attribute)
            and isinstance(sub.ctx, ast.Store)
            and isinstance(sub.value, ast.Name)
        }
        cached = _ASSIGNED[id(node)] = (node, names)
    return name in cached[1]


# -- scoring ---------------------------------------------------------------------------------------
@dataclass
class Score:
    """Precision and recall of the graph's call edges against the oracle."""

    right: int = 0
    wrong: int = 0
    unjudged: int = 0
    to_modules: int = 0
    resolved_sites: int = 0
    found_sites: int = 0
    wrong_by_reason: Counter[str] = field(default_factory=Counter)
    judged_by_reason: Counter[str] = field(default_factory=Counter)
    unjudged_by_reason: Counter[str] = field(default_factory=Counter)
    examples: list[str] = field(default_factory=list)

    @property
    def precision(self) -> float:
        return self.right / max(1, self.right + self.wrong)

    @property
    def recall(self) -> float:
        return self.found_sites / max(1, self.resolved_sites)

    def report(self) -> str:
        return (
            f"precision {self.precision:.3f} ({self.right} right, {self.wrong} wrong, "
            f"{self.unjudged} unjudged, {self.to_modules} to external modules); "
            f"recall {self.recall:.3f} ({self.found_sites} of {self.resolved_sites} resolved sites)"
        )


def score(sources: Mapping[str, bytes], nodes: Any, edges: Any) -> Score:
    """Compare the graph's ``calls`` edges with the oracle's verdicts."""
    verdicts: dict[tuple[str, str, int, str], Verdict] = {}
    for path, qual, line, name, verdict in Oracle(sources).sites():
        key = (path, qual, line, name)
        if key in verdicts and verdicts[key] != verdict:
            verdicts[key] = UNKNOWN  # two calls of one name on a line, judged differently
        else:
            verdicts[key] = verdict
    node = {
        row["id"]: row
        for row in nodes.select(["id", "kind", "name", "qualname", "path"]).to_pylist()
    }
    result = Score()
    found: set[tuple[str, str, int, Target]] = set()
    for edge in edges.filter(_kind_is(edges, "calls")).to_pylist():
        src, dst = node[edge["src"]], node[edge["dst"]]
        if dst["path"] == "":
            result.to_modules += 1
            continue
        target = Target(dst["path"], dst["qualname"])
        key = (src["path"], src["qualname"], edge["line"], dst["name"])
        verdict = verdicts.get(key, UNKNOWN)
        if verdict in (NEGATIVE, EXTERNAL):
            verdict = NEGATIVE
        if verdict == UNKNOWN:
            result.unjudged += 1
            result.unjudged_by_reason[edge["reason"]] += 1
            continue
        result.judged_by_reason[edge["reason"]] += 1
        if verdict == target:
            result.right += 1
            found.add((*key[:3], target))
        else:
            result.wrong += 1
            result.wrong_by_reason[edge["reason"]] += 1
            if len(result.examples) < 400:
                result.examples.append(f"{key} -> {target} [{edge['reason']}], oracle: {verdict}")
    for (path, qual, line, _name), verdict in verdicts.items():
        if isinstance(verdict, Target):
            result.resolved_sites += 1
            if (path, qual, line, verdict) in found:
                result.found_sites += 1
    return result


def _kind_is(table: Any, kind: str) -> Any:
    import pyarrow.compute as pc

    return pc.equal(table["kind"], kind)


def stdlib_sources(root: Path, select: Callable[[str], bool] | None = None) -> dict[str, bytes]:
    """The standard library's Python files (site-packages left out), by path."""
    out: dict[str, bytes] = {}
    for file in sorted(root.rglob("*.py")):
        rel = file.relative_to(root).as_posix()
        if rel.startswith(("site-packages/", "dist-packages/")) or "/site-packages/" in rel:
            continue
        if select is not None and not select(rel):
            continue
        out[rel] = file.read_bytes()
    return out


def facts_of(sources: Mapping[str, bytes], extract: Extractor) -> dict[str, FileFacts]:
    return {path: extract(path, data) for path, data in sources.items()}


def sample_rule(packages: Iterable[str], modules: Iterable[str]) -> Callable[[str], bool]:
    """Whole packages (cross-module imports resolve inside them) and single modules."""
    prefixes = tuple(f"{p}/" for p in packages)
    singles = frozenset(f"{m}.py" for m in modules)
    return lambda rel: rel.startswith(prefixes) or rel in singles


def counts(items: Iterable[str]) -> dict[str, int]:
    out: dict[str, int] = defaultdict(int)
    for item in items:
        out[item] += 1
    return dict(out)


# -- fixture projects: hand-checked edges per language ------------------------------------------------
FIXTURES = Path(__file__).resolve().parent / "data" / "graph"
SCORED_KINDS = ("imports", "calls", "extends", "implements")


@dataclass
class EdgeScore:
    """One fixture project's edges against its hand-checked list."""

    language: str
    expected: set[tuple[str, str, str]]
    found: set[tuple[str, str, str]]

    @property
    def right(self) -> set[tuple[str, str, str]]:
        return self.expected & self.found

    @property
    def precision(self) -> float:
        return len(self.right) / max(1, len(self.found))

    @property
    def recall(self) -> float:
        return len(self.right) / max(1, len(self.expected))

    def by_kind(self, kind: str) -> tuple[int, int, int]:
        """(right, found, expected) edges of one kind."""
        return (
            sum(1 for e in self.right if e[0] == kind),
            sum(1 for e in self.found if e[0] == kind),
            sum(1 for e in self.expected if e[0] == kind),
        )


def fixture_languages() -> list[str]:
    return sorted(p.name for p in FIXTURES.iterdir() if (p / "edges.json").is_file())


def fixture_sources(language: str) -> dict[str, bytes]:
    base = FIXTURES / language
    return {
        f.relative_to(base).as_posix(): f.read_bytes()
        for f in sorted(base.rglob("*"))
        if f.is_file() and f.name != "edges.json"
    }


def score_fixture(language: str, extract: Extractor) -> EdgeScore:
    """Extract and resolve a fixture project; compare its edges (imports,
    calls, extends, implements, as ``path:qualname`` labels, lines ignored)."""
    import json

    from gitmem.graph.resolve import resolve

    sources = fixture_sources(language)
    nodes, edges = resolve(facts_of(sources, extract))
    by_id = {n["id"]: n for n in nodes.to_pylist()}

    def label(node_id: str) -> str:
        n = by_id[node_id]
        if not n["path"]:
            return f"ext:{n['qualname']}"
        return f"{n['path']}:{n['qualname']}" if n["qualname"] else n["path"]

    found = {
        (e["kind"], label(e["src"]), label(e["dst"]))
        for e in edges.to_pylist()
        if e["kind"] in SCORED_KINDS
    }
    listed = json.loads((FIXTURES / language / "edges.json").read_text())["edges"]
    return EdgeScore(language, {(k, s, d) for k, s, d in listed}, found)
