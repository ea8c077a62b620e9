"""Every public function and class of the installed packages has a numpydoc docstring: a summary, its parameters,
what it returns and an Examples section (which the suite runs as a doctest), checked by ``numpydoc.validate`` as
scikit-learn checks its own. Public means not underscored, defined in a public module and, where the module has an
``__all__``, listed there."""

import dataclasses
import importlib
import inspect
import pkgutil

import pytest

validate = pytest.importorskip("numpydoc.validate").validate
from numpydoc.docscrape import ClassDoc, FunctionDoc  # noqa: E402

pytest.importorskip("torch")  # gpu and figures import it

PACKAGES = ("graphs", "receptive", "gpu", "figures")
# GL08 no docstring, SS01 no summary, PR01 a parameter not documented, PR02 an unknown one documented,
# RT01 no Returns section, EX01 no Examples section
CHECKS = {"GL08", "SS01", "PR01", "PR02", "RT01", "EX01"}


def public_objects():
    for package in PACKAGES:
        root = importlib.import_module(package)
        names = [package] + [m.name for m in pkgutil.walk_packages(root.__path__, package + ".")]
        for name in names:
            if any(part.startswith("_") for part in name.split(".")):
                continue
            module = importlib.import_module(name)
            listed = getattr(module, "__all__", None)
            for attr, obj in vars(module).items():
                if attr.startswith("_") or not (inspect.isfunction(obj) or inspect.isclass(obj)):
                    continue
                if obj.__module__ == name and (listed is None or attr in listed):
                    yield f"{name}.{attr}", obj


def problems(path: str, obj) -> list[str]:
    """What ``numpydoc.validate`` finds among :data:`CHECKS`, less what numpydoc gets wrong for us: a dataclass
    may document its fields as Attributes (the generated ``__init__`` takes them), a class that inherits its
    ``__init__`` (an exception, a parser) takes the base's parameters, and an underscored keyword is a test hook."""
    errors = {code: message for code, message in validate(path)["errors"] if code in CHECKS}
    if inspect.isclass(obj):
        if dataclasses.is_dataclass(obj):
            doc = ClassDoc(obj)
            documented = {n.strip() for p in doc["Parameters"] + doc["Attributes"] for n in p.name.split(",")}
            missing = {f.name for f in dataclasses.fields(obj) if f.init} - documented
            errors.pop("PR01", None)
            if missing:
                errors["PR01"] = f"fields {sorted(missing)} not documented (as Parameters or Attributes)"
        elif "__init__" not in vars(obj):
            errors.pop("PR01", None)
            errors.pop("PR02", None)
    elif "PR01" in errors:
        documented = {n.strip().lstrip("*") for p in FunctionDoc(obj)["Parameters"] for n in p.name.split(",")}
        if all(p in documented or p.startswith("_") for p in inspect.signature(obj).parameters):
            errors.pop("PR01")
    return [f"{code} {message}" for code, message in sorted(errors.items())]


def test_public_api_has_numpydoc_docstrings():
    found = {path: problems(path, obj) for path, obj in public_objects()}
    assert len(found) > 300  # the walk reached the packages
    bad = {path: errors for path, errors in found.items() if errors}
    assert not bad, "\n".join(f"{path}: {'; '.join(errors)}" for path, errors in sorted(bad.items()))
