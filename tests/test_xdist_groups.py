"""The README's test command (``--dist loadgroup``) keeps each ``xdist_group`` on one worker, so the docs build, the
non-editable install and the causal model's probabilities are each made once. pytest-xdist tells a worker the group
by suffixing the node id with ``@group``; under a pytest where that suffix no longer takes effect (pytest 9.2 with
pytest-xdist 3.8, pytest-dev/pytest-xdist#1386) the groups are spread over the workers without a word, and this test
is the one that says so."""

import pytest


@pytest.mark.xdist_group("check")
def test_grouped_tests_carry_their_group(request):
    if not getattr(request.config.option, "loadgroup", False):  # what pytest-xdist sets in a worker
        pytest.skip("only under pytest-xdist's --dist loadgroup")
    assert request.node.nodeid.endswith("@check"), (
        f"{request.node.nodeid}: --dist loadgroup ignores xdist_group with pytest {pytest.__version__}"
    )


def test_the_longest_work_is_collected_first(request):
    """The grouped tests, then the slow tests and notebooks, then the rest (``conftest.pytest_collection_modifyitems``):
    pytest-xdist hands out work in this order, so no worker starts a group of a minute while the other runs dry."""

    def weight(item):
        if item.get_closest_marker("xdist_group"):
            return 0
        return 1 if item.get_closest_marker("slow") or item.get_closest_marker("notebook") else 2

    weights = [weight(item) for item in request.session.items]
    assert weights == sorted(weights) and request.node in request.session.items
