"""Every public function of ``graphs`` names the argument it refuses, in one line: ``TypeError`` for a wrong type
(``1`` or ``"y"`` is no flag), ``ValueError`` for a bad value, before anything is allocated."""

import numpy as np
import pytest
from refusals import assert_refused

from graphs import (
    Graph,
    NeighbourOp,
    WindowOp,
    admissible_sizes,
    apply_layer,
    backward_counts,
    backward_full_layer,
    forward_counts,
    path_lengths,
    slab_counts,
)
from graphs.memory import parse_bytes
from graphs.reachability import combine_slabs, plan_slabs, progress_bar
from graphs.validation import check_bool


def ops(layer):
    return [WindowOp(1, 0, order=1)]


def graph():
    return Graph.from_edges(4, [0, 1, 2], [1, 2, 3], directed=False)


BITS = np.zeros((4, 1), dtype=np.uint64)

CASES = [
    # strict flags: causal, stop_when_full, progress, circular, directed
    (lambda: forward_counts(ops, 8, max_layers=2, causal="y"), TypeError, "causal"),
    (lambda: forward_counts(ops, 8, max_layers=2, causal=1), TypeError, "causal"),
    (lambda: forward_counts(ops, 8, max_layers=2, stop_when_full=1), TypeError, "stop_when_full"),
    (lambda: forward_counts(ops, 8, max_layers=2, progress="x"), TypeError, "progress"),
    (lambda: backward_counts(ops, 8, [1], max_layers=2, causal=1), TypeError, "causal"),
    (lambda: backward_full_layer(ops, 8, [1], guess=1, max_layers=4, causal="no"), TypeError, "causal"),
    (lambda: slab_counts(ops, 8, 0, 4, max_layers=2, causal=1), TypeError, "causal"),
    (lambda: combine_slabs([], 8, 1), TypeError, "causal"),
    (lambda: admissible_sizes([0], 8, 1), TypeError, "causal"),
    (lambda: WindowOp(1, 1, circular=1), TypeError, "circular"),
    (lambda: Graph.from_edges(3, [0], [1], directed=1), TypeError, "directed"),
    (lambda: Graph.from_scipy(np.eye(2), directed="yes"), TypeError, "directed"),
    (lambda: path_lengths(graph(), progress="x"), TypeError, "progress"),
    (lambda: progress_bar("x", range(2)), TypeError, "progress"),
    # max_memory: a size, as coverage takes it (parse_bytes)
    (lambda: forward_counts(ops, 8, max_layers=2, max_memory=[]), TypeError, "max_memory"),
    (lambda: forward_counts(ops, 8, max_layers=2, max_memory="lots"), ValueError, "max_memory"),
    (lambda: plan_slabs(ops, 8, max_memory=None), TypeError, "max_memory"),
    (lambda: plan_slabs(ops, 8, max_memory="-1"), ValueError, "max_memory"),
    (lambda: backward_counts(ops, 8, [1], max_layers=2, max_memory=True), TypeError, "max_memory"),
    # integers and the other arguments
    (lambda: forward_counts(3, 8, max_layers=2), TypeError, "layer_ops"),
    (lambda: forward_counts(ops, 8, max_layers=2, slab_size="x"), TypeError, "slab_size"),
    (lambda: forward_counts(ops, 8, max_layers=2, slab_size=0), ValueError, "slab_size"),
    (lambda: plan_slabs(ops, "x"), TypeError, "n"),
    (lambda: plan_slabs(3, 8), TypeError, "layer_ops"),
    (lambda: slab_counts(ops, 8, "x", 4, max_layers=2), TypeError, "start"),
    (lambda: slab_counts(ops, 8, 0, 9, max_layers=2), ValueError, "start, stop"),
    (lambda: combine_slabs([], "x", True), TypeError, "n"),
    (lambda: combine_slabs([3], 8, True), TypeError, "slabs[0]"),
    (lambda: admissible_sizes("x", 8, False), TypeError, "nodes"),
    (lambda: admissible_sizes([0, 8], 8, False), ValueError, "nodes"),
    (lambda: admissible_sizes([0], "x", False), TypeError, "n"),
    (lambda: backward_counts(ops, 8, "x", max_layers=2), TypeError, "targets"),
    (lambda: backward_counts(ops, 8, [0.5], max_layers=2), TypeError, "targets"),
    (lambda: backward_counts(ops, 8, [], max_layers=2), ValueError, "targets"),
    (lambda: backward_full_layer(ops, 8, [1], guess="x", max_layers=4), TypeError, "guess"),
    (lambda: backward_full_layer(ops, 8, [1], guess=0, max_layers=4), ValueError, "guess"),
    # the operators
    (lambda: WindowOp("1", 1), TypeError, "left"),
    (lambda: WindowOp(1, -1), ValueError, "right"),
    (lambda: WindowOp(1, 1, order=2), ValueError, "order"),
    (lambda: WindowOp(1, 1, order=1.0), TypeError, "order"),
    (lambda: WindowOp(1, 1, perm=[0, 1]), TypeError, "perm"),
    (lambda: WindowOp(1, 1, perm=np.zeros((2, 2), dtype=np.int64)), ValueError, "perm"),
    (lambda: NeighbourOp("a", np.zeros(1, dtype=np.int64)), TypeError, "indptr"),
    (lambda: NeighbourOp(np.zeros(2, dtype=np.int64), np.zeros(1)), TypeError, "indices"),
    (lambda: NeighbourOp.from_lists(3, 2), TypeError, "neighbours"),
    (lambda: NeighbourOp.from_lists([[0]], "1"), TypeError, "n"),
    (lambda: apply_layer(3, BITS, BITS.copy()), TypeError, "ops"),
    (lambda: apply_layer([3], BITS, BITS.copy()), TypeError, "ops[0]"),
    # static graphs
    (lambda: Graph.from_edges(3, "x", [1]), TypeError, "sources"),
    (lambda: Graph.from_edges(3, [0], [1.5]), TypeError, "targets"),
    (lambda: Graph.from_scipy("x"), TypeError, "matrix"),
    (lambda: Graph.from_scipy(np.ones(3)), ValueError, "matrix"),
    (lambda: path_lengths(graph(), sources="x"), TypeError, "sources"),
    (lambda: path_lengths(graph(), seed=-1), ValueError, "seed"),
    (lambda: path_lengths(graph(), max_memory=[]), TypeError, "max_memory"),
    (lambda: parse_bytes(None), TypeError, "max_memory"),
]


@pytest.mark.parametrize(("call", "error", "name"), CASES)
def test_a_refused_argument_is_named_in_one_line(call, error, name):
    assert_refused(call, error, name)


def test_numpy_bools_are_flags_and_max_memory_takes_a_size():
    assert check_bool("causal", np.True_) is True and check_bool("causal", np.bool_(False)) is False
    assert check_bool("progress", None, none=True) is None
    with pytest.raises(TypeError, match=r"^progress: expected a bool or None"):
        check_bool("progress", 0, none=True)
    a = forward_counts(ops, 8, max_layers=3, causal=np.True_, max_memory="2GiB")
    b = forward_counts(ops, 8, max_layers=3, causal=True, max_memory=2 * 2**30)
    np.testing.assert_array_equal(a.counts, b.counts)
    assert plan_slabs(ops, 200, max_memory="1MiB") == plan_slabs(ops, 200, max_memory=2**20)
    assert backward_counts(ops, 8, [7], max_layers=2, max_memory="64MiB").counts.tolist() == [[2], [3]]
    assert WindowOp(1, 1, circular=np.False_, perm=np.arange(4, dtype=np.int32)).size == 3
