"""``graphs.Graph(...)`` validates its CSR arrays as ``from_edges`` guarantees them; the fast internal path
(``from_edges``, ``reverse``) builds the same objects."""

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from graphs.clustering_measures import triangles
from graphs.graph import Graph


def test_valid_csr_is_accepted_and_stored_as_int64():
    g = Graph(3, np.array([0, 2, 3, 4], dtype=np.int32), np.array([1, 2, 2, 0], dtype=np.uint16))
    assert g.indptr.dtype == np.int64 and g.indices.dtype == np.int64 and g.n == 3 and g.directed
    u = Graph(3, [0, 1, 3, 4], [1, 0, 2, 1], directed=False)
    assert u.edges == 2


@pytest.mark.parametrize(
    ("args", "name"),
    [
        ((0, [0], []), "n"),
        ((2, [0, 1], [1]), "indptr"),  # n + 1 entries expected
        ((2, [1, 1, 1], [1]), "indptr"),  # must start at 0
        ((2, [0, 1, 1], [1, 0]), "indptr"),  # must end at len(indices)
        ((3, [0, 2, 1, 2], [1, 2]), "indptr"),  # decreasing
        ((2, [[0, 1, 1]], [1]), "indptr"),  # 2-D
        ((2, [0, 1, 1], [1.5]), "indices"),  # not integers
        ((2, [0, 1, 1], [2]), "indices"),  # out of range
        ((2, [0, 1, 1], [-1]), "indices"),
        ((2, [0, 1, 1], [0]), "indices"),  # self-loop
        ((3, [0, 2, 2, 2], [2, 1]), "indices"),  # unsorted row
        ((3, [0, 2, 2, 2], [1, 1]), "indices"),  # duplicate
    ],
)
def test_bad_arrays_name_the_field(args, name):
    """A bad value of the right type is a ValueError naming the field (an array of the wrong dtype included)."""
    with pytest.raises(ValueError, match=f"^{name}:"):
        Graph(*args)


def test_undirected_must_be_symmetric_and_directed_a_bool():
    with pytest.raises(ValueError, match=r"^indices: an undirected graph"):
        Graph(2, [0, 1, 1], [1], directed=False)
    with pytest.raises(TypeError, match=r"^directed:"):
        Graph(2, [0, 1, 1], [1], directed="no")


@pytest.mark.parametrize("n", [2.0, True, None, "2"])
def test_wrong_type_of_n_is_a_type_error(n):
    with pytest.raises(TypeError, match=r"^n: expected an integer"):
        Graph(n, [0, 0, 0], [])
    with pytest.raises(TypeError, match=r"^n: expected an integer"):
        Graph.from_edges(n, [], [])


def test_unsorted_rows_are_refused():
    """The triangle 0-1-2 with row 0 stored as [2, 1]: refused instead of a wrong count."""
    with pytest.raises(ValueError, match="sorted"):
        Graph(3, [0, 2, 4, 6], [2, 1, 0, 2, 0, 1], directed=False)
    good = Graph(3, [0, 2, 4, 6], [1, 2, 0, 2, 0, 1], directed=False)
    np.testing.assert_array_equal(triangles(good), [1, 1, 1])


@given(
    n=st.integers(1, 12),
    pairs=st.lists(st.tuples(st.integers(0, 11), st.integers(0, 11)), max_size=40),
    directed=st.booleans(),
)
def test_from_edges_output_passes_the_checks(n, pairs, directed):
    """Every graph ``from_edges`` (and ``reverse``/``undirected``) builds is one the checked constructor accepts."""
    src = np.array([u % n for u, _ in pairs], dtype=np.int64)
    dst = np.array([v % n for _, v in pairs], dtype=np.int64)
    g = Graph.from_edges(n, src, dst, directed=directed)
    for h in (g, g.reverse(), g.undirected()):
        again = Graph(h.n, h.indptr, h.indices, h.directed)
        assert np.array_equal(again.indptr, h.indptr) and np.array_equal(again.indices, h.indices)
