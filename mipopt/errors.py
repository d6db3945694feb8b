"""The one error type for bad input, shared by every layer that reads user data.

A bad JSON field and a bad argument of a library call are the same kind of mistake, and both
get one line naming where it is: :class:`InstanceError` names the JSON path or the parameter.
Two subclasses say more for Python callers who catch by kind: :class:`UnknownMethodError` (a
method name :func:`mipopt.methods` does not know) and :class:`ParameterTypeError` (an argument
of the wrong type, also a :class:`TypeError`). Every one is an :class:`InstanceError`, so the
command line reports each as one line and exits 2.
"""

from __future__ import annotations


class InstanceError(ValueError):
    """Bad input: a message naming the JSON path (or the parameter), the rule and the bad value.

    Parameters
    ----------
    path
        JSON path of the offending value, e.g. ``workloads[3].profile``, or the name of the
        offending parameter of a library call, e.g. ``time_limit_s``; empty for a
        whole-document problem (not JSON, unreadable file).
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

    def __reduce__(self) -> tuple[type[InstanceError], tuple[str, str]]:
        # pickled as its two fields: an error raised in a worker process (an executor's job)
        # reaches the caller as the same error, not as a TypeError of unpickling
        return type(self), (self.path, self.rule)


class UnknownMethodError(InstanceError):
    """A method name that :func:`mipopt.methods` does not know; ``path`` names the parameter.

    Examples
    --------
    >>> import mipopt
    >>> inst = mipopt.load_instance("instances/grmu_fig2b.json")
    >>> try:
    ...     mipopt.solve(inst, "first-fit")
    ... except mipopt.UnknownMethodError as err:
    ...     print(err.path, isinstance(err, ValueError))
    method True
    """


class ParameterTypeError(InstanceError, TypeError):
    """An argument of the wrong type, ``path`` naming the parameter: a :class:`TypeError` as
    Python's own are, and an :class:`InstanceError` as every bad input of mipopt is.

    Examples
    --------
    >>> import mipopt
    >>> inst = mipopt.load_instance("instances/grmu_fig2b.json")
    >>> mipopt.solve(inst, time_limit_s="10")
    Traceback (most recent call last):
    ...
    mipopt.errors.ParameterTypeError: time_limit_s: must be a number (seconds), got str '10'
    """
