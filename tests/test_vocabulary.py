"""One vocabulary: every table of pattern and method names is keyed from ``receptive.patterns.names.NAMES``, a name
has no prefix that changes its meaning, and the concepts of the user guide's "one name per concept" table go by
that one name in every public signature."""

import importlib
import inspect
import pkgutil
import re
from pathlib import Path

import pytest

from receptive.patterns import PATTERNS
from receptive.patterns.causal_variants import variant_names
from receptive.patterns.names import NAMES, check_names

GUIDE = Path(__file__).resolve().parent.parent / "docs" / "guide" / "index.md"

#: other spellings of the guide's concepts, none of which a public signature may use
SYNONYMS = {
    "n": {"seq_len", "seqlen", "length", "n_tokens", "num_tokens"},
    "w": {"window", "window_size", "win"},
    "budget": {"m", "keys_per_query"},
    "layers": {"num_layers", "n_layers", "depth"},
    "seed": {"random_state", "rng_seed"},
    "element_bytes": {"bytes_per_element", "dtype_bytes"},
    "d": {"dim", "head_dim", "d_head", "head_size"},
}


def tables() -> dict[str, list[str]]:
    tables = {"receptive.patterns.PATTERNS": list(PATTERNS), "causal variants": list(variant_names())}
    if importlib.util.find_spec("torch") is not None:
        from gpu.approx import METHODS
        from gpu.attention.generation_patterns import GENERATION_METHODS
        from gpu.attention.variants import VARIANTS
        from gpu.harness.scoring import PREFILL_METHODS

        tables |= {
            "GENERATION_METHODS": list(GENERATION_METHODS),
            "VARIANTS": list(VARIANTS),
            "gpu.approx.METHODS": list(METHODS),
            "PREFILL_METHODS": list(PREFILL_METHODS),
        }
    return tables


@pytest.mark.parametrize("table", sorted(tables()))
def test_every_table_is_keyed_from_the_one_vocabulary(table):
    check_names(tables()[table], table)


def test_every_name_is_used_and_spelled_plainly():
    """No name without a table (the torch tables included), none with a prefix such as ``lab:``, and each defined."""
    pytest.importorskip("torch")
    used = {name for names in tables().values() for name in names}
    assert set(NAMES) == used, f"names no table uses: {sorted(set(NAMES) - used)}"
    assert all(re.fullmatch(r"[a-z][a-z0-9]*(?:[+-][a-z0-9]+)*", name) for name in NAMES), sorted(NAMES)
    assert all(definition.strip() for definition in NAMES.values())


def test_a_table_with_a_name_outside_the_vocabulary_is_refused():
    with pytest.raises(ValueError, match=r"^mine: the name 'lab:sa' is not in receptive\.patterns\.names\.NAMES"):
        check_names(["sa", "lab:sa"], "mine")


def guide_concepts() -> set[str]:
    """The names in the first column of the guide's "one name per concept" table."""
    section = GUIDE.read_text().split("## One name per concept", 1)[1].split("\n## ", 1)[0]
    cells = [line.split("|")[1] for line in section.splitlines() if line.startswith("| `")]
    return {name for cell in cells for name in re.findall(r"`([^`]+)`", cell)}


def public_signatures():
    """(qualified name, parameter names) of every public function, class and method of the installed packages."""
    packages = ["graphs", "receptive"] + (["gpu", "figures"] if importlib.util.find_spec("torch") else [])
    for package in packages:
        root = importlib.import_module(package)
        names = [m.name for m in pkgutil.walk_packages(root.__path__, package + ".")]
        public = [n for n in names if "__main__" not in n and not any(p.startswith("_") for p in n.split(".")[1:])]
        for module in [root, *map(importlib.import_module, public)]:
            for name in getattr(module, "__all__", []):
                obj = getattr(module, name, None)
                if getattr(obj, "__module__", None) != module.__name__:
                    continue
                members = [obj] if inspect.isfunction(obj) else []
                if inspect.isclass(obj):
                    members = [obj.__init__] + [
                        v for k, v in vars(obj).items() if inspect.isfunction(v) and not k.startswith("_")
                    ]
                for member in members:
                    try:
                        yield f"{module.__name__}.{member.__qualname__}", set(inspect.signature(member).parameters)
                    except (TypeError, ValueError):
                        continue


def test_the_guides_concepts_go_by_one_name_in_every_public_signature():
    concepts = guide_concepts()
    assert set(SYNONYMS) <= concepts, f"the guide's table lost a concept: {sorted(set(SYNONYMS) - concepts)}"
    wrong = sorted(
        f"{where}({parameter}: say {concept})"
        for where, parameters in public_signatures()
        for concept, others in SYNONYMS.items()
        for parameter in parameters & others
    )
    assert not wrong, wrong
