"""The verifier: generated source is checked to be plain kernel calls before it is compiled.

Bytecode is untrusted (a cache file, a model file), so the dispatch runs its source only if it
has exactly the shape the code generator emits. Allowed, per entry point listed in the module:

* a top-level ``def <entry>(inputs, outputs, scratch):`` (no decorators, defaults, annotations);
* statements: ``name = <call or argument>``, a bare ``<call>``, ``return`` (None, a name or a
  constant);
* calls whose function is a plain name of the kernel table, positional arguments only;
* arguments: names already bound (parameters, module tensors, earlier assignments), int /
  float / str / bool / None constants (negated numbers too), tuples of arguments, and
  ``inputs[i]`` / ``outputs[i]`` with an int constant ``i >= 0``.

Anything else (imports, attribute access, dunder names, other subscripts, lambdas,
comprehensions, loops, keywords, starred arguments, calls of non-kernels such as ``exec``) is
rejected with ``BadData`` naming the entry point and line.
"""

from __future__ import annotations

import ast
from collections.abc import Collection

from nnrt.errors import BadData

__all__ = ["PARAMETERS", "verify_source"]

#: The parameters of every entry point, in order.
PARAMETERS = ("inputs", "outputs", "scratch")
_INDEXABLE = ("inputs", "outputs")


class _Checker:
    """Checks one entry point's body against the allowed shapes."""

    def __init__(self, entry: str, kernels: Collection[str], tensors: Collection[str]) -> None:
        self.entry = entry
        self.kernels = kernels
        self.bound: set[str] = set(PARAMETERS) | set(tensors)

    def fail(self, node: ast.AST, why: str) -> BadData:
        line = getattr(node, "lineno", "?")
        return BadData(f"cpu bytecode: entry point {self.entry!r}, line {line}: {why}")

    def name(self, node: ast.AST, name: str) -> str:
        if "__" in name:
            raise self.fail(node, f"dunder name {name!r} is not allowed")
        return name

    def statement(self, node: ast.stmt) -> None:
        if isinstance(node, ast.Assign):
            if len(node.targets) != 1 or not isinstance(node.targets[0], ast.Name):
                raise self.fail(node, "only assignments to one plain name are allowed")
            target = self.name(node, node.targets[0].id)
            if target in self.kernels or target in PARAMETERS:
                raise self.fail(node, f"assignment to reserved name {target!r}")
            self.value(node.value)
            self.bound.add(target)
        elif isinstance(node, ast.Expr):
            if not isinstance(node.value, ast.Call):
                raise self.fail(node, "a bare expression must be a kernel call")
            self.call(node.value)
        elif isinstance(node, ast.Return):
            if node.value is not None:
                self.argument(node.value)
        else:
            raise self.fail(node, f"{type(node).__name__} statements are not allowed")

    def value(self, node: ast.expr) -> None:
        if isinstance(node, ast.Call):
            self.call(node)
        else:
            self.argument(node)

    def call(self, node: ast.Call) -> None:
        func = node.func
        if not isinstance(func, ast.Name):
            raise self.fail(node, f"calls must name a kernel, got {type(func).__name__}")
        name = self.name(node, func.id)
        if name not in self.kernels:
            raise self.fail(node, f"{name!r} is not a kernel")
        if node.keywords:
            raise self.fail(node, "keyword arguments are not allowed")
        for arg in node.args:
            self.argument(arg)

    def argument(self, node: ast.expr) -> None:
        if isinstance(node, ast.Name):
            name = self.name(node, node.id)
            if not isinstance(node.ctx, ast.Load) or name not in self.bound:
                raise self.fail(node, f"name {name!r} is not bound")
        elif isinstance(node, ast.Constant):
            if node.value is not None and type(node.value) not in (int, float, str, bool):
                raise self.fail(node, f"{type(node.value).__name__} constants are not allowed")
        elif isinstance(node, ast.UnaryOp):
            operand = node.operand
            if not (isinstance(node.op, ast.USub) and isinstance(operand, ast.Constant)
                    and type(operand.value) in (int, float)):
                raise self.fail(node, "only negated number constants are allowed")
        elif isinstance(node, ast.Tuple):
            for item in node.elts:
                self.argument(item)
        elif isinstance(node, ast.Subscript):
            self.subscript(node)
        else:
            raise self.fail(node, f"{type(node).__name__} expressions are not allowed")

    def subscript(self, node: ast.Subscript) -> None:
        base, index = node.value, node.slice
        if not (isinstance(base, ast.Name) and base.id in _INDEXABLE
                and isinstance(index, ast.Constant) and type(index.value) is int
                and index.value >= 0):
            raise self.fail(node, "only inputs[i] and outputs[i] with a constant int i >= 0 "
                                  "may be subscripted")


def _check_signature(node: ast.FunctionDef) -> None:
    args = node.args
    names = tuple(a.arg for a in args.args)
    if (names != PARAMETERS or args.posonlyargs or args.vararg or args.kwonlyargs
            or args.kwarg or args.defaults or args.kw_defaults or node.decorator_list
            or node.returns or any(a.annotation for a in args.args)
            or getattr(node, "type_params", None)):
        raise BadData(f"cpu bytecode: entry point {node.name!r}, line {node.lineno}: expected "
                      f"exactly 'def {node.name}({', '.join(PARAMETERS)}):'")


def verify_source(source: str, entry_points: Collection[str], kernels: Collection[str],
                  tensors: Collection[str]) -> ast.Module:
    """The parsed ``source`` if it passes the rules above; ``BadData`` naming the line if not."""
    try:
        tree = ast.parse(source, filename="<cpu bytecode>", mode="exec")
    except (SyntaxError, ValueError) as exc:
        line = getattr(exc, "lineno", "?")
        raise BadData(f"cpu bytecode: source does not parse (line {line}): {exc}") from None
    defined: set[str] = set()
    for node in tree.body:
        if not isinstance(node, ast.FunctionDef):
            raise BadData(f"cpu bytecode: line {getattr(node, 'lineno', '?')}: only entry point "
                          f"definitions are allowed at top level, got {type(node).__name__}")
        if node.name not in entry_points or node.name in defined:
            raise BadData(f"cpu bytecode: line {node.lineno}: function {node.name!r} is not a "
                          "listed entry point, or is defined twice")
        if node.name in kernels or node.name in tensors:
            raise BadData(f"cpu bytecode: entry point {node.name!r} shadows a kernel or tensor")
        _check_signature(node)
        checker = _Checker(node.name, kernels, tensors)
        for statement in node.body:
            checker.statement(statement)
        defined.add(node.name)
    missing = sorted(set(entry_points) - defined)
    if missing:
        raise BadData(f"cpu bytecode: entry points {missing} are not defined in the source")
    return tree
