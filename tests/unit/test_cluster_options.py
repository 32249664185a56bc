"""``nnrt.RayCluster`` options and node choice: checked without Ray (nothing imports it here)."""

from __future__ import annotations

import sys

import pytest

import nnrt
from nnrt.cluster.nodes import choose_nodes, node_workers

A, B, C = ("a" * 56, "b" * 56, "c" * 56)
ALIVE = [{"NodeID": B, "Resources": {"CPU": 4.0}}, {"NodeID": A, "Resources": {"CPU": 1.0}},
         {"NodeID": C, "Resources": {}}]


@pytest.mark.parametrize(("kwargs", "message"), [
    ({"address": "ray://head:10001"}, "Ray Client"),
    ({"address": "head"}, "HOST:PORT"),
    ({"address": 5}, "address must be"),
    ({"nodes": 0}, "at least 1"),
    ({"nodes": "abc"}, "count or a list"),
    ({"nodes": ["xyz"]}, "56 hex digits"),
    ({"nodes": [A, A]}, "named twice"),
    ({"workers": 0}, "workers must be"),
    ({"max_in_flight": 1.5}, "max_in_flight must be"),
    ({"drivers": "cpu"}, "drivers must be"),
    ({"max_restarts": -2}, "max_restarts"),
    ({"resources": {"CPU": -1}}, "resources"),
    ({"init": {"address": "auto"}}, "address="),
    ({"start_timeout": 0}, "start_timeout"),
    ({"lanes": -1}, "lanes must be"),
    ({"lanes": 65}, "lanes must be"),
    ({"lanes": True}, "lanes must be"),
])
def test_bad_options_raise_bad_data(kwargs: dict[str, object], message: str) -> None:
    with pytest.raises(nnrt.BadData, match=message):
        nnrt.RayCluster(**kwargs)  # type: ignore[arg-type]


def test_good_options_and_serve_arguments() -> None:
    options = nnrt.RayCluster(address="10.0.0.1:6379", nodes=[A, B], drivers=["cpu"], threads=2)
    assert options.serve_arguments(3) == ["--workers", "3", "--driver", "cpu", "--threads", "2"]
    nnrt.RayCluster(address="auto", nodes=2, max_restarts=-1, resources={"CPU": 0.5})
    assert nnrt.RayCluster().lanes == 1 and nnrt.RayCluster(lanes=0).lanes == 0


def test_options_import_no_ray() -> None:
    import subprocess

    code = "import nnrt, sys; nnrt.RayCluster(nodes=2); print('ray' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, timeout=60).stdout.strip()
    assert out == "False"


def test_the_runtime_refuses_cluster_with_connect() -> None:
    with pytest.raises(nnrt.BadData, match="excludes connect"):
        nnrt.Runtime(cluster=nnrt.RayCluster(), connect="/tmp/nnrt.sock")
    with pytest.raises(nnrt.BadData, match="must be a cluster"):
        nnrt.Runtime(cluster="ray")  # type: ignore[arg-type]


def test_nodes_are_chosen_this_node_first() -> None:
    assert [n["NodeID"] for n in choose_nodes(ALIVE, A, None)] == [A, B, C]
    assert [n["NodeID"] for n in choose_nodes(ALIVE, C, 2)] == [C, A]
    assert [n["NodeID"] for n in choose_nodes(ALIVE, B, [C, B])] == [B, C]
    with pytest.raises(nnrt.BadData, match="3 alive node"):
        choose_nodes(ALIVE, A, 4)
    with pytest.raises(nnrt.BadData, match="must be among nodes"):
        choose_nodes(ALIVE, A, [B])
    with pytest.raises(nnrt.BadData, match="not alive nodes"):
        choose_nodes(ALIVE, A, [A, "d" * 56])
    with pytest.raises(nnrt.BadData, match="not an alive node"):
        choose_nodes(ALIVE, "d" * 56, None)


def test_workers_default_to_the_node_cpus() -> None:
    assert [node_workers(n, None) for n in ALIVE] == [4, 1, 1]
    assert node_workers(ALIVE[0], 2) == 2
