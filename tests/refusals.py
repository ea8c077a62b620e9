"""The check every bad-input test makes: the call raises exactly ``error``, in one line that starts with the name of
the argument at fault."""

import pytest


def assert_refused(call, error: type[Exception], name: str) -> None:
    """``call()`` raises ``error`` itself (not a subclass) with a one-line message starting ``name:``."""
    with pytest.raises(error) as info:
        call()
    message = str(info.value)
    assert type(info.value) is error
    assert message.startswith(name + ":") and "\n" not in message, message
