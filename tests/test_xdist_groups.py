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
