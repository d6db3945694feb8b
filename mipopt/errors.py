"""The one error type for bad input, shared by every layer that reads user data."""

from __future__ import annotations


class InstanceError(ValueError):
    """Bad input: a message naming the JSON path, the rule and the bad value.

    Parameters
    ----------
    path
        JSON path of the offending value, e.g. ``workloads[3].profile``; empty
        for a whole-document problem (not JSON, unreadable file).
    rule
        What is wrong, in words, e.g. ``'5g.20gb' is not a profile of A100-40GB``.

    Examples
    --------
    >>> import mipopt
    >>> err = mipopt.InstanceError("workloads[3].profile", "'5g.20gb' is not a profile of A100-40GB")
    >>> print(err)
    workloads[3].profile: '5g.20gb' is not a profile of A100-40GB
    >>> isinstance(err, ValueError), err.path
    (True, 'workloads[3].profile')
    """

    def __init__(self, path: str, rule: str) -> None:
        self.path = path
        self.rule = rule
        super().__init__(f"{path}: {rule}" if path else rule)
