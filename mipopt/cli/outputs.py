"""Where a command's files go and how they are written: never onto an input, never two to one
path, all of them at once.

A command declares its outputs before it starts work, in an :class:`Outputs`: each flag's file
(:meth:`Outputs.file`) or a directory and the names it writes there (:meth:`Outputs.directory`).
Each declaration is checked at once, so a long solve never ends in a refusal: an output that is
one of the inputs (the same file under any name, through a symbolic or a hard link), that lies in
an input directory, or that another flag names too is refused naming the flags; a target that
cannot be written (a missing folder, a directory where a file goes) is refused naming the path as
the user gave it.

The files are written in :meth:`Outputs.writing`: each into a staging directory beside its target
(``.mipopt-XXXXXXXX.tmp``), and only once all of them are complete are they renamed into place,
with SIGINT and SIGTERM held for the renames (:func:`mipopt._signals.held_signals`). A stop
before then removes the staging directories and leaves every target as it was, so a stopped run
leaves either the old set of files or the new one, never new CSVs beside an old PNG. A directory
that does not exist yet is staged whole and renamed into place; in one that exists, the set's
files are replaced one by one and the files of an older set that the new one lacks (a smaller
sweep's ``point-012.json``) removed, while other files stay: the directory may be the working
directory, a mount point, or hold the user's own files. Devices and named pipes (``/dev/null``,
``/dev/stdout``) are written in place once everything else is staged: there is nothing to rename
over them.
"""

from __future__ import annotations

import errno
import fnmatch
import os
import shutil
import tempfile
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from mipopt._signals import held_signals
from mipopt.cli.common import BadInput
from mipopt.io import written_in_place

#: Prefix and suffix of the staging directories (a leftover one is safe to delete).
STAGING_PREFIX, STAGING_SUFFIX = ".mipopt-", ".tmp"


@dataclass(frozen=True, slots=True)
class _Input:
    given: str
    path: Path  # resolved


@dataclass(slots=True)
class _Target:
    """A file a flag names, or a directory and the names written there."""

    flag: str
    given: str
    path: Path  # absolute, symbolic links kept: the name replaced is the one the user gave
    names: set[str] | None = None  # None: a file
    stale: str | None = None  # a glob of an older set's names, removed when the new set lacks them

    def members(self) -> list[tuple[str, Path]]:
        """(name as the user would write it, path) of each file this target writes, as known now."""
        if self.names is None:
            return [(self.given, self.path)]
        return [(os.path.join(self.given, n), self.path / n) for n in sorted(self.names)]

    def owns(self, path: Path) -> bool:
        """Whether writing ``path`` is this target's: the file itself, or a file of the directory."""
        if self.names is None:
            return path == self.path
        return path.parent == self.path and (
            path.name in self.names or (self.stale is not None and fnmatch.fnmatchcase(path.name, self.stale))
        )


def _cannot(given: str, code: int) -> BadInput:
    return BadInput(f"cannot write {given}: {os.strerror(code)}")


def _check_folder(given: str, folder: Path) -> None:
    """``folder`` (where a new file or directory goes) exists, is a directory and can be written."""
    if not folder.exists():
        raise _cannot(given, errno.ENOENT)
    if not folder.is_dir():
        raise _cannot(given, errno.ENOTDIR)
    if not os.access(folder, os.W_OK | os.X_OK):
        raise _cannot(given, errno.EACCES)


def _existing_ancestor(path: Path) -> Path:
    while not path.exists() and path != path.parent:
        path = path.parent
    return path


class Outputs:
    """The files one command writes, checked as they are declared and written all at once.

    Parameters
    ----------
    inputs
        The files and directories the command reads (None entries are skipped): no output may be
        one of them, nor a file directly inside an input directory.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> from mipopt.io import write_text
    >>> folder = pathlib.Path(tempfile.mkdtemp())
    >>> (folder / "in.json").write_text("{}")
    2
    >>> outputs = Outputs([str(folder / "in.json")])
    >>> outputs.file("--out", str(folder / "in.json"))
    Traceback (most recent call last):
    ...
    mipopt.cli.common.BadInput: --out: ... is an input; write the result to another file
    >>> out = outputs.file("--out", str(folder / "out.txt"))
    >>> with outputs.writing() as staged:
    ...     write_text(staged.path(out), "done\\n")
    >>> sorted(p.name for p in folder.iterdir())
    ['in.json', 'out.txt']
    """

    def __init__(self, inputs: Iterable[str | os.PathLike[str] | None] = ()) -> None:
        self._inputs = [_Input(os.fspath(p), Path(p).resolve()) for p in inputs if p is not None]
        self._targets: list[_Target] = []

    # --- declaring

    def file(self, flag: str, given: str | os.PathLike[str] | None) -> Path | None:
        """Declare the file ``flag`` names (None: not given); return it as a :class:`Path`.

        Raises
        ------
        BadInput
            When it is an input, in an input directory, named by another flag too, or cannot be
            written (its folder is missing or read-only, it is a directory).
        """
        if given is None:
            return None
        text = os.fspath(given)
        target = _Target(flag, text, Path(os.path.abspath(text)))
        self._check_target(target)
        if not written_in_place(target.path):
            if target.path.is_dir():
                raise _cannot(text, errno.EISDIR)
            _check_folder(text, target.path.parent)
        elif target.path.exists() and not os.access(target.path, os.W_OK):
            raise _cannot(text, errno.EACCES)
        self._targets.append(target)
        return Path(text)

    def directory(
        self,
        flag: str,
        given: str | os.PathLike[str] | None,
        names: Iterable[str] = (),
        *,
        stale: str | None = None,
    ) -> Path | None:
        """Declare the directory ``flag`` names and the ``names`` of the files written there.

        Parameters
        ----------
        flag, given
            The flag and its value (None: not given).
        names
            The files the command writes in the directory.
        stale
            A glob (``point-*.json``) of files an earlier run wrote there; those the new set does
            not write are removed when it is put in place. None: files not in ``names`` stay.

        Raises
        ------
        BadInput
            As :meth:`file`; and when ``given`` is a file, or one of ``names`` a directory.
        """
        if given is None:
            return None
        text = os.fspath(given)
        target = _Target(flag, text, Path(os.path.abspath(text)), set(names), stale)
        self._check_target(target)
        if target.path.exists() and not target.path.is_dir():
            raise _cannot(text, errno.ENOTDIR)
        if target.path.is_dir():
            _check_folder(text, target.path)
            for shown, path in target.members():
                if path.is_dir():
                    raise _cannot(shown, errno.EISDIR)
        else:
            _check_folder(text, _existing_ancestor(target.path))
        self._targets.append(target)
        return Path(text)

    def _check_target(self, target: _Target) -> None:
        for shown, path in target.members():
            self._check_not_input(target.flag, shown, path)
        if target.names is not None:
            self._check_directory(target)
        for other in self._targets:
            mine = [(shown, path) for shown, path in target.members() if other.owns(path)]
            theirs = [(shown, path) for shown, path in other.members() if target.owns(path)]
            clash = [shown for shown, path in mine + theirs if str(path) != os.devnull]
            if clash:
                raise BadInput(f"{other.flag}, {target.flag}: both write {clash[0]}; give each its own file")

    def _check_not_input(self, flag: str, shown: str, path: Path) -> None:
        """The file ``path`` (``shown`` as the user would write it) is no input, nor in an input directory."""
        resolved = path.resolve()
        for source in self._inputs:
            if resolved == source.path or (
                path.is_file() and source.path.is_file() and os.path.samefile(path, source.path)
            ):
                also = "" if shown == source.given else f" (the same file as {source.given})"
                raise BadInput(f"{flag}: {shown} is an input{also}; write the result to another file")
            if source.path.is_dir() and resolved.parent == source.path:
                raise BadInput(
                    f"{flag}: {shown} is in the input directory {source.given}; write it elsewhere"
                )

    def _check_directory(self, target: _Target) -> None:
        """The directory is no input, and no input in it is a file an older set left (``stale``)."""
        resolved = target.path.resolve()
        for source in self._inputs:
            if resolved == source.path:
                raise BadInput(f"{target.flag}: {target.given} is an input; write the result elsewhere")
            if source.path.parent == resolved and target.owns(target.path / source.path.name):
                raise BadInput(
                    f"{target.flag}: {target.given} holds the input {source.given}, which it would replace; "
                    "write the result elsewhere"
                )

    # --- writing

    @contextmanager
    def writing(self) -> Iterator[Staged]:
        """Stage every output, then put them all in place (see the module docstring).

        Yields
        ------
        Staged
            Where to write each declared file (:meth:`Staged.path`) or directory's files
            (:meth:`Staged.directory`).

        Raises
        ------
        OSError
            A write that failed, naming the file as the user gave it (``cannot write PATH``); no
            target was changed.
        """
        staged = Staged(self._targets)
        try:
            yield staged
            staged.commit()
        except OSError as err:
            raise staged.named(err) from None
        finally:
            with held_signals():
                staged.remove()


class Staged:
    """The staging of one :meth:`Outputs.writing`: where each file is written before it is put
    in place."""

    def __init__(self, targets: list[_Target]) -> None:
        self.targets = targets
        #: final directory -> (its staging directory, whether the staging one becomes it)
        self.folders: dict[Path, tuple[Path, bool]] = {}
        #: staged file -> (final path, the final path as the user would write it)
        self.files: dict[Path, tuple[Path, str]] = {}
        #: where files written in place (devices, pipes) wait for the commit
        self.private: Path | None = None
        #: the file being written, as the user would write it: named by an error without a file name
        self.current = ""

    def _target(self, final: Path) -> _Target:
        for t in self.targets:
            if t.owns(final) or (t.names is not None and final.parent == t.path):
                return t
        raise ValueError(f"{final} was not declared as an output")

    def path(self, final: str | os.PathLike[str]) -> Path:
        """Where to write ``final``: a declared file, or a file of a declared directory."""
        absolute = Path(os.path.abspath(final))
        target = self._target(absolute)
        shown = target.given if target.names is None else os.path.join(target.given, absolute.name)
        if written_in_place(absolute):
            if self.private is None:
                self.private = Path(tempfile.mkdtemp(prefix=STAGING_PREFIX, suffix=STAGING_SUFFIX))
            staged = self.private / f"{len(self.files)}-{absolute.name}"
        else:
            staged = self._folder(absolute.parent, whole=target.names is not None) / absolute.name
        self.files[staged] = (absolute, shown)
        self.current = shown
        return staged

    def directory(self, final: str | os.PathLike[str]) -> Path:
        """Where to write the files of the declared directory ``final`` (any names in it)."""
        absolute = Path(os.path.abspath(final))
        target = next((t for t in self.targets if t.names is not None and t.path == absolute), None)
        if target is None:
            raise ValueError(f"{final} was not declared as an output directory")
        self.current = target.given
        return self._folder(absolute, whole=True)

    def _folder(self, final: Path, *, whole: bool) -> Path:
        """The staging directory of ``final``; ``whole``: a declared directory, staged whole when new."""
        if final not in self.folders:
            whole = whole and not final.exists()
            where = _existing_ancestor(final.parent) if whole else final
            prefix = f".{final.name}{STAGING_PREFIX}" if whole else STAGING_PREFIX
            folder = Path(tempfile.mkdtemp(prefix=prefix, suffix=STAGING_SUFFIX, dir=where))
            self.folders[final] = (folder, whole)
        return self.folders[final][0]

    def commit(self) -> None:
        """Write the in-place targets, then rename everything else into place, signals held."""
        for staged, (final, shown) in self.files.items():
            if self.private is not None and staged.parent == self.private and staged.exists():
                self.current = shown
                with open(staged, "rb") as src, open(final, "wb") as dst:
                    shutil.copyfileobj(src, dst)
        with held_signals():
            for final, (folder, whole) in self.folders.items():
                self.current = self._shown(final)
                if whole:  # a new directory: the staging one becomes it
                    final.parent.mkdir(parents=True, exist_ok=True)
                    os.chmod(folder, 0o777 & ~_umask())
                    os.rename(folder, final)
                    continue
                written = set(os.listdir(folder))
                for name in sorted(written):
                    self.current = self._shown(final / name)
                    _replace(folder / name, final / name)
                self._remove_stale(final, written)

    def _remove_stale(self, final: Path, written: set[str]) -> None:
        for t in self.targets:
            if t.path == final and t.stale is not None:
                for name in os.listdir(final):
                    path = final / name
                    if name not in written and fnmatch.fnmatchcase(name, t.stale) and path.is_file():
                        path.unlink()

    def _shown(self, final: Path) -> str:
        """``final`` as the user would write it."""
        for t in self.targets:
            if t.path == final:
                return t.given
            if t.names is not None and final.parent == t.path:
                return os.path.join(t.given, final.name)
        return str(final)

    def remove(self) -> None:
        """Remove whatever staging is left (all of it after a failure or a stop)."""
        for folder, _ in self.folders.values():
            shutil.rmtree(folder, ignore_errors=True)
        if self.private is not None:
            shutil.rmtree(self.private, ignore_errors=True)

    def named(self, err: OSError) -> OSError:
        """``err`` naming the file as the user gave it, never a staging path."""
        shown = self.current
        if err.filename is not None:
            name = Path(os.path.abspath(err.filename))
            staging = [f for f, _ in self.folders.values()] + ([self.private] if self.private else [])
            if not any(name == f or name.is_relative_to(f) for f in staging):
                shown = self._shown(name)
        return OSError(err.errno, err.strerror, shown)


def _replace(staged: Path, final: Path) -> None:
    """Rename ``staged`` over ``final``, which keeps its permissions (plus the staged x bits)."""
    if final.is_file():
        mode = final.stat().st_mode & 0o7777 | staged.stat().st_mode & 0o111
        os.chmod(staged, mode)
    os.replace(staged, final)


def _umask() -> int:
    mask = os.umask(0)  # the only way to read it is to set it
    os.umask(mask)
    return mask
