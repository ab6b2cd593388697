"""A pytest plugin: every collected test's fixtures must exist, checked at collection.

pytest reports a fixture nobody defines only when the test sets up. A GPU test is deselected on
the CPU, so a renamed fixture there would surface only on the device, as an error that costs a
call. This check runs before any deselection, on every test collected, so the CPU run fails
first, naming the test and the fixtures it lacks."""

from __future__ import annotations

import pytest


def unresolved_fixtures(item) -> list[str]:
    """The fixture names `item` asks for that no fixture, parametrisation or `request` supplies."""
    info = getattr(item, "_fixtureinfo", None)
    if info is None:  # not a Python test function (a doctest, a plugin's own item)
        return []
    params = getattr(getattr(item, "callspec", None), "params", {})
    return [n for n in item.fixturenames if n != "request" and n not in params and n not in info.name2fixturedefs]


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(items):
    missing = {item.nodeid: names for item in items if (names := unresolved_fixtures(item))}
    if missing:
        lines = [f"  {node}: {', '.join(names)}" for node, names in missing.items()]
        raise pytest.UsageError("tests ask for fixtures nobody defines:\n" + "\n".join(lines))
