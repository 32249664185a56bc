"""Hostile plain data: random msgpack-able values and mutations of valid wire structures.

Used by the hypothesis fuzzers (seeded from a drawn int) and by the raw frame fuzzer. Values
are what msgpack can carry: None, bool, int (64-bit range and its edges), float (nan, inf),
str, bytes, lists, maps (usually str keys) — and, on request, extension types and nesting
close to msgpack's depth limit.
"""

from __future__ import annotations

import copy
import math
import random
from typing import Any

import msgpack

#: Ints that sit on a boundary somewhere (ids, sizes, offsets, codes, dims).
EDGE_INTS = (0, 1, -1, 2, 3, 4, 7, 8, 16, 17, 63, 64, 255, 256, 4095, 4096, 65535, 65536,
             2**31 - 1, 2**31, -(2**31), 2**32 - 1, 2**32, 2**48, 2**53 - 1, 2**53, 2**62,
             2**62 + 1, 2**63 - 1, -(2**63), 2**64 - 1)
EDGE_FLOATS = (0.0, -0.0, 0.5, 1.0, -1.0, 1e300, -1e300, 1e-300, math.nan, math.inf, -math.inf)
WORDS = ("", "x", "model", "handle", "inputs", "outputs", "float32", "int32", "uint8", "bool",
         "device", "memfd", "mmap_fd", "blob", "input", "output", "ping", "hello", "execute",
         "operands", "type", "dims", "value", "ref", "subgraph", "\x00", "é", "/nnrt-x",
         "a" * 300)
#: Depth of nesting that reaches Python's recursion limit in ``repr`` (msgpack allows 1024).
DEEP = 1000


def rand_int(rng: random.Random) -> int:
    """An edge int, a small int, or a random 64-bit one."""
    roll = rng.random()
    if roll < 0.5:
        return rng.choice(EDGE_INTS)
    if roll < 0.85:
        return rng.randint(-4, 40)
    return rng.randint(-(2**63), 2**64 - 1)


def rand_value(rng: random.Random, depth: int = 0, *, ext: bool = False,
               deep: bool = False) -> Any:
    """A random plain value; containers up to a few levels deep."""
    roll = rng.random()
    if deep and roll < 0.02:
        return deep_list(rng.choice((DEEP - 10, DEEP, 1020)))
    if ext and roll < 0.04:
        return msgpack.ExtType(rng.randint(0, 127), rng.randbytes(rng.randint(0, 8)))
    if depth >= 3 or roll < 0.55:
        kind = rng.randrange(6)
        if kind == 0:
            return None
        if kind == 1:
            return rng.random() < 0.5
        if kind == 2:
            return rand_int(rng)
        if kind == 3:
            return rng.choice(EDGE_FLOATS) if rng.random() < 0.6 else rng.uniform(-1e6, 1e6)
        if kind == 4:
            return rng.choice(WORDS)
        return rng.randbytes(rng.choice((0, 1, 3, 4, 16, 17, 64)))
    if roll < 0.8:
        return [rand_value(rng, depth + 1, ext=ext, deep=deep)
                for _ in range(rng.choice((0, 1, 2, 3, 5)))]
    return {rand_key(rng): rand_value(rng, depth + 1, ext=ext, deep=deep)
            for _ in range(rng.choice((0, 1, 2, 4)))}


def rand_key(rng: random.Random) -> Any:
    """A map key: usually a str, sometimes an int (which strict decoders refuse)."""
    return rng.choice(WORDS) if rng.random() < 0.9 else rand_int(rng)


def deep_list(depth: int) -> Any:
    """``[[[...None...]]]`` nested ``depth`` levels."""
    value: Any = None
    for _ in range(depth):
        value = [value]
    return value


def _containers(value: Any, path: tuple[Any, ...] = ()) -> list[tuple[tuple[Any, ...], Any]]:
    """Every (path, container) in ``value``, itself included (iterative: no recursion)."""
    found = []
    stack = [(path, value)]
    while stack:
        where, item = stack.pop()
        if isinstance(item, list | dict):
            found.append((where, item))
            keys = range(len(item)) if isinstance(item, list) else list(item)
            for key in keys:
                stack.append(((*where, key), item[key]))
    return found


def mutate(rng: random.Random, value: Any, count: int = 1, *, ext: bool = False,
           deep: bool = False) -> Any:
    """A deep copy of ``value`` with ``count`` random structural or value mutations."""
    value = copy.deepcopy(value)
    for _ in range(count):
        containers = _containers(value)
        if not containers:
            return rand_value(rng, ext=ext, deep=deep)
        _, target = rng.choice(containers)
        _mutate_one(rng, target, ext=ext, deep=deep)
    return value


def _mutate_one(rng: random.Random, target: Any, *, ext: bool, deep: bool) -> None:
    keys = list(range(len(target))) if isinstance(target, list) else list(target)
    roll = rng.random()
    if not keys or roll < 0.08:  # grow
        if isinstance(target, list):
            target.append(rand_value(rng, 1, ext=ext, deep=deep) if rng.random() < 0.5
                          or not target else copy.deepcopy(rng.choice(target)))
        else:
            target[rand_key(rng)] = rand_value(rng, 1, ext=ext, deep=deep)
        return
    key = rng.choice(keys)
    old = target[key]
    if roll < 0.2:  # shrink
        del target[key]
    elif roll < 0.5:  # a value of a related kind
        target[key] = _nudge(rng, old)
    elif roll < 0.6 and isinstance(target, list) and len(target) > 1:  # shuffle order
        rng.shuffle(target)
    elif roll < 0.65:  # duplicate many times
        target[key] = [copy.deepcopy(old)] * rng.choice((2, 17, 1000))
    else:  # anything
        target[key] = rand_value(rng, 1, ext=ext, deep=deep)


def _nudge(rng: random.Random, old: Any) -> Any:
    """A value close to ``old``: an edge of the same type, a truncated / extended one."""
    if isinstance(old, bool):
        return not old if rng.random() < 0.5 else int(old)
    if isinstance(old, int):
        return rng.choice((old + 1, old - 1, -old, old * 2**16, rand_int(rng), float(old),
                           bool(old & 1)))
    if isinstance(old, float):
        return rng.choice((*EDGE_FLOATS, int(old) if math.isfinite(old) else 0))
    if isinstance(old, bytes):
        cut = rng.randint(0, len(old)) if old else 0
        return rng.choice((old[:cut], old + rng.randbytes(rng.choice((1, 3, 4))),
                           bytes(len(old)), old.decode("latin-1")))
    if isinstance(old, str):
        return rng.choice((old[:-1], old + "x", old.encode(), old.upper(), ""))
    if isinstance(old, list):
        return rng.choice((old[:-1], [*old, *old], [], old[::-1], tuple(old) and list(old)))
    if isinstance(old, dict):
        return rng.choice((list(old.values()), {}, dict(list(old.items())[:-1])))
    return rand_value(rng)
